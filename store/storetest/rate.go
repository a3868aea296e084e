package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// setRate sets queue's Rate Limit as the suite's actor.
func (e *env) setRate(queue string, r store.QueueRate) {
	e.t.Helper()
	if err := e.s.QueueSetRate(e.ctx, store.QueueSetRateParams{Queue: queue, Rate: r, Actor: actor}); err != nil {
		e.t.Fatalf("QueueSetRate(%q, %s): %v", queue, r, err)
	}
}

// claimReopen claims like claim and returns the claim's Reopen too.
func (e *env) claimReopen(worker job.WorkerID, limit int, queues ...string) ([]job.Job, time.Duration) {
	e.t.Helper()
	reopen := time.Duration(-1)
	jobs, err := e.s.JobClaim(e.ctx, store.ClaimParams{Worker: worker, Queues: queues, Limit: limit, LeaseDuration: lease, Reopen: &reopen})
	if err != nil {
		e.t.Fatalf("JobClaim(%s, %d, %q): %v", worker, limit, queues, err)
	}
	if reopen < 0 {
		e.t.Fatalf("JobClaim(%s, %d, %q) left Reopen unwritten", worker, limit, queues)
	}
	return jobs, reopen
}

// toWindowStart advances the store's clock to the start of the next window
// of r's Period, so a test's claims all fall in one known window.
func (e *env) toWindowStart(r store.QueueRate) time.Time {
	e.t.Helper()
	now := e.now()
	next := r.WindowStart(now).Add(r.Period)
	e.advance(next.Sub(now))
	return next
}

func testRate(t *testing.T, s *suite) {
	perMinute := func(n int) store.QueueRate { return store.QueueRate{Limit: n, Period: time.Minute} }

	// Package doc, Rate Limit: "a claim leases from a rated Queue no more
	// jobs than leave that window's count at or below Limit"; JobClaim:
	// "when it withholds a due job the claim reports, through p.Reopen,
	// when its window ends".
	s.run(t, "Respected", func(t *testing.T, e *env) {
		r := perMinute(3)
		start := e.toWindowStart(r)
		e.setRate("q", r)
		e.insertN("q", 10)
		e.advance(10 * time.Second)
		got, reopen := e.claimReopen(w1, 10, "q")
		if len(got) != 3 {
			t.Fatalf("claim under rate %s leased %d jobs, want 3", r, len(got))
		}
		if want := start.Add(time.Minute).Sub(e.now()); reopen != want {
			t.Fatalf("Reopen after the window's budget ran out = %v, want %v (the window's end)", reopen, want)
		}
		got, reopen = e.claimReopen(w2, 10, "q")
		if len(got) != 0 {
			t.Fatalf("claim with the window's budget spent leased %v", idsOf(got))
		}
		if want := start.Add(time.Minute).Sub(e.now()); reopen != want {
			t.Fatalf("Reopen of an empty claim = %v, want %v", reopen, want)
		}
		if q, _ := e.queueInfo("q"); q.RateStarted != 3 {
			t.Fatalf("QueueList RateStarted = %d with the window's 3 starts spent", q.RateStarted)
		}
		// The last instant of the window still has no budget.
		e.advance(start.Add(time.Minute).Sub(e.now()) - time.Microsecond)
		e.claimNone(w1, "q")
		// The next window opens at its first instant.
		e.advance(time.Microsecond)
		if q, _ := e.queueInfo("q"); q.RateStarted != 0 {
			t.Fatalf("QueueList RateStarted = %d in a window with no start yet", q.RateStarted)
		}
		if got := e.claim(w1, 2, "q"); len(got) != 2 {
			t.Fatalf("claim in the next window leased %d jobs, want 2", len(got))
		}
		if got, reopen := e.claimReopen(w1, 10, "q"); len(got) != 1 || reopen != time.Minute {
			t.Fatalf("claim of the window's last start leased %d jobs with Reopen %v, want 1 and %v", len(got), reopen, time.Minute)
		}
	})

	// Package doc, Rate Limit: "Each claimed job counts once ... whatever
	// becomes of its Attempt". Unlike a Concurrency Limit, a finished job
	// gives its start back to nobody.
	s.run(t, "CountsStartsNotRunning", func(t *testing.T, e *env) {
		r := perMinute(2)
		e.toWindowStart(r)
		e.setRate("q", r)
		e.insertN("q", 5)
		for _, j := range e.claim(w1, 10, "q") {
			e.reportApplied(w1, succeeded(j))
		}
		if got := e.running("q"); got != 0 {
			t.Fatalf("Running = %d after every claimed job succeeded", got)
		}
		e.claimNone(w2, "q")
		// A retried job counts again when it starts again.
		e.advance(time.Minute)
		j := e.claimOne(w1, "q")
		e.reportApplied(w1, failed(j, 0))
		if got := e.claim(w1, 10, "q"); len(got) != 1 {
			t.Fatalf("claim after one start and a retry leased %d jobs, want 1", len(got))
		}
		e.claimNone(w1, "q")
	})

	// Reopen is zero when no Rate Limit withheld a due job: no rate, budget
	// left, or budget spent with nothing due.
	s.run(t, "ReopenZeroWhenNothingWithheld", func(t *testing.T, e *env) {
		r := perMinute(2)
		e.toWindowStart(r)
		e.insertN("plain", 3)
		if _, reopen := e.claimReopen(w1, 1, "plain"); reopen != 0 {
			t.Fatalf("Reopen of a Queue without a Rate Limit = %v", reopen)
		}
		e.setRate("q", r)
		e.insertN("q", 2)
		if got, reopen := e.claimReopen(w1, 1, "q"); len(got) != 1 || reopen != 0 {
			t.Fatalf("claim with budget left leased %d with Reopen %v, want 1 and 0", len(got), reopen)
		}
		if got, reopen := e.claimReopen(w1, 10, "q"); len(got) != 1 || reopen != 0 {
			t.Fatalf("claim spending the budget on the last due job leased %d with Reopen %v, want 1 and 0", len(got), reopen)
		}
		e.insert(at("q", e.now().Add(time.Hour)))
		if _, reopen := e.claimReopen(w1, 10, "q"); reopen != 0 {
			t.Fatalf("Reopen with only a future job waiting = %v", reopen)
		}
	})

	// A rated Queue yields its share and the claim falls through to the next
	// Queue; Reopen names the earliest exhausted window among the Queues.
	s.run(t, "FallsThroughWhenSpent", func(t *testing.T, e *env) {
		hour := store.QueueRate{Limit: 1, Period: time.Hour}
		start := e.toWindowStart(hour)
		e.setRate("a", hour)
		e.setRate("b", perMinute(1))
		e.insertN("a", 3)
		e.insertN("b", 3)
		c := e.insertN("c", 2)
		got, reopen := e.claimReopen(w1, 10, "a", "b", "c")
		if len(got) != 4 {
			t.Fatalf("claimed %d jobs over [a(1/h) b(1/m) c], want 4", len(got))
		}
		var fromC []job.ID
		for _, j := range got {
			if j.Queue == "c" {
				fromC = append(fromC, j.ID)
			}
		}
		e.wantIDs("jobs from c", sorted(fromC), c)
		if want := start.Add(time.Minute).Sub(e.now()); reopen != want {
			t.Fatalf("Reopen = %v, want %v (b's window, the earlier)", reopen, want)
		}
	})

	// The Rate Limit and the Concurrency Limit are independent gates: a
	// claim takes what both allow.
	s.run(t, "WithConcurrencyLimit", func(t *testing.T, e *env) {
		r := perMinute(3)
		e.toWindowStart(r)
		e.setRate("q", r)
		e.setLimit("q", 2)
		e.insertN("q", 10)
		got, reopen := e.claimReopen(w1, 10, "q")
		if len(got) != 2 || reopen != 0 {
			t.Fatalf("claim under limit 2 and rate %s leased %d with Reopen %v, want 2 and 0", r, len(got), reopen)
		}
		for _, j := range got {
			e.reportApplied(w1, succeeded(j))
		}
		if got := e.claim(w1, 10, "q"); len(got) != 1 {
			t.Fatalf("claim with 2 slots free and 1 start left leased %d, want 1", len(got))
		}
		e.claimNone(w2, "q")
	})

	// QueueSetRate: "A new Limit under the same Period keeps the current
	// window's count ...; a new Period, or a removed Rate, starts the count
	// afresh"; a paused Queue reports no Reopen.
	s.run(t, "Changed", func(t *testing.T, e *env) {
		e.toWindowStart(perMinute(1))
		e.setRate("q", perMinute(3))
		e.insertN("q", 20)
		e.claim(w1, 2, "q")
		e.setRate("q", perMinute(5))
		if got := e.claim(w1, 10, "q"); len(got) != 3 {
			t.Fatalf("claim after raising 3/m to 5/m with 2 counted leased %d, want 3", len(got))
		}
		e.setRate("q", perMinute(1))
		e.claimNone(w1, "q")
		e.setRate("q", store.QueueRate{Limit: 2, Period: time.Second})
		if got := e.claim(w1, 10, "q"); len(got) != 2 {
			t.Fatalf("claim under a new Period leased %d, want 2", len(got))
		}
		e.setRate("q", store.QueueRate{})
		if got := e.claim(w1, 4, "q"); len(got) != 4 {
			t.Fatalf("claim with the Rate removed leased %d, want 4", len(got))
		}
		e.setRate("q", store.QueueRate{Limit: 2, Period: time.Second})
		if got := e.claim(w1, 10, "q"); len(got) != 2 {
			t.Fatalf("claim under a Rate set again leased %d, want 2 (a removed Rate forgets its count)", len(got))
		}
		if err := e.s.QueuePause(e.ctx, store.QueueParams{Queue: "q"}); err != nil {
			t.Fatal(err)
		}
		if _, reopen := e.claimReopen(w1, 10, "q"); reopen != 0 {
			t.Fatalf("Reopen of a paused Queue = %v", reopen)
		}
	})

	// Queues: set-rate is an audited Operator Action, and QueueList shows
	// the Rate (and, in Respected, RateStarted).
	s.run(t, "ListedAndAudited", func(t *testing.T, e *env) {
		r := store.QueueRate{Limit: 7, Period: 90 * time.Second}
		e.setRate("q", r)
		q, ok := e.queueInfo("q")
		if !ok || q.Rate != r {
			t.Fatalf("QueueList shows %+v (listed %v), want Rate %s", q, ok, r)
		}
		e.setRate("q", store.QueueRate{})
		if q, _ := e.queueInfo("q"); !q.Rate.IsZero() {
			t.Fatalf("QueueList shows Rate %s after its removal", q.Rate)
		}
		got := e.audit(store.AuditListParams{Queue: "q"})
		if len(got) != 2 {
			t.Fatalf("audit trail has %d entries, want 2", len(got))
		}
		for i, want := range []string{"rate none", "rate 7/1m30s"} {
			if a := got[i]; a.Action != store.AuditQueueSetRate || a.Actor != actor || a.Detail != want || a.Queue != "q" {
				t.Fatalf("audit entry %d = %+v, want %s by %s with detail %q", i, a, store.AuditQueueSetRate, actor, want)
			}
		}
	})

	// Invalid Rates write nothing.
	s.run(t, "Invalid", func(t *testing.T, e *env) {
		for _, r := range []store.QueueRate{
			{Limit: 0, Period: time.Minute},
			{Limit: -1, Period: time.Minute},
			{Limit: 1},
			{Limit: 1, Period: time.Microsecond},
			{Limit: 1, Period: time.Millisecond + time.Nanosecond},
			{Limit: 1, Period: store.MaxRatePeriod + time.Second},
		} {
			err := e.s.QueueSetRate(e.ctx, store.QueueSetRateParams{Queue: "q", Rate: r})
			e.wantErr(fmt.Sprintf("QueueSetRate(%+v)", r), err, store.ErrInvalidParams)
		}
		if _, ok := e.queueInfo("q"); ok {
			t.Fatal("an invalid QueueSetRate made its Queue known")
		}
		if got := e.audit(store.AuditListParams{Queue: "q"}); len(got) != 0 {
			t.Fatalf("an invalid QueueSetRate was audited: %+v", got)
		}
	})

	// Package doc, Rate Limit: "The count is exact under any number of
	// concurrent claimers". Four claimers, half of them on a second store
	// instance where the adapter has one, race through three windows; each
	// window starts exactly Limit jobs.
	s.run(t, "ConcurrentClaimers", func(t *testing.T, e *env) {
		const limit, claimers, windows = 5, 4, 3
		r := store.QueueRate{Limit: limit, Period: time.Minute}
		e.toWindowStart(r)
		e.setRate("q", r)
		e.insertN("q", limit*windows+20)
		stores := []store.Store{e.s, e.peer()}
		for w := range windows {
			var (
				mu      sync.Mutex
				started = map[job.ID]bool{}
				wg      sync.WaitGroup
				gate    = make(chan struct{})
			)
			for i := range claimers {
				st := stores[i%len(stores)]
				worker := job.WorkerID(fmt.Sprintf("storetest-rate-%d", i))
				wg.Go(func() {
					<-gate
					for range 2 * limit {
						var reopen time.Duration
						got, err := st.JobClaim(e.ctx, store.ClaimParams{Worker: worker, Queues: []string{"q"}, Limit: 2, LeaseDuration: time.Hour, Reopen: &reopen})
						if err != nil {
							t.Errorf("JobClaim: %v", err)
							return
						}
						mu.Lock()
						for _, j := range got {
							if started[j.ID] {
								t.Errorf("job %d leased twice", j.ID)
							}
							started[j.ID] = true
						}
						mu.Unlock()
						if len(got) == 0 {
							if reopen <= 0 || reopen > r.Period {
								t.Errorf("empty claim with due jobs left has Reopen %v", reopen)
							}
							return
						}
					}
				})
			}
			close(gate)
			wg.Wait()
			if len(started) != limit {
				t.Fatalf("window %d: %d racing claimers started %d jobs under rate %s", w, claimers, len(started), r)
			}
			e.advance(r.Period)
		}
	})
}
