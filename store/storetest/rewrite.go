package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// testPayloadFor checks InsertManyParams.PayloadFor: "The store calls it
// once per job it inserts, inside the insert's atomic step ... with the id
// the job is inserted under"; "An error aborts the whole insert: nothing
// is written".
func testPayloadFor(t *testing.T, s *suite) {
	byID := func(_ int, id job.ID) ([]byte, error) { return fmt.Appendf(nil, "sealed-for-%d", id), nil }
	for _, tc := range []struct {
		name string
		jobs func() []store.NewJob
	}{
		{"Flat", func() []store.NewJob { return []store.NewJob{newJob("pf"), newJob("pf"), newJob("pf")} }},
		{"Mixed", func() []store.NewJob {
			a, b := newJob("pf"), newJob("pf-other")
			b.MaxAttempts = 2
			return []store.NewJob{a, b}
		}},
		{"Graph", func() []store.NewJob {
			return []store.NewJob{newJob("pf"), child("pf", onSuccess, store.InBatch(0)), newJob("pf")}
		}},
		{"Unique", func() []store.NewJob {
			u := newJob("pf")
			u.Unique = store.Unique{Key: "pf-key", Scope: store.UniqueWhileLive}
			return []store.NewJob{newJob("pf"), u}
		}},
		// InsertManyParams.PayloadFor "with the id the job is inserted
		// under": a rewrite's payload goes under its holder's id.
		{"Replace", func() []store.NewJob {
			u := newJob("pf")
			u.Unique = store.Unique{Key: "pf-replace", Scope: store.UniqueWhileLive, Mode: store.UniqueReplace}
			return []store.NewJob{u, newJob("pf"), u}
		}},
	} {
		s.run(t, "WritesWhatItGivesForTheAssignedID/"+tc.name, func(t *testing.T, e *env) {
			jobs := tc.jobs()
			for i := range jobs {
				jobs[i].Payload = []byte("plaintext that must not be stored")
			}
			res, err := e.s.JobInsertManyResults(e.ctx, store.InsertManyParams{Jobs: jobs, PayloadFor: byID})
			if err != nil {
				t.Fatalf("JobInsertManyResults: %v", err)
			}
			for _, r := range res {
				if got, want := e.get(r.ID).Payload, fmt.Appendf(nil, "sealed-for-%d", r.ID); !bytes.Equal(got, want) {
					t.Errorf("job %d stored payload %q, want %q", r.ID, got, want)
				}
			}
		})
	}
	s.run(t, "HeldKeyKeepsTheHoldersPayload", func(t *testing.T, e *env) {
		u := newJob("pf")
		u.Unique = store.Unique{Key: "pf-held", Scope: store.UniqueWhileLive}
		u.Payload = []byte("holder")
		holder := e.insert(u)[0]
		res, err := e.s.JobInsertManyResults(e.ctx, store.InsertManyParams{Jobs: []store.NewJob{u}, PayloadFor: byID})
		if err != nil {
			t.Fatalf("JobInsertManyResults: %v", err)
		}
		if res[0].Inserted || res[0].ID != holder {
			t.Fatalf("result %+v, want the holder %d, not inserted", res[0], holder)
		}
		if got := e.get(holder).Payload; string(got) != "holder" {
			t.Fatalf("holder's payload = %q, want it unchanged", got)
		}
	})
	s.run(t, "ErrorInsertsNothing", func(t *testing.T, e *env) {
		boom := errors.New("storetest: no payload for you")
		fail := func(i int, id job.ID) ([]byte, error) {
			if i == 1 {
				return nil, boom
			}
			return byID(i, id)
		}
		for _, jobs := range [][]store.NewJob{
			{newJob("pf"), newJob("pf"), newJob("pf")},
			{newJob("pf"), child("pf", onSuccess, store.InBatch(0))},
		} {
			_, err := e.s.JobInsertManyResults(e.ctx, store.InsertManyParams{Jobs: jobs, PayloadFor: fail})
			if !errors.Is(err, boom) {
				t.Fatalf("JobInsertManyResults = %v, want an error wrapping %v", err, boom)
			}
		}
		if ids := e.list(store.JobListParams{}); len(ids) != 0 {
			t.Fatalf("a failed PayloadFor left jobs %v", ids)
		}
	})
}

// testRewrite checks store.Rewriter where the store has it: "RawScan reads
// ... each exactly as stored"; "RawRewrite ... replaced by New only if it
// still equals Old byte for byte".
func testRewrite(t *testing.T, s *suite) {
	s.run(t, "EveryChannel", func(t *testing.T, e *env) {
		rw, ok := e.s.(store.Rewriter)
		if !ok {
			t.Skip("storetest: the store has no store.Rewriter")
		}
		withPayload := newJob("rw")
		withPayload.Payload = []byte("p-1")
		ids := e.insert(withPayload, newJob("rw"))
		j := e.claimOne(w1, "rw")
		o := succeeded(j)
		o.Output = []byte("o-1")
		e.reportApplied(w1, o)
		j2 := e.claimOne(w1, "rw")
		f := failed(j2, 0)
		f.FailureDetail = "d-1"
		e.reportApplied(w1, f)
		d := hourlyDef("rw-sched")
		d.Template.Payload = []byte("t-1")
		e.upsert(d)

		for _, tc := range []struct {
			ch   store.Channel
			old  string
			read func() string
		}{
			{store.ChannelPayload, "p-1", func() string { return string(e.get(ids[0]).Payload) }},
			{store.ChannelOutput, "o-1", func() string {
				out, err := e.s.JobOutput(e.ctx, j.ID)
				if err != nil {
					t.Fatal(err)
				}
				return string(out)
			}},
			{store.ChannelFailureDetail, "d-1", func() string {
				for _, tr := range e.transitions(j2.ID) {
					if tr.FailureDetail != "" {
						return tr.FailureDetail
					}
				}
				return ""
			}},
			{store.ChannelTemplate, "t-1", func() string {
				sc, _ := e.schedule("rw-sched")
				return string(sc.Template.Payload)
			}},
		} {
			vals, err := rw.RawScan(e.ctx, store.RawScanParams{Channel: tc.ch, Limit: 10})
			if err != nil {
				t.Fatalf("RawScan(%s): %v", tc.ch, err)
			}
			if len(vals) != 1 || string(vals[0].Value) != tc.old {
				t.Fatalf("RawScan(%s) = %+v, want the one value %q", tc.ch, vals, tc.old)
			}
			if more, err := rw.RawScan(e.ctx, store.RawScanParams{Channel: tc.ch, After: vals[0].Key, Limit: 10}); err != nil || len(more) != 0 {
				t.Fatalf("RawScan(%s) after the last key = %+v, %v; want none", tc.ch, more, err)
			}
			k := vals[0].Key
			done, err := rw.RawRewrite(e.ctx, store.RawRewriteParams{Channel: tc.ch, Swaps: []store.RawSwap{
				{Key: k, Old: []byte("not what is stored"), New: []byte("clobbered")},
			}})
			if err != nil || len(done) != 1 || done[0] {
				t.Fatalf("RawRewrite(%s) with a stale Old = %v, %v; want not written", tc.ch, done, err)
			}
			if got := tc.read(); got != tc.old {
				t.Fatalf("%s after a stale swap = %q, want %q", tc.ch, got, tc.old)
			}
			done, err = rw.RawRewrite(e.ctx, store.RawRewriteParams{Channel: tc.ch, Swaps: []store.RawSwap{
				{Key: k, Old: []byte(tc.old), New: []byte(tc.old + "-new")},
			}})
			if err != nil || len(done) != 1 || !done[0] {
				t.Fatalf("RawRewrite(%s) = %v, %v; want written", tc.ch, done, err)
			}
			if got := tc.read(); got != tc.old+"-new" {
				t.Fatalf("%s after the swap = %q, want %q", tc.ch, got, tc.old+"-new")
			}
		}
		if got := e.get(j2.ID); got.State != job.StateScheduled || got.Attempt != j2.Attempt {
			t.Fatalf("a raw rewrite changed the job's state: %+v", got)
		}
	})
}
