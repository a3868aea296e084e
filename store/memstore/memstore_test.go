package memstore_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/memstore"
	"github.com/backwave/backwave/store/storetest"
	"github.com/backwave/backwave/vtime"
)

// start is the instant test clocks start at.
var start = time.Date(2030, time.January, 1, 9, 0, 0, 0, time.UTC)

// harness gives the Conformance Suite a fresh store on its own Manual
// clock.
func harness(t *testing.T) storetest.Harness {
	clock := vtime.NewManual(start)
	s := memstore.New(memstore.Options{Clock: clock})
	return storetest.Harness{
		Store:   s,
		Now:     clock.Now,
		Advance: func(d time.Duration) { clock.Advance(d) },
		WithHistory: func(p store.HistoryPolicy) store.Store {
			return memstore.New(memstore.Options{Clock: clock, History: p})
		},
	}
}

func TestConformance(t *testing.T) {
	storetest.Run(t, harness)
}

// The suite must also pass for an adapter whose clock cannot be moved and
// that offers no optional capability: the tests that need them skip.
func TestConformanceMinimalHarness(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Harness {
		clock := vtime.NewManual(start)
		return storetest.Harness{
			Store: memstore.New(memstore.Options{Clock: clock}),
			Now:   clock.Now,
			WithHistory: func(p store.HistoryPolicy) store.Store {
				return memstore.New(memstore.Options{Clock: clock, History: p})
			},
		}
	})
}

const lease = time.Minute

func newJob(queue string) store.NewJob {
	return store.NewJob{WireName: "memstore.test", Queue: queue, MaxAttempts: 3}
}

func mustInsert(t *testing.T, s *memstore.Store, jobs ...store.NewJob) []job.ID {
	t.Helper()
	ids, err := s.JobInsertMany(t.Context(), store.InsertManyParams{Jobs: jobs})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func mustClaim(t *testing.T, s *memstore.Store, w job.WorkerID, limit int, queues ...string) []job.Job {
	t.Helper()
	jobs, err := s.JobClaim(t.Context(), store.ClaimParams{Worker: w, Queues: queues, Limit: limit, LeaseDuration: lease})
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

func outcome(j job.Job, r core.Result) store.Outcome {
	info := core.AttemptInfo{Lease: j.Lease(), MaxAttempts: j.MaxAttempts, CancelRequested: j.CancelRequested,
		Snoozes: j.Snoozes, MaxSnoozes: 2, SnoozeDelay: time.Second}
	return store.Outcome{Outcome: core.Decide(info, r, core.RetryPolicy{Initial: time.Second, Max: time.Second, Multiplier: 1})}
}

func mustReport(t *testing.T, s *memstore.Store, w job.WorkerID, os ...store.Outcome) []store.ReportResult {
	t.Helper()
	res, err := s.OutcomeReport(t.Context(), store.ReportParams{Worker: w, Outcomes: os})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Determinism: "job ids assigned sequentially from 1".
func TestIDsSequentialFromOne(t *testing.T) {
	t.Parallel()
	s := memstore.New(memstore.Options{})
	got := mustInsert(t, s, newJob("a"), newJob("b"), newJob("a"))
	got = append(got, mustInsert(t, s, newJob("c"))...)
	if want := []job.ID{1, 2, 3, 4}; !slices.Equal(got, want) {
		t.Fatalf("ids = %v, want %v", got, want)
	}
}

// Options.Clock: nil means a Manual at vtime.Epoch, reachable via Clock.
func TestNilClockIsManualAtEpoch(t *testing.T) {
	t.Parallel()
	s := memstore.New(memstore.Options{})
	m, ok := s.Clock().(*vtime.Manual)
	if !ok {
		t.Fatalf("Clock() is %T, want *vtime.Manual", s.Clock())
	}
	if !m.Now().Equal(vtime.Epoch) {
		t.Fatalf("clock reads %v, want %v", m.Now(), vtime.Epoch)
	}
	id := mustInsert(t, s, store.NewJob{WireName: "w", Queue: "q", MaxAttempts: 1, ScheduledAt: vtime.Epoch.Add(time.Hour)})[0]
	if got := mustClaim(t, s, "w1", 1, "q"); len(got) != 0 {
		t.Fatal("claimed a job before its due time")
	}
	m.Advance(time.Hour)
	if got := mustClaim(t, s, "w1", 1, "q"); len(got) != 1 || got[0].ID != id {
		t.Fatalf("claimed %v after moving the store's clock, want job %d", got, id)
	}
}

// The package doc: "A Lease has lapsed once the store's clock reaches its
// expiry time", and until LeaseExpire ends it the Lease is still held.
func TestLeaseLapsesAtItsExpiryTime(t *testing.T) {
	t.Parallel()
	clock := vtime.NewManual(start)
	s := memstore.New(memstore.Options{Clock: clock})
	mustInsert(t, s, newJob("q"))
	j := mustClaim(t, s, "w1", 1, "q")[0]
	clock.Advance(lease - time.Nanosecond)
	ctx := t.Context()
	if res, _ := s.LeaseExpire(ctx, store.ExpireParams{Queues: []string{"q"}}); len(res.Expired) != 0 {
		t.Fatalf("expired %v a nanosecond early", res.Expired)
	}
	clock.Advance(time.Nanosecond)
	// Lapsed, not yet expired: still held.
	res, err := s.LeaseRenew(ctx, store.RenewParams{Worker: "w1", Leases: []job.Lease{j.Lease()}, LeaseDuration: lease})
	if err != nil || res[0].Status != store.RenewRenewed {
		t.Fatalf("renew of a lapsed, unexpired Lease = %v, %v; want renewed", res, err)
	}
	clock.Advance(lease)
	if res, _ := s.LeaseExpire(ctx, store.ExpireParams{Queues: []string{"q"}}); len(res.Expired) != 1 {
		t.Fatalf("expired %v at the expiry time, want the Lease", res.Expired)
	}
}

// The package doc: with a Limit, LeaseExpire takes the smallest ids first.
func TestExpireLimitTakesSmallestIDs(t *testing.T) {
	t.Parallel()
	clock := vtime.NewManual(start)
	s := memstore.New(memstore.Options{Clock: clock})
	mustInsert(t, s, newJob("b"), newJob("a"), newJob("b"), newJob("a"))
	mustClaim(t, s, "w1", 4, "a", "b")
	clock.Advance(lease)
	res, err := s.LeaseExpire(t.Context(), store.ExpireParams{Queues: []string{"b", "a"}, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	want := []job.Lease{{ID: 1, Attempt: 1}, {ID: 2, Attempt: 1}, {ID: 3, Attempt: 1}}
	if !slices.Equal(res.Expired, want) {
		t.Fatalf("Expired = %v, want %v", res.Expired, want)
	}
}

// Clone: "a deep copy ... so the copy and the original never share a
// mutable byte".
func TestCloneIsIndependent(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clock := vtime.NewManual(start)
	s := memstore.New(memstore.Options{Clock: clock})
	nj := newJob("q")
	nj.Payload = []byte("payload")
	nj.Tags = []job.Tag{job.Label("t")}
	mustInsert(t, s, nj, nj)
	j := mustClaim(t, s, "w1", 1, "q")[0]
	o := outcome(j, core.ResultSucceeded)
	o.Output = []byte("out")
	mustReport(t, s, "w1", o)
	if err := s.QueueSetLimit(ctx, store.QueueSetLimitParams{Queue: "q", Limit: 5}); err != nil {
		t.Fatal(err)
	}

	c := s.Clone()
	snap := snapshot(t, c)
	if !reflect.DeepEqual(snap, snapshot(t, s)) {
		t.Fatal("a fresh clone differs from its original")
	}

	// Change the original every way there is; the clone must not move.
	k := mustClaim(t, s, "w2", 1, "q")[0]
	mustReport(t, s, "w2", outcome(k, core.ResultFailed))
	mustInsert(t, s, newJob("other"))
	_ = s.QueuePause(ctx, store.QueueParams{Queue: "q"})
	got, _ := s.JobGet(ctx, 1)
	got.Payload[0] = 'X'
	got.Tags[0] = job.Label("changed")
	out, _ := s.JobOutput(ctx, 1)
	out[0] = 'X'
	log, _ := s.JobTransitions(ctx, 1)
	log[0].State = job.StateCancelled
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(snap, snapshot(t, c)) {
		t.Fatal("changing the original changed its clone")
	}

	// And the other way: the clone continues on its own, ids included.
	ids := mustInsert(t, c, newJob("q"))
	if ids[0] != 3 {
		t.Fatalf("the clone assigned id %d, want 3 (continuing the sequence)", ids[0])
	}
	if _, err := s.JobGet(ctx, 1); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("original after Close: %v", err)
	}
}

// The package doc: an outcome that is not a legal outcome edge out of
// Running, or carries a Retry Cause on anything but a retry, is refused
// whole.
func TestReportRefusesImpossibleOutcomes(t *testing.T) {
	t.Parallel()
	s := memstore.New(memstore.Options{})
	mustInsert(t, s, newJob("q"), newJob("q"))
	jobs := mustClaim(t, s, "w1", 2, "q")
	good := outcome(jobs[0], core.ResultSucceeded)
	l := jobs[1].Lease()
	bad := map[string]core.Outcome{
		"retry via succeed":          {Lease: l, State: job.StateScheduled, Via: core.ViaSucceed},
		"expiry is no outcome":       {Lease: l, State: job.StateScheduled, Via: core.ViaExpire},
		"relinquish is no outcome":   {Lease: l, State: job.StateDeadLettered, Via: core.ViaRelinquish},
		"success with a Retry Cause": {Lease: l, State: job.StateSucceeded, Via: core.ViaSucceed, RetryCause: job.RetryCauseHandlerFailed},
		"retry as lease expired":     {Lease: l, State: job.StateScheduled, Via: core.ViaRetry, RetryCause: job.RetryCauseLeaseExpired},
	}
	for name, o := range bad {
		_, err := s.OutcomeReport(t.Context(), store.ReportParams{Worker: "w1", Outcomes: []store.Outcome{good, {Outcome: o}}})
		if !errors.Is(err, store.ErrInvalidParams) {
			t.Fatalf("%s: error = %v, want ErrInvalidParams", name, err)
		}
	}
	for _, j := range jobs {
		if got, _ := s.JobGet(t.Context(), j.ID); got.State != job.StateRunning {
			t.Fatalf("job %d is %s after refused reports", j.ID, got.State)
		}
	}
}

// The Transition Log records the edge, the time and the Attempt of every
// change, Failure Detail included.
func TestJobTransitions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clock := vtime.NewManual(start)
	s := memstore.New(memstore.Options{Clock: clock})
	id := mustInsert(t, s, newJob("q"))[0]
	clock.Advance(time.Second)
	j := mustClaim(t, s, "w1", 1, "q")[0]
	clock.Advance(time.Second)
	o := outcome(j, core.ResultFailed)
	o.FailureDetail = "boom"
	mustReport(t, s, "w1", o)
	clock.Advance(time.Second)
	if err := s.RequestCancel(ctx, id); err != nil {
		t.Fatal(err)
	}
	got, err := s.JobTransitions(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Transition{
		{At: start, From: job.StateUnknown, State: job.StateScheduled, Via: core.ViaInsert, Seq: 1},
		{At: start.Add(time.Second), From: job.StateScheduled, State: job.StateRunning, Via: core.ViaClaim, Attempt: 1, Seq: 2},
		{At: start.Add(2 * time.Second), From: job.StateRunning, State: job.StateScheduled, Via: core.ViaRetry, Attempt: 1, FailureDetail: "boom", Seq: 3},
		{At: start.Add(3 * time.Second), From: job.StateScheduled, State: job.StateCancelled, Via: core.ViaCancel, Attempt: 1, Seq: 4},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("JobTransitions =\n%+v\nwant\n%+v", got, want)
	}
	if _, err := s.JobTransitions(ctx, 99); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("JobTransitions(unknown) error = %v, want ErrNotFound", err)
	}
	if _, err := s.JobOutput(ctx, 99); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("JobOutput(unknown) error = %v, want ErrNotFound", err)
	}
}

// Returned jobs are copies: changing them does not reach the store.
func TestReadsReturnCopies(t *testing.T) {
	t.Parallel()
	s := memstore.New(memstore.Options{})
	nj := newJob("q")
	nj.Payload = []byte("abc")
	nj.Tags = []job.Tag{job.Label("x")}
	id := mustInsert(t, s, nj)[0]
	claimed := mustClaim(t, s, "w1", 1, "q")[0]
	claimed.Payload[0] = 'X'
	listed, _ := s.JobList(t.Context(), store.JobListParams{})
	listed[0].Tags[0] = job.Label("changed")
	got, _ := s.JobGet(t.Context(), id)
	if string(got.Payload) != "abc" || got.Tags[0] != job.Label("x") {
		t.Fatalf("stored job changed through a returned copy: %q %v", got.Payload, got.Tags)
	}
}

// Close: "every later call, Close included, fails with store.ErrClosed";
// a cancelled context fails a call before it touches the store.
func TestCloseAndContext(t *testing.T) {
	t.Parallel()
	s := memstore.New(memstore.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.JobInsertMany(ctx, store.InsertManyParams{Jobs: []store.NewJob{newJob("q")}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("insert with a cancelled context: %v", err)
	}
	if qs, _ := s.QueueList(t.Context()); len(qs) != 0 {
		t.Fatalf("a cancelled insert wrote %v", qs)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("second Close: %v, want ErrClosed", err)
	}
	if err := s.RequestCancel(t.Context(), 1); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("RequestCancel after Close: %v, want ErrClosed", err)
	}
}

// Opening by URI: "mem://?clock=manual" gives a fresh store on a Manual
// clock; "mem://" needs the real clock this package cannot read (the root
// package registers it); anything more is refused.
func TestOpenByURI(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	if !slices.Contains(store.Default.Schemes(), memstore.Scheme) {
		t.Fatalf("schemes %v lack %q", store.Default.Schemes(), memstore.Scheme)
	}
	if _, err := store.Open(ctx, "mem://"); !errors.Is(err, memstore.ErrNoRealClock) {
		t.Fatalf("mem:// without a real clock: %v, want ErrNoRealClock", err)
	}
	a, err := store.Open(ctx, "mem://?clock=manual")
	if err != nil {
		t.Fatal(err)
	}
	b, err := store.Open(ctx, "mem://?clock=manual")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.JobInsertMany(ctx, store.InsertManyParams{Jobs: []store.NewJob{newJob("q")}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.JobList(ctx, store.JobListParams{}); len(got) != 0 {
		t.Fatal("two mem:// stores share jobs")
	}
	if got := a.(*memstore.Store).Clock().Now(); !got.Equal(vtime.Epoch) {
		t.Fatalf("mem:// clock reads %v, want %v", got, vtime.Epoch)
	}
	for _, uri := range []string{"mem://shared", "mem:///path", "mem://?x=1", "mem:opaque", "mem://?clock=sundial", "mem://?clock=manual&clock=real"} {
		if _, err := store.Open(ctx, uri); !errors.Is(err, store.ErrInvalidParams) {
			t.Fatalf("Open(%q) error = %v, want ErrInvalidParams", uri, err)
		}
	}
}

// BenchmarkWorkflowStatus: the status read at 100 and 10,000 members
// (storetest.BenchWorkflowStatus).
func BenchmarkWorkflowStatus(b *testing.B) {
	storetest.BenchWorkflowStatus(b, func(*testing.B) store.Store { return memstore.New(memstore.Options{}) })
}
