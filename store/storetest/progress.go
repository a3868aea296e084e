package storetest

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// renewWith renews leases as worker, carrying progress.
func (e *env) renewWith(worker job.WorkerID, progress []store.ProgressReport, leases ...job.Lease) []store.RenewResult {
	e.t.Helper()
	res, err := e.s.LeaseRenew(e.ctx, store.RenewParams{Worker: worker, Leases: leases, LeaseDuration: lease, Progress: progress})
	if err != nil {
		e.t.Fatalf("LeaseRenew with progress: %v", err)
	}
	return res
}

// wantProgress requires job id's progress to be want (nil: none), its time
// within [lo, hi] when set.
func (e *env) wantProgress(where string, got *job.Progress, want *job.Progress) {
	e.t.Helper()
	switch {
	case want == nil && got == nil:
		return
	case want == nil || got == nil:
		e.t.Fatalf("%s: progress %+v, want %+v", where, got, want)
	case got.Attempt != want.Attempt || got.Fraction != want.Fraction || got.Note != want.Note:
		e.t.Fatalf("%s: progress %+v, want %+v", where, *got, *want)
	}
}

// testProgress checks the progress clause of Worker.LeaseRenew: "Each of
// p.Progress whose Lease it renews (renewed or cancel requested) becomes
// the job's progress, stamped with the store's now, atomically with the
// renewal; one whose Lease is lost changes nothing (the same (worker,
// Attempt) fence as every write)."
func testProgress(t *testing.T, s *suite) {
	s.run(t, "StoredUnderTheFence", func(t *testing.T, e *env) {
		e.insert(newJob("q"), newJob("q"))
		a := e.claimOne(w1, "q")
		b := e.claimOne(w1, "q")
		if a.Progress != nil {
			t.Fatalf("a new job has progress %+v", *a.Progress)
		}
		lo := e.now()
		e.renewWith(w1, []store.ProgressReport{{Lease: a.Lease(), Fraction: 0.5, Note: "half é"}}, a.Lease(), b.Lease())
		hi := e.now()
		got := e.get(a.ID).Progress
		e.wantProgress("after a renewal", got, &job.Progress{Attempt: a.Attempt, Fraction: 0.5, Note: "half é"})
		e.within("progress time", got.At, lo, hi)
		e.wantProgress("a job without a report", e.get(b.ID).Progress, nil)

		// Another worker's renewal is lost and stores nothing.
		res := e.renewWith(w2, []store.ProgressReport{{Lease: a.Lease(), Fraction: 1, Note: "stolen"}}, a.Lease())
		if res[0].Status != store.RenewLost {
			t.Fatalf("w2's renewal of w1's lease: %v, want lost", res[0].Status)
		}
		e.wantProgress("after a lost renewal", e.get(a.ID).Progress, &job.Progress{Attempt: a.Attempt, Fraction: 0.5, Note: "half é"})

		// A later report replaces it; the job's reads show it.
		e.renewWith(w1, []store.ProgressReport{{Lease: a.Lease(), Fraction: 0.9}}, a.Lease())
		want := &job.Progress{Attempt: a.Attempt, Fraction: 0.9}
		e.wantProgress("after a second renewal", e.get(a.ID).Progress, want)
		list, err := e.s.JobList(e.ctx, store.JobListParams{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range list {
			if j.ID == a.ID {
				e.wantProgress("JobList", j.Progress, want)
			}
		}

		// A retried job keeps the last Attempt's report, which names it,
		// until its next Attempt reports.
		e.reportApplied(w1, failed(e.get(a.ID), 0))
		again := e.claimOne(w2, "q")
		e.wantProgress("a claim after a retry", again.Progress, want)
		e.renewWith(w2, []store.ProgressReport{{Lease: again.Lease(), Fraction: 0.1}}, again.Lease())
		e.wantProgress("the next Attempt's report", e.get(a.ID).Progress, &job.Progress{Attempt: again.Attempt, Fraction: 0.1})
	})

	s.run(t, "InvalidRefused", func(t *testing.T, e *env) {
		e.insert(newJob("q"))
		j := e.claimOne(w1, "q")
		l := j.Lease()
		bad := map[string][]store.ProgressReport{
			"fraction over 1":   {{Lease: l, Fraction: 1.5}},
			"negative fraction": {{Lease: l, Fraction: -0.1}},
			"NaN":               {{Lease: l, Fraction: math.NaN()}},
			"note too long":     {{Lease: l, Note: strings.Repeat("x", store.MaxProgressNoteBytes+1)}},
			"NUL in note":       {{Lease: l, Note: "a\x00b"}},
			"lease not renewed": {{Lease: job.Lease{ID: j.ID, Attempt: j.Attempt + 1}}},
			"two reports":       {{Lease: l}, {Lease: l}},
		}
		for name, p := range bad {
			_, err := e.s.LeaseRenew(e.ctx, store.RenewParams{Worker: w1, Leases: []job.Lease{l}, LeaseDuration: lease, Progress: p})
			if !errors.Is(err, store.ErrInvalidParams) {
				t.Errorf("%s: LeaseRenew error = %v, want ErrInvalidParams", name, err)
			}
		}
		e.wantProgress("after refused renewals", e.get(j.ID).Progress, nil)
	})
}
