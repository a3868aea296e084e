package memstore

import (
	"slices"
	"sync"
	"time"

	"github.com/backwave/backwave/core"
)

// hub holds the Wake-Up Hint subscribers of one Store.
type hub struct {
	mu   sync.Mutex
	next int
	subs []subscriber // in subscription order
}

type subscriber struct {
	id int
	fn func(queue string)
}

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
	h := &s.hints
	h.mu.Lock()
	defer h.mu.Unlock()
	h.next++
	id := h.next
	h.subs = append(h.subs, subscriber{id: id, fn: fn})
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.subs = slices.DeleteFunc(h.subs, func(sub subscriber) bool { return sub.id == id })
	}
}

// active reports whether anyone listens, so calls can skip working out
// hints nobody will receive.
func (h *hub) active() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs) > 0
}

// announce calls every subscriber with every Queue in queues. The caller
// must not hold the store's lock.
func (h *hub) announce(queues []string) {
	if len(queues) == 0 {
		return
	}
	h.mu.Lock()
	subs := slices.Clone(h.subs)
	h.mu.Unlock()
	for _, q := range queues {
		for _, sub := range subs {
			sub.fn(q)
		}
	}
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

// hintable narrows the gathered Queues to those with a job claimable at now,
// sorted by name. The caller holds s.mu.
func (s *Store) hintable(hs *hintSet, now time.Time) []string {
	if len(hs.queues) == 0 || !s.hints.active() {
		return nil
	}
	var out []string
	for _, name := range hs.queues {
		q := s.queues[name]
		if q == nil || q.paused || (q.limit > 0 && q.running >= q.limit) {
			continue
		}
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
