package memstore

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/backwave/backwave/store"
)

// QueuePause stops claims from the Queue, making it known if it was not.
// Running jobs keep their Leases. Every Queue action is audited.
func (s *Store) QueuePause(ctx context.Context, p store.QueueParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.queue(p.Queue).paused = true
	s.record(s.clock.Now(), p.Actor, store.AuditQueuePause, 0, p.Queue, "")
	return nil
}

// QueueResume lets claims from the Queue start again, making it known if it
// was not.
func (s *Store) QueueResume(ctx context.Context, p store.QueueParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	var hints []string
	defer func() { s.hints.Announce(hints) }() // after the unlock below
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.queue(p.Queue).paused = false
	s.record(s.clock.Now(), p.Actor, store.AuditQueueResume, 0, p.Queue, "")
	hints = s.hintable(&hintSet{queues: []string{p.Queue}}, s.clock.Now())
	return nil
}

// QueueSetLimit sets the Queue's Concurrency Limit (0 removes it), making
// the Queue known if it was not. A limit below the Running count revokes no
// Lease; claims from the Queue stop until Running drops below it.
func (s *Store) QueueSetLimit(ctx context.Context, p store.QueueSetLimitParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	var hints []string
	defer func() { s.hints.Announce(hints) }() // after the unlock below
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	s.queue(p.Queue).limit = p.Limit
	s.record(s.clock.Now(), p.Actor, store.AuditQueueSetLimit, 0, p.Queue, store.LimitDetail(p.Limit))
	hints = s.hintable(&hintSet{queues: []string{p.Queue}}, s.clock.Now())
	return nil
}

// QueueRemove removes an empty Queue with all its settings (they all live
// on its queue entry); store.CheckQueueEmpty refuses one that holds jobs.
func (s *Store) QueueRemove(ctx context.Context, p store.QueueParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	q := s.queues[p.Queue]
	if q == nil {
		return fmt.Errorf("remove queue %s: %w", store.Echo(p.Queue), store.ErrNotFound)
	}
	if err := store.CheckQueueEmpty(p.Queue, len(q.ids)); err != nil {
		return err
	}
	delete(s.queues, p.Queue)
	s.record(s.clock.Now(), p.Actor, store.AuditQueueRemove, 0, p.Queue, "")
	return nil
}

// QueueList returns every known Queue — named by a job or by a setting —
// with its settings and Running count, ordered by name.
func (s *Store) QueueList(ctx context.Context) ([]store.QueueInfo, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := make([]store.QueueInfo, 0, len(s.queues))
	now := s.clock.Now()
	for name, q := range s.queues {
		out = append(out, store.QueueInfo{Name: name, Paused: q.paused, Limit: q.limit, Running: q.running,
			Rate: q.rate.rate, RateStarted: q.rate.started(now), Keys: q.policy})
	}
	slices.SortFunc(out, func(a, b store.QueueInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
