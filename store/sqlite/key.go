package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// Concurrency Keys in the claim (see Concurrency Key in the store package
// doc). A claimed Queue with a Key Limit, a Key Rate or Fair Claim is a
// keyed Queue; the claim takes from it through claimKeyed, and from every
// other Queue exactly as before. All of it runs in the claim's write
// transaction, under the file's write lock, so each key's Running count
// and window count are exact across processes: the key's counters are
// fenced as the Queue's are.
//
// The cost on the claim path: a Queue without a key setting runs the plain
// claim, unchanged (testdata/ledger.txt). A keyed Queue's claim costs one
// index probe per key with Scheduled jobs (sqlNextKey skips through
// backwave_job_key_due one key at a time), one count of each key's Running
// jobs with a Key Limit, one read of at most its room of each key's due
// jobs, then the same lease and count statements as the plain claim, and
// one window row per key leased from with a Key Rate.
const (
	// sqlNextKey is the first key after ?2 with a Scheduled job in Queue ?1.
	sqlNextKey = `SELECT concurrency_key FROM backwave_job
	WHERE queue = ?1 AND state = 1 AND concurrency_key IS NOT NULL AND concurrency_key > ?2
	ORDER BY concurrency_key LIMIT 1`
	// sqlNoKeyScheduled says how many Scheduled jobs of Queue ?1 carry no
	// key, from the counters.
	sqlNoKeyScheduled = `SELECT COALESCE((SELECT n FROM backwave_job_count WHERE queue = ?1 AND state = 1), 0)
		- COALESCE((SELECT SUM(n) FROM backwave_job_key_count WHERE queue = ?1 AND state = 1), 0)`
	// sqlKeyRunning counts the Running jobs of key ?2 (NULL: no key) in
	// Queue ?1.
	sqlKeyRunning = `SELECT CASE WHEN ?2 IS NULL
		THEN (SELECT COUNT(*) FROM backwave_job WHERE queue = ?1 AND state = 3 AND concurrency_key IS NULL)
		ELSE (SELECT COUNT(*) FROM backwave_job WHERE queue = ?1 AND state = 3 AND concurrency_key IS NOT NULL AND concurrency_key = ?2) END`
	// sqlKeyDue reads up to ?4 jobs of key ?2 due at ?3 in Queue ?1, in due
	// order, passing over the Wire Names of the JSON array ?5 (NULL: none).
	sqlKeyDue = `SELECT id, scheduled_at FROM backwave_job
	WHERE queue = ?1 AND state = 1 AND concurrency_key IS NOT NULL AND concurrency_key = ?2 AND scheduled_at <= ?3
		AND (?5 IS NULL OR wire_name NOT IN (SELECT value FROM json_each(?5)))
	ORDER BY scheduled_at, id LIMIT ?4`
	// sqlNoKeyDue is sqlKeyDue for the jobs without a key.
	sqlNoKeyDue = `SELECT id, scheduled_at FROM backwave_job
	WHERE queue = ?1 AND state = 1 AND concurrency_key IS NULL AND scheduled_at <= ?3
		AND (?5 IS NULL OR wire_name NOT IN (SELECT value FROM json_each(?5)))
	ORDER BY scheduled_at, id LIMIT ?4`
	// sqlClaimByID reads the jobs of the JSON array ?1 as sqlClaimDue does.
	sqlClaimByID = `SELECT j.id, j.wire_name, j.attempt, j.max_attempts, j.scheduled_at, j.created_at, j.finalized_at,
		j.retry_cause, j.cancel_cause, j.cancel_requested, j.attempt_base, p.payload, t.trace_context,
		g.attempt, g.fraction, g.note, g.at
	FROM backwave_job j LEFT JOIN backwave_job_payload p ON p.job_id = j.id
		LEFT JOIN backwave_job_trace t ON t.job_id = j.id
		LEFT JOIN backwave_job_progress g ON g.job_id = j.id
	WHERE j.id IN (SELECT value FROM json_each(?1)) AND j.state = 1`
	// sqlKeyWindow reads the window and count of key ?2 ('' for no key) of
	// Queue ?1.
	sqlKeyWindow = `SELECT rate_window, rate_count FROM backwave_queue_key WHERE queue = ?1 AND concurrency_key = ?2`
	// sqlKeyRateTake counts ?4 claims of key ?2 of Queue ?1 in the window
	// starting at ?3 (µs).
	sqlKeyRateTake = `INSERT INTO backwave_queue_key (queue, concurrency_key, rate_window, rate_count) VALUES (?1, ?2, ?3, ?4)
	ON CONFLICT (queue, concurrency_key) DO UPDATE
	SET rate_count = CASE WHEN rate_window = excluded.rate_window THEN rate_count + excluded.rate_count ELSE excluded.rate_count END,
		rate_window = excluded.rate_window`
)

// keyQueries are the Concurrency Key statements renamed to one Schema Name.
type keyQueries struct {
	nextKey, noKeyScheduled, running, due, noKeyDue, byID, window, rateTake string
}

func newKeyQueries(n schemaName) keyQueries {
	r := n.Rename
	return keyQueries{
		nextKey: r(sqlNextKey), noKeyScheduled: r(sqlNoKeyScheduled),
		running: r(sqlKeyRunning), due: r(sqlKeyDue), noKeyDue: r(sqlNoKeyDue), byID: r(sqlClaimByID),
		window: r(sqlKeyWindow), rateTake: r(sqlKeyRateTake),
	}
}

// keySettings are a Queue's stored key settings.
type keySettings struct {
	limit      int
	rateLimit  int
	ratePeriod int64 // µs
	fair       bool
}

// keyed reports whether a claim of the Queue goes key by key.
func (k keySettings) keyed() bool { return k.limit > 0 || k.rateLimit > 0 || k.fair }

// rate is the Key Rate as a Rate Limit per key; zero for none.
func (k keySettings) rate() store.QueueRate {
	if k.rateLimit <= 0 {
		return store.QueueRate{}
	}
	return store.QueueRate{Limit: k.rateLimit, Period: time.Duration(k.ratePeriod) * time.Microsecond}
}

// keyPick is one due job a keyed claim may take: its key (nil for none),
// its round within the key (from 1) and its place in due order.
type keyPick struct {
	key       *string
	round     int
	scheduled int64
	id        int64
}

// keyTaken is how many jobs a claim leased from one key, for its window.
type keyTaken struct {
	key    string // '' for the jobs without a key
	window int64
	n      int64
}

// claimKeyed picks, in claim order, up to room due jobs of keyed Queue
// name at now: each key gives at most what its Key Limit and Key Rate
// leave, in due order within the key, and with Fair Claim the batch goes
// round-robin across keys (round, then due time, then id), else in due
// order. It returns the picked ids and, with a Key Rate, the windows to
// count them in.
func (s *Store) claimKeyed(ctx context.Context, tx *sql.Tx, name string, ks keySettings, now time.Time, room int, skip []string) ([]int64, []keyTaken, error) {
	var skipArg any
	if len(skip) > 0 {
		b, err := json.Marshal(skip)
		if err != nil {
			return nil, nil, fmt.Errorf("encode skipped wire names: %w", err)
		}
		skipArg = string(b)
	}
	keys, err := s.keysScheduled(ctx, tx, name)
	if err != nil {
		return nil, nil, err
	}
	rate := ks.rate()
	windows := make(map[string]int64)
	var picks []keyPick
	for _, key := range keys {
		n := room
		var keyArg any
		if key != nil {
			keyArg = *key
		}
		if ks.limit > 0 {
			var running int
			if err := s.queryRow(ctx, tx, s.q.key.running, []any{name, keyArg}, &running); err != nil {
				return nil, nil, fmt.Errorf("queue %q: count running of key: %w", name, err)
			}
			n = min(n, ks.limit-running)
		}
		if !rate.IsZero() && n > 0 {
			budget, window, err := s.keyBudget(ctx, tx, name, storedKey(key), rate, now)
			if err != nil {
				return nil, nil, err
			}
			n = min(n, budget)
			windows[storedKey(key)] = window
		}
		if n <= 0 {
			continue
		}
		q := s.q.key.due
		if key == nil {
			q = s.q.key.noKeyDue
		}
		rows, err := s.query(ctx, tx, q, name, keyArg, micros(now), n, skipArg)
		if err != nil {
			return nil, nil, fmt.Errorf("queue %q: read due jobs of key: %w", name, err)
		}
		round := 0
		for rows.Next() {
			round++
			p := keyPick{key: key, round: round}
			if err := rows.Scan(&p.id, &p.scheduled); err != nil {
				_ = rows.Close()
				return nil, nil, fmt.Errorf("queue %q: read due jobs of key: %w", name, err)
			}
			picks = append(picks, p)
		}
		if err := rows.Close(); err != nil {
			return nil, nil, err
		}
		if err := rows.Err(); err != nil {
			return nil, nil, err
		}
	}
	slices.SortFunc(picks, func(a, b keyPick) int {
		if ks.fair {
			if c := cmp.Compare(a.round, b.round); c != 0 {
				return c
			}
		}
		return cmp.Or(cmp.Compare(a.scheduled, b.scheduled), cmp.Compare(a.id, b.id))
	})
	picks = picks[:min(len(picks), room)]
	ids := make([]int64, len(picks))
	counted := make(map[string]int64)
	for i, p := range picks {
		ids[i] = p.id
		counted[storedKey(p.key)]++
	}
	var taken []keyTaken
	if !rate.IsZero() {
		for key, n := range counted {
			taken = append(taken, keyTaken{key: key, window: windows[key], n: n})
		}
		slices.SortFunc(taken, func(a, b keyTaken) int { return cmp.Compare(a.key, b.key) })
	}
	return ids, taken, nil
}

// storedKey is a key as backwave_queue_key stores it: ” for none.
func storedKey(key *string) string {
	if key == nil {
		return ""
	}
	return *key
}

// keysScheduled returns the keys with a Scheduled job in Queue name, in
// byte order, then nil for the jobs without a key if the Queue has any
// Scheduled.
func (s *Store) keysScheduled(ctx context.Context, tx *sql.Tx, name string) ([]*string, error) {
	var keys []*string
	after := ""
	for {
		var key string
		err := s.queryRow(ctx, tx, s.q.key.nextKey, []any{name, after}, &key)
		if err == sql.ErrNoRows {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("queue %q: next key: %w", name, err)
		}
		keys = append(keys, &key)
		after = key
	}
	var noKey int64
	if err := s.queryRow(ctx, tx, s.q.key.noKeyScheduled, []any{name}, &noKey); err != nil {
		return nil, fmt.Errorf("queue %q: count jobs without a key: %w", name, err)
	}
	if noKey > 0 {
		keys = append(keys, nil)
	}
	return keys, nil
}

// keyBudget applies the Key Rate to key's stored window at now: how many
// jobs a claim may take of it and the window (µs) they count in.
func (s *Store) keyBudget(ctx context.Context, tx *sql.Tx, queue, key string, rate store.QueueRate, now time.Time) (int, int64, error) {
	var window int64
	var count int
	var counted time.Time
	switch err := s.queryRow(ctx, tx, s.q.key.window, []any{queue, key}, &window, &count); {
	case err == sql.ErrNoRows:
	case err != nil:
		return 0, 0, fmt.Errorf("queue %q: key window: %w", queue, err)
	default:
		counted = fromMicros(window)
	}
	n, start := rate.Budget(counted, count, now)
	return n, micros(start), nil
}

// claimKeyedRows reads the jobs ids picked, in the order given, for
// scanClaimed.
func (s *Store) claimKeyedRows(ctx context.Context, tx *sql.Tx, ids []int64, out []job.Job, want int, queue string, worker job.WorkerID, expires int64) ([]job.Job, error) {
	b, err := json.Marshal(ids)
	if err != nil {
		return nil, fmt.Errorf("encode job ids: %w", err)
	}
	rows, err := s.query(ctx, tx, s.q.key.byID, string(b))
	if err != nil {
		return nil, err
	}
	from := len(out)
	if out, err = scanClaimed(rows, out, want, queue, worker, expires); err != nil {
		return nil, err
	}
	place := make(map[job.ID]int, len(ids))
	for i, id := range ids {
		place[job.ID(id)] = i
	}
	slices.SortFunc(out[from:], func(a, b job.Job) int { return cmp.Compare(place[a.ID], place[b.ID]) })
	return out, nil
}

// keyRateTake counts the claims of taken in their keys' windows.
func (s *Store) keyRateTake(ctx context.Context, tx *sql.Tx, queue string, taken []keyTaken) error {
	for _, t := range taken {
		if _, err := s.exec(ctx, tx, s.q.key.rateTake, queue, t.key, t.window, t.n); err != nil {
			return fmt.Errorf("queue %q: count key rate: %w", queue, err)
		}
	}
	return nil
}
