package mariadb_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/mariadb"
)

// TestObserverWalkCommitOrder runs writers on two Stores over the same
// tables — inserts, claims and outcomes racing on the server's clock —
// while a Transition Observer walks the log in small steps on a third, and
// requires the walk to deliver every Transition Log entry exactly once, in
// ascending order: no entry committed behind the walk's cursor (the
// hazard of an id allocated before commit; see the package doc, Commit
// order).
func TestObserverWalkCommitOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := openStore(t, mariadb.Options{})
	b := openStore(t, mariadb.Options{Schema: a.Schema()})
	walker := openStore(t, mariadb.Options{Schema: a.Schema()})
	allStates := []job.State{job.StateScheduled, job.StateAwaitingParent, job.StateRunning, job.StateSucceeded,
		job.StateDeadLettered, job.StateCancelled, job.StateQuarantined}

	stop := make(chan struct{})
	var writers sync.WaitGroup
	errs := make(chan error, 16)
	for i, s := range []*mariadb.Store{a, b, a, b} {
		writers.Add(1)
		go func() {
			defer writers.Done()
			worker := job.WorkerID(fmt.Sprintf("w%d", i))
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.JobInsertMany(ctx, store.InsertManyParams{Jobs: []store.NewJob{
					{WireName: "walk", Queue: "q", MaxAttempts: 3}, {WireName: "walk", Queue: "q", MaxAttempts: 3},
				}}); err != nil {
					errs <- err
					return
				}
				jobs, err := s.JobClaim(ctx, store.ClaimParams{Worker: worker, Queues: []string{"q"}, Limit: 2, LeaseDuration: time.Minute})
				if err != nil {
					errs <- err
					return
				}
				var outs []store.Outcome
				for _, j := range jobs {
					outs = append(outs, store.Outcome{Outcome: core.Outcome{Lease: j.Lease(), State: job.StateSucceeded, Via: core.ViaSucceed}})
				}
				if len(outs) > 0 {
					if _, err := s.OutcomeReport(ctx, store.ReportParams{Worker: worker, Outcomes: outs}); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}

	var delivered []int64
	walk := func() bool {
		res, err := walker.ObserverClaim(ctx, store.ObserverClaimParams{Observer: "walk", Holder: "walker",
			LeaseDuration: time.Minute, States: allStates, Limit: 7})
		if err != nil {
			t.Fatalf("ObserverClaim: %v", err)
		}
		for _, o := range res.Transitions {
			delivered = append(delivered, o.Position.Seq)
		}
		if err := walker.ObserverAdvance(ctx, store.ObserverAdvanceParams{Observer: "walk", Holder: "walker",
			Token: res.Token, To: res.Through, LeaseDuration: time.Minute}); err != nil {
			t.Fatalf("ObserverAdvance: %v", err)
		}
		return res.More
	}
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		walk()
	}
	close(stop)
	writers.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("writer: %v", err)
	}
	for walk() {
	}

	db := adminDB(t)
	defer func() { _ = db.Close() }()
	rows, err := db.QueryContext(ctx, "SELECT seq FROM `"+a.Schema()+"transition` ORDER BY seq")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rows.Close() }()
	var stored []int64
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			t.Fatal(err)
		}
		stored = append(stored, seq)
	}
	if len(stored) < 50 {
		t.Fatalf("only %d entries written: the race did not run", len(stored))
	}
	if len(delivered) != len(stored) {
		t.Fatalf("the walk delivered %d entries, the log holds %d", len(delivered), len(stored))
	}
	for i := range stored {
		if delivered[i] != stored[i] {
			t.Fatalf("delivery %d is entry %d, want %d: the walk skipped or reordered an entry", i, delivered[i], stored[i])
		}
	}
	t.Logf("%d entries written by 4 racing writers on 2 stores, every one delivered once, in order", len(stored))
}

// succeeded is the outcome of a successful Attempt of j.
func succeeded(j job.Job) store.Outcome {
	return store.Outcome{Outcome: core.Outcome{Lease: j.Lease(), State: job.StateSucceeded, Via: core.ViaSucceed}}
}
