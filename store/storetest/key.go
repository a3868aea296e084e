package storetest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// keyed returns newJob(queue) with the Concurrency Key key.
func keyed(queue, key string) store.NewJob {
	j := newJob(queue)
	j.ConcurrencyKey = key
	return j
}

// insertKeyed inserts n jobs of key in queue, due now.
func (e *env) insertKeyed(queue, key string, n int) []job.ID {
	e.t.Helper()
	jobs := make([]store.NewJob, n)
	for i := range jobs {
		jobs[i] = keyed(queue, key)
	}
	return e.insert(jobs...)
}

// setKeyLimit sets queue's Key Limit as the suite's actor.
func (e *env) setKeyLimit(queue string, limit int) {
	e.t.Helper()
	if err := e.s.QueueSetKeyLimit(e.ctx, store.QueueSetKeyLimitParams{Queue: queue, Limit: limit, Actor: actor}); err != nil {
		e.t.Fatalf("QueueSetKeyLimit(%q, %d): %v", queue, limit, err)
	}
}

// setKeyRate sets queue's Key Rate as the suite's actor.
func (e *env) setKeyRate(queue string, r store.QueueRate) {
	e.t.Helper()
	if err := e.s.QueueSetKeyRate(e.ctx, store.QueueSetKeyRateParams{Queue: queue, Rate: r, Actor: actor}); err != nil {
		e.t.Fatalf("QueueSetKeyRate(%q, %s): %v", queue, r, err)
	}
}

// setFair turns queue's Fair Claim on or off as the suite's actor.
func (e *env) setFair(queue string, fair bool) {
	e.t.Helper()
	if err := e.s.QueueSetFairClaim(e.ctx, store.QueueSetFairClaimParams{Queue: queue, Fair: fair, Actor: actor}); err != nil {
		e.t.Fatalf("QueueSetFairClaim(%q, %v): %v", queue, fair, err)
	}
}

// byKey counts jobs per Concurrency Key.
func byKey(jobs []job.Job) map[string]int {
	n := map[string]int{}
	for _, j := range jobs {
		n[j.ConcurrencyKey]++
	}
	return n
}

// keysOf lists the jobs' Concurrency Keys in order.
func keysOf(jobs []job.Job) string {
	keys := make([]string, len(jobs))
	for i, j := range jobs {
		keys[i] = j.ConcurrencyKey
		if keys[i] == "" {
			keys[i] = "-"
		}
	}
	return strings.Join(keys, ",")
}

func testKeys(t *testing.T, s *suite) {
	// KeyPolicy, Key Limit: "at most Limit jobs of one key are Running in
	// the Queue at once, counted across every worker"; "the Key Limit ...
	// bind[s] only jobs that carry a key"; "A job a key's limit holds back is
	// passed over, not waited on".
	s.run(t, "KeyLimit", func(t *testing.T, e *env) {
		e.setKeyLimit("q", 2)
		e.insertKeyed("q", "a", 5)
		e.insertKeyed("q", "b", 3)
		e.insertN("q", 3)
		first := e.claim(w1, 3, "q")
		if got := byKey(first); got["a"] != 2 || got[""] != 0 || got["b"] != 1 {
			t.Fatalf("first claim of 3 under key limit 2 took %s, want a,a,b", keysOf(first))
		}
		second := e.claim(w2, 10, "q")
		if got := byKey(second); got["a"] != 0 || got["b"] != 1 || got[""] != 3 {
			t.Fatalf("second claim took %s, want b and the 3 jobs without a key (a is at its limit on the other worker)", keysOf(second))
		}
		if got := byKey(e.claim(w2, 10, "q")); len(got) != 0 {
			t.Fatalf("a claim with every key at its limit took %v", got)
		}
		// A slot of a frees when its job leaves Running, and only then: a
		// stale outcome frees nothing.
		var a job.Job
		for _, j := range first {
			if j.ConcurrencyKey == "a" {
				a = j
				break
			}
		}
		e.reportStale(w2, succeeded(a))
		e.claimNone(w1, "q")
		e.reportApplied(w1, succeeded(a))
		if got := e.claim(w1, 10, "q"); keysOf(got) != "a" {
			t.Fatalf("claim after one of a's jobs ended took %s, want a", keysOf(got))
		}
		// A Relinquish and an expired Lease free the key's slot too.
		e.claimNone(w1, "q")
		var leases []job.Lease
		for _, j := range append(first, second...) {
			if j.ConcurrencyKey == "a" && j.ID != a.ID {
				leases = append(leases, j.Lease())
			}
		}
		if got := e.relinquish(w1, leases...); len(got) != 1 {
			t.Fatalf("relinquished %v, want the one a job of w1", got)
		}
		if got := e.claim(w2, 10, "q"); keysOf(got) != "a" {
			t.Fatalf("claim after a Relinquish took %s, want a", keysOf(got))
		}
	})

	// QueueSetKeyLimit: "A Limit above the Queue's Concurrency Limit is
	// refused ... and nothing is stored or audited"; both limits hold.
	s.run(t, "KeyLimitWithConcurrencyLimit", func(t *testing.T, e *env) {
		e.setLimit("q", 3)
		err := e.s.QueueSetKeyLimit(e.ctx, store.QueueSetKeyLimitParams{Queue: "q", Limit: 4, Actor: actor})
		e.wantErr("QueueSetKeyLimit(4) over a Concurrency Limit of 3", err, store.ErrInvalidParams)
		if q, _ := e.queueInfo("q"); q.Keys.Limit != 0 {
			t.Fatalf("a refused Key Limit was stored: %+v", q.Keys)
		}
		if got := e.audit(store.AuditListParams{Queue: "q"}); len(got) != 0 && got[0].Action == store.AuditQueueSetKeyLimit {
			t.Fatalf("a refused Key Limit was audited: %+v", got[0])
		}
		e.setKeyLimit("q", 2)
		e.insertKeyed("q", "a", 4)
		e.insertKeyed("q", "b", 4)
		if got := e.claim(w1, 10, "q"); keysOf(got) != "a,a,b" {
			t.Fatalf("claim under limit 3 and key limit 2 took %s, want a,a,b", keysOf(got))
		}
	})

	// KeyPolicy, Key Rate: "at most Rate.Limit jobs of one key start per
	// window of Rate.Period"; QueueSetKeyRate keeps counts under a new Limit
	// and forgets them under a new Period; a withheld job sets Reopen.
	s.run(t, "KeyRate", func(t *testing.T, e *env) {
		r := store.QueueRate{Limit: 2, Period: time.Minute}
		start := e.toWindowStart(r)
		e.setKeyRate("q", r)
		e.insertKeyed("q", "a", 6)
		e.insertKeyed("q", "b", 6)
		e.insertN("q", 3)
		e.advance(5 * time.Second)
		got, reopen := e.claimReopen(w1, 20, "q")
		if n := byKey(got); n["a"] != 2 || n["b"] != 2 || n[""] != 3 {
			t.Fatalf("claim under key rate %s took %s, want 2 a, 2 b and the 3 without a key", r, keysOf(got))
		}
		if want := start.Add(time.Minute).Sub(e.now()); reopen != want {
			t.Fatalf("Reopen after the keys' windows ran out = %v, want %v", reopen, want)
		}
		// Finishing jobs gives no start back.
		for _, j := range got {
			e.reportApplied(w1, succeeded(j))
		}
		e.claimNone(w1, "q")
		e.setKeyRate("q", store.QueueRate{Limit: 3, Period: time.Minute})
		if got := e.claim(w1, 20, "q"); keysOf(got) != "a,b" {
			t.Fatalf("claim after raising the Limit to 3 took %s, want a,b (the window's count kept)", keysOf(got))
		}
		e.advance(start.Add(time.Minute).Sub(e.now()))
		if got := e.claim(w1, 20, "q"); len(got) != 6 {
			t.Fatalf("claim in the next window took %s, want 3 a and 3 b", keysOf(got))
		}
	})

	// KeyPolicy, Fair Claim: "a claim takes the Queue's due jobs
	// round-robin across keys ... and the rotation carries from one claim
	// to the next"; "Jobs without a key form one key of their own".
	s.run(t, "FairClaim", func(t *testing.T, e *env) {
		e.insertKeyed("q", "a", 50)
		e.insertKeyed("q", "b", 2)
		e.insertN("q", 1)
		e.insertKeyed("q", "c", 1)
		if got := e.claim(w1, 2, "q"); keysOf(got) != "a,a" {
			t.Fatalf("claim without Fair Claim took %s, want due order a,a", keysOf(got))
		}
		e.setFair("q", true)
		if got := e.claim(w1, 5, "q"); keysOf(got) != "a,b,-,c,a" {
			t.Fatalf("Fair Claim of 5 took %s, want a,b,-,c,a", keysOf(got))
		}
		// One job per claim: the least recently served key goes first.
		var order []string
		for range 4 {
			order = append(order, keysOf(e.claim(w1, 1, "q")))
		}
		if got := strings.Join(order, " "); got != "b a a a" {
			t.Fatalf("Fair Claims of one job took %s, want b a a a", got)
		}
	})

	// Fair Claim, with the Key Limit: a key held by its limit loses its
	// turns; the others go on.
	s.run(t, "FairClaimWithKeyLimit", func(t *testing.T, e *env) {
		e.setFair("q", true)
		e.setKeyLimit("q", 1)
		e.insertKeyed("q", "a", 10)
		e.insertKeyed("q", "b", 10)
		if got := e.claim(w1, 10, "q"); keysOf(got) != "a,b" {
			t.Fatalf("Fair Claim under key limit 1 took %s, want a,b", keysOf(got))
		}
	})

	// Queues: the key settings are audited Operator Actions, and
	// QueueList shows them.
	s.run(t, "ListedAndAudited", func(t *testing.T, e *env) {
		r := store.QueueRate{Limit: 7, Period: 90 * time.Second}
		e.setKeyLimit("q", 4)
		e.setKeyRate("q", r)
		e.setFair("q", true)
		q, ok := e.queueInfo("q")
		if want := (store.KeyPolicy{Limit: 4, Rate: r, Fair: true}); !ok || q.Keys != want {
			t.Fatalf("QueueList shows %+v (listed %v), want Keys %s", q.Keys, ok, want)
		}
		e.setKeyLimit("q", 0)
		e.setKeyRate("q", store.QueueRate{})
		e.setFair("q", false)
		if q, _ := e.queueInfo("q"); !q.Keys.IsZero() {
			t.Fatalf("QueueList shows Keys %s after their removal", q.Keys)
		}
		got := e.audit(store.AuditListParams{Queue: "q"})
		want := []struct {
			action store.AuditAction
			detail string
		}{
			{store.AuditQueueSetFairClaim, "fair claim off"},
			{store.AuditQueueSetKeyRate, "key rate none"},
			{store.AuditQueueSetKeyLimit, "key limit none"},
			{store.AuditQueueSetFairClaim, "fair claim on"},
			{store.AuditQueueSetKeyRate, "key rate 7/1m30s"},
			{store.AuditQueueSetKeyLimit, "key limit 4"},
		}
		if len(got) != len(want) {
			t.Fatalf("audit trail has %d entries, want %d", len(got), len(want))
		}
		for i, w := range want {
			if a := got[i]; a.Action != w.action || a.Actor != actor || a.Detail != w.detail || a.Queue != "q" {
				t.Fatalf("audit entry %d = %+v, want %s by %s with detail %q", i, a, w.action, actor, w.detail)
			}
		}
	})

	// Monitor.QueueKeys: the keys with the most Scheduled and Running
	// jobs, most first, ties by key; "" for jobs without a key.
	s.run(t, "QueueKeys", func(t *testing.T, e *env) {
		e.insertKeyed("q", "a", 5)
		e.insertKeyed("q", "b", 2)
		e.insertKeyed("q", "c", 2)
		e.insertN("q", 3)
		e.insertKeyed("other", "z", 9)
		e.claim(w1, 2, "q")
		done := e.claim(w1, 1, "q")
		e.reportApplied(w1, succeeded(done[0]))
		got, err := e.s.QueueKeys(e.ctx, store.QueueKeysParams{Queue: "q", Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		want := []store.KeyCount{{Key: "a", Scheduled: 2, Running: 2}, {Key: "", Scheduled: 3}, {Key: "b", Scheduled: 2}}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("QueueKeys = %+v, want %+v", got, want)
		}
		if got, err := e.s.QueueKeys(e.ctx, store.QueueKeysParams{Queue: "none"}); err != nil || len(got) != 0 {
			t.Fatalf("QueueKeys of an unknown Queue = %v, %v", got, err)
		}
	})

	// A claimed and a read job carry their Concurrency Key.
	s.run(t, "Carried", func(t *testing.T, e *env) {
		long := strings.Repeat("é", store.MaxConcurrencyKeyBytes/2)
		ids := e.insert(keyed("q", long), keyed("q", "acme"))
		if got := e.get(ids[0]).ConcurrencyKey; got != long {
			t.Fatalf("JobGet key = %q, want the %d-byte key", got, len(long))
		}
		got := e.claim(w1, 2, "q")
		if keysOf(got) != long+",acme" {
			t.Fatalf("claimed keys %s", keysOf(got))
		}
	})

	// Bad input: an over-long or malformed key inserts nothing; a bad Key
	// Limit or Key Rate stores and audits nothing.
	s.run(t, "Invalid", func(t *testing.T, e *env) {
		for _, key := range []string{strings.Repeat("k", store.MaxConcurrencyKeyBytes+1), "a\x00b", "tab\there", "\xff"} {
			_, err := e.s.JobInsertMany(e.ctx, store.InsertManyParams{Jobs: []store.NewJob{newJob("q"), keyed("q", key)}})
			e.wantErr(fmt.Sprintf("insert with key %q", key), err, store.ErrInvalidParams)
		}
		for _, limit := range []int{-1, store.MaxKeyLimit + 1} {
			err := e.s.QueueSetKeyLimit(e.ctx, store.QueueSetKeyLimitParams{Queue: "q", Limit: limit})
			e.wantErr(fmt.Sprintf("QueueSetKeyLimit(%d)", limit), err, store.ErrInvalidParams)
		}
		for _, r := range []store.QueueRate{{Limit: 0, Period: time.Minute}, {Limit: 1}, {Limit: 1, Period: time.Microsecond}} {
			err := e.s.QueueSetKeyRate(e.ctx, store.QueueSetKeyRateParams{Queue: "q", Rate: r})
			e.wantErr(fmt.Sprintf("QueueSetKeyRate(%+v)", r), err, store.ErrInvalidParams)
		}
		err := e.s.QueueSetFairClaim(e.ctx, store.QueueSetFairClaimParams{Queue: ""})
		e.wantErr("QueueSetFairClaim of no Queue", err, store.ErrInvalidParams)
		_, err = e.s.QueueKeys(e.ctx, store.QueueKeysParams{Queue: "q", Limit: store.MaxQueueKeys + 1})
		e.wantErr("QueueKeys over MaxQueueKeys", err, store.ErrInvalidParams)
		if _, ok := e.queueInfo("q"); ok {
			t.Fatal("bad input made its Queue known")
		}
		if got := e.audit(store.AuditListParams{Queue: "q"}); len(got) != 0 {
			t.Fatalf("bad input was audited: %+v", got)
		}
	})

	// KeyPolicy: "Every count is exact under any number of concurrent
	// claimers". Four claimers, half on a second store instance where the
	// adapter has one, race under each rule.
	s.run(t, "ConcurrentKeyLimit", func(t *testing.T, e *env) {
		const limit, keys = 2, 5
		e.setKeyLimit("q", limit)
		for k := range keys {
			e.insertKeyed("q", fmt.Sprintf("k%d", k), 10)
		}
		got := e.claimRace(4, 3, 6)
		for k, n := range byKey(got) {
			if n != limit {
				t.Fatalf("racing claimers started %d jobs of key %s under key limit %d", n, k, limit)
			}
		}
		if len(got) != limit*keys {
			t.Fatalf("racing claimers started %d jobs, want %d", len(got), limit*keys)
		}
	})
	s.run(t, "ConcurrentKeyRate", func(t *testing.T, e *env) {
		const limit, keys = 3, 4
		r := store.QueueRate{Limit: limit, Period: time.Minute}
		e.toWindowStart(r)
		e.setKeyRate("q", r)
		for k := range keys {
			e.insertKeyed("q", fmt.Sprintf("k%d", k), 10)
		}
		for w := range 2 {
			got := e.claimRace(4, 2, 8)
			if len(got) != limit*keys {
				t.Fatalf("window %d: racing claimers started %d jobs, want %d", w, len(got), limit*keys)
			}
			for k, n := range byKey(got) {
				if n != limit {
					t.Fatalf("window %d: racing claimers started %d jobs of key %s under key rate %s", w, n, k, r)
				}
			}
			e.advance(r.Period)
		}
	})
	s.run(t, "ConcurrentFairClaim", func(t *testing.T, e *env) {
		e.setFair("q", true)
		e.insertKeyed("q", "flood", 100)
		for k := range 7 {
			e.insertKeyed("q", fmt.Sprintf("k%d", k), 1)
		}
		// Eight claims of one job each, however they interleave, serve the
		// eight keys once each: rotation is exact across claimers.
		got := e.claimRace(4, 1, 2)
		if len(got) != 8 {
			t.Fatalf("racing claimers started %d jobs, want 8", len(got))
		}
		for k, n := range byKey(got) {
			if n != 1 {
				t.Fatalf("racing Fair Claims of one job started %d jobs of key %s, want one per key: %s", n, k, keysOf(got))
			}
		}
	})
}

// claimRace runs claimers concurrent claimers on "q", half of them on the peer
// store, each making up to rounds claims of batch jobs with a long Lease,
// and returns every job they leased; a job leased twice fails the test.
func (e *env) claimRace(claimers, batch, rounds int) []job.Job {
	e.t.Helper()
	stores := []store.Store{e.s, e.peer()}
	var (
		mu   sync.Mutex
		seen = map[job.ID]bool{}
		out  []job.Job
		wg   sync.WaitGroup
		gate = make(chan struct{})
	)
	for i := range claimers {
		st := stores[i%len(stores)]
		worker := job.WorkerID(fmt.Sprintf("storetest-key-%d", i))
		wg.Go(func() {
			<-gate
			for range rounds {
				got, err := st.JobClaim(e.ctx, store.ClaimParams{Worker: worker, Queues: []string{"q"}, Limit: batch, LeaseDuration: time.Hour})
				if err != nil {
					e.t.Errorf("JobClaim: %v", err)
					return
				}
				mu.Lock()
				for _, j := range got {
					if seen[j.ID] {
						e.t.Errorf("job %d leased twice", j.ID)
					}
					seen[j.ID] = true
					out = append(out, j)
				}
				mu.Unlock()
			}
		})
	}
	close(gate)
	wg.Wait()
	return out
}
