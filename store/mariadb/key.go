package mariadb

import (
	"cmp"
	"database/sql"
	"errors"
	"fmt"
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

// keyPick is one due job a keyed claim may take: its key, its round within
// the key (from 1) and its place in due order.
type keyPick struct {
	key       string
	round     int
	scheduled int64
	id        int64
}

// keyedDueIDs reads, in claim order, up to n due jobs of keyed Queue q
// whose Wire Name is not in skip: each key gives at most what its Key
// Limit and Key Rate leave, in due order within the key, and with Fair
// Claim the batch goes round-robin across keys (round, then due time,
// then id), else in due order. It counts the picked jobs in their keys'
// windows and locks them (FOR UPDATE SKIP LOCKED).
func (w *wtx) keyedDueIDs(q *queueInfo, n int, skip []string) ([]int64, error) {
	rate := q.keyRate()
	windows := map[string]time.Time{}
	var picks []keyPick
	key, first := "", true
	for {
		if !first {
			next, err := w.nextKey(q.name, key)
			if err != nil {
				return nil, err
			}
			if next == "" {
				break
			}
			key = next
		}
		first = false
		room := n
		if q.keyLimit > 0 {
			var running int
			if err := w.row(`SELECT COUNT(*) FROM backwave_job FORCE INDEX (backwave_job_key)
				WHERE queue = ? AND concurrency_key = ? AND state = 3`, q.name, key).Scan(&running); err != nil {
				return nil, fmt.Errorf("queue %q: count running of key: %w", q.name, err)
			}
			room = min(room, q.keyLimit-running)
		}
		if !rate.IsZero() && room > 0 {
			budget, window, err := w.keyBudget(q.name, key, rate)
			if err != nil {
				return nil, err
			}
			room, windows[key] = min(room, budget), window
		}
		if room <= 0 {
			continue
		}
		got, err := w.keyDue(q.name, key, room, skip)
		if err != nil {
			return nil, err
		}
		picks = append(picks, got...)
	}
	slices.SortFunc(picks, func(a, b keyPick) int {
		if q.fair {
			if c := cmp.Compare(a.round, b.round); c != 0 {
				return c
			}
		}
		return cmp.Or(cmp.Compare(a.scheduled, b.scheduled), cmp.Compare(a.id, b.id))
	})
	picks = picks[:min(len(picks), n)]
	if len(picks) == 0 {
		return nil, nil
	}
	ids, err := w.lockPicked(picks)
	if err != nil {
		return nil, err
	}
	if rate.IsZero() {
		return ids, nil
	}
	taken := map[string]int{}
	for _, p := range picks {
		if slices.Contains(ids, p.id) {
			taken[p.key]++
		}
	}
	for _, k := range slices.Sorted(mapKeys(taken)) {
		if _, err := w.exec(`INSERT INTO backwave_queue_key (queue, concurrency_key, rate_window, rate_count) VALUES (?, ?, ?, ?)
			ON DUPLICATE KEY UPDATE rate_count = IF(rate_window = VALUES(rate_window), rate_count + VALUES(rate_count), VALUES(rate_count)),
				rate_window = VALUES(rate_window)`, q.name, k, micros(windows[k]), taken[k]); err != nil {
			return nil, fmt.Errorf("queue %q: count key rate: %w", q.name, err)
		}
	}
	return ids, nil
}

// mapKeys returns the keys of m.
func mapKeys(m map[string]int) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// nextKey is the first key after key with a Scheduled job in the Queue;
// ” if none.
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
// Wire Name is not in skip, numbered by round.
func (w *wtx) keyDue(queue, key string, n int, skip []string) ([]keyPick, error) {
	var b strings.Builder
	args := []any{queue, key, micros(w.now)}
	b.WriteString(`SELECT id, scheduled_at FROM backwave_job FORCE INDEX (backwave_job_key)
	WHERE queue = ? AND concurrency_key = ? AND state = 1 AND scheduled_at <= ?`)
	if len(skip) > 0 {
		b.WriteString(` AND wire_name NOT IN (`)
		for i, name := range skip {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('?')
			args = append(args, name)
		}
		b.WriteString(`)`)
	}
	b.WriteString(` ORDER BY scheduled_at, id LIMIT ?`)
	args = append(args, n)
	rows, err := w.query(b.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("queue %q: read due jobs of key: %w", queue, err)
	}
	defer func() { _ = rows.Close() }()
	var out []keyPick
	for rows.Next() {
		p := keyPick{key: key, round: len(out) + 1}
		if err := rows.Scan(&p.id, &p.scheduled); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// keyBudget applies the Key Rate to key's stored window: how many jobs a
// claim may take of it and the window they count in.
func (w *wtx) keyBudget(queue, key string, rate store.QueueRate) (int, time.Time, error) {
	var window int64
	var count int
	var counted time.Time
	err := w.row(`SELECT rate_window, rate_count FROM backwave_queue_key WHERE queue = ? AND concurrency_key = ?`, queue, key).Scan(&window, &count)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return 0, time.Time{}, fmt.Errorf("queue %q: key window: %w", queue, err)
	default:
		counted = fromMicros(window)
	}
	budget, start := rate.Budget(counted, count, w.now)
	return budget, start, nil
}

// lockPicked locks the picked jobs still Scheduled, SKIP LOCKED, and
// returns their ids in pick order.
func (w *wtx) lockPicked(picks []keyPick) ([]int64, error) {
	var b strings.Builder
	args := make([]any, 0, len(picks))
	b.WriteString(`SELECT id FROM backwave_job WHERE state = 1 AND id IN (`)
	for i, p := range picks {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('?')
		args = append(args, p.id)
	}
	b.WriteString(`) FOR UPDATE SKIP LOCKED`)
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
		if locked[p.id] {
			ids = append(ids, p.id)
		}
	}
	return ids, nil
}
