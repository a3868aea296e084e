package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
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
	// sqlKeyRunning counts the Running jobs of key ?2 in Queue ?1.
	sqlKeyRunning = `SELECT COUNT(*) FROM backwave_job WHERE queue = ?1 AND state = 3 AND concurrency_key IS NOT NULL AND concurrency_key = ?2`
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
	sqlClaimByID = sqlClaimSelect + `
	WHERE j.id IN (SELECT value FROM json_each(?1)) AND j.state = 1`
	// sqlKeyWindow reads the Key Rate window, count and Fair Claim turn of
	// key ?2 ('' for none) of Queue ?1.
	sqlKeyWindow = `SELECT rate_window, rate_count, turn FROM backwave_queue_key WHERE queue = ?1 AND concurrency_key = ?2`
	// sqlKeyRateTake records for key ?2 of Queue ?1 its Key Rate window ?3
	// (µs, NULL: none) with its count ?4 and its Fair Claim turn ?5.
	sqlKeyRateTake = `INSERT INTO backwave_queue_key (queue, concurrency_key, rate_window, rate_count, turn) VALUES (?1, ?2, ?3, ?4, ?5)
	ON CONFLICT (queue, concurrency_key) DO UPDATE
	SET rate_window = excluded.rate_window, rate_count = excluded.rate_count, turn = excluded.turn`
	// sqlKeyTurn records Queue ?1's last Fair Claim turn ?2.
	sqlKeyTurn = `UPDATE backwave_queue SET fair_turn = ?2 WHERE name = ?1`
)

// keyQueries are the Concurrency Key statements renamed to one Schema Name.
type keyQueries struct {
	nextKey, noKeyScheduled, running, due, noKeyDue, byID, window, rateTake, turn string
}

func newKeyQueries(n schemaName) keyQueries {
	r := n.Rename
	return keyQueries{
		nextKey: r(sqlNextKey), noKeyScheduled: r(sqlNoKeyScheduled),
		running: r(sqlKeyRunning), due: r(sqlKeyDue), noKeyDue: r(sqlNoKeyDue), byID: r(sqlClaimByID),
		window: r(sqlKeyWindow), rateTake: r(sqlKeyRateTake), turn: r(sqlKeyTurn),
	}
}

// keySettings are a Queue's stored key settings.
type keySettings struct {
	limit      int
	rateLimit  int
	ratePeriod int64 // µs
	fair       bool
	turn       int64 // the Queue's last Fair Claim turn
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

// policy is the stored settings as the contract's KeyPolicy.
func (k keySettings) policy() store.KeyPolicy {
	return store.KeyPolicy{Limit: k.limit, Rate: k.rate(), Fair: k.fair}
}

// keyDue is one due job of a keyed Queue: its key ("" for none) and its
// place in due order.
type keyDue struct {
	key       string
	scheduled int64
	id        int64
}

// claimKeyed picks, in claim order, up to room due jobs of keyed Queue
// name at now by the Queue's KeyPolicy (store.KeyPolicy.Pick, the rule
// written once): it reads each key's standing and, per key, its due jobs
// in due order up to one more than the key may take (the one that tells
// whether the key held a job back), and lets Pick decide. It returns the
// picked ids in claim order and the pick (the windows to count, the Key
// Rate's Reopen).
func (s *Store) claimKeyed(ctx context.Context, tx *sql.Tx, name string, ks keySettings, now time.Time, room int, skip []string) ([]int64, store.KeyPick, error) {
	var skipArg any
	if len(skip) > 0 {
		b, err := json.Marshal(skip)
		if err != nil {
			return nil, store.KeyPick{}, fmt.Errorf("encode skipped wire names: %w", err)
		}
		skipArg = string(b)
	}
	keys, noKey, err := s.keysScheduled(ctx, tx, name)
	if err != nil {
		return nil, store.KeyPick{}, err
	}
	policy := ks.policy()
	standing := make(map[string]store.KeyStanding, len(keys))
	var due []keyDue
	read := func(q string, key string, keyArg any, n int) error {
		rows, err := s.query(ctx, tx, q, name, keyArg, micros(now), n, skipArg)
		if err != nil {
			return fmt.Errorf("queue %q: read due jobs of key: %w", name, err)
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			d := keyDue{key: key}
			if err := rows.Scan(&d.id, &d.scheduled); err != nil {
				return fmt.Errorf("queue %q: read due jobs of key: %w", name, err)
			}
			due = append(due, d)
		}
		return rows.Err()
	}
	stand := func(key string) (store.KeyStanding, error) {
		var st store.KeyStanding
		if !policy.Rate.IsZero() || policy.Fair {
			var err error
			if st.Window, st.Count, st.Turn, err = s.keyStanding(ctx, tx, name, key); err != nil {
				return st, err
			}
		}
		if policy.Limit > 0 && key != "" {
			if err := s.queryRow(ctx, tx, s.q.key.running, []any{name, key}, &st.Running); err != nil {
				return st, fmt.Errorf("queue %q: count running of key: %w", name, err)
			}
		}
		return st, nil
	}
	for _, key := range keys {
		st, err := stand(key)
		if err != nil {
			return nil, store.KeyPick{}, err
		}
		allow := room
		if policy.Limit > 0 {
			allow = min(allow, max(0, policy.Limit-st.Running))
		}
		if !policy.Rate.IsZero() {
			budget, _ := policy.Rate.Budget(st.Window, st.Count, now)
			allow = min(allow, budget)
		}
		standing[key] = st
		if err := read(s.q.key.due, key, key, min(room, allow+1)); err != nil {
			return nil, store.KeyPick{}, err
		}
	}
	if noKey {
		st, err := stand("")
		if err != nil {
			return nil, store.KeyPick{}, err
		}
		standing[""] = st
		if err := read(s.q.key.noKeyDue, "", nil, room); err != nil {
			return nil, store.KeyPick{}, err
		}
	}
	slices.SortFunc(due, func(a, b keyDue) int { return cmp.Or(cmp.Compare(a.scheduled, b.scheduled), cmp.Compare(a.id, b.id)) })
	dueKeys := make([]string, len(due))
	for i, d := range due {
		dueKeys[i] = d.key
	}
	pick := policy.Pick(dueKeys, room, standing, ks.turn, now)
	ids := make([]int64, len(pick.Take))
	for i, t := range pick.Take {
		ids[i] = due[t].id
	}
	return ids, pick, nil
}

// keysScheduled returns the keys with a Scheduled job in Queue name, in
// byte order, and whether the Queue has a Scheduled job without a key.
func (s *Store) keysScheduled(ctx context.Context, tx *sql.Tx, name string) ([]string, bool, error) {
	var keys []string
	after := ""
	for {
		var key string
		err := s.queryRow(ctx, tx, s.q.key.nextKey, []any{name, after}, &key)
		if errors.Is(err, sql.ErrNoRows) {
			break
		}
		if err != nil {
			return nil, false, fmt.Errorf("queue %q: next key: %w", name, err)
		}
		keys = append(keys, key)
		after = key
	}
	var noKey int64
	if err := s.queryRow(ctx, tx, s.q.key.noKeyScheduled, []any{name}, &noKey); err != nil {
		return nil, false, fmt.Errorf("queue %q: count jobs without a key: %w", name, err)
	}
	return keys, noKey > 0, nil
}

// keyStanding reads key's stored Key Rate window (zero if none), its
// count and its Fair Claim turn (” is the jobs without a key).
func (s *Store) keyStanding(ctx context.Context, tx *sql.Tx, queue, key string) (time.Time, int, int64, error) {
	var window sql.NullInt64
	var count int
	var turn int64
	switch err := s.queryRow(ctx, tx, s.q.key.window, []any{queue, key}, &window, &count, &turn); {
	case errors.Is(err, sql.ErrNoRows):
		return time.Time{}, 0, 0, nil
	case err != nil:
		return time.Time{}, 0, 0, fmt.Errorf("queue %q: key standing: %w", queue, err)
	}
	var w time.Time
	if window.Valid {
		w = fromMicros(window.Int64)
	}
	return w, count, turn, nil
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

// keyTake records what a pick took of each key (its Key Rate window and
// count, its Fair Claim turn) and the Queue's last turn.
func (s *Store) keyTake(ctx context.Context, tx *sql.Tx, queue string, ks keySettings, pick store.KeyPick) error {
	for _, key := range slices.Sorted(maps.Keys(pick.Taken)) {
		t := pick.Taken[key]
		var window any
		if !t.Window.IsZero() {
			window = micros(t.Window)
		}
		if _, err := s.exec(ctx, tx, s.q.key.rateTake, queue, key, window, t.Count, t.Turn); err != nil {
			return fmt.Errorf("queue %q: record key: %w", queue, err)
		}
	}
	if pick.Turn != ks.turn {
		if _, err := s.exec(ctx, tx, s.q.key.turn, queue, pick.Turn); err != nil {
			return fmt.Errorf("queue %q: record fair claim turn: %w", queue, err)
		}
	}
	return nil
}
