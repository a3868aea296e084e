package storetest

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

func testInsert(t *testing.T, s *suite) {
	// Inserter.JobInsertMany: "returns their ids in input order".
	s.run(t, "IDsInInputOrder", func(t *testing.T, e *env) {
		names := []string{"first", "second", "third"}
		var jobs []store.NewJob
		for _, n := range names {
			j := newJob("q")
			j.WireName = n
			jobs = append(jobs, j)
		}
		ids := e.insert(jobs...)
		seen := map[job.ID]bool{}
		for i, id := range ids {
			if seen[id] {
				t.Fatalf("id %d returned twice in %v", id, ids)
			}
			seen[id] = true
			if got := e.get(id).WireName; got != names[i] {
				t.Fatalf("ids[%d] = %d names Wire Name %q, want %q", i, id, got, names[i])
			}
		}
		// job.ID: "never reused within one store".
		more := e.insertN("q", 2)
		for _, id := range more {
			if seen[id] {
				t.Fatalf("second insert reused id %d", id)
			}
		}
	})

	// NewJob and job.Job: an inserted job is stored as given, Scheduled, at
	// Attempt 0, with no Retry Cause (glossary, Retry Cause: "A new job has
	// none"), and its Tags as a set.
	s.run(t, "StoresTheJob", func(t *testing.T, e *env) {
		due := e.now().Truncate(time.Second).Add(time.Hour)
		nj := store.NewJob{
			WireName:    "email.send",
			Queue:       "mail",
			Payload:     []byte(`{"to":"a@example.com"}`),
			ScheduledAt: due,
			MaxAttempts: 7,
			Tags:        []job.Tag{job.Keyed("tenant", "acme"), job.Label("urgent"), job.Keyed("tenant", "acme")},
		}
		before := e.now()
		id := e.insert(nj)[0]
		after := e.now()
		j := e.get(id)
		switch {
		case j.ID != id, j.WireName != nj.WireName, j.Queue != nj.Queue, j.MaxAttempts != nj.MaxAttempts:
			t.Fatalf("stored %+v, want the fields of %+v", j, nj)
		case !bytes.Equal(j.Payload, nj.Payload):
			t.Fatalf("Payload = %q, want %q", j.Payload, nj.Payload)
		case j.State != job.StateScheduled, j.Attempt != 0, j.RetryCause != job.RetryCauseNone:
			t.Fatalf("new job: state %s, Attempt %d, Retry Cause %q; want scheduled, 0, none", j.State, j.Attempt, j.RetryCause)
		case !j.ScheduledAt.Equal(due):
			t.Fatalf("ScheduledAt = %v, want %v", j.ScheduledAt, due)
		case !j.FinalizedAt.IsZero(), j.Worker != "", j.CancelRequested:
			t.Fatalf("new job carries FinalizedAt %v, Worker %q, CancelRequested %v", j.FinalizedAt, j.Worker, j.CancelRequested)
		}
		e.within("CreatedAt", j.CreatedAt, before, after)
		// job.NormalizeTags: "Re-adding an identical tag is therefore a no-op."
		if want := job.NormalizeTags(nj.Tags); !slices.Equal(j.Tags, want) {
			t.Fatalf("Tags = %v, want the set %v", j.Tags, want)
		}
	})

	// JobInsertMany: "A job with a zero ScheduledAt is due at the store's
	// clock now."
	s.run(t, "ZeroScheduledAtIsDueNow", func(t *testing.T, e *env) {
		before := e.now()
		id := e.insertN("q", 1)[0]
		after := e.now()
		e.within("ScheduledAt", e.get(id).ScheduledAt, before, after)
		if got := e.claimOne(w1, "q"); got.ID != id {
			t.Fatalf("claimed %d, want %d", got.ID, id)
		}
	})

	// JobInsertMany with an empty batch writes nothing and is no error.
	s.run(t, "EmptyBatch", func(t *testing.T, e *env) {
		ids, err := e.s.JobInsertMany(e.ctx, store.InsertManyParams{})
		if err != nil || len(ids) != 0 {
			t.Fatalf("JobInsertMany(empty) = %v, %v; want no ids, no error", ids, err)
		}
	})

	// Queues: "A Queue exists once a job names it".
	s.run(t, "MakesQueueKnown", func(t *testing.T, e *env) {
		e.insertN("fresh", 1)
		q, ok := e.queueInfo("fresh")
		if !ok {
			t.Fatal("QueueList does not list the Queue a job named")
		}
		if q != (store.QueueInfo{Name: "fresh"}) {
			t.Fatalf("QueueInfo = %+v, want an unpaused Queue without limit or Running jobs", q)
		}
	})

	// Payload is "written once at insert": the caller's slice is copied.
	s.run(t, "PayloadCopied", func(t *testing.T, e *env) {
		payload := []byte("abc")
		nj := newJob("q")
		nj.Payload = payload
		id := e.insert(nj)[0]
		payload[0] = 'X'
		if got := e.get(id).Payload; string(got) != "abc" {
			t.Fatalf("Payload = %q after the caller changed its slice, want %q", got, "abc")
		}
	})
}
