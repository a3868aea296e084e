package storetest

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// replacing returns whileLive(queue, key) in UniqueReplace mode with the
// payload and Tags given.
func replacing(queue, key, payload string, tags ...job.Tag) store.NewJob {
	j := whileLive(queue, key)
	j.Unique.Mode = store.UniqueReplace
	j.Payload, j.Tags = []byte(payload), tags
	return j
}

// debouncing returns whileLive(queue, key) debounced by wait, at most
// maxWait, with the payload given.
func debouncing(queue, key, payload string, wait, maxWait time.Duration) store.NewJob {
	j := whileLive(queue, key)
	j.Unique.Mode, j.Unique.Wait, j.Unique.MaxWait = store.UniqueDebounce, wait, maxWait
	j.Payload = []byte(payload)
	return j
}

// rewrote inserts nj and requires it to rewrite holder.
func (e *env) rewrote(nj store.NewJob, holder job.ID) {
	e.t.Helper()
	if r := e.insertResults(nj)[0]; r != (store.InsertResult{ID: holder, Replaced: true}) {
		e.t.Fatalf("insert in mode %s of key %q = %+v, want holder %d replaced", nj.Unique.Mode, nj.Unique.Key, r, holder)
	}
}

// refused inserts jobs, requires ErrHolderNotPending and that nothing was
// stored: no job more than before, and the holder unchanged.
func (e *env) refused(holder job.ID, jobs ...store.NewJob) {
	e.t.Helper()
	before, n := e.get(holder), len(e.list(store.JobListParams{}))
	_, err := e.s.JobInsertManyResults(e.ctx, store.InsertManyParams{Jobs: jobs})
	e.wantErr("JobInsertManyResults(rewrite of a holder not pending)", err, store.ErrHolderNotPending)
	if got := len(e.list(store.JobListParams{})); got != n {
		e.t.Fatalf("JobList holds %d jobs after a refused rewrite, want %d", got, n)
	}
	e.unchanged(before)
}

// rewrites returns the audit trail's rewrites of job id, oldest first.
func (e *env) rewrites(id job.ID) []store.AuditEntry {
	e.t.Helper()
	all, err := e.s.AuditList(e.ctx, store.AuditListParams{JobID: id, Limit: 1000})
	if err != nil {
		e.t.Fatalf("AuditList(job %d): %v", id, err)
	}
	var out []store.AuditEntry
	for _, a := range all {
		if a.Action == store.AuditUniqueReplace || a.Action == store.AuditUniqueDebounce {
			out = append(out, a)
		}
	}
	slices.Reverse(out)
	return out
}

// racerPayload reports whether p is the payload of one of the racers.
func racerPayload(p []byte) bool {
	for i := range racers {
		if bytes.Equal(p, []byte(fmt.Sprint("racer-", i))) {
			return true
		}
	}
	return false
}

// testReplace checks unique keys in UniqueReplace and UniqueDebounce mode,
// Inserter.JobInsertManyResults: "A job whose Unique.Mode rewrites … and
// finds its key held rewrites the holder instead, in the same atomic
// step".
func testReplace(t *testing.T, s *suite) {
	// "a Scheduled holder takes the job's payload …, its Tags (as a set,
	// replacing the holder's) and the due time Unique.RewriteDue gives …,
	// and the result is the holder's id with Replaced true. Its state,
	// Attempt, Queue, Wire Name, attempt ceiling, trace context and
	// Transition Log are kept."
	s.run(t, "ReplaceRewritesScheduledHolder", func(t *testing.T, e *env) {
		first := replacing("q", "k", "one", job.Label("old"))
		first.ScheduledAt = e.now().Add(time.Hour).Truncate(time.Millisecond)
		id := e.inserted(first)
		log := e.transitions(id)
		second := replacing("q", "k", "two", job.Label("new"), job.Keyed("n", "2"))
		second.WireName, second.Queue, second.MaxAttempts = "other.job", "other", 9
		second.ScheduledAt = e.now().Add(2 * time.Hour).Truncate(time.Millisecond)
		e.rewrote(second, id)
		j := e.get(id)
		switch {
		case string(j.Payload) != "two":
			t.Fatalf("payload = %q, want the replacing job's", j.Payload)
		case !slices.Equal(j.Tags, job.NormalizeTags(second.Tags)):
			t.Fatalf("Tags = %v, want the replacing job's %v", j.Tags, second.Tags)
		case !j.ScheduledAt.Equal(second.ScheduledAt):
			t.Fatalf("due at %v, want the replacing job's %v", j.ScheduledAt, second.ScheduledAt)
		case j.State != job.StateScheduled || j.Attempt != 0 || j.WireName != "storetest.job" || j.Queue != "q" || j.MaxAttempts != 5:
			t.Fatalf("holder %+v: a rewrite changed what it must keep", j)
		}
		// Tag Suggest "never offers a Tag no stored job carries".
		if tags, err := e.s.TagSuggest(e.ctx, store.TagSuggestParams{Prefix: "old"}); err != nil || len(tags) != 0 {
			t.Fatalf("TagSuggest(old) = %v, %v; want nothing: no job carries the Tag the rewrite replaced", tags, err)
		}
		if got := e.transitions(id); len(got) != len(log) {
			t.Fatalf("Transition Log %v after the rewrite, want %v: a rewrite is no state change", got, log)
		}
		if got := len(e.list(store.JobListParams{})); got != 1 {
			t.Fatalf("JobList holds %d jobs, want the one holder", got)
		}
		// A zero ScheduledAt is due at the store's now.
		before := e.now()
		e.rewrote(replacing("q", "k", "three"), id)
		if j := e.get(id); !j.ScheduledAt.Before(first.ScheduledAt) || j.ScheduledAt.Before(before.Add(-time.Second)) || len(j.Tags) != 0 {
			t.Fatalf("holder after a rewrite without due time or Tags: due %v, Tags %v; want due now, no Tags", j.ScheduledAt, j.Tags)
		}
		audit := e.rewrites(id)
		if len(audit) != 2 || audit[0].Action != store.AuditUniqueReplace || audit[0].Actor != store.ActorSystem ||
			audit[0].Detail != store.RewriteDetail("k", second.ScheduledAt) || audit[0].Queue != "q" {
			t.Fatalf("audit trail of the rewrites = %+v, want two unique_replace entries, the first %q", audit, store.RewriteDetail("k", second.ScheduledAt))
		}
	})

	// A holder Scheduled for a retry is pending too: it keeps its Attempt.
	s.run(t, "ReplaceRetryingHolder", func(t *testing.T, e *env) {
		id := e.inserted(replacing("q", "k", "one"))
		e.reportApplied(w1, failed(e.claimOne(w1, "q"), time.Hour))
		e.rewrote(replacing("q", "k", "two"), id)
		if j := e.wantState(id, job.StateScheduled); j.Attempt != 1 || string(j.Payload) != "two" {
			t.Fatalf("retrying holder after a rewrite: Attempt %d, payload %q; want 1, two", j.Attempt, j.Payload)
		}
		if j := e.claimOne(w1, "q"); j.ID != id || j.Attempt != 2 {
			t.Fatalf("claimed %d at Attempt %d, want %d at 2: the rewrite made it due now", j.ID, j.Attempt, id)
		}
	})

	// "A holder in any other state fails the whole insert with
	// ErrHolderNotPending: nothing is written." Running, Awaiting Parent,
	// and ended under a period key; a mode that does not rewrite is
	// answered as ever.
	s.run(t, "NotPendingHolderRefuses", func(t *testing.T, e *env) {
		id := e.inserted(replacing("q", "k", "one"))
		j := e.claimOne(w1, "q")
		e.refused(id, replacing("q", "k", "two"))
		e.refused(id, newJob("q"), debouncing("q", "k", "two", time.Minute, time.Hour))
		e.held(whileLive("q", "k"), id)
		e.reportApplied(w1, succeeded(j))
		if got := string(e.get(id).Payload); got != "one" {
			t.Fatalf("payload of the holder that ran = %q, want one", got)
		}
		e.inserted(replacing("q", "k", "three")) // the key is free again

		period := forPeriod("periodic", "p", time.Hour)
		pid := e.inserted(period)
		e.reportApplied(w1, succeeded(e.claimOne(w1, "periodic")))
		period.Unique.Mode = store.UniqueReplace
		e.refused(pid, period)

		parent := e.insertN("parents", 1)[0]
		child := whileLive("q", "c")
		child.Dependency = store.Dependency{Parents: []store.ParentRef{store.Existing(parent)}}
		cid := e.inserted(child)
		e.refused(cid, replacing("q", "c", "two"))
	})

	// "A later job of the same batch with the key rewrites the earlier
	// one."
	s.run(t, "InBatch", func(t *testing.T, e *env) {
		res := e.insertResults(replacing("q", "k", "one"), newJob("q"), replacing("q", "k", "two"), replacing("q", "k", "three", job.Label("x")))
		id := res[0].ID
		switch {
		case !res[0].Inserted || !res[1].Inserted:
			t.Fatalf("results %+v: the first job with the key and the one without must be inserted", res)
		case res[2] != (store.InsertResult{ID: id, Replaced: true}) || res[3] != (store.InsertResult{ID: id, Replaced: true}):
			t.Fatalf("results %+v: later jobs with the key must replace %d", res, id)
		}
		if j := e.get(id); string(j.Payload) != "three" || !slices.Equal(j.Tags, []job.Tag{job.Label("x")}) {
			t.Fatalf("holder after the batch: payload %q, Tags %v; want the batch's last", j.Payload, j.Tags)
		}
	})

	// UniqueDebounce: "the due time moved to now + Wait, bounded by the
	// holder's insert + MaxWait" (core.DebounceDue); the first job of a
	// burst waits too (Unique.InsertDue).
	s.run(t, "DebounceBurst", func(t *testing.T, e *env) {
		e.needAdvance()
		const wait, maxWait = 10 * time.Minute, 30 * time.Minute
		t0 := e.now()
		id := e.inserted(debouncing("q", "k", "1", wait, maxWait))
		wantDue := func(want time.Time) {
			t.Helper()
			if got := e.get(id).ScheduledAt; !got.Equal(want) {
				t.Fatalf("due at %v, want %v", got, want)
			}
		}
		wantDue(t0.Add(wait))
		for n := 2; n <= 4; n++ {
			e.advance(5 * time.Minute)
			e.rewrote(debouncing("q", "k", fmt.Sprint(n), wait, maxWait), id)
			wantDue(e.now().Add(wait))
			e.claimNone(w1, "q")
		}
		e.advance(10 * time.Minute) // t0+25m: now+wait is past the max wait
		e.rewrote(debouncing("q", "k", "5", wait, maxWait), id)
		wantDue(t0.Add(maxWait))
		e.advance(5*time.Minute - time.Millisecond)
		e.claimNone(w1, "q")
		e.advance(time.Millisecond)
		if j := e.claimOne(w1, "q"); j.ID != id || string(j.Payload) != "5" {
			t.Fatalf("claimed %d with %q, want %d with the burst's last payload", j.ID, j.Payload, id)
		}
		if a := e.rewrites(id); len(a) != 4 || a[3].Action != store.AuditUniqueDebounce || a[3].Detail != store.RewriteDetail("k", t0.Add(maxWait)) {
			t.Fatalf("audit trail of the burst = %+v, want 4 unique_debounce entries, the last due at the max wait", a)
		}
	})

	// Invalid modes are ErrInvalidParams and store nothing.
	s.run(t, "Validation", func(t *testing.T, e *env) {
		id := e.inserted(replacing("q", "k", "one"))
		due := replacing("q", "k", "due")
		due.Unique = store.Unique{Key: "k", Scope: store.UniqueWhileLive, Mode: store.UniqueDebounce, Wait: time.Minute, MaxWait: time.Hour}
		due.ScheduledAt = e.now().Add(time.Hour)
		child := replacing("q", "k", "child")
		child.Dependency = store.Dependency{Parents: []store.ParentRef{store.Existing(id)}}
		bad := map[string]store.NewJob{
			"negative wait":         debouncing("q", "k", "x", -time.Second, time.Hour),
			"zero wait":             debouncing("q", "k", "x", 0, time.Hour),
			"max wait below wait":   debouncing("q", "k", "x", time.Hour, time.Minute),
			"replace with a wait":   {WireName: "w", Queue: "q", MaxAttempts: 1, Unique: store.Unique{Key: "k", Scope: store.UniqueWhileLive, Mode: store.UniqueReplace, Wait: time.Second}},
			"unknown mode":          {WireName: "w", Queue: "q", MaxAttempts: 1, Unique: store.Unique{Key: "k", Scope: store.UniqueWhileLive, Mode: 9}},
			"mode without key":      {WireName: "w", Queue: "q", MaxAttempts: 1, Unique: store.Unique{Mode: store.UniqueReplace}},
			"debounce with due":     due,
			"rewrite with parents":  child,
			"debounce with no wait": {WireName: "w", Queue: "q", MaxAttempts: 1, Unique: store.Unique{Key: "k", Scope: store.UniqueWhileLive, Mode: store.UniqueDebounce}},
		}
		before := e.get(id)
		for name, nj := range bad {
			_, err := e.s.JobInsertManyResults(e.ctx, store.InsertManyParams{Jobs: []store.NewJob{newJob("q"), nj}})
			e.wantErr("JobInsertManyResults("+name+")", err, store.ErrInvalidParams)
		}
		e.unchanged(before)
		if got := len(e.list(store.JobListParams{})); got != 1 {
			t.Fatalf("JobList holds %d jobs after refused inserts, want 1", got)
		}
	})

	// "Racing rewrites of one key apply one after the other in the store's
	// commit order: the last to commit wins": of racers replacing one free
	// key, exactly one inserts, every other rewrites it, and the holder
	// ends with one racer's payload, with one audit entry per rewrite.
	s.run(t, "Race", func(t *testing.T, e *env) {
		results := e.race("replace", e.peer(), func(i int) store.NewJob { return replacing("q", "k", fmt.Sprint("racer-", i)) })
		inserted, replaced := 0, 0
		for i := range racers {
			switch r := results[i]; {
			case r.ID != results[0].ID || r.ID < 1 || r.Inserted == r.Replaced:
				t.Fatalf("racers answered %+v, want one id, each inserted or replaced", results)
			case r.Inserted:
				inserted++
			default:
				replaced++
			}
		}
		if inserted != 1 || replaced != racers-1 {
			t.Fatalf("%d racers inserted and %d replaced, want 1 and %d", inserted, replaced, racers-1)
		}
		id := results[0].ID
		payload := e.get(id).Payload
		if !racerPayload(payload) {
			t.Fatalf("holder's payload %q is no racer's", payload)
		}
		if got := len(e.rewrites(id)); got != racers-1 {
			t.Fatalf("audit trail holds %d rewrites, want %d", got, racers-1)
		}
		if got := len(e.list(store.JobListParams{})); got != 1 {
			t.Fatalf("JobList holds %d jobs, want exactly one holder", got)
		}
	})
}
