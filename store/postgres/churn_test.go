package postgres_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/postgres"
	"github.com/backwave/backwave/vtime"
)

// TestLeaseChurn races every worker write the contract has — claims,
// renewals, outcomes (succeed, retry, dead-letter), Relinquishes, Leases
// simply forgotten as by a crashed node, late outcomes — against a lease
// sweeper and a clock that keeps moving, on both connection modes at once,
// then audits the result: every Attempt was charged once and ended exactly
// once (glossary, Effect-Once), every applied outcome is the one that ended
// its Attempt, no stale outcome applied, the limited Queue never ran more
// than its limit, and every job ended terminal.
func TestLeaseChurn(t *testing.T) {
	t.Parallel()
	const (
		jobs    = 400
		limit   = 2
		lease   = 5 * time.Second
		workers = 6
		opsEach = 60
	)
	clock := vtime.NewManual(vtime.Epoch)
	a := openStore(t, modePgx, postgres.Options{Now: clock.Now})
	b := openStore(t, modeSQL, postgres.Options{Schema: a.Schema(), SkipMigrate: true, Now: clock.Now})
	ctx := t.Context()
	if err := a.QueueSetLimit(ctx, store.QueueSetLimitParams{Queue: "limited", Limit: limit}); err != nil {
		t.Fatal(err)
	}
	var nj []store.NewJob
	for i := range jobs {
		nj = append(nj, store.NewJob{WireName: "churn", Queue: []string{"free", "limited"}[i%2], MaxAttempts: 4})
	}
	if _, err := a.JobInsertMany(ctx, store.InsertManyParams{Jobs: nj}); err != nil {
		t.Fatal(err)
	}

	// applied records, per Lease, the via of every outcome the store said
	// it applied.
	var (
		mu      sync.Mutex
		applied = make(map[job.Lease][]core.Via)
		fail    = make(chan error, 64)
		stop    = make(chan struct{})
		bg      sync.WaitGroup
		maxRun  atomic.Int64
	)
	report := func(s *postgres.Store, w job.WorkerID, outs []store.Outcome) {
		res, err := s.OutcomeReport(ctx, store.ReportParams{Worker: w, Outcomes: outs})
		if err != nil {
			fail <- err
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for i, r := range res {
			if r.Applied {
				applied[r.Lease] = append(applied[r.Lease], outs[i].Via)
			}
		}
	}
	decide := func(j job.Job, r core.Result) store.Outcome {
		p := core.RetryPolicy{Initial: time.Second, Max: 2 * time.Second, Multiplier: 2}
		return store.Outcome{Outcome: core.Decide(core.AttemptInfo{Lease: j.Lease(), MaxAttempts: j.MaxAttempts}, r, p)}
	}

	// The clock and the sweeper run until stop.
	bg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
				clock.Advance(200 * time.Millisecond)
			}
		}
	})
	bg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := a.LeaseExpire(ctx, store.ExpireParams{Queues: []string{"free", "limited"}, Limit: 7}); err != nil {
				fail <- err
				return
			}
			qs, err := b.QueueList(ctx) // one statement: one snapshot
			if err != nil {
				fail <- err
				return
			}
			for _, q := range qs {
				if q.Name == "limited" {
					maxRun.Store(max(maxRun.Load(), int64(q.Running)))
				}
			}
		}
	})

	// Phase 1: chaos. Phase 2: every worker only succeeds, until all jobs
	// are terminal.
	var done atomic.Bool
	var ws sync.WaitGroup
	for i := range workers {
		s := []*postgres.Store{a, b}[i%2]
		w := job.WorkerID(fmt.Sprintf("churn-%d", i))
		rng := rand.New(rand.NewPCG(uint64(i), 42))
		// Claims naming the limited Queue queue up on its lock; the others
		// race each other for the free Queue's rows.
		queues := []string{"free"}
		if i%4 < 2 {
			queues = []string{"limited", "free"}
		}
		ws.Go(func() {
			var late []store.Outcome // outcomes held back past their Lease
			for op := 0; !done.Load(); op++ {
				chaos := op < opsEach
				got, err := s.JobClaim(ctx, store.ClaimParams{Worker: w, Queues: queues, Limit: 1 + rng.IntN(4), LeaseDuration: lease})
				if err != nil {
					fail <- err
					return
				}
				var outs []store.Outcome
				var hand []job.Lease
				for _, j := range got {
					switch k := rng.IntN(10); {
					case !chaos || k < 4:
						outs = append(outs, decide(j, core.ResultSucceeded))
					case k < 6:
						outs = append(outs, decide(j, core.ResultFailed))
					case k < 7:
						hand = append(hand, j.Lease())
					case k < 8:
						if _, err := s.LeaseRenew(ctx, store.RenewParams{Worker: w, Leases: []job.Lease{j.Lease()}, LeaseDuration: lease}); err != nil {
							fail <- err
							return
						}
						outs = append(outs, decide(j, core.ResultSucceeded))
					case k < 9:
						late = append(late, decide(j, core.ResultSucceeded)) // reported much later, if ever
					default:
						// forgotten, as by a node that died: only expiry ends it
					}
				}
				if len(hand) > 0 {
					if _, err := s.LeaseRelinquish(ctx, store.RelinquishParams{Worker: w, Leases: hand}); err != nil {
						fail <- err
						return
					}
				}
				if len(late) > 8 || (!chaos && len(late) > 0) {
					outs, late = append(outs, late...), nil
				}
				if len(outs) > 0 {
					report(s, w, outs)
				}
			}
		})
	}
	waitUntil(t, "every job to end", 3*time.Minute, func() bool {
		select {
		case err := <-fail:
			t.Fatal(err)
		default:
		}
		n, err := a.JobCountByState(ctx, store.CountParams{})
		if err != nil {
			t.Fatal(err)
		}
		return n[job.StateScheduled]+n[job.StateRunning] == 0
	})
	done.Store(true)
	ws.Wait()
	close(stop)
	bg.Wait()
	close(fail)
	for err := range fail {
		t.Fatal(err)
	}
	if got := maxRun.Load(); got > limit {
		t.Fatalf("the limited Queue ran %d jobs at once, limit %d", got, limit)
	}
	auditAttempts(t, a, applied)
}

// auditAttempts checks the Transition Log of every job in s against the
// outcomes the workers saw applied: each Attempt claimed once and ended
// once, each applied outcome the one that ended its Attempt, and no outcome
// ending an Attempt that its worker was told had not applied.
func auditAttempts(t *testing.T, s *postgres.Store, applied map[job.Lease][]core.Via) {
	t.Helper()
	ctx := t.Context()
	all, err := s.JobList(ctx, store.JobListParams{Limit: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range all {
		if !j.State.Terminal() {
			t.Errorf("job %d ended %s", j.ID, j.State)
		}
		log, err := s.JobTransitions(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		claims := make(map[job.Attempt]int)
		ends := make(map[job.Attempt][]core.Via)
		for _, tr := range log {
			if err := core.CheckEdge(tr.From, tr.State, tr.Via); err != nil {
				t.Errorf("job %d: %v", j.ID, err)
			}
			if tr.Via == core.ViaClaim {
				claims[tr.Attempt]++
			}
			if tr.From == job.StateRunning {
				ends[tr.Attempt] = append(ends[tr.Attempt], tr.Via)
			}
		}
		for a := job.Attempt(1); a <= j.Attempt; a++ {
			l := job.Lease{ID: j.ID, Attempt: a}
			if claims[a] != 1 {
				t.Errorf("Attempt %s was claimed %d times", l, claims[a])
			}
			if len(ends[a]) != 1 {
				t.Errorf("Attempt %s ended %d times: %v", l, len(ends[a]), ends[a])
				continue
			}
			end := ends[a][0]
			switch got := applied[l]; {
			case len(got) > 1:
				t.Errorf("Attempt %s: %d outcomes applied", l, len(got))
			case len(got) == 1 && got[0] != end:
				t.Errorf("Attempt %s: applied outcome %s, but the log ended it by %s", l, got[0], end)
			case len(got) == 0 && end != core.ViaExpire && end != core.ViaRelinquish:
				t.Errorf("Attempt %s ended by %s, an outcome no worker saw applied", l, end)
			}
		}
		if len(claims) != int(j.Attempt) {
			t.Errorf("job %d: claims logged for Attempts %v, job at Attempt %d", j.ID, claims, j.Attempt)
		}
	}
}
