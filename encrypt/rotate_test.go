package encrypt_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/encrypt"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// TestRotateUnderDrain rotates every channel from key k1 to k2 while a
// drain claims and completes the same jobs, then purges k1: every job
// still succeeded once, every payload, Job Output, Failure Detail and
// template opens with k2 alone, and the rows written before encryption
// was turned on are sealed too (acceptance 1, 4: "rotation under a running
// drain loses nothing").
func TestRotateUnderDrain(t *testing.T) {
	t.Parallel()
	const n = 300
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			o := b.open(t)
			k1 := ring(t, "k1")
			legacy := insert(t, o.raw, newJob("q", `{"legacy":0}`), newJob("q", `{"legacy":1}`))
			s1 := wrap(t, o.raw, k1)
			jobs := make([]store.NewJob, n)
			for i := range jobs {
				jobs[i] = newJob("q", fmt.Sprintf(`{"n":%d}`, i))
			}
			want := map[job.ID]string{legacy[0]: `{"legacy":0}`, legacy[1]: `{"legacy":1}`}
			for i, id := range insert(t, s1, jobs...) {
				want[id] = fmt.Sprintf(`{"n":%d}`, i)
			}
			if _, err := s1.ScheduleUpsert(ctx, store.ScheduleUpsertParams{Schedule: schedule("nightly", "template")}); err != nil {
				t.Fatal(err)
			}
			// A first Attempt of some jobs fails under k1, leaving Failure
			// Detail sealed with it.
			var fails []store.Outcome
			for _, j := range claim(t, s1, "q", 20) {
				f := outcome(j, core.ResultFailed)
				f.FailureDetail = fmt.Sprintf("attempt 1 of job %d failed", j.ID)
				fails = append(fails, f)
			}
			report(t, s1, fails...)

			k2 := merged(t, ring(t, "k2"), "k2", k1, "k1")
			s2 := wrap(t, o.raw, k2)
			dctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			var wg sync.WaitGroup
			drained := make(map[job.ID]int)
			var drainErr error
			wg.Go(func() {
				for len(drained) < len(want) && drainErr == nil {
					got, err := s2.JobClaim(dctx, store.ClaimParams{Worker: worker, Queues: []string{"q"}, Limit: 10, LeaseDuration: lease})
					if err != nil {
						drainErr = err
						return
					}
					var outs []store.Outcome
					for _, j := range got {
						if string(j.Payload) != want[j.ID] {
							drainErr = fmt.Errorf("job %d claimed with payload %q, want %q", j.ID, j.Payload, want[j.ID])
							return
						}
						drained[j.ID]++
						o := outcome(j, core.ResultSucceeded)
						o.Output = []byte(fmt.Sprintf("output of %d", j.ID))
						outs = append(outs, o)
					}
					if len(got) == 0 {
						time.Sleep(time.Millisecond) // a failed job waits out its retry delay
					}
					if _, err := s2.OutcomeReport(dctx, store.ReportParams{Worker: worker, Outcomes: outs}); err != nil {
						drainErr = err
					}
				}
			})
			var rotations []encrypt.RotateResult
			for range 3 {
				r, err := encrypt.Rotate(ctx, s2, k2, 16)
				if err != nil {
					t.Fatalf("Rotate: %v", err)
				}
				rotations = append(rotations, r)
			}
			wg.Wait()
			if drainErr != nil {
				t.Fatal(drainErr)
			}
			final, err := encrypt.Rotate(ctx, s2, k2, 16)
			if err != nil {
				t.Fatal(err)
			}
			if rotations[0].Rewritten == 0 || final.Unreadable != 0 {
				t.Fatalf("rotations %+v then %+v: want the first to rewrite rows and none left unreadable", rotations, final)
			}
			if again, _ := encrypt.Rotate(ctx, s2, k2, 16); again.Rewritten != 0 || again.Changed != 0 {
				t.Fatalf("a rotation after everything is under k2 rewrote %+v", again)
			}

			// k1 purged: everything opens under k2 alone.
			only, err := k2.Without("k1")
			if err != nil {
				t.Fatal(err)
			}
			s3 := wrap(t, o.raw, only)
			for id, payload := range want {
				if drained[id] != 1 {
					t.Fatalf("job %d drained %d times, want once", id, drained[id])
				}
				j, err := s3.JobGet(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if j.State != job.StateSucceeded || string(j.Payload) != payload {
					t.Fatalf("job %d is %s with payload %q, want Succeeded with %q", id, j.State, j.Payload, payload)
				}
				if out, err := s3.JobOutput(ctx, id); err != nil || !bytes.Equal(out, []byte(fmt.Sprintf("output of %d", id))) {
					t.Fatalf("JobOutput(%d) under k2 alone = %q, %v", id, out, err)
				}
			}
			for _, f := range fails {
				log, err := s3.JobTransitions(ctx, f.Lease.ID)
				if err != nil {
					t.Fatal(err)
				}
				found := false
				for _, e := range log {
					found = found || e.FailureDetail == f.FailureDetail
				}
				if !found {
					t.Fatalf("job %d's Failure Detail does not open under k2 alone: %+v", f.Lease.ID, log)
				}
			}
			list, err := s3.ScheduleList(ctx)
			if err != nil || string(list.Schedules[0].Template.Payload) != "template" {
				t.Fatalf("template under k2 alone = %+v, %v", list, err)
			}
			for ch, vals := range rawValues(t, o.raw) {
				for _, v := range vals {
					if !encrypt.Sealed(v.Value) && !encrypt.SealedText(string(v.Value)) {
						t.Fatalf("%s %+v is still plaintext after rotation", ch, v.Key)
					}
				}
			}
		})
	}
}

// TestRotateRebindsMintedPayloads: a job minted from a sealed template
// carries the schedule-bound ciphertext; rotation rebinds it to the job,
// after which it no longer depends on its schedule Tag.
func TestRotateRebindsMintedPayloads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	raw := backends()[0].open(t).raw
	k1 := ring(t, "k1")
	s := wrap(t, raw, k1)
	if _, err := s.ScheduleUpsert(ctx, store.ScheduleUpsertParams{Schedule: schedule("nightly", "tpl")}); err != nil {
		t.Fatal(err)
	}
	id, err := s.ScheduleTrigger(ctx, store.ScheduleTriggerParams{Name: "nightly"})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := raw.JobGet(ctx, id)
	r, err := encrypt.Rotate(ctx, s, k1, 10)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := raw.JobGet(ctx, id)
	if r.Rewritten != 1 || bytes.Equal(before.Payload, after.Payload) {
		t.Fatalf("rotation %+v left the minted payload as it was", r)
	}
	got := claim(t, s, "sched-nightly", 1)
	if len(got) != 1 || string(got[0].Payload) != "tpl" {
		t.Fatalf("claimed %+v, want the template payload", got)
	}
}
