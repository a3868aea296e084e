package sqlite

import (
	"slices"
	"sync"
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

// SubscribeHints calls fn with a Queue's name after a call of this Store
// commits something that may have made jobs claimable in it: an insert of
// jobs due now, an applied outcome (a retry, or a freed Concurrency-Limit
// slot), a lease expiry or Relinquish back to Scheduled, a resume, or a new
// limit. fn is called synchronously after the commit, before the call
// returns, once per Queue and call, Queues in name order. fn must not block;
// it may call the store. The returned func unsubscribes.
//
// Hints are in-process only: another process sharing the file hears none,
// and finds the jobs at its next poll. A hint may also name a Queue where
// nothing turned out to be claimable. Either way a hint only cuts latency.
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

// announce calls every subscriber with every Queue in queues.
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
