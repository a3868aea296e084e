package storetest

import (
	"bytes"
	"testing"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// ancestorOutput reads p.Ancestor's output for p.Job and fails the test on
// an error.
func (e *env) ancestorOutput(dependent, ancestor job.ID) store.AncestorOutput {
	e.t.Helper()
	out, err := e.s.JobAncestorOutput(e.ctx, store.AncestorOutputParams{Job: dependent, Ancestor: ancestor})
	if err != nil {
		e.t.Fatalf("JobAncestorOutput(%d reads %d): %v", dependent, ancestor, err)
	}
	return out
}

// workWithOutput claims one job of queue as w1 and reports it succeeded
// with output.
func (e *env) workWithOutput(queue string, output []byte) job.Job {
	e.t.Helper()
	j := e.claimOne(w1, queue)
	o := succeeded(j)
	o.Output = output
	e.reportApplied(w1, o)
	return j
}

// testOutput checks Job Output as Dependencies carry it (glossary, Job
// Output): "A job reads the output of its transitive Dependency ancestors
// on demand ... never a non-ancestor sibling's"; "Absence is a normal read
// result".
func testOutput(t *testing.T, s *suite) {
	// A chain a → b → c, a diamond below it, and a sibling: c reads a
	// (two generations up) and b; b succeeded without output, which reads
	// absent.
	s.run(t, "ReadsTransitiveAncestors", func(t *testing.T, e *env) {
		ids := e.insert(
			newJob("a"),                                               // 0
			child("b", onSuccess, store.InBatch(0)),                   // 1
			child("c", onSuccess, store.InBatch(1)),                   // 2
			child("s", onSuccess, store.InBatch(0)),                   // 3: sibling of b
			child("c", onSuccess, store.InBatch(2), store.InBatch(3)), // 4: below c and s
		)
		e.workWithOutput("a", []byte(`{"rows":3}`))
		e.work("b", core.ResultSucceeded)
		c := e.claimOne(w1, "c")
		if c.ID != ids[2] {
			t.Fatalf("claimed %d, want %d", c.ID, ids[2])
		}
		got := e.ancestorOutput(ids[2], ids[0])
		if !got.Present || !bytes.Equal(got.Output, []byte(`{"rows":3}`)) || got.State != job.StateSucceeded {
			t.Fatalf("c reads a = %+v, want present {\"rows\":3}, succeeded", got)
		}
		if got := e.ancestorOutput(ids[2], ids[1]); got.Present || got.Output != nil || got.State != job.StateSucceeded {
			t.Fatalf("c reads b (no output) = %+v, want absent, succeeded", got)
		}
		e.reportApplied(w1, succeeded(c))
		e.work("s", core.ResultSucceeded)
		if got := e.ancestorOutput(ids[4], ids[0]); !got.Present {
			t.Fatalf("the diamond's bottom reads its root = %+v, want present", got)
		}
	})

	// "Absence is a normal read result: a parent may have failed, been
	// Cancelled, or simply emitted nothing (on-any-terminal dependents
	// routinely run past non-success parents)."
	s.run(t, "FailedParentReadsAbsent", func(t *testing.T, e *env) {
		ids := e.insert(withMax("p", 1), newJob("p"), child("d", onAny, store.InBatch(0), store.InBatch(1)))
		e.work("p", core.ResultFailed)
		e.workWithOutput("p", []byte{})
		d := e.claimOne(w1, "d")
		got := e.ancestorOutput(d.ID, ids[0])
		if got.Present || got.Output != nil || got.State != job.StateDeadLettered {
			t.Fatalf("reading a dead-lettered parent = %+v, want absent, dead_lettered", got)
		}
		if got := e.ancestorOutput(d.ID, ids[1]); !got.Present || len(got.Output) != 0 {
			t.Fatalf("reading an empty output = %+v, want present and empty", got)
		}
	})

	// "never a non-ancestor sibling's": a sibling, a dependent, the job
	// itself, a job of another graph, an unknown id — each is refused.
	s.run(t, "NonAncestorRefused", func(t *testing.T, e *env) {
		ids := e.insert(
			newJob("a"),                             // 0
			child("b", onSuccess, store.InBatch(0)), // 1
			child("b", onSuccess, store.InBatch(0)), // 2: sibling of 1
			child("c", onSuccess, store.InBatch(1)), // 3: below 1
			newJob("x"),                             // 4: unrelated
		)
		e.workWithOutput("a", []byte("a"))
		e.workWithOutput("x", []byte("x"))
		for _, c := range []struct {
			name             string
			reader, ancestor job.ID
		}{
			{"a sibling", ids[1], ids[2]},
			{"a dependent", ids[1], ids[3]},
			{"a grandchild", ids[0], ids[3]},
			{"itself", ids[1], ids[1]},
			{"an unrelated job", ids[1], ids[4]},
			{"a job without parents", ids[4], ids[0]},
			{"an unknown id", ids[3], 987654},
			{"id zero", ids[3], 0},
		} {
			_, err := e.s.JobAncestorOutput(e.ctx, store.AncestorOutputParams{Job: c.reader, Ancestor: c.ancestor})
			e.wantErr("reading "+c.name, err, store.ErrNotAncestor)
		}
		_, err := e.s.JobAncestorOutput(e.ctx, store.AncestorOutputParams{Job: 987654, Ancestor: ids[0]})
		e.wantErr("an unknown reader", err, store.ErrNotFound)
	})

	testOutputWithoutHistory(t, s)
}

// testOutputWithoutHistory checks the glossary's Job Output: "It is
// independent of Job History Policy — unlike Failure Detail, output is
// functional data a dependent must read, so recording history Off must not
// erase it."
func testOutputWithoutHistory(t *testing.T, s *suite) {
	s.run(t, "KeptWithHistoryOff", func(t *testing.T, e *env) {
		off := &env{t: t, h: e.h, s: e.h.WithHistory(store.HistoryOff), ctx: e.ctx}
		ids := off.insert(newJob("a"), child("b", onSuccess, store.InBatch(0)))
		off.workWithOutput("a", []byte("kept"))
		b := off.claimOne(w1, "b")
		if got := off.ancestorOutput(b.ID, ids[0]); !got.Present || string(got.Output) != "kept" {
			t.Fatalf("reading the parent's output with history off = %+v, want present \"kept\"", got)
		}
		if out, err := off.s.JobOutput(off.ctx, ids[0]); err != nil || string(out) != "kept" {
			t.Fatalf("JobOutput with history off = %q, %v", out, err)
		}
	})
}
