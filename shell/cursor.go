package shell

import (
	"bytes"
	"context"
	"sync"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// Cursor is where the handler of one Attempt saves its job's Cursor. The
// Pump sends the latest save with the next renewal of the Attempt's Lease,
// which the store applies under the renewal's fence, and a save no renewal
// delivered goes with the Attempt's outcome: no store call of its own, and
// a Cursor saved in the handler's last moments still reaches the store
// before, or with, the outcome.
type Cursor struct {
	mu      sync.Mutex
	value   []byte
	version uint64 // saves made
	// Owned by the Pump's loop.
	sent, acked uint64
}

type cursorKey struct{}

// CursorOf returns the Cursor of the Attempt whose handler context ctx is,
// or nil outside one.
func CursorOf(ctx context.Context) *Cursor {
	c, _ := ctx.Value(cursorKey{}).(*Cursor)
	return c
}

// Save records v (the caller checks its size) as the Cursor to store. The
// last save before a renewal, or before the outcome, is the one sent.
func (c *Cursor) Save(v []byte) {
	v = bytes.Clone(v)
	if v == nil {
		v = []byte{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.value = v
	c.version++
}

// unsent returns the last save if no renewal has delivered it; renewing
// marks it as sent with a renewal, which its success acknowledges (an
// outcome that carries it is the Attempt's last word and marks nothing).
// The loop calls it.
func (c *Cursor) unsent(renewing bool) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version <= c.acked {
		return nil, false
	}
	if renewing {
		c.sent = c.version
	}
	return c.value, true
}

// cursors collects, for a renewal of leases, the Cursors saved since the
// last renewal that reached the store; the Caller calls it.
func (p *Pump) cursors(leases []job.Lease) []store.CursorSave {
	var out []store.CursorSave
	for _, l := range leases {
		if a := p.attempts[l]; a != nil {
			if v, ok := a.cursor.unsent(true); ok {
				out = append(out, store.CursorSave{Lease: l, Value: v})
			}
		}
	}
	return out
}
