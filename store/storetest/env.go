package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// lease is the Lease length tests claim with unless they say otherwise.
const lease = time.Minute

// actor is the identity the suite's Operator Actions record.
const actor store.Actor = "storetest:operator"

// Workers that tests claim as.
const (
	w1 job.WorkerID = "storetest-worker-1"
	w2 job.WorkerID = "storetest-worker-2"
)

// env is one test's store and the helpers that fail the test on an
// unexpected error. Helpers call t.Fatal, so only the test goroutine may use
// them; goroutines call e.s directly.
type env struct {
	t   *testing.T
	h   Harness
	s   store.Store
	ctx context.Context
	// queues counts the Queues inState made, each job its own.
	queues int
}

func (e *env) now() time.Time { return e.h.Now() }

// needAdvance skips the test if the store's clock cannot be moved.
func (e *env) needAdvance() {
	e.t.Helper()
	if e.h.Advance == nil {
		e.t.Skip("storetest: the Harness has no Advance; this test needs time to pass")
	}
}

func (e *env) advance(d time.Duration) {
	e.t.Helper()
	e.needAdvance()
	e.h.Advance(d)
}

// newJob is a valid job for queue with a generous attempt ceiling.
func newJob(queue string) store.NewJob {
	return store.NewJob{WireName: "storetest.job", Queue: queue, MaxAttempts: 5}
}

// at returns newJob(queue) due at t.
func at(queue string, t time.Time) store.NewJob {
	j := newJob(queue)
	j.ScheduledAt = t
	return j
}

// withMax returns newJob(queue) with the attempt ceiling ceiling.
func withMax(queue string, ceiling int) store.NewJob {
	j := newJob(queue)
	j.MaxAttempts = ceiling
	return j
}

func (e *env) insert(jobs ...store.NewJob) []job.ID {
	e.t.Helper()
	ids, err := e.s.JobInsertMany(e.ctx, store.InsertManyParams{Jobs: jobs})
	if err != nil {
		e.t.Fatalf("JobInsertMany: %v", err)
	}
	if len(ids) != len(jobs) {
		e.t.Fatalf("JobInsertMany returned %d ids for %d jobs", len(ids), len(jobs))
	}
	return ids
}

// insertN inserts n jobs due now in queue.
func (e *env) insertN(queue string, n int) []job.ID {
	e.t.Helper()
	jobs := make([]store.NewJob, n)
	for i := range jobs {
		jobs[i] = newJob(queue)
	}
	return e.insert(jobs...)
}

func (e *env) claim(worker job.WorkerID, limit int, queues ...string) []job.Job {
	e.t.Helper()
	jobs, err := e.s.JobClaim(e.ctx, store.ClaimParams{Worker: worker, Queues: queues, Limit: limit, LeaseDuration: lease})
	if err != nil {
		e.t.Fatalf("JobClaim(%s, %d, %q): %v", worker, limit, queues, err)
	}
	return jobs
}

// claimOne claims with limit 1 and requires exactly one job.
func (e *env) claimOne(worker job.WorkerID, queues ...string) job.Job {
	e.t.Helper()
	jobs := e.claim(worker, 1, queues...)
	if len(jobs) != 1 {
		e.t.Fatalf("JobClaim(%s, 1, %q) leased %d jobs, want 1", worker, queues, len(jobs))
	}
	return jobs[0]
}

// claimNone requires that a claim leases nothing.
func (e *env) claimNone(worker job.WorkerID, queues ...string) {
	e.t.Helper()
	if jobs := e.claim(worker, 100, queues...); len(jobs) != 0 {
		e.t.Fatalf("JobClaim(%s, %q) leased %v, want nothing", worker, queues, idsOf(jobs))
	}
}

func (e *env) get(id job.ID) job.Job {
	e.t.Helper()
	j, err := e.s.JobGet(e.ctx, id)
	if err != nil {
		e.t.Fatalf("JobGet(%d): %v", id, err)
	}
	return j
}

func (e *env) report(worker job.WorkerID, outcomes ...store.Outcome) []store.ReportResult {
	e.t.Helper()
	res, err := e.s.OutcomeReport(e.ctx, store.ReportParams{Worker: worker, Outcomes: outcomes})
	if err != nil {
		e.t.Fatalf("OutcomeReport: %v", err)
	}
	if len(res) != len(outcomes) {
		e.t.Fatalf("OutcomeReport answered %d of %d outcomes", len(res), len(outcomes))
	}
	for i, r := range res {
		if r.Lease != outcomes[i].Lease {
			e.t.Fatalf("OutcomeReport result %d is for %s, want %s (input order)", i, r.Lease, outcomes[i].Lease)
		}
	}
	return res
}

// reportApplied reports one outcome and requires it to apply.
func (e *env) reportApplied(worker job.WorkerID, o store.Outcome) {
	e.t.Helper()
	if res := e.report(worker, o); !res[0].Applied {
		e.t.Fatalf("outcome %s -> %s by %s was not applied", o.Lease, o.State, worker)
	}
}

// reportStale reports one outcome and requires it to be stale and to leave
// the job exactly as it was.
func (e *env) reportStale(worker job.WorkerID, o store.Outcome) {
	e.t.Helper()
	before := e.get(o.Lease.ID)
	if res := e.report(worker, o); res[0].Applied {
		e.t.Fatalf("stale outcome %s -> %s by %s was applied", o.Lease, o.State, worker)
	}
	e.unchanged(before)
}

func (e *env) renew(worker job.WorkerID, d time.Duration, leases ...job.Lease) []store.RenewResult {
	e.t.Helper()
	res, err := e.s.LeaseRenew(e.ctx, store.RenewParams{Worker: worker, Leases: leases, LeaseDuration: d})
	if err != nil {
		e.t.Fatalf("LeaseRenew: %v", err)
	}
	if len(res) != len(leases) {
		e.t.Fatalf("LeaseRenew answered %d of %d leases", len(res), len(leases))
	}
	for i, r := range res {
		if r.Lease != leases[i] {
			e.t.Fatalf("LeaseRenew result %d is for %s, want %s (input order)", i, r.Lease, leases[i])
		}
	}
	return res
}

// renewStatus renews one Lease and requires the given answer.
func (e *env) renewStatus(worker job.WorkerID, l job.Lease, want store.RenewStatus) {
	e.t.Helper()
	if got := e.renew(worker, lease, l)[0].Status; got != want {
		e.t.Fatalf("LeaseRenew(%s, %s) = %s, want %s", worker, l, got, want)
	}
}

func (e *env) expire(limit int, queues ...string) []job.Lease {
	e.t.Helper()
	res, err := e.s.LeaseExpire(e.ctx, store.ExpireParams{Queues: queues, Limit: limit})
	if err != nil {
		e.t.Fatalf("LeaseExpire(%q, %d): %v", queues, limit, err)
	}
	return res.Expired
}

func (e *env) relinquish(worker job.WorkerID, leases ...job.Lease) []job.Lease {
	e.t.Helper()
	res, err := e.s.LeaseRelinquish(e.ctx, store.RelinquishParams{Worker: worker, Leases: leases})
	if err != nil {
		e.t.Fatalf("LeaseRelinquish: %v", err)
	}
	return res.Relinquished
}

// queueInfo returns the named Queue from QueueList; ok is false if the
// Queue is not listed.
func (e *env) queueInfo(name string) (store.QueueInfo, bool) {
	e.t.Helper()
	qs, err := e.s.QueueList(e.ctx)
	if err != nil {
		e.t.Fatalf("QueueList: %v", err)
	}
	for _, q := range qs {
		if q.Name == name {
			return q, true
		}
	}
	return store.QueueInfo{}, false
}

func (e *env) running(queue string) int {
	e.t.Helper()
	q, ok := e.queueInfo(queue)
	if !ok {
		e.t.Fatalf("QueueList does not list %q", queue)
	}
	return q.Running
}

func (e *env) setLimit(queue string, limit int) {
	e.t.Helper()
	if err := e.s.QueueSetLimit(e.ctx, store.QueueSetLimitParams{Queue: queue, Limit: limit}); err != nil {
		e.t.Fatalf("QueueSetLimit(%q, %d): %v", queue, limit, err)
	}
}

// cancel is the operator cancel by the suite's actor.
func (e *env) cancel(id job.ID) error {
	_, err := e.s.JobCancel(e.ctx, store.JobCancelParams{ID: id, Actor: actor})
	return err
}

// transitions reads a job's Transition Log.
func (e *env) transitions(id job.ID) []store.Transition {
	e.t.Helper()
	log, err := e.s.JobTransitions(e.ctx, id)
	if err != nil {
		e.t.Fatalf("JobTransitions(%d): %v", id, err)
	}
	return log
}

// list runs JobList and returns the ids.
func (e *env) list(p store.JobListParams) []job.ID {
	e.t.Helper()
	return idsOf(e.listJobs(p))
}

// listJobs returns one page of JobList.
func (e *env) listJobs(p store.JobListParams) []job.Job {
	e.t.Helper()
	jobs, err := e.s.JobList(e.ctx, p)
	if err != nil {
		e.t.Fatalf("JobList(%+v): %v", p, err)
	}
	return jobs
}

func (e *env) wantState(id job.ID, want job.State) job.Job {
	e.t.Helper()
	j := e.get(id)
	if j.State != want {
		e.t.Fatalf("job %d is %s, want %s", id, j.State, want)
	}
	return j
}

// unchanged requires the stored job to equal before in every field.
func (e *env) unchanged(before job.Job) {
	e.t.Helper()
	if d := jobDiff(before, e.get(before.ID)); d != "" {
		e.t.Fatalf("job %d changed (-before +after):\n%s", before.ID, d)
	}
}

// within requires lo ≤ got ≤ hi, to the microsecond.
func (e *env) within(what string, got, lo, hi time.Time) {
	e.t.Helper()
	if got.Before(lo.Truncate(time.Microsecond)) || got.After(hi.Truncate(time.Microsecond).Add(time.Microsecond)) {
		e.t.Fatalf("%s = %s, want within [%s, %s]", what, got.Format(time.RFC3339Nano), lo.Format(time.RFC3339Nano), hi.Format(time.RFC3339Nano))
	}
}

func (e *env) wantIDs(what string, got, want []job.ID) {
	e.t.Helper()
	if !slices.Equal(got, want) {
		e.t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

// wantErr requires err to wrap target.
func (e *env) wantErr(what string, err, target error) {
	e.t.Helper()
	if !errors.Is(err, target) {
		e.t.Fatalf("%s: error = %v, want one wrapping %v", what, err, target)
	}
}

func idsOf(jobs []job.Job) []job.ID {
	out := make([]job.ID, len(jobs))
	for i := range jobs {
		out[i] = jobs[i].ID
	}
	return out
}

func sorted(in []job.ID) []job.ID {
	out := slices.Clone(in)
	slices.Sort(out)
	return out
}

// policy retries after exactly d: no growth, no jitter.
func policy(d time.Duration) core.RetryPolicy {
	return core.RetryPolicy{Initial: d, Max: d, Multiplier: 1}
}

// decide returns the outcome the Core decides for a claimed job's Attempt,
// retrying after delay.
func decide(j job.Job, r core.Result, delay time.Duration) store.Outcome {
	info := core.AttemptInfo{Lease: j.Lease(), MaxAttempts: j.Ceiling(), CancelRequested: j.CancelRequested}
	return store.Outcome{Outcome: core.Decide(info, r, policy(delay))}
}

func succeeded(j job.Job) store.Outcome { return decide(j, core.ResultSucceeded, 0) }

func failed(j job.Job, delay time.Duration) store.Outcome {
	return decide(j, core.ResultFailed, delay)
}

// jobDiff lists the fields in which a and b differ; times compare with
// Equal and a nil slice equals an empty one.
func jobDiff(a, b job.Job) string {
	var sb strings.Builder
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	for i := range va.NumField() {
		fa, fb := va.Field(i).Interface(), vb.Field(i).Interface()
		same := false
		switch x := fa.(type) {
		case time.Time:
			same = x.Equal(fb.(time.Time))
		default:
			fa, fb := va.Field(i), vb.Field(i)
			if fa.Kind() == reflect.Slice && fa.Len() == 0 && fb.Len() == 0 {
				same = true
			} else {
				same = reflect.DeepEqual(fa.Interface(), fb.Interface())
			}
		}
		if !same {
			fmt.Fprintf(&sb, "  %s: -%v +%v\n", va.Type().Field(i).Name, fa, fb)
		}
	}
	return sb.String()
}
