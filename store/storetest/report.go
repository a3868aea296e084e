package storetest

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

func testReport(t *testing.T, s *suite) {
	// OutcomeReport: "An applied row, atomically: moves the job to the
	// outcome's state"; job.Job.FinalizedAt: "when the job reached a
	// terminal state".
	s.run(t, "Succeeded", func(t *testing.T, e *env) {
		e.insertN("q", 1)
		j := e.claimOne(w1, "q")
		before := e.now()
		e.reportApplied(w1, succeeded(j))
		after := e.now()
		got := e.wantState(j.ID, job.StateSucceeded)
		e.within("FinalizedAt", got.FinalizedAt, before, after)
		if got.Attempt != 1 || got.RetryCause != job.RetryCauseNone {
			t.Fatalf("succeeded job: Attempt %d, Retry Cause %q; want 1, none", got.Attempt, got.RetryCause)
		}
		e.claimNone(w1, "q")
	})

	// Every terminal outcome the Core decides applies: Dead-Lettered at the
	// ceiling (glossary, Dead-Lettered), Quarantined when unroutable
	// (glossary, Quarantined), Dead-Lettered on a permanent failure.
	s.run(t, "TerminalOutcomes", func(t *testing.T, e *env) {
		cases := []struct {
			job    store.NewJob
			result core.Result
			want   job.State
		}{
			{withMax("q", 1), core.ResultFailed, job.StateDeadLettered},
			{withMax("q", 5), core.ResultFailedPermanently, job.StateDeadLettered},
			{withMax("q", 5), core.ResultUnroutable, job.StateQuarantined},
		}
		for _, c := range cases {
			id := e.insert(c.job)[0]
			j := e.claimOne(w1, "q")
			if j.ID != id {
				t.Fatalf("claimed %d, want %d", j.ID, id)
			}
			e.reportApplied(w1, decide(j, c.result, time.Hour))
			got := e.wantState(id, c.want)
			if got.FinalizedAt.IsZero() {
				t.Fatalf("%s job has no FinalizedAt", c.want)
			}
		}
		e.claimNone(w1, "q")
	})

	// The package doc, The fence: "A store applies it only if the job is
	// still Running under exactly that worker and Attempt; otherwise the
	// write mutates nothing and is reported as stale." By worker.
	s.run(t, "StaleWrongWorker", func(t *testing.T, e *env) {
		e.insertN("q", 1)
		j := e.claimOne(w1, "q")
		e.reportStale(w2, succeeded(j))
		e.reportStale(w2, failed(j, time.Hour))
		e.reportApplied(w1, succeeded(j))
	})

	// The fence, by Attempt.
	s.run(t, "StaleWrongAttempt", func(t *testing.T, e *env) {
		e.insertN("q", 1)
		j := e.claimOne(w1, "q")
		for _, a := range []job.Attempt{0, 2} {
			o := succeeded(j)
			o.Lease.Attempt = a
			e.reportStale(w1, o)
		}
		e.reportApplied(w1, succeeded(j))
	})

	// Glossary, Effect-Once: the outcome of an Attempt applies once; a
	// repeated report is stale.
	s.run(t, "StaleWhenRepeated", func(t *testing.T, e *env) {
		e.insertN("q", 2)
		jobs := e.claim(w1, 2, "q")
		e.reportApplied(w1, failed(jobs[0], time.Hour))
		e.reportStale(w1, failed(jobs[0], time.Hour))
		e.reportStale(w1, succeeded(jobs[0]))
		e.reportApplied(w1, succeeded(jobs[1]))
		e.reportStale(w1, succeeded(jobs[1]))
	})

	// Glossary, Effect-Once and Node Isolation: "a stale outcome from a node
	// that was isolated past its lease expiry mutates nothing" — after
	// another worker claimed the job again.
	s.run(t, "StaleAfterExpiryAndReclaim", func(t *testing.T, e *env) {
		e.needAdvance()
		e.insertN("q", 1)
		first := e.claimOne(w1, "q")
		e.advance(lease + time.Second)
		e.expire(0, "q")
		second := e.claimOne(w2, "q")
		if second.Attempt != 2 {
			t.Fatalf("reclaimed at Attempt %d, want 2", second.Attempt)
		}
		e.reportStale(w1, succeeded(first))
		e.reportStale(w1, failed(first, 0))
		e.reportApplied(w2, succeeded(second))
	})

	// The same race when the worker that lost the Lease claims the job again
	// itself: only the Attempt tells its two Leases apart.
	s.run(t, "StaleAfterExpiryAndReclaimBySameWorker", func(t *testing.T, e *env) {
		e.needAdvance()
		e.insertN("q", 1)
		first := e.claimOne(w1, "q")
		e.advance(lease + time.Second)
		e.expire(0, "q")
		second := e.claimOne(w1, "q")
		e.reportStale(w1, succeeded(first))
		e.renewStatus(w1, first.Lease(), store.RenewLost)
		e.wantState(second.ID, job.StateRunning)
		e.reportApplied(w1, failed(second, time.Hour))
	})

	// OutcomeReport: "a retry becomes due at the store's now + RetryDelay";
	// the Attempt stays as charged (job.Attempt: "never reuses a number");
	// the Retry Cause is handler failed (glossary, Retry Cause).
	s.run(t, "RetryDueAfterDelay", func(t *testing.T, e *env) {
		e.insertN("q", 1)
		j := e.claimOne(w1, "q")
		before := e.now()
		e.reportApplied(w1, failed(j, time.Hour))
		after := e.now()
		got := e.wantState(j.ID, job.StateScheduled)
		e.within("ScheduledAt", got.ScheduledAt, before.Add(time.Hour), after.Add(time.Hour))
		if got.Attempt != 1 || got.RetryCause != job.RetryCauseHandlerFailed || !got.FinalizedAt.IsZero() {
			t.Fatalf("retried job: Attempt %d, Retry Cause %q, FinalizedAt %v; want 1, handler_failed, zero",
				got.Attempt, got.RetryCause, got.FinalizedAt)
		}
		if !got.Retrying() {
			t.Fatal("a Scheduled job with a Retry Cause is not in the Retrying view")
		}
		e.claimNone(w1, "q")
		if e.h.Advance == nil {
			return
		}
		e.advance(time.Hour - time.Second)
		e.claimNone(w1, "q")
		e.advance(time.Second)
		again := e.claimOne(w1, "q")
		if again.ID != j.ID || again.Attempt != 2 {
			t.Fatalf("claimed %s, want %d@2", again.Lease(), j.ID)
		}
	})

	// A retry with no delay is due at once.
	s.run(t, "RetryWithoutDelay", func(t *testing.T, e *env) {
		e.insertN("q", 1)
		j := e.claimOne(w1, "q")
		e.reportApplied(w1, failed(j, 0))
		if again := e.claimOne(w1, "q"); again.Lease() != (job.Lease{ID: j.ID, Attempt: 2}) {
			t.Fatalf("claimed %s, want %d@2", again.Lease(), j.ID)
		}
	})

	// Glossary, Retry Cause: "Sticky: a claim ... and a terminal outcome
	// leave it as it is (a terminal job keeps it as a record of its last
	// retry)"; OutcomeReport "sets the Retry Cause if the outcome carries one
	// and keeps it otherwise".
	s.run(t, "RetryCauseSticky", func(t *testing.T, e *env) {
		e.insertN("q", 2)
		jobs := e.claim(w1, 2, "q")
		for _, j := range jobs {
			e.reportApplied(w1, failed(j, 0))
		}
		again := e.claim(w1, 2, "q")
		if len(again) != 2 {
			t.Fatalf("claimed %d retried jobs, want 2", len(again))
		}
		for _, j := range again {
			if j.RetryCause != job.RetryCauseHandlerFailed {
				t.Fatalf("claimed job %d has Retry Cause %q, want handler_failed", j.ID, j.RetryCause)
			}
			if j.Retrying() {
				t.Fatalf("Running job %d is in the Retrying view", j.ID)
			}
		}
		e.reportApplied(w1, succeeded(again[0]))
		e.reportApplied(w1, decide(again[1], core.ResultFailedPermanently, 0))
		for _, j := range again {
			if got := e.get(j.ID); got.RetryCause != job.RetryCauseHandlerFailed {
				t.Fatalf("terminal job %d (%s) has Retry Cause %q, want handler_failed kept", j.ID, got.State, got.RetryCause)
			}
		}
	})

	// Retry Cause: the cause names the last problem — a lease expiry, then a
	// handler failure.
	s.run(t, "RetryCauseFollowsLastProblem", func(t *testing.T, e *env) {
		e.needAdvance()
		e.insertN("q", 1)
		e.claimOne(w1, "q")
		e.advance(lease + time.Second)
		e.expire(0, "q")
		j := e.claimOne(w1, "q")
		if j.RetryCause != job.RetryCauseLeaseExpired {
			t.Fatalf("Retry Cause after expiry = %q, want lease_expired", j.RetryCause)
		}
		e.reportApplied(w1, failed(j, 0))
		if got := e.get(j.ID).RetryCause; got != job.RetryCauseHandlerFailed {
			t.Fatalf("Retry Cause after a failed Attempt = %q, want handler_failed", got)
		}
	})

	// OutcomeReport "frees the Queue's Concurrency-Limit slot"; glossary,
	// Concurrency Limit: "A slot is released on terminal state".
	s.run(t, "FreesSlot", func(t *testing.T, e *env) {
		e.setLimit("q", 1)
		e.insertN("q", 3)
		first := e.claimOne(w1, "q")
		e.claimNone(w2, "q")
		e.reportApplied(w1, succeeded(first))
		if got := e.running("q"); got != 0 {
			t.Fatalf("Running = %d after the outcome, want 0", got)
		}
		second := e.claimOne(w2, "q")
		e.reportApplied(w2, failed(second, time.Hour))
		e.claimOne(w1, "q")
	})

	// OutcomeReport "merges the Tag delta"; job.MergeTags.
	s.run(t, "MergesTagDelta", func(t *testing.T, e *env) {
		nj := newJob("q")
		nj.Tags = []job.Tag{job.Label("b"), job.Keyed("tenant", "acme")}
		e.insert(nj)
		j := e.claimOne(w1, "q")
		o := succeeded(j)
		o.TagDelta = []job.Tag{job.Label("a"), job.Label("b"), job.Keyed("region", "eu")}
		e.reportApplied(w1, o)
		want := job.MergeTags(nj.Tags, o.TagDelta)
		if got := e.get(j.ID).Tags; !slices.Equal(got, want) {
			t.Fatalf("Tags = %v, want %v", got, want)
		}
	})

	// A stale outcome discards its Tag delta, Job Output and Failure Detail
	// (glossary, Job Output: "a fenced-out outcome discards it").
	s.run(t, "StaleDiscardsData", func(t *testing.T, e *env) {
		e.insertN("q", 1)
		j := e.claimOne(w1, "q")
		o := succeeded(j)
		o.TagDelta = []job.Tag{job.Label("split-brain")}
		o.Output = []byte("split-brain")
		e.reportStale(w2, o)
		{
			if out, err := e.s.JobOutput(e.ctx, j.ID); err != nil || out != nil {
				t.Fatalf("JobOutput after a stale outcome = %q, %v; want none", out, err)
			}
		}
	})

	// OutcomeReport "stores Job Output".
	s.run(t, "StoresOutput", func(t *testing.T, e *env) {
		e.insertN("q", 1)
		j := e.claimOne(w1, "q")
		o := succeeded(j)
		o.Output = []byte(`{"sent":true}`)
		e.reportApplied(w1, o)
		out, err := e.s.JobOutput(e.ctx, j.ID)
		if err != nil || !bytes.Equal(out, o.Output) {
			t.Fatalf("JobOutput = %q, %v; want %q", out, err, o.Output)
		}
	})

	// OutcomeReport "records the Transition Log entry with its Failure
	// Detail"; glossary, Transition Log: "each entry a (timestamp, resulting
	// state, Attempt number, optional Failure Detail)".
	s.run(t, "TransitionLog", func(t *testing.T, e *env) {
		e.insertN("q", 1)
		j := e.claimOne(w1, "q")
		o := failed(j, 0)
		o.FailureDetail = "boom: connection refused"
		e.reportApplied(w1, o)
		j = e.claimOne(w1, "q")
		before := e.now()
		e.reportApplied(w1, succeeded(j))
		after := e.now()
		log, err := e.s.JobTransitions(e.ctx, j.ID)
		if err != nil {
			t.Fatalf("Transitions: %v", err)
		}
		want := []store.Transition{
			{State: job.StateScheduled, Attempt: 0},
			{State: job.StateRunning, Attempt: 1},
			{State: job.StateScheduled, Attempt: 1, FailureDetail: o.FailureDetail},
			{State: job.StateRunning, Attempt: 2},
			{State: job.StateSucceeded, Attempt: 2},
		}
		if len(log) != len(want) {
			t.Fatalf("Transition Log has %d entries, want %d: %+v", len(log), len(want), log)
		}
		for i, w := range want {
			g := log[i]
			if g.State != w.State || g.Attempt != w.Attempt || g.FailureDetail != w.FailureDetail {
				t.Fatalf("entry %d = %s@%d %q, want %s@%d %q", i, g.State, g.Attempt, g.FailureDetail, w.State, w.Attempt, w.FailureDetail)
			}
			if i > 0 && g.Seq <= log[i-1].Seq || g.Seq <= 0 {
				t.Fatalf("entry %d has Seq %d after %d: want a positive Seq, increasing along the log", i, g.Seq, log[max(i-1, 0)].Seq)
			}
			if i > 0 && g.At.Before(log[i-1].At) {
				t.Fatalf("entry %d is older than entry %d", i, i-1)
			}
		}
		e.within("last entry's At", log[len(log)-1].At, before, after)
	})

	// The package doc, Batches: "Rows in a batch are independent: one stale
	// outcome does not stop the others"; results "are in input order".
	s.run(t, "BatchRowsIndependent", func(t *testing.T, e *env) {
		e.insertN("q", 3)
		jobs := e.claim(w1, 3, "q")
		stale := succeeded(jobs[1])
		stale.Lease.Attempt = 7
		res := e.report(w1, succeeded(jobs[0]), stale, failed(jobs[2], time.Hour), succeeded(jobs[0]))
		want := []bool{true, false, true, false}
		for i, r := range res {
			if r.Applied != want[i] {
				t.Fatalf("result %d (%s) Applied = %v, want %v", i, r.Lease, r.Applied, want[i])
			}
		}
		e.wantState(jobs[0].ID, job.StateSucceeded)
		e.wantState(jobs[1].ID, job.StateRunning)
		e.wantState(jobs[2].ID, job.StateScheduled)
	})

	// A report for a job the store never had is stale.
	s.run(t, "UnknownJobStale", func(t *testing.T, e *env) {
		o := store.Outcome{Outcome: core.Outcome{Lease: job.Lease{ID: 987654, Attempt: 1}, State: job.StateSucceeded, Via: core.ViaSucceed}}
		if res := e.report(w1, o); res[0].Applied {
			t.Fatal("an outcome for an unknown job was applied")
		}
	})
}
