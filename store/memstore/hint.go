package memstore

import (
	"slices"
	"time"

	"github.com/backwave/backwave/core"
)

// SubscribeHints calls fn with a Queue's name whenever a call to the store
// leaves jobs claimable at once in that Queue (due, the Queue not paused and
// under its Concurrency Limit): an insert of jobs due now, a retry due now,
// a lease expiry or Relinquish back to Scheduled, a resume, a raised limit,
// or a slot freed in a limited Queue. fn is called synchronously, after the
// store's lock is released and before the call that caused the hint returns,
// once per distinct Queue and call, Queues in name order, subscribers in
// subscription order. fn must not block; it may call the store. The returned
// func unsubscribes; calling it again does nothing.
//
// A hint only cuts latency: a subscriber must behave the same, one poll
// later, without it.
func (s *Store) SubscribeHints(fn func(queue string)) (unsubscribe func()) {
	return s.hints.Subscribe(fn)
}

// hintSet gathers, during one call, the Queues that call may have made
// claimable; the store checks them before the lock is released.
type hintSet struct {
	queues []string
}

func (hs *hintSet) add(queue string) {
	if !slices.Contains(hs.queues, queue) {
		hs.queues = append(hs.queues, queue)
	}
}

// hintable narrows the gathered Queues, and those of jobs a Dependency
// latch released during the call, to those with a job claimable at now,
// sorted by name. The caller holds s.mu.
func (s *Store) hintable(hs *hintSet, now time.Time) []string {
	for _, q := range s.released.queues {
		hs.add(q)
	}
	s.released = hintSet{}
	if len(hs.queues) == 0 || !s.hints.Active() {
		return nil
	}
	var out []string
	for _, name := range hs.queues {
		q := s.queues[name]
		if q == nil || q.paused || (q.limit > 0 && q.running >= q.limit) {
			continue
		}
		// A Queue whose Rate Limit window is spent is hinted all the same:
		// the claim the hint starts is stopped by the Rate and answers when
		// the window reopens (ClaimParams.Reopen), which the Driver re-polls
		// at. Without it, jobs enqueued into a spent window waited for the
		// next poll whenever no claim had been stopped by that window.
		for _, id := range q.ids {
			if core.Claimable(&s.row(id).job, now) {
				out = append(out, name)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}
