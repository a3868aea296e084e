package mariadb

import (
	"cmp"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/backwave/backwave/store"
)

// Concurrency Keys in the claim (see Concurrency Key in the store package
// doc). A claimed Queue with a Key Limit, a Key Rate or Fair Claim is a
// keyed Queue; the claim takes from it through keyedDueIDs, and from every
// other Queue exactly as before. Every writing transaction holds the
// writer row and the claim holds the Queue's row FOR UPDATE, so each key's
// Running count and window count are exact: the key's counters are fenced
// as the Queue's are.
//
// A keyed Queue's claim costs one probe of backwave_job_key per key with a
// Scheduled job (the next key after the last, the jobs without a key being
// key ''), one count of each key's Running jobs with a Key Limit, one read
// of at most its room of each key's due jobs, and one window row per key
// leased from with a Key Rate.

// keyCountKey names one key count: a Queue, a key and a state code.
type keyCountKey struct {
	queue string
	key   string
	state int64
}

// flushKeyCounts adds the transaction's key count deltas.
func (w *wtx) flushKeyCounts() error {
	for k, d := range w.keyCounts {
		if d == 0 {
			continue
		}
		if _, err := w.exec(`INSERT INTO backwave_job_key_count (queue, concurrency_key, state, n) VALUES (?, ?, ?, ?)
			ON DUPLICATE KEY UPDATE n = n + ?`, k.queue, k.key, k.state, d, d); err != nil {
			return fmt.Errorf("count keyed jobs: %w", err)
		}
	}
	return nil
}

// keyed reports whether a claim of the Queue goes key by key.
func (q *queueInfo) keyed() bool { return q.keyLimit > 0 || q.keyRateLimit > 0 || q.fair }

// keyRate is the Key Rate as a Rate Limit per key; zero for none.
func (q *queueInfo) keyRate() store.QueueRate {
	if q.keyRateLimit <= 0 {
		return store.QueueRate{}
	}
	return store.QueueRate{Limit: q.keyRateLimit, Period: time.Duration(q.keyRatePeriod) * time.Microsecond}
}

// policy is the Queue's stored KeyPolicy.
func (q *queueInfo) policy() store.KeyPolicy {
	return store.KeyPolicy{Limit: q.keyLimit, Rate: q.keyRate(), Fair: q.fair}
}

// keyDue is one due job of a keyed Queue: its key (empty for none) and
// its place in due order.
type keyDue struct {
	key       string
	scheduled int64
	id        int64
}

// keyedDueIDs picks, in claim order, up to n due jobs of keyed Queue q
// whose Wire Name is not in skip, by the Queue's KeyPolicy
// (store.KeyPolicy.Pick, the rule written once): it reads each key's
// standing and, per key, its due jobs in due order up to one more than
// the key may take (the one that tells whether the key held a job back),
// and lets Pick decide. It records the Key Rate windows Pick counted,
// locks the picked jobs (FOR UPDATE SKIP LOCKED) and returns their ids
// with the Key Rate's Reopen (zero if none).
func (w *wtx) keyedDueIDs(q *queueInfo, n int, skip []string) ([]int64, time.Time, error) {
	policy := q.policy()
	standing := map[string]store.KeyStanding{}
	var due []keyDue
	key, first := "", true
	for {
		if !first {
			next, err := w.nextKey(q.name, key)
			if err != nil {
				return nil, time.Time{}, err
			}
			if next == "" {
				break
			}
			key = next
		}
		first = false
		room := n
		var st store.KeyStanding
		if !policy.Rate.IsZero() || policy.Fair {
			var err error
			if st.Window, st.Count, st.Turn, err = w.keyStanding(q.name, key); err != nil {
				return nil, time.Time{}, err
			}
		}
		if key != "" {
			if policy.Limit > 0 {
				if err := w.row(`SELECT COUNT(*) FROM backwave_job FORCE INDEX (backwave_job_key)
					WHERE queue = ? AND concurrency_key = ? AND state = 3`, q.name, key).Scan(&st.Running); err != nil {
					return nil, time.Time{}, fmt.Errorf("queue %q: count running of key: %w", q.name, err)
				}
				room = min(room, max(0, policy.Limit-st.Running)+1)
			}
			if !policy.Rate.IsZero() {
				budget, _ := policy.Rate.Budget(st.Window, st.Count, w.now)
				room = min(room, budget+1)
			}
		}
		standing[key] = st
		got, err := w.keyDue(q.name, key, room, skip)
		if err != nil {
			return nil, time.Time{}, err
		}
		due = append(due, got...)
	}
	slices.SortFunc(due, func(a, b keyDue) int { return cmp.Or(cmp.Compare(a.scheduled, b.scheduled), cmp.Compare(a.id, b.id)) })
	keys := make([]string, len(due))
	for i, d := range due {
		keys[i] = d.key
	}
	pick := policy.Pick(keys, n, standing, q.fairTurn, w.now)
	if len(pick.Take) == 0 {
		return nil, pick.Reopen, nil
	}
	picked := make([]int64, len(pick.Take))
	for i, t := range pick.Take {
		picked[i] = due[t].id
	}
	ids, err := w.lockPicked(picked)
	if err != nil {
		return nil, time.Time{}, err
	}
	for _, k := range slices.Sorted(maps.Keys(pick.Taken)) {
		t := pick.Taken[k]
		var window int64
		if !t.Window.IsZero() {
			window = micros(t.Window)
		}
		if _, err := w.exec(`INSERT INTO backwave_queue_key (queue, concurrency_key, rate_window, rate_count, turn) VALUES (?, ?, ?, ?, ?)
			ON DUPLICATE KEY UPDATE rate_window = VALUES(rate_window), rate_count = VALUES(rate_count), turn = VALUES(turn)`,
			q.name, k, window, t.Count, t.Turn); err != nil {
			return nil, time.Time{}, fmt.Errorf("queue %q: record key: %w", q.name, err)
		}
	}
	if pick.Turn != q.fairTurn {
		if _, err := w.exec(`UPDATE backwave_queue SET fair_turn = ? WHERE name = ?`, pick.Turn, q.name); err != nil {
			return nil, time.Time{}, fmt.Errorf("queue %q: record fair claim turn: %w", q.name, err)
		}
		q.fairTurn = pick.Turn
	}
	return ids, pick.Reopen, nil
}

// nextKey is the first key after key with a Scheduled job in the Queue;
// empty if none.
func (w *wtx) nextKey(queue, key string) (string, error) {
	var next string
	err := w.row(`SELECT concurrency_key FROM backwave_job FORCE INDEX (backwave_job_key)
		WHERE queue = ? AND concurrency_key > ? AND state = 1
		ORDER BY concurrency_key LIMIT 1`, queue, key).Scan(&next)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("queue %q: next key: %w", queue, err)
	}
	return next, nil
}

// keyDue reads up to n due jobs of key in the Queue, in due order, whose
// Wire Name is not in skip.
func (w *wtx) keyDue(queue, key string, n int, skip []string) ([]keyDue, error) {
	var b strings.Builder
	args := []any{queue, key, micros(w.now)}
	b.WriteString(`SELECT id, scheduled_at FROM backwave_job FORCE INDEX (backwave_job_key)
	WHERE queue = ? AND concurrency_key = ? AND state = 1 AND scheduled_at <= ?`)
	if len(skip) > 0 {
		b.WriteString(` AND wire_name NOT IN `)
		args = inList(&b, args, skip)
	}
	b.WriteString(` ORDER BY scheduled_at, id LIMIT ?`)
	args = append(args, n)
	rows, err := w.query(b.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("queue %q: read due jobs of key: %w", queue, err)
	}
	defer func() { _ = rows.Close() }()
	var out []keyDue
	for rows.Next() {
		p := keyDue{key: key}
		if err := rows.Scan(&p.id, &p.scheduled); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// keyStanding reads key's stored Key Rate window (zero if none), its
// count and its Fair Claim turn (” is the jobs without a key).
func (w *wtx) keyStanding(queue, key string) (time.Time, int, int64, error) {
	var window, turn int64
	var count int
	err := w.row(`SELECT rate_window, rate_count, turn FROM backwave_queue_key WHERE queue = ? AND concurrency_key = ?`, queue, key).
		Scan(&window, &count, &turn)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return time.Time{}, 0, 0, nil
	case err != nil:
		return time.Time{}, 0, 0, fmt.Errorf("queue %q: key standing: %w", queue, err)
	}
	var at time.Time
	if window != 0 {
		at = fromMicros(window)
	}
	return at, count, turn, nil
}

// lockPicked locks the picked jobs still Scheduled, SKIP LOCKED, and
// returns their ids in pick order.
func (w *wtx) lockPicked(picks []int64) ([]int64, error) {
	var b strings.Builder
	args := make([]any, 0, len(picks))
	b.WriteString(`SELECT id FROM backwave_job WHERE state = 1 AND id IN `)
	args = inList(&b, args, picks)
	b.WriteString(` FOR UPDATE SKIP LOCKED`)
	rows, err := w.query(b.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("lock picked jobs: %w", err)
	}
	defer func() { _ = rows.Close() }()
	locked := map[int64]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		locked[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	ids := make([]int64, 0, len(locked))
	for _, p := range picks {
		if locked[p] {
			ids = append(ids, p)
		}
	}
	return ids, nil
}
