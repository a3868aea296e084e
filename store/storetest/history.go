package storetest

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// testHistory checks the Job History Policy and the Transition Log's bound
// (glossary, Transition Log: "capped per job life"; "a global Job History
// Policy (Off / Transitions / Transitions + Failure Detail) governs how much
// is recorded; on with detail by default").
func testHistory(t *testing.T, s *suite) {
	// lifecycle runs one job through a failed and a succeeded Attempt on st
	// and returns its id.
	lifecycle := func(e *env, st store.Store) job.ID {
		e.t.Helper()
		other := &env{t: e.t, h: e.h, s: st, ctx: e.ctx}
		id := other.insertN("q", 1)[0]
		j := other.claimOne(w1, "q")
		o := failed(j, 0)
		o.FailureDetail = "boom"
		other.reportApplied(w1, o)
		j = other.claimOne(w1, "q")
		o = succeeded(j)
		o.Output = []byte("out")
		other.reportApplied(w1, o)
		return id
	}
	policies := []struct {
		policy  store.HistoryPolicy
		entries int
		detail  string
	}{
		{store.HistoryTransitionsWithDetail, 5, "boom"},
		{store.HistoryTransitions, 5, ""},
		{store.HistoryOff, 0, ""},
	}
	for _, p := range policies {
		s.run(t, "Policy/"+p.policy.String(), func(t *testing.T, e *env) {
			st := e.h.WithHistory(p.policy)
			id := lifecycle(e, st)
			log, err := st.JobTransitions(e.ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if len(log) != p.entries {
				t.Fatalf("policy %s: %d entries, want %d: %+v", p.policy, len(log), p.entries, log)
			}
			if p.entries > 0 && log[2].FailureDetail != p.detail {
				t.Fatalf("policy %s: failed entry's detail %q, want %q", p.policy, log[2].FailureDetail, p.detail)
			}
			// Glossary, Job Output: "recording history Off must not erase it".
			if out, err := st.JobOutput(e.ctx, id); err != nil || !bytes.Equal(out, []byte("out")) {
				t.Fatalf("policy %s: JobOutput = %q, %v", p.policy, out, err)
			}
			if _, err := st.JobTransitions(e.ctx, 987654); err == nil {
				t.Fatalf("policy %s: JobTransitions(unknown job) did not fail", p.policy)
			}
		})
	}

	// The default store of the Harness records with detail.
	s.run(t, "DefaultIsWithDetail", func(t *testing.T, e *env) {
		id := lifecycle(e, e.s)
		if log := e.transitions(id); len(log) != 5 || log[2].FailureDetail != "boom" {
			t.Fatalf("default store's log %+v, want 5 entries with detail", log)
		}
	})

	// store.TransitionLogCap: "the log keeps the newest TransitionLogCap".
	// A job failing at once, Attempt after Attempt, outgrows the cap.
	s.run(t, "CappedPerJob", func(t *testing.T, e *env) {
		attempts := store.TransitionLogCap/2 + 10
		id := e.insert(withMax("q", attempts))[0]
		for a := 1; a <= attempts; a++ {
			j := e.claimOne(w1, "q")
			o := failed(j, 0)
			o.FailureDetail = "attempt " + strconv.Itoa(int(j.Attempt))
			e.reportApplied(w1, o)
		}
		e.wantState(id, job.StateDeadLettered)
		log := e.transitions(id)
		if len(log) != store.TransitionLogCap {
			t.Fatalf("Transition Log has %d entries, want the cap %d", len(log), store.TransitionLogCap)
		}
		last := log[len(log)-1]
		if last.Edge() != (core.Edge{From: job.StateRunning, To: job.StateDeadLettered, Via: core.ViaDeadLetter}) || int(last.Attempt) != attempts {
			t.Fatalf("newest entry %s @%d, want the dead-letter @%d", last.Edge(), last.Attempt, attempts)
		}
		// 1 + 2·attempts entries were written; the oldest were dropped.
		dropped := 1 + 2*attempts - store.TransitionLogCap
		first := log[0]
		wantAttempt := job.Attempt((dropped + 1) / 2)
		if first.Attempt != wantAttempt {
			t.Fatalf("oldest kept entry is %s @%d, want one of Attempt %d", first.Edge(), first.Attempt, wantAttempt)
		}
		for i := 1; i < len(log); i++ {
			if log[i].At.Before(log[i-1].At) || log[i].Attempt < log[i-1].Attempt {
				t.Fatalf("entries out of order at %d: %+v then %+v", i, log[i-1], log[i])
			}
		}
	})
}
