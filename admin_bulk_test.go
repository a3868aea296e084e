package backwave_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/memstore"
)

// quarantined inserts n jobs of wire name wire in queue and has a worker
// report each unroutable, so they end Quarantined (terminal, requeueable).
func quarantined(t *testing.T, st *memstore.Store, queue, wire string, n int) []job.ID {
	t.Helper()
	ctx := context.Background()
	jobs := make([]store.NewJob, n)
	for i := range jobs {
		jobs[i] = store.NewJob{WireName: wire, Queue: queue, MaxAttempts: 3}
	}
	ids, err := st.JobInsertMany(ctx, store.InsertManyParams{Jobs: jobs})
	if err != nil {
		t.Fatal(err)
	}
	claimed, err := st.JobClaim(ctx, store.ClaimParams{Worker: "w1", Queues: []string{queue}, Limit: n, LeaseDuration: time.Minute})
	if err != nil || len(claimed) != n {
		t.Fatalf("claimed %d of %d: %v", len(claimed), n, err)
	}
	outcomes := make([]store.Outcome, n)
	for i, j := range claimed {
		info := core.AttemptInfo{Lease: j.Lease(), MaxAttempts: j.Ceiling()}
		outcomes[i] = store.Outcome{Outcome: core.Decide(info, core.ResultUnroutable, core.RetryPolicy{Initial: time.Second, Max: time.Second, Multiplier: 1})}
		outcomes[i].FailureDetail = "no handler for " + wire + "\nregistered: none"
	}
	if _, err := st.OutcomeReport(ctx, store.ReportParams{Worker: "w1", Outcomes: outcomes}); err != nil {
		t.Fatal(err)
	}
	return ids
}

// auditCount counts the audit entries of action.
func auditCount(t *testing.T, admin *backwave.Admin, action backwave.AuditAction) int {
	t.Helper()
	page, err := admin.Audit(context.Background(), backwave.AuditListParams{PageParams: backwave.PageParams{Limit: backwave.MaxPageLimit}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range page.Items {
		if e.Action == action {
			n++
		}
	}
	return n
}

// Admin.Delete removes a terminal job, audited with an entry that outlives
// it; a live job is refused in the operator's words and left as it was; a
// parent of a held job is refused as retention would keep it.
func TestAdminDelete(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStore()
	admin, err := backwave.NewAdmin(st, "ops:ada")
	if err != nil {
		t.Fatal(err)
	}
	dead := quarantined(t, st, "billing", "billing.charge", 1)[0]
	got, err := admin.Delete(ctx, dead)
	if err != nil || got.ID != dead || got.State != backwave.StateQuarantined {
		t.Fatalf("Delete = %+v, %v; want the quarantined job as removed", got, err)
	}
	if _, err := admin.Job(ctx, dead); !errors.Is(err, backwave.ErrNotFound) {
		t.Fatalf("Job of a deleted job: %v, want ErrNotFound", err)
	}
	page, err := admin.Audit(ctx, backwave.AuditListParams{JobID: dead})
	if err != nil || len(page.Items) == 0 {
		t.Fatalf("audit of the deleted job: %+v, %v", page.Items, err)
	}
	if e := page.Items[0]; e.Action != backwave.AuditDelete || e.Actor != "ops:ada" || e.Queue != "billing" || !strings.Contains(e.Detail, "billing.charge") {
		t.Fatalf("newest audit entry %+v, want a delete by ops:ada on billing naming billing.charge", e)
	}

	parent := quarantined(t, st, "billing", "billing.charge", 1)[0]
	live, err := admin.Enqueue(ctx, backwave.OperatorEnqueue{WireName: "billing.charge", Queue: "billing"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.JobInsertMany(ctx, store.InsertManyParams{Jobs: []store.NewJob{{WireName: "billing.after", Queue: "billing", MaxAttempts: 1,
		Dependency: store.Dependency{Mode: job.DependencyOnAnyTerminal, Parents: []store.ParentRef{store.Existing(parent)}}}}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		id     backwave.JobID
		target error
		want   string
	}{
		{"live", live.ID, backwave.ErrIllegalTransition, "backwave: delete job 3: it is scheduled; only succeeded, dead-lettered, cancelled or quarantined jobs can be deleted"},
		{"parent", parent, backwave.ErrStillNeeded, "backwave: delete job 2: a stored job depends on it (delete its dependents first); retention keeps it too"},
		{"unknown", 99, backwave.ErrNotFound, "job 99"},
	} {
		before, _ := admin.Job(ctx, tc.id)
		_, err := admin.Delete(ctx, tc.id)
		if !errors.Is(err, tc.target) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Delete: %v, want %v saying %q", tc.name, err, tc.target, tc.want)
		}
		if after, _ := admin.Job(ctx, tc.id); after.Job.State != before.Job.State {
			t.Errorf("%s: a refused delete moved the job from %s to %s", tc.name, before.Job.State, after.Job.State)
		}
	}
	if n := auditCount(t, admin, backwave.AuditDelete); n != 1 {
		t.Fatalf("%d delete audit entries, want the one that removed a job", n)
	}
}

// RequeueMatching acts on every matching job as N single-job requeues,
// bounded per request, says whether more remain, and continues from Next.
func TestAdminRequeueMatching(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStore()
	admin, err := backwave.NewAdmin(st, "ops:ada")
	if err != nil {
		t.Fatal(err)
	}
	quarantined(t, st, "billing", "billing.charge", 25)
	quarantined(t, st, "mail", "mail.send", 5)
	if _, err := admin.Enqueue(ctx, backwave.OperatorEnqueue{WireName: "billing.charge", Queue: "billing"}); err != nil {
		t.Fatal(err)
	}
	billing := backwave.JobFilter{Queue: "billing"}
	pre, err := admin.PreviewMatching(ctx, backwave.BulkRequeue, billing)
	if err != nil || pre != (backwave.BulkPreview{Matched: 26, Applicable: 25}) {
		t.Fatalf("PreviewMatching = %+v, %v; want 26 matched, 25 requeueable", pre, err)
	}
	if n := auditCount(t, admin, backwave.AuditRequeue); n != 0 {
		t.Fatalf("the preview wrote %d requeue entries", n)
	}
	res, err := admin.RequeueMatching(ctx, billing, backwave.BulkOptions{Limit: 10})
	if err != nil || res.Acted != 10 || res.Skipped != 0 || !res.More || res.Next == 0 {
		t.Fatalf("first request = %+v, %v; want 10 acted on and more to come", res, err)
	}
	total := res.Acted
	for res.More {
		if res, err = admin.RequeueMatching(ctx, billing, backwave.BulkOptions{Limit: 10, Before: res.Next}); err != nil {
			t.Fatal(err)
		}
		total += res.Acted
	}
	if total != 25 {
		t.Fatalf("requeued %d jobs in all, want 25", total)
	}
	if n := auditCount(t, admin, backwave.AuditRequeue); n != 25 {
		t.Fatalf("%d requeue audit entries, want one per job (25)", n)
	}
	counts, err := admin.CountByState(ctx, "mail")
	if err != nil || counts[backwave.StateQuarantined] != 5 {
		t.Fatalf("mail counts %v, %v; want its 5 quarantined jobs untouched", counts, err)
	}
}

// Bad bulk requests are refused before anything is touched: over the cap,
// a negative limit, states the action never applies to, unknown names.
func TestAdminMatchingRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStore()
	admin, err := backwave.NewAdmin(st, "ops:ada")
	if err != nil {
		t.Fatal(err)
	}
	quarantined(t, st, "billing", "billing.charge", 3)
	for _, tc := range []struct {
		name   string
		action backwave.BulkAction
		f      backwave.JobFilter
		o      backwave.BulkOptions
		target error
		want   string
	}{
		{"over the cap", backwave.BulkRequeue, backwave.JobFilter{}, backwave.BulkOptions{Limit: backwave.MaxBulkLimit + 1}, backwave.ErrInvalidParams, "over the cap of 10000"},
		{"negative", backwave.BulkDelete, backwave.JobFilter{}, backwave.BulkOptions{Limit: -1}, backwave.ErrInvalidParams, "negative"},
		{"wrong states", backwave.BulkRequeue, backwave.JobFilter{States: []backwave.JobState{backwave.StateScheduled}}, backwave.BulkOptions{}, backwave.ErrInvalidParams,
			"the filter keeps scheduled jobs; only dead-lettered or quarantined jobs can be requeued"},
		{"unknown queue", backwave.BulkRequeue, backwave.JobFilter{Queue: "biling"}, backwave.BulkOptions{}, backwave.ErrNotFound, "biling"},
		{"unknown wire name", backwave.BulkDelete, backwave.JobFilter{WireName: "billing.charg"}, backwave.BulkOptions{}, backwave.ErrNotFound, "billing.charg"},
	} {
		_, err := admin.Matching(ctx, tc.action, tc.f, tc.o)
		if !errors.Is(err, tc.target) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %v saying %q", tc.name, err, tc.target, tc.want)
		}
	}
	var unknown *backwave.UnknownNameError
	if _, err := admin.PreviewMatching(ctx, backwave.BulkCancel, backwave.JobFilter{Queue: "biling"}); !errors.As(err, &unknown) {
		t.Errorf("preview with an unknown Queue: %v, want an UnknownNameError", err)
	}
	counts, _ := admin.CountByState(ctx, "billing")
	if counts[backwave.StateQuarantined] != 3 || auditCount(t, admin, backwave.AuditRequeue)+auditCount(t, admin, backwave.AuditDelete) != 0 {
		t.Fatalf("a refused request touched jobs: %v", counts)
	}
}

// CancelMatching and DeleteMatching: cancel every waiting job of a Queue,
// then delete them; a dependent goes before its parent in the same request,
// and a job still needed is skipped with the reason, not an error.
func TestAdminCancelAndDeleteMatching(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStore()
	admin, err := backwave.NewAdmin(st, "ops:ada")
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if _, err := admin.Enqueue(ctx, backwave.OperatorEnqueue{WireName: "deploy.bad", Queue: "deploy"}); err != nil {
			t.Fatal(err)
		}
	}
	f := backwave.JobFilter{Queue: "deploy", WireName: "deploy.bad"}
	res, err := admin.CancelMatching(ctx, f, backwave.BulkOptions{})
	if err != nil || res.Acted != 4 || res.More {
		t.Fatalf("CancelMatching = %+v, %v; want 4 cancelled, no more", res, err)
	}
	// Job 5 waits on the cancelled job 4; job 6 on job 5, outside the
	// filter's Wire Name, so job 5 stays needed.
	dep := func(parent job.ID, wire string) job.ID {
		ids, err := st.JobInsertMany(ctx, store.InsertManyParams{Jobs: []store.NewJob{{WireName: wire, Queue: "deploy", MaxAttempts: 1,
			Dependency: store.Dependency{Mode: job.DependencyOnAnyTerminal, Parents: []store.ParentRef{store.Existing(parent)}}}}})
		if err != nil {
			t.Fatal(err)
		}
		return ids[0]
	}
	five := dep(4, "deploy.bad")
	dep(five, "deploy.other")
	if _, err := admin.Cancel(ctx, five); err != nil {
		t.Fatal(err)
	}
	pre, err := admin.PreviewMatching(ctx, backwave.BulkDelete, f)
	if err != nil || pre.Matched != 5 || pre.Applicable != 5 {
		t.Fatalf("PreviewMatching = %+v, %v; want 5 and 5", pre, err)
	}
	res, err = admin.DeleteMatching(ctx, f, backwave.BulkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []backwave.BulkSkip{{Reason: "still needed: a stored job depends on it (delete its dependents first)", Jobs: 2}}
	if res.Acted != 3 || res.Skipped != 2 || len(res.Skips) != 1 || res.Skips[0] != want[0] || res.More {
		t.Fatalf("DeleteMatching = %+v; want 3 deleted, jobs 5 and 4 skipped as still needed", res)
	}
	if n := auditCount(t, admin, backwave.AuditDelete); n != 3 {
		t.Fatalf("%d delete audit entries, want 3", n)
	}
}

// LastFailure is the first line of the newest Failure Detail, cut at a
// rune boundary and marked; "" for a job that never failed; an unknown job
// is ErrNotFound.
func TestAdminLastFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStore()
	admin, err := backwave.NewAdmin(st, "ops:ada")
	if err != nil {
		t.Fatal(err)
	}
	failed := quarantined(t, st, "billing", "billing.chargé", 1)[0]
	fresh, err := admin.Enqueue(ctx, backwave.OperatorEnqueue{WireName: "billing.charge", Queue: "billing"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		id   backwave.JobID
		max  int
		want string
	}{
		{"whole first line", failed, 0, "no handler for billing.chargé"},
		{"cut", failed, 28, "no handler for billing.char…"},
		{"never failed", fresh.ID, 0, ""},
	} {
		got, err := admin.LastFailure(ctx, tc.id, tc.max)
		if err != nil || got != tc.want {
			t.Errorf("%s: LastFailure = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	if _, err := admin.LastFailure(ctx, 99, 0); !errors.Is(err, backwave.ErrNotFound) {
		t.Errorf("LastFailure of an unknown job: %v, want ErrNotFound", err)
	}
}
