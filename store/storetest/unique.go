package storetest

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// racers is how many inserters of one key race in the concurrency clauses.
const racers = 8

// whileLive returns newJob(queue) with the unique key key, held while live.
func whileLive(queue, key string) store.NewJob {
	j := newJob(queue)
	j.Unique = store.Unique{Key: key, Scope: store.UniqueWhileLive}
	return j
}

// forPeriod returns newJob(queue) with the unique key key, held for d.
func forPeriod(queue, key string, d time.Duration) store.NewJob {
	j := newJob(queue)
	j.Unique = store.Unique{Key: key, Scope: store.UniquePeriod, Period: d}
	return j
}

func (e *env) insertResults(jobs ...store.NewJob) []store.InsertResult {
	e.t.Helper()
	res, err := e.s.JobInsertManyResults(e.ctx, store.InsertManyParams{Jobs: jobs})
	if err != nil {
		e.t.Fatalf("JobInsertManyResults: %v", err)
	}
	if len(res) != len(jobs) {
		e.t.Fatalf("JobInsertManyResults answered %d of %d jobs", len(res), len(jobs))
	}
	return res
}

// inserted inserts one job and requires it to be inserted.
func (e *env) inserted(nj store.NewJob) job.ID {
	e.t.Helper()
	r := e.insertResults(nj)[0]
	if !r.Inserted || r.ID < 1 {
		e.t.Fatalf("insert with unique key %q = %+v, want a new job", nj.Unique.Key, r)
	}
	return r.ID
}

// held inserts one job and requires its key to be held by holder.
func (e *env) held(nj store.NewJob, holder job.ID) {
	e.t.Helper()
	if r := e.insertResults(nj)[0]; r != (store.InsertResult{ID: holder}) {
		e.t.Fatalf("insert with unique key %q = %+v, want the holder %d, not inserted", nj.Unique.Key, r, holder)
	}
}

// race inserts racers jobs at once, job(i) by racer i, half of them
// through peer, and answers each racer's result; a racer's error fails the
// test.
func (e *env) race(round string, peer store.Store, job func(i int) store.NewJob) []store.InsertResult {
	e.t.Helper()
	results := make([]store.InsertResult, racers)
	errs := make([]error, racers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range racers {
		st := e.s
		if i%2 == 1 {
			st = peer
		}
		wg.Go(func() {
			<-start
			var res []store.InsertResult
			res, errs[i] = st.JobInsertManyResults(e.ctx, store.InsertManyParams{Jobs: []store.NewJob{job(i)}})
			if len(res) == 1 {
				results[i] = res[0]
			}
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			e.t.Fatalf("%s: racer %d: %v", round, i, err)
		}
	}
	return results
}

// testUnique checks unique keys, Inserter.JobInsertManyResults: "A job
// whose NewJob.Unique names a key is inserted only if no job holds that
// key, and then holds it itself".
func testUnique(t *testing.T, s *suite) {
	// "If the key is held, nothing is inserted for the job, and its result
	// is the holder's id with Inserted false: a held key is a result, not
	// an error." JobInsertMany answers the holder's id in its place.
	s.run(t, "HeldKeyAnswersHolder", func(t *testing.T, e *env) {
		id := e.inserted(whileLive("q", "invoice:1"))
		dup := whileLive("q", "invoice:1")
		dup.Tags = []job.Tag{job.Label("never-stored")}
		dup.WireName = "other.job"
		e.held(dup, id)
		ids := e.insert(dup, newJob("q"))
		if ids[0] != id || ids[1] == id {
			t.Fatalf("JobInsertMany = %v, want [%d, a new id]", ids, id)
		}
		other := e.inserted(whileLive("q", "invoice:2"))
		e.wantIDs("JobList", e.list(store.JobListParams{}), []job.ID{other, ids[1], id})
		if got := e.get(id).WireName; got != "storetest.job" {
			t.Fatalf("holder's Wire Name = %q: the refused job overwrote it", got)
		}
		n, err := e.s.JobCountByState(e.ctx, store.CountParams{Queue: "q"})
		if err != nil || n[job.StateScheduled] != 3 {
			t.Fatalf("JobCountByState = %v, %v; want 3 scheduled", n, err)
		}
		tags, err := e.s.TagSuggest(e.ctx, store.TagSuggestParams{Prefix: "never"})
		if err != nil || len(tags) != 0 {
			t.Fatalf("TagSuggest(never) = %v, %v; want nothing: the refused job was never stored", tags, err)
		}
	})

	// UniqueWhileLive: "until it first ends terminal … Retries and Running
	// keep it held." Each path that ends a job frees the key.
	s.run(t, "WhileLiveHeldUntilTerminal", func(t *testing.T, e *env) {
		id := e.inserted(whileLive("q", "k"))
		e.held(whileLive("q", "k"), id)
		j := e.claimOne(w1, "q")
		e.held(whileLive("q", "k"), id) // Running
		e.reportApplied(w1, failed(j, 0))
		e.wantState(id, job.StateScheduled)
		e.held(whileLive("q", "k"), id) // Scheduled for a retry
		j = e.claimOne(w1, "q")
		e.reportApplied(w1, succeeded(j))
		next := e.inserted(whileLive("q", "k"))
		if next == id {
			t.Fatalf("the freed key answered the old holder %d", id)
		}
		e.held(whileLive("q", "k"), next)
	})

	type ending struct {
		name string
		end  func(e *env, id job.ID, queue string)
	}
	endings := []ending{
		{"Succeeded", func(e *env, id job.ID, q string) { e.reportApplied(w1, succeeded(e.claimOne(w1, q))) }},
		{"DeadLettered", func(e *env, id job.ID, q string) { e.reportApplied(w1, failed(e.claimOne(w1, q), 0)) }},
		{"Quarantined", func(e *env, id job.ID, q string) {
			e.reportApplied(w1, decide(e.claimOne(w1, q), core.ResultUnroutable, 0))
		}},
		{"OperatorCancel", func(e *env, id job.ID, q string) {
			if err := e.cancel(id); err != nil {
				e.t.Fatal(err)
			}
		}},
		{"CancelRequestedThenOutcome", func(e *env, id job.ID, q string) {
			j := e.claimOne(w1, q)
			if err := e.cancel(id); err != nil {
				e.t.Fatal(err)
			}
			j.CancelRequested = true
			e.reportApplied(w1, failed(j, 0))
		}},
		{"RelinquishAtCeiling", func(e *env, id job.ID, q string) {
			j := e.claimOne(w1, q)
			if got := e.relinquish(w1, j.Lease()); len(got) != 1 {
				e.t.Fatalf("LeaseRelinquish = %v", got)
			}
		}},
		{"LeaseExpiredAtCeiling", func(e *env, id job.ID, q string) {
			e.claimOne(w1, q)
			e.advance(lease + time.Second)
			if got := e.expire(0, q); len(got) != 1 {
				e.t.Fatalf("LeaseExpire = %v", got)
			}
		}},
		{"ParentFailure", nil}, // below: the holder waits on a parent
	}
	// Every way a job ends terminal frees its while-live key, in the same
	// step ("until it first ends terminal").
	for _, end := range endings {
		s.run(t, "FreedWhen"+end.name, func(t *testing.T, e *env) {
			if end.name == "LeaseExpiredAtCeiling" {
				e.needAdvance()
			}
			q := "q-" + strings.ToLower(end.name)
			holder := whileLive(q, "k")
			holder.MaxAttempts = 1
			var parent job.ID
			if end.end == nil {
				parent = e.insert(withMax(q+"-parent", 1))[0]
				holder.Dependency = store.Dependency{Parents: []store.ParentRef{store.Existing(parent)}}
			}
			id := e.inserted(holder)
			e.held(whileLive(q, "k"), id)
			if end.end == nil {
				e.reportApplied(w1, failed(e.claimOne(w1, q+"-parent"), 0))
			} else {
				end.end(e, id, q)
			}
			if st := e.get(id).State; !st.Terminal() {
				t.Fatalf("holder is %s after %s, want terminal", st, end.name)
			}
			next := e.inserted(whileLive(q, "k"))
			e.held(forPeriod(q, "k", time.Hour), next)
		})
	}

	// "Once free, a key is free for good: an operator requeue brings a job
	// back without the key it held."
	s.run(t, "RequeueDoesNotRetake", func(t *testing.T, e *env) {
		holder := whileLive("q", "k")
		holder.MaxAttempts = 1
		id := e.inserted(holder)
		e.reportApplied(w1, failed(e.claimOne(w1, "q"), 0))
		if _, err := e.s.JobRequeue(e.ctx, store.JobRequeueParams{ID: id, Actor: actor}); err != nil {
			t.Fatalf("JobRequeue: %v", err)
		}
		e.wantState(id, job.StateScheduled)
		next := e.inserted(whileLive("q", "k"))
		e.held(whileLive("q", "k"), next)
		// And a requeue while another job holds the key changes nothing
		// about the key.
		if j := e.claimOne(w1, "q"); j.ID != id {
			t.Fatalf("claimed job %d, want %d, the first due", j.ID, id)
		} else {
			e.reportApplied(w1, failed(j, 0))
		}
		if _, err := e.s.JobRequeue(e.ctx, store.JobRequeueParams{ID: id, Actor: actor}); err != nil {
			t.Fatalf("JobRequeue with the key held by %d: %v", next, err)
		}
		e.held(whileLive("q", "k"), next)
	})

	// UniquePeriod: "until Period has passed on the store's clock since
	// its insert, whatever its state" — held after the holder ends, free at
	// insert+Period, and a new holder's period starts at its own insert.
	s.run(t, "PeriodHeldAfterTerminal", func(t *testing.T, e *env) {
		e.needAdvance()
		const period = time.Hour
		id := e.inserted(forPeriod("q", "daily", period))
		e.reportApplied(w1, succeeded(e.claimOne(w1, "q")))
		e.advance(period / 2)
		e.held(forPeriod("q", "daily", period), id)
		e.held(whileLive("q", "daily"), id) // one namespace
		e.advance(period/2 - time.Millisecond)
		e.held(forPeriod("q", "daily", period), id)
		e.advance(time.Millisecond)
		next := e.inserted(forPeriod("q", "daily", 2*period))
		e.advance(period + period/2)
		e.held(forPeriod("q", "daily", period), next)
		e.advance(period / 2)
		e.inserted(forPeriod("q", "daily", period))
	})

	// "a held key is held for every newcomer, whatever scope the newcomer
	// asks": a live while-live holder holds off a period newcomer.
	s.run(t, "OneNamespace", func(t *testing.T, e *env) {
		live := e.inserted(whileLive("q", "k"))
		e.held(forPeriod("q", "k", time.Minute), live)
		e.reportApplied(w1, succeeded(e.claimOne(w1, "q")))
		period := e.inserted(forPeriod("q", "k", time.Hour))
		e.held(whileLive("q", "k"), period)
	})

	// "Within one batch the first job with a key in InsertOrder … is the
	// candidate, and every later one conflicts with it"; a held key holds
	// off every job of a batch that names it.
	s.run(t, "InBatch", func(t *testing.T, e *env) {
		res := e.insertResults(whileLive("q", "a"), whileLive("q", "a"), newJob("q"), forPeriod("q", "a", time.Hour), whileLive("q", "b"))
		a := res[0].ID
		switch {
		case !res[0].Inserted, !res[2].Inserted, !res[4].Inserted:
			t.Fatalf("results %+v: the first of each key and the job without one must be inserted", res)
		case res[1] != (store.InsertResult{ID: a}), res[3] != (store.InsertResult{ID: a}):
			t.Fatalf("results %+v: later jobs with key a must answer %d, not inserted", res, a)
		case len(e.list(store.JobListParams{})) != 3:
			t.Fatalf("JobList = %v, want 3 jobs", e.list(store.JobListParams{}))
		}
		b := res[4].ID
		res = e.insertResults(newJob("q"), whileLive("q", "b"), whileLive("q", "b"))
		if !res[0].Inserted || res[1] != (store.InsertResult{ID: b}) || res[2] != (store.InsertResult{ID: b}) {
			t.Fatalf("results %+v: both jobs with the held key b must answer %d", res, b)
		}
	})

	// NewJob.Unique: "A job with a unique key may have parents"; one whose
	// key is held is not inserted, so its edges are not either.
	s.run(t, "WithParents", func(t *testing.T, e *env) {
		parent := e.insertN("p", 1)[0]
		child := whileLive("q", "k")
		child.Dependency = store.Dependency{Parents: []store.ParentRef{store.Existing(parent)}}
		id := e.inserted(child)
		e.wantState(id, job.StateAwaitingParent)
		e.held(child, id)
		if got := e.deps(parent).Dependents; !slices.Equal(got, []job.ID{id}) {
			t.Fatalf("parent's dependents = %v, want [%d]: the refused job wrote an edge", got, id)
		}
		e.reportApplied(w1, succeeded(e.claimOne(w1, "p")))
		e.wantState(id, job.StateScheduled)
		e.held(whileLive("q", "k"), id)
	})

	// Invalid unique keys and scopes are ErrInvalidParams and insert
	// nothing, nor take any key.
	s.run(t, "Validation", func(t *testing.T, e *env) {
		bad := map[string]store.Unique{
			"scope without key":     {Scope: store.UniqueWhileLive},
			"period without key":    {Period: time.Hour},
			"key without scope":     {Key: "k"},
			"unknown scope":         {Key: "k", Scope: 9},
			"while-live period":     {Key: "k", Scope: store.UniqueWhileLive, Period: time.Hour},
			"zero period":           {Key: "k", Scope: store.UniquePeriod},
			"negative period":       {Key: "k", Scope: store.UniquePeriod, Period: -time.Second},
			"long key":              {Key: strings.Repeat("k", store.MaxUniqueKeyLen+1), Scope: store.UniqueWhileLive},
			"invalid UTF-8 key":     {Key: "k\xff", Scope: store.UniqueWhileLive},
			"control character key": {Key: "k\x00", Scope: store.UniqueWhileLive},
		}
		for name, u := range bad {
			j := newJob("q")
			j.Unique = u
			_, err := e.s.JobInsertManyResults(e.ctx, store.InsertManyParams{Jobs: []store.NewJob{whileLive("q", "k"), j}})
			e.wantErr("JobInsertManyResults("+name+")", err, store.ErrInvalidParams)
		}
		child := newJob("q")
		child.Dependency = store.Dependency{Parents: []store.ParentRef{store.InBatch(0)}}
		_, err := e.s.JobInsertManyResults(e.ctx, store.InsertManyParams{Jobs: []store.NewJob{whileLive("q", "k"), child}})
		e.wantErr("JobInsertManyResults(in-batch parent with a unique key)", err, store.ErrInvalidParams)
		if got := e.list(store.JobListParams{}); len(got) != 0 {
			t.Fatalf("JobList after refused inserts = %v, want none", got)
		}
		e.inserted(whileLive("q", "k"))
		e.inserted(whileLive("q", strings.Repeat("k", store.MaxUniqueKeyLen)))
	})

	// "of any number of inserts of one free key racing on any store
	// instances over the same data, exactly one inserts its job": a new
	// key, a key freed by its holder's end, a key whose period ran out.
	s.run(t, "Race", func(t *testing.T, e *env) {
		peer := e.peer()
		race := func(round string, nj store.NewJob) job.ID {
			t.Helper()
			results := e.race(round, peer, func(int) store.NewJob { return nj })
			won := 0
			for i := range racers {
				if results[i].Inserted {
					won++
				}
				if results[i].ID != results[0].ID || results[i].ID < 1 {
					t.Fatalf("%s: racers answered %+v, want one id", round, results)
				}
			}
			if won != 1 {
				t.Fatalf("%s: %d of %d racers inserted, want exactly 1 (%+v)", round, won, racers, results)
			}
			return results[0].ID
		}
		var first job.ID
		for round := range 3 {
			id := race(fmt.Sprintf("new while-live key %d", round), whileLive("q", fmt.Sprintf("live-%d", round)))
			if round == 0 {
				first = id
			}
			race(fmt.Sprintf("new period key %d", round), forPeriod("q", fmt.Sprintf("period-%d", round), time.Hour))
		}
		if j := e.claimOne(w1, "q"); j.ID != first {
			t.Fatalf("claimed job %d, want %d, the holder of live-0 and the first due", j.ID, first)
		} else {
			e.reportApplied(w1, succeeded(j))
		}
		freed := race("freed while-live key", whileLive("q", "live-0"))
		if got := len(e.list(store.JobListParams{})); got != 7 {
			t.Fatalf("JobList holds %d jobs after 7 races, want 7", got)
		}
		e.held(whileLive("q", "live-0"), freed)
		if e.h.Advance != nil {
			e.advance(time.Hour)
			race("expired period key", forPeriod("q", "period-0", time.Hour))
		}
	})
}
