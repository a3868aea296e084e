package backwave

import (
	"context"
	"fmt"
	"time"

	"github.com/backwave/backwave/store"
)

// QueueBacklog is how far behind one Queue is: its Scheduled jobs split by
// due time. Ready and later are two halves of the one Scheduled state, not
// states of their own.
//
// The counts stay cheap at any size: each walks at most
// store.DefaultBacklogCountCap (100,000) index entries per Queue, and the
// smaller half, when under the cap, gives both exactly. Only a Queue with
// at least the cap both ready and later gets a bound (ReadyAtLeast).
type QueueBacklog struct {
	Queue string
	// Ready is the number of Scheduled jobs due now: claimable as soon as
	// a Worker is free. With ReadyAtLeast, a lower bound.
	Ready int
	// Later is the number of Scheduled jobs due in the future: planned
	// runs, retry backoffs, pre-minted occurrences. With ReadyAtLeast, an
	// upper bound (the Scheduled count less Ready).
	Later int
	// Retrying is the number of Scheduled jobs (ready or later) in the
	// Retrying view. With RetryingAtLeast, a lower bound.
	Retrying int
	// OldestReady is the due time of the oldest ready job; zero when Ready
	// is 0. Now less it is the Queue's latency, what an alert watches. It
	// is exact at any size.
	OldestReady time.Time
	// ReadyAtLeast says the Queue holds at least the count cap both ready
	// and later, so Ready is the cap: "at least this many".
	ReadyAtLeast bool
	// RetryingAtLeast says Retrying reached the count cap: "at least".
	RetryingAtLeast bool
}

// Age is how long the oldest ready job has been due at now; 0 when none is
// ready.
func (b QueueBacklog) Age(now time.Time) time.Duration {
	if b.Ready == 0 || b.OldestReady.IsZero() {
		return 0
	}
	return max(0, now.Sub(b.OldestReady))
}

// ThroughputBucket is how many jobs reached one settled state (Succeeded,
// Dead-Lettered, Cancelled, Quarantined) in one minute.
type ThroughputBucket struct {
	// Minute is the start of the minute, UTC.
	Minute time.Time
	State  JobState
	Count  int
}

// Backlog returns every Queue holding Scheduled jobs, ordered by name, with
// its ready and later counts, its Retrying count and its oldest ready due
// time, at the store's now. It reads the due-time index and the counts the
// store keeps, never the whole job table, each count stopping at a cap
// (QueueBacklog says when a count is a bound; docs/dashboard.md has
// timings).
func (a *Admin) Backlog(ctx context.Context) ([]QueueBacklog, error) {
	bs, err := a.store.QueueBacklog(ctx, store.BacklogParams{})
	if err != nil {
		return nil, fmt.Errorf("backwave: read queue backlog: %w", err)
	}
	out := make([]QueueBacklog, len(bs))
	for i, b := range bs {
		out[i] = QueueBacklog(b)
	}
	return out, nil
}

// Throughput counts the jobs that settled at or after since, per minute and
// state, ordered by minute then state; a minute without jobs is absent. A
// job purged by retention or requeued since it finished no longer counts.
// since must not be zero (ErrInvalidParams).
func (a *Admin) Throughput(ctx context.Context, since time.Time) ([]ThroughputBucket, error) {
	bs, err := a.store.Throughput(ctx, store.ThroughputParams{Since: since})
	if err != nil {
		return nil, fmt.Errorf("backwave: read throughput: %w", err)
	}
	out := make([]ThroughputBucket, len(bs))
	for i, b := range bs {
		out[i] = ThroughputBucket{Minute: b.Minute, State: JobState(b.State), Count: b.Count}
	}
	return out, nil
}
