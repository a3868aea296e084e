package sim

import (
	"bytes"
	"fmt"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/node"
	"github.com/backwave/backwave/store"
)

// Cursors in the Simulator. A simulated handler saves a Cursor now and
// then: about half the Leases of each renewal a node sends carry one, and
// about a quarter of its outcomes carry one saved after the last renewal,
// as the production Pump sends them (shell.Cursor). Each value is a pure
// function of the seed, the Lease and the operation that carries it, so an
// oracle knows what a call sent without the call telling it, and no other
// draw of the run moves.
//
// The cursor-fenced oracle keeps, per job, the Cursor the store must hold:
// the last one a call carried for a Lease the store's row showed held just
// before the call (the (worker, Attempt) fence). After every call that
// carried a Cursor it reads each such job back and requires exactly that
// Cursor, so a Cursor a stale Attempt sent — one whose Lease had expired,
// been taken over by another node's claim or ended by an outcome — that a
// store accepted is caught at once.

// Cursor draw probabilities.
const (
	cursorRenewChance  = 0.5
	cursorReportChance = 0.25
)

// Situations the cursor oracle reaches.
var (
	// SitCursorSaved: a renewal or an outcome stored a Cursor.
	SitCursorSaved = newSituation("cursor-saved")
	// SitCursorStaleFenced: a Cursor sent by a stale Attempt was kept out.
	SitCursorStaleFenced = newSituation("cursor-stale-fenced")
)

// cursorFor returns the Cursor the handler of l saved to go with operation
// op, or nil if it saved none (chance p).
func (w *world) cursorFor(l job.Lease, op node.OpID, p float64) []byte {
	d := newDraw(w.sc.Seed, tagCursor, uint64(l.ID), uint64(l.Attempt), uint64(op))
	if !d.chance(p) {
		return nil
	}
	return fmt.Appendf(nil, "job %d attempt %d op %d", l.ID, l.Attempt, op)
}

// renewCursors returns the Cursors renewal c carries, at most one per
// Lease.
func (w *world) renewCursors(c node.Renew) []store.CursorSave {
	var out []store.CursorSave
	for i, l := range c.Leases {
		if v := w.cursorFor(l, c.Op, cursorRenewChance); v != nil && !containsLease(c.Leases[:i], l) {
			out = append(out, store.CursorSave{Lease: l, Value: v})
		}
	}
	return out
}

// reportCursors returns the Cursors report c's outcomes carry, nil for an
// outcome that carries none.
func (w *world) reportCursors(c node.Report) [][]byte {
	out := make([][]byte, len(c.Outcomes))
	for i, o := range c.Outcomes {
		out[i] = w.cursorFor(o.Lease, c.Op, cursorReportChance)
	}
	return out
}

func containsLease(ls []job.Lease, l job.Lease) bool {
	for _, x := range ls {
		if x == l {
			return true
		}
	}
	return false
}

// withCursors makes cl send the Cursors the handlers saved for command c.
func (w *world) withCursors(cl *node.Caller, c node.StoreCommand) {
	switch c := c.(type) {
	case node.Renew:
		cursors := w.renewCursors(c)
		cl.Cursors = func([]job.Lease) []store.CursorSave { return cursors }
	case node.Report:
		cursors := w.reportCursors(c)
		next := 0
		cl.Detail = func(o *store.Outcome) {
			// The Caller joins the outcomes in order, once each.
			o.Cursor = cursors[next]
			next++
		}
	}
}

// cursorSent is one Cursor a call carried.
type cursorSent struct {
	lease job.Lease
	value []byte
}

// cursorOracle is the cursor-fenced oracle (see above).
type cursorOracle struct {
	want map[job.ID]job.Cursor
	sent []cursorSent
	held []bool
}

func (o *cursorOracle) before(w *world, n *simNode, c node.StoreCommand) {
	o.sent = o.sent[:0]
	switch c := c.(type) {
	case node.Renew:
		for _, s := range w.renewCursors(c) {
			o.sent = append(o.sent, cursorSent{s.Lease, s.Value})
		}
	case node.Report:
		first := make(map[job.Lease]bool, len(c.Outcomes))
		for i, v := range w.reportCursors(c) {
			// A repeat of a Lease in one report finds it no longer held.
			if l := c.Outcomes[i].Lease; v != nil && !first[l] {
				o.sent = append(o.sent, cursorSent{l, v})
			}
			first[c.Outcomes[i].Lease] = true
		}
	}
	if len(o.sent) == 0 {
		o.held = nil
		return
	}
	leases := make([]job.Lease, len(o.sent))
	for i, s := range o.sent {
		leases[i] = s.lease
	}
	o.held = w.readHeld(n.worker, leases)
}

func (o *cursorOracle) after(w *world, n *simNode, _ *op, c node.StoreCommand, _ *node.Reply) {
	if len(o.sent) == 0 {
		return
	}
	if o.want == nil {
		o.want = make(map[job.ID]job.Cursor)
	}
	for i, s := range o.sent {
		if o.held[i] {
			o.want[s.lease.ID] = job.Cursor{Attempt: s.lease.Attempt, Value: s.value}
			w.cov.hit(SitCursorSaved)
		} else {
			w.cov.hit(SitCursorStaleFenced)
		}
	}
	for _, s := range o.sent {
		id := s.lease.ID
		j, err := w.st.JobGet(w.ctx, id)
		if err != nil && int(id) <= len(w.byID) && w.purgedOK(w.byID[id-1], err) {
			continue
		}
		if err != nil {
			w.failf(ClassSafety, InvStoreError, "read job %d: %v", id, err)
			continue
		}
		want, saved := o.want[id]
		switch got := j.Cursor; {
		case !saved && got == nil:
		case !saved:
			w.failf(ClassSafety, InvCursorFenced, "after %s by %s, job %d holds the Cursor %q of Attempt %d, but no Attempt that held its Lease saved one",
				c, n.worker, id, got.Value, got.Attempt)
		case got == nil || got.Attempt != want.Attempt || !bytes.Equal(got.Value, want.Value):
			w.failf(ClassSafety, InvCursorFenced, "after %s by %s, job %d holds the Cursor %s, want %q of Attempt %d (the last one saved under a held Lease)",
				c, n.worker, id, describeCursor(got), want.Value, want.Attempt)
		}
	}
}

func describeCursor(c *job.Cursor) string {
	if c == nil {
		return "none"
	}
	return fmt.Sprintf("%q of Attempt %d", c.Value, c.Attempt)
}

func init() {
	registerOracle(oracleDef{
		name:       InvCursorFenced,
		situations: []Situation{SitCursorSaved, SitCursorStaleFenced},
		new:        func() oracle { return new(cursorOracle) },
	})
}
