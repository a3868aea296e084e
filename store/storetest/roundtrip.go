package storetest

import (
	"bytes"
	"testing"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// runRoundTrip runs the data round trips a SQL adapter can get wrong and the
// other groups do not pin down: a claim hands the worker the whole job (the
// handler needs its payload and Tags), payloads are opaque bytes (not text),
// an empty Job Output is still an output, and names and Tags keep every
// Unicode character. Run calls it.
func runRoundTrip(t *testing.T, newStore func(t *testing.T) Harness) {
	t.Helper()
	t.Run("RoundTrip", func(t *testing.T) { testRoundTrip(t, &suite{newStore: newStore}) })
}

func testRoundTrip(t *testing.T, s *suite) {
	// Worker.JobClaim "returns them": the claimed job is the whole stored
	// row after the claim — payload, Tags, Wire Name, attempt ceiling and
	// times included — exactly what JobGet then reads.
	s.run(t, "ClaimReturnsWholeJobs", func(t *testing.T, e *env) {
		nj := newJob("q")
		nj.WireName = "roundtrip.whole"
		nj.Payload = []byte(`{"to":"ada@example.com"}`)
		nj.Tags = []job.Tag{job.Keyed("tenant", "acme"), job.Label("urgent")}
		nj.MaxAttempts = 4
		id := e.insert(nj, newJob("q"))[0]
		jobs := e.claim(w1, 2, "q")
		if len(jobs) != 2 || jobs[0].ID != id {
			t.Fatalf("claimed %v, want job %d first of 2", idsOf(jobs), id)
		}
		for _, j := range jobs {
			if d := jobDiff(e.get(j.ID), j); d != "" {
				t.Fatalf("job %d: JobClaim and JobGet disagree (-get +claim):\n%s", j.ID, d)
			}
		}
		j := jobs[0]
		if !bytes.Equal(j.Payload, nj.Payload) || len(j.Tags) != 2 || j.WireName != nj.WireName || j.MaxAttempts != 4 {
			t.Fatalf("claimed job %+v lacks what was inserted: %+v", j, nj)
		}
	})

	// NewJob.Payload is "opaque to the store": any bytes, including NUL and
	// invalid UTF-8, come back unchanged from JobGet and JobClaim.
	s.run(t, "PayloadIsOpaqueBytes", func(t *testing.T, e *env) {
		payload := []byte{0x00, 0xff, 0xfe, 'a', 0x00, 0xc3, 0x28, '\n', 0x7f}
		nj := newJob("q")
		nj.Payload = payload
		id := e.insert(nj)[0]
		if got := e.get(id).Payload; !bytes.Equal(got, payload) {
			t.Fatalf("JobGet payload = %x, want %x", got, payload)
		}
		if got := e.claimOne(w1, "q").Payload; !bytes.Equal(got, payload) {
			t.Fatalf("JobClaim payload = %x, want %x", got, payload)
		}
	})

	// Outcome.Output is "nil when none": a non-nil empty output is an
	// output, and storing it must not fail the report (a SQL adapter may
	// read it back as empty or nil).
	s.run(t, "EmptyOutputApplies", func(t *testing.T, e *env) {
		e.insertN("q", 1)
		j := e.claimOne(w1, "q")
		o := succeeded(j)
		o.Output = []byte{}
		e.reportApplied(w1, o)
		e.wantState(j.ID, job.StateSucceeded)
		out, err := e.s.JobOutput(e.ctx, j.ID)
		if err != nil || len(out) != 0 {
			t.Fatalf("JobOutput = %q, %v; want empty", out, err)
		}
	})

	// A Queue name, a Wire Name and Tags may hold any valid UTF-8
	// (store.ValidateName, job.Tag.Validate): they round-trip unchanged and
	// a claim and a filter match them exactly.
	s.run(t, "UnicodeNames", func(t *testing.T, e *env) {
		queue, wire := "файлы-é-🚀", "邮件.发送"
		tags := []job.Tag{job.Label("日本語"), job.Keyed("clé", "valeur—ü")}
		nj := newJob(queue)
		nj.WireName = wire
		nj.Tags = tags
		id := e.insert(nj, newJob("files-e"))[0]
		got := e.get(id)
		if got.Queue != queue || got.WireName != wire {
			t.Fatalf("stored Queue %q, Wire Name %q; want %q, %q", got.Queue, got.WireName, queue, wire)
		}
		if want := job.NormalizeTags(tags); len(got.Tags) != len(want) || got.Tags[0] != want[0] || got.Tags[1] != want[1] {
			t.Fatalf("Tags = %v, want %v", got.Tags, want)
		}
		if _, ok := e.queueInfo(queue); !ok {
			t.Fatalf("QueueList does not list %q", queue)
		}
		list, err := e.s.JobList(e.ctx, store.JobListParams{JobFilter: store.JobFilter{Queue: queue, WireName: wire}})
		if err != nil || len(list) != 1 || list[0].ID != id {
			t.Fatalf("JobList(queue %q, wire name %q) = %v, %v; want job %d", queue, wire, idsOf(list), err, id)
		}
		if j := e.claimOne(w1, queue); j.ID != id {
			t.Fatalf("claimed %d from %q, want %d", j.ID, queue, id)
		}
	})

	// The Failure Detail is opaque text recorded as given — several lines,
	// any Unicode — on the failing Attempt's Transition Log entry.
	s.run(t, "FailureDetailKeptAsGiven", func(t *testing.T, e *env) {
		e.insertN("q", 1)
		j := e.claimOne(w1, "q")
		o := decide(j, core.ResultFailed, 0)
		o.FailureDetail = "panic: ünïcode ✗\n\ngoroutine 1 [running]:\n\tmain.go:12 +0x1d\n"
		e.reportApplied(w1, o)
		log, err := e.s.JobTransitions(e.ctx, j.ID)
		if err != nil || len(log) == 0 {
			t.Fatalf("Transitions = %v, %v", log, err)
		}
		if last := log[len(log)-1]; last.FailureDetail != o.FailureDetail {
			t.Fatalf("Failure Detail = %q, want %q", last.FailureDetail, o.FailureDetail)
		}
	})
}
