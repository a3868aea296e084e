package storetest

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// renewCursors renews leases as worker, carrying cursors.
func (e *env) renewCursors(worker job.WorkerID, cursors []store.CursorSave, leases ...job.Lease) []store.RenewResult {
	e.t.Helper()
	res, err := e.s.LeaseRenew(e.ctx, store.RenewParams{Worker: worker, Leases: leases, LeaseDuration: lease, Cursors: cursors})
	if err != nil {
		e.t.Fatalf("LeaseRenew with cursors: %v", err)
	}
	return res
}

// wantCursor requires got to be a Cursor saved by Attempt attempt with
// value want, or none when want is nil.
func (e *env) wantCursor(where string, got *job.Cursor, attempt job.Attempt, want []byte) {
	e.t.Helper()
	switch {
	case want == nil && got == nil:
		return
	case want == nil:
		e.t.Fatalf("%s: cursor %q of Attempt %d, want none", where, got.Value, got.Attempt)
	case got == nil:
		e.t.Fatalf("%s: no cursor, want %q of Attempt %d", where, want, attempt)
	case got.Attempt != attempt || !bytes.Equal(got.Value, want):
		e.t.Fatalf("%s: cursor %q of Attempt %d, want %q of Attempt %d", where, got.Value, got.Attempt, want, attempt)
	}
}

// testCursor checks the Cursor clauses of Worker.LeaseRenew ("Each of
// p.Cursors whose Lease it renews becomes the job's Cursor …; one whose
// Lease is lost changes nothing, so a Cursor from a stale Attempt is never
// stored. A Cursor over MaxCursorBytes fails the whole call") and of
// Worker.OutcomeReport ("stores the outcome's Cursor … A job's Cursor
// outlives every outcome, a lost Lease and a Relinquish alike").
func testCursor(t *testing.T, s *suite) {
	s.run(t, "NextAttemptReadsIt", func(t *testing.T, e *env) {
		e.insert(newJob("q"), newJob("q"))
		a := e.claimOne(w1, "q")
		b := e.claimOne(w1, "q")
		e.wantCursor("a new job", a.Cursor, 0, nil)
		lo := e.now()
		e.renewCursors(w1, []store.CursorSave{{Lease: a.Lease(), Value: []byte("row 10")}}, a.Lease(), b.Lease())
		hi := e.now()
		got := e.get(a.ID).Cursor
		e.wantCursor("after a renewal", got, a.Attempt, []byte("row 10"))
		e.within("cursor time", got.At, lo, hi)
		e.wantCursor("a job that saved none", e.get(b.ID).Cursor, 0, nil)

		// A later save replaces it; the outcome's own save is the last.
		e.renewCursors(w1, []store.CursorSave{{Lease: a.Lease(), Value: []byte("row 20")}}, a.Lease())
		o := failed(a, 0)
		o.Cursor = []byte("row 25")
		e.reportApplied(w1, o)
		again := e.claimOne(w2, "q")
		if again.ID != a.ID {
			t.Fatalf("claimed job %d, want the retried %d", again.ID, a.ID)
		}
		e.wantCursor("the next Attempt's claim", again.Cursor, a.Attempt, []byte("row 25"))
		list, err := e.s.JobList(e.ctx, store.JobListParams{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range list {
			if j.ID == a.ID {
				e.wantCursor("JobList", j.Cursor, a.Attempt, []byte("row 25"))
			}
		}
		// A succeeded outcome keeps the Cursor as it was when it carries
		// none.
		e.reportApplied(w2, succeeded(again))
		e.wantCursor("after success", e.get(a.ID).Cursor, a.Attempt, []byte("row 25"))
	})

	s.run(t, "StaleAttemptRefused", func(t *testing.T, e *env) {
		e.needAdvance()
		e.insert(newJob("q"))
		first := e.claimOne(w1, "q")
		e.renewCursors(w1, []store.CursorSave{{Lease: first.Lease(), Value: []byte("first")}}, first.Lease())
		e.advance(lease + time.Second)
		if got := e.expire(0, "q"); len(got) != 1 {
			t.Fatalf("LeaseExpire ended %v, want the one job", got)
		}
		second := e.claimOne(w2, "q")
		e.renewCursors(w2, []store.CursorSave{{Lease: second.Lease(), Value: []byte("second")}}, second.Lease())

		// The first Attempt's late writes, by renewal and by outcome, are
		// fenced out: the second Attempt's Cursor stands.
		res := e.renewCursors(w1, []store.CursorSave{{Lease: first.Lease(), Value: []byte("stale")}}, first.Lease())
		if res[0].Status != store.RenewLost {
			t.Fatalf("the stale Attempt's renewal: %v, want lost", res[0].Status)
		}
		// The same worker under a stale Attempt is no better.
		stale := job.Lease{ID: first.ID, Attempt: first.Attempt}
		if res := e.renewCursors(w2, []store.CursorSave{{Lease: stale, Value: []byte("stale")}}, stale); res[0].Status != store.RenewLost {
			t.Fatalf("w2 renewing the old Attempt: %v, want lost", res[0].Status)
		}
		o := failed(first, 0)
		o.Cursor = []byte("stale outcome")
		e.reportStale(w1, o)
		e.wantCursor("after stale writes", e.get(first.ID).Cursor, second.Attempt, []byte("second"))
	})

	s.run(t, "SurvivesLostLease", func(t *testing.T, e *env) {
		e.needAdvance()
		e.insert(newJob("q"), newJob("q"))
		a := e.claimOne(w1, "q")
		b := e.claimOne(w1, "q")
		e.renewCursors(w1, []store.CursorSave{{Lease: a.Lease(), Value: []byte("a")}, {Lease: b.Lease(), Value: []byte("b")}}, a.Lease(), b.Lease())
		// a's Lease lapses and is expired; b is handed back.
		if got := e.relinquish(w1, b.Lease()); len(got) != 1 {
			t.Fatalf("LeaseRelinquish handed back %v, want b", got)
		}
		e.advance(lease + time.Second)
		if got := e.expire(0, "q"); len(got) != 1 {
			t.Fatalf("LeaseExpire ended %v, want a", got)
		}
		saved := map[job.ID]job.Job{a.ID: a, b.ID: b}
		values := map[job.ID][]byte{a.ID: []byte("a"), b.ID: []byte("b")}
		got := e.claim(w2, 2, "q")
		if len(got) != 2 {
			t.Fatalf("claimed %v, want both jobs again", idsOf(got))
		}
		for _, j := range got {
			e.wantCursor("claim after a lost Lease", j.Cursor, saved[j.ID].Attempt, values[j.ID])
		}
	})

	s.run(t, "SizeLimit", func(t *testing.T, e *env) {
		e.insert(newJob("q"))
		j := e.claimOne(w1, "q")
		l := j.Lease()
		atLimit := bytes.Repeat([]byte{0xff}, store.MaxCursorBytes)
		e.renewCursors(w1, []store.CursorSave{{Lease: l, Value: atLimit}}, l)
		e.wantCursor("a cursor at the limit", e.get(j.ID).Cursor, j.Attempt, atLimit)

		over := append(bytes.Clone(atLimit), 0)
		bad := map[string][]store.CursorSave{
			"over the limit":    {{Lease: l, Value: over}},
			"no value":          {{Lease: l}},
			"lease not renewed": {{Lease: job.Lease{ID: j.ID, Attempt: j.Attempt + 1}, Value: []byte("x")}},
			"two cursors":       {{Lease: l, Value: []byte("x")}, {Lease: l, Value: []byte("y")}},
		}
		for name, c := range bad {
			_, err := e.s.LeaseRenew(e.ctx, store.RenewParams{Worker: w1, Leases: []job.Lease{l}, LeaseDuration: lease, Cursors: c})
			if !errors.Is(err, store.ErrInvalidParams) {
				t.Errorf("%s: LeaseRenew error = %v, want ErrInvalidParams", name, err)
			}
		}
		o := succeeded(j)
		o.Cursor = over
		if _, err := e.s.OutcomeReport(e.ctx, store.ReportParams{Worker: w1, Outcomes: []store.Outcome{o}}); !errors.Is(err, store.ErrInvalidParams) {
			t.Errorf("an outcome with a cursor over the limit: error = %v, want ErrInvalidParams", err)
		}
		got := e.wantState(j.ID, job.StateRunning)
		e.wantCursor("after refused saves", got.Cursor, j.Attempt, atLimit)
	})
}
