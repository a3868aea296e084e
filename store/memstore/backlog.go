package memstore

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// QueueBacklog splits every Queue's Scheduled jobs into ready (due at the
// store's clock now) and later, with the Retrying count and the oldest
// ready due time, ordered by Queue. It counts every job and then applies
// the cap as an adapter's capped counts would (store.BacklogFromCounts).
func (s *Store) QueueBacklog(ctx context.Context, p store.BacklogParams) ([]store.QueueBacklog, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	now := s.clock.Now()
	by := make(map[string]*store.QueueBacklog)
	for _, r := range s.jobs {
		if r == nil || r.job.State != job.StateScheduled {
			continue
		}
		b := by[r.job.Queue]
		if b == nil {
			b = &store.QueueBacklog{Queue: r.job.Queue}
			by[r.job.Queue] = b
		}
		if r.job.RetryCause != job.RetryCauseNone {
			b.Retrying++
		}
		if r.job.ScheduledAt.After(now) {
			b.Later++
			continue
		}
		b.Ready++
		if b.OldestReady.IsZero() || r.job.ScheduledAt.Before(b.OldestReady) {
			b.OldestReady = r.job.ScheduledAt
		}
	}
	out := make([]store.QueueBacklog, 0, len(by))
	limit := p.Cap()
	for _, b := range by {
		out = append(out, store.BacklogFromCounts(b.Queue, b.Ready+b.Later, min(b.Ready, limit), min(b.Later, limit), min(b.Retrying, limit), limit, b.OldestReady))
	}
	slices.SortFunc(out, func(a, b store.QueueBacklog) int { return strings.Compare(a.Queue, b.Queue) })
	return out, nil
}

// Throughput counts the jobs that settled at or after p.Since, per minute
// of FinalizedAt and per state, ordered by minute then state.
func (s *Store) Throughput(ctx context.Context, p store.ThroughputParams) ([]store.ThroughputBucket, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	type key struct {
		minute int64
		state  job.State
	}
	counts := make(map[key]int)
	for _, r := range s.jobs {
		if r == nil || !store.Settled(r.job.State) || r.job.FinalizedAt.IsZero() || r.job.FinalizedAt.Before(p.Since) {
			continue
		}
		counts[key{r.job.FinalizedAt.Truncate(time.Minute).Unix(), r.job.State}]++
	}
	out := make([]store.ThroughputBucket, 0, len(counts))
	for k, n := range counts {
		out = append(out, store.ThroughputBucket{Minute: time.Unix(k.minute, 0).UTC(), State: k.state, Count: n})
	}
	slices.SortFunc(out, store.CompareThroughput)
	return out, nil
}
