package sqlite_test

import (
	"context"
	"testing"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/sqlite"
)

// TestSchemaNameLifecycle runs every statement of the store once under a
// Schema Name other than the default: insert, claim, renew, report with
// output and tags, expire, Relinquish, cancel, the Queue settings and every
// read. (TestConformanceSchemaName runs the whole suite that way when the
// race detector is off.)
func TestSchemaNameLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clock := newStore(t, sqlite.Options{Schema: "app_"})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	ids, err := s.JobInsertMany(ctx, store.InsertManyParams{Jobs: []store.NewJob{
		{WireName: "w", Queue: "q", Payload: []byte("p1"), MaxAttempts: 3, Tags: []job.Tag{job.Label("a")}},
		{WireName: "w", Queue: "q", MaxAttempts: 1},
		{WireName: "w", Queue: "q", MaxAttempts: 2},
		{WireName: "w", Queue: "q", MaxAttempts: 2},
	}})
	must(err)
	must(s.QueueSetLimit(ctx, store.QueueSetLimitParams{Queue: "q", Limit: 3}))
	must(s.QueuePause(ctx, store.QueueParams{Queue: "q"}))
	must(s.QueueResume(ctx, store.QueueParams{Queue: "q"}))
	claimed, err := s.JobClaim(ctx, store.ClaimParams{Worker: "w1", Queues: []string{"q"}, Limit: 10, LeaseDuration: time.Minute})
	must(err)
	if len(claimed) != 3 || string(claimed[0].Payload) != "p1" || len(claimed[0].Tags) != 1 {
		t.Fatalf("claimed %+v, want 3 jobs (the limit), the first with its payload and tag", claimed)
	}
	renewed, err := s.LeaseRenew(ctx, store.RenewParams{Worker: "w1", Leases: []job.Lease{claimed[0].Lease()}, LeaseDuration: time.Minute})
	must(err)
	if renewed[0].Status != store.RenewRenewed {
		t.Fatalf("renew = %v", renewed)
	}
	must(s.RequestCancel(ctx, ids[3]))
	succeeded := store.Outcome{Outcome: core.Decide(core.AttemptInfo{Lease: claimed[0].Lease(), MaxAttempts: 3}, core.ResultSucceeded, core.DefaultRetryPolicy()),
		Output: []byte("out"), TagDelta: []job.Tag{job.Keyed("k", "v")}}
	res, err := s.OutcomeReport(ctx, store.ReportParams{Worker: "w1", Outcomes: []store.Outcome{succeeded}})
	must(err)
	if !res[0].Applied {
		t.Fatal("outcome not applied")
	}
	rel, err := s.LeaseRelinquish(ctx, store.RelinquishParams{Worker: "w1", Leases: []job.Lease{claimed[1].Lease()}})
	must(err)
	if len(rel.Relinquished) != 1 {
		t.Fatalf("relinquish = %+v", rel)
	}
	clock.Advance(2 * time.Minute)
	exp, err := s.LeaseExpire(ctx, store.ExpireParams{Queues: []string{"q"}})
	must(err)
	if len(exp.Expired) != 1 {
		t.Fatalf("expire = %+v", exp)
	}
	out, err := s.JobOutput(ctx, claimed[0].ID)
	must(err)
	log, err := s.JobTransitions(ctx, claimed[0].ID)
	must(err)
	if string(out) != "out" || len(log) != 3 {
		t.Fatalf("output %q, log %+v", out, log)
	}
	j, err := s.JobGet(ctx, claimed[0].ID)
	must(err)
	if j.State != job.StateSucceeded || len(j.Tags) != 2 {
		t.Fatalf("job = %+v", j)
	}
	list, err := s.JobList(ctx, store.JobListParams{JobFilter: store.JobFilter{States: []job.State{job.StateSucceeded}, Queue: "q", WireName: "w"}, BeforeID: 100})
	must(err)
	if len(list) != 1 {
		t.Fatalf("list = %+v", list)
	}
	counts, err := s.JobCountByState(ctx, store.CountParams{Queue: "q"})
	must(err)
	if counts[job.StateSucceeded] != 1 || counts[job.StateCancelled] != 1 {
		t.Fatalf("counts = %v", counts)
	}
	qs, err := s.QueueList(ctx)
	must(err)
	if len(qs) != 1 || qs[0].Limit != 3 || qs[0].Running != 0 {
		t.Fatalf("queues = %+v", qs)
	}
}
