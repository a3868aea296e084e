package store

import (
	"slices"
	"sync"
)

// HintHub is a list of Wake-Up Hint subscribers that adapters embed to
// implement HintSource. The zero value is ready; it is safe for concurrent
// use.
type HintHub struct {
	mu   sync.Mutex
	next int
	subs []hintSubscriber // in subscription order
}

type hintSubscriber struct {
	id int
	fn func(queue string)
}

// Subscribe adds fn; the returned func removes it (calling it again does
// nothing).
func (h *HintHub) Subscribe(fn func(queue string)) (unsubscribe func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.next++
	id := h.next
	h.subs = append(h.subs, hintSubscriber{id: id, fn: fn})
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.subs = slices.DeleteFunc(h.subs, func(sub hintSubscriber) bool { return sub.id == id })
	}
}

// Active reports whether anyone listens, so a store can skip working out
// hints nobody will receive.
func (h *HintHub) Active() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs) > 0
}

// Announce calls every subscriber, in subscription order, with every Queue in
// queues, in the given order. The caller must hold no lock a subscriber might
// need: subscribers may call the store.
func (h *HintHub) Announce(queues []string) {
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
