package backwave_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

type obsOK struct{}

func (obsOK) WireName() string { return "test.obs.ok" }

type obsFlaky struct{}

func (obsFlaky) WireName() string { return "test.obs.flaky" }

type obsDoomed struct{}

func (obsDoomed) WireName() string { return "test.obs.doomed" }

// obsNobody has no handler: its jobs are Quarantined.
type obsNobody struct{}

func (obsNobody) WireName() string { return "test.obs.nobody" }

// recorder is an Observer that writes each callback as a line.
type recorder struct {
	mu    sync.Mutex
	lines []string
	calls []backwave.StoreCallEvent
}

func (r *recorder) add(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, fmt.Sprintf(format, args...))
}

func (r *recorder) has(line string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.lines, line)
}

func (r *recorder) observer() backwave.Observer {
	return backwave.Observer{
		JobsEnqueued: func(_ context.Context, e backwave.EnqueueEvent) {
			for _, j := range e.Jobs {
				r.add("enqueued %s %s inserted=%v tx=%v", j.Queue, j.WireName, j.Inserted, e.InTx)
			}
		},
		AttemptStarted: func(_ context.Context, e backwave.AttemptEvent) {
			r.add("started %s attempt=%d group=%s", e.WireName, e.Attempt, e.Group)
		},
		AttemptFinished: func(_ context.Context, e backwave.AttemptEvent) {
			if e.Duration < 0 {
				r.add("negative duration %v", e.Duration)
			}
			r.add("finished %s attempt=%d %s", e.WireName, e.Attempt, e.Result)
		},
		RetryScheduled: func(_ context.Context, e backwave.OutcomeEvent) {
			r.add("retry %s attempt=%d delay>0=%v", e.WireName, e.Attempt, e.RetryDelay > 0)
		},
		DeadLettered: func(_ context.Context, e backwave.OutcomeEvent) {
			r.add("dead-lettered %s attempt=%d", e.WireName, e.Attempt)
		},
		Quarantined: func(_ context.Context, e backwave.OutcomeEvent) {
			r.add("quarantined %s queue=%s", e.WireName, e.Queue)
		},
		LeaseLost: func(_ context.Context, e backwave.LeaseEvent) {
			r.add("lease lost %s attempt=%d", e.WireName, e.Attempt)
		},
		Relinquished: func(_ context.Context, e backwave.LeaseEvent) {
			r.add("relinquished %s attempt=%d", e.WireName, e.Attempt)
		},
		StoreCall: func(_ context.Context, e backwave.StoreCallEvent) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.calls = append(r.calls, e)
		},
	}
}

// panicky is an Observer every callback of which panics.
func panicky() backwave.Observer {
	boom := func() { panic("observer bug") }
	return backwave.Observer{
		JobsEnqueued:    func(context.Context, backwave.EnqueueEvent) { boom() },
		AttemptStarted:  func(context.Context, backwave.AttemptEvent) { boom() },
		AttemptFinished: func(context.Context, backwave.AttemptEvent) { boom() },
		RetryScheduled:  func(context.Context, backwave.OutcomeEvent) { boom() },
		DeadLettered:    func(context.Context, backwave.OutcomeEvent) { boom() },
		Quarantined:     func(context.Context, backwave.OutcomeEvent) { boom() },
		LeaseLost:       func(context.Context, backwave.LeaseEvent) { boom() },
		Relinquished:    func(context.Context, backwave.LeaseEvent) { boom() },
		StoreCall:       func(context.Context, backwave.StoreCallEvent) { boom() },
	}
}

// TestObserverSeesTheLifecycle runs a job that succeeds, one that fails once
// and then succeeds, one that fails permanently and one with no handler,
// with a panicking Observer listed before a recording one: the recording
// Observer sees every enqueue, Attempt start and end with its result, the
// retry, the Dead-Lettered and the Quarantined outcome, and the store calls;
// every panic is recovered and logged, and the jobs end as they would
// without Observers.
func TestObserverSeesTheLifecycle(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := newStore()
		h := backwave.NewHandlers()
		mustAdd(t, backwave.AddHandlerFunc(h, func(context.Context, *backwave.Job[obsOK]) error { return nil }))
		mustAdd(t, backwave.AddHandlerFunc(h, func(_ context.Context, j *backwave.Job[obsFlaky]) error {
			if j.Attempt == 1 {
				return errors.New("first try fails")
			}
			return nil
		}))
		mustAdd(t, backwave.AddHandlerFunc(h, func(context.Context, *backwave.Job[obsDoomed]) error {
			return backwave.FailPermanently(errors.New("never"))
		}))
		var logs lockedBuffer
		rec := &recorder{}
		c := startClient(t, st, backwave.Config{
			Handlers:    h,
			Groups:      []backwave.WorkerGroupOptions{group("g", backwave.DefaultQueue)},
			RetryPolicy: backwave.RetryPolicy{Initial: time.Second, Max: time.Second, Multiplier: 1},
			Observers:   []backwave.Observer{panicky(), {}, rec.observer()},
			Logger:      slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError})),
		})
		ids, err := c.EnqueueMany(ctx, []backwave.EnqueueParams{{Args: obsOK{}}, {Args: obsFlaky{}}, {Args: obsDoomed{}}, {Args: obsNobody{}}})
		if err != nil {
			t.Fatal(err)
		}
		waitState(t, st, ids[0], job.StateSucceeded)
		waitState(t, st, ids[1], job.StateSucceeded)
		waitState(t, st, ids[2], job.StateDeadLettered)
		waitState(t, st, ids[3], job.StateQuarantined)
		want := []string{
			"enqueued default test.obs.ok inserted=true tx=false",
			"enqueued default test.obs.nobody inserted=true tx=false",
			"started test.obs.ok attempt=1 group=g",
			"finished test.obs.ok attempt=1 succeeded",
			"started test.obs.flaky attempt=1 group=g",
			"finished test.obs.flaky attempt=1 failed",
			"retry test.obs.flaky attempt=1 delay>0=true",
			"finished test.obs.flaky attempt=2 succeeded",
			"finished test.obs.doomed attempt=1 failed_permanently",
			"dead-lettered test.obs.doomed attempt=1",
			"finished test.obs.nobody attempt=1 unroutable",
			"quarantined test.obs.nobody queue=default",
		}
		for _, w := range want {
			if !rec.has(w) {
				t.Errorf("the Observer was not told %q; it was told:\n%s", w, strings.Join(rec.lines, "\n"))
			}
		}
		if rec.has("negative duration") {
			t.Error("an Attempt reported a negative duration")
		}
		rec.mu.Lock()
		ops := map[string]int{}
		for _, e := range rec.calls {
			ops[e.Operation]++
			if e.Err != nil || e.Duration < 0 || e.Worker == "" || e.Group != "g" {
				t.Errorf("store call %+v: want no error, a duration ≥ 0, its worker and group g", e)
			}
		}
		rec.mu.Unlock()
		if ops["claim"] == 0 || ops["report"] == 0 {
			t.Errorf("store calls by operation = %v, want claims and reports", ops)
		}
		for _, cb := range []string{"JobsEnqueued", "AttemptStarted", "AttemptFinished", "RetryScheduled", "DeadLettered", "Quarantined", "StoreCall"} {
			if !strings.Contains(logs.String(), `msg="observer callback panicked" callback=`+cb) {
				t.Errorf("no log of the recovered panic in %s; logs:\n%s", cb, logs.String())
			}
		}
	})
}

func mustAdd(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// losingStore answers every renewal lost.
type losingStore struct{ store.Store }

func (s losingStore) LeaseRenew(_ context.Context, p store.RenewParams) ([]store.RenewResult, error) {
	out := make([]store.RenewResult, len(p.Leases))
	for i, l := range p.Leases {
		out[i] = store.RenewResult{Lease: l, Status: store.RenewLost}
	}
	return out, nil
}

// TestObserverSeesLeaseLostAndRelinquished: a handler whose renewal comes
// back lost is told LeaseLost (glossary: Lease); one still running when the
// drain period ends is told Relinquished once the store took its Lease back
// (glossary: Relinquish).
func TestObserverSeesLeaseLostAndRelinquished(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		wrap  func(store.Store) store.Store
		stop  bool
		want  string
		state job.State
	}{
		{name: "lease lost", wrap: func(s store.Store) store.Store { return losingStore{s} }, want: "lease lost test.obs.ok attempt=1"},
		{name: "relinquished", wrap: func(s store.Store) store.Store { return s }, stop: true, want: "relinquished test.obs.ok attempt=1", state: job.StateScheduled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				mem := newStore()
				st := tc.wrap(mem)
				started := make(chan struct{})
				h := backwave.NewHandlers()
				mustAdd(t, backwave.AddHandlerFunc(h, func(ctx context.Context, _ *backwave.Job[obsOK]) error {
					close(started)
					<-ctx.Done()
					return context.Cause(ctx)
				}))
				rec := &recorder{}
				c, err := backwave.NewClient(st, backwave.Config{
					Handlers:     h,
					Groups:       []backwave.WorkerGroupOptions{group("g", backwave.DefaultQueue)},
					Observers:    []backwave.Observer{rec.observer()},
					DrainTimeout: time.Second,
					Logger:       testLogger(t, slog.LevelError),
				})
				if err != nil {
					t.Fatal(err)
				}
				if err := c.Start(ctx); err != nil {
					t.Fatal(err)
				}
				id, err := c.Enqueue(ctx, obsOK{})
				if err != nil {
					t.Fatal(err)
				}
				<-started
				if tc.stop {
					if err := c.Stop(ctx); err != nil {
						t.Fatal(err)
					}
					if j := getJob(t, mem, id); j.State != tc.state {
						t.Errorf("job is %s after Stop, want %s", j.State, tc.state)
					}
				} else {
					waitFor(t, tc.want, func() bool { return rec.has(tc.want) })
					_ = c.Stop(ctx)
				}
				if !rec.has(tc.want) {
					t.Errorf("the Observer was not told %q; it was told:\n%s", tc.want, strings.Join(rec.lines, "\n"))
				}
			})
		})
	}
}

// failingClaims fails every claim.
type failingClaims struct{ store.Store }

var errClaimsDown = errors.New("claims are down")

func (failingClaims) JobClaim(context.Context, store.ClaimParams) ([]job.Job, error) {
	return nil, errClaimsDown
}

// TestObserverSeesFailedStoreCalls: a failed claim reaches StoreCall with
// the store's error.
func TestObserverSeesFailedStoreCalls(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		h := backwave.NewHandlers()
		mustAdd(t, backwave.AddHandlerFunc(h, func(context.Context, *backwave.Job[obsOK]) error { return nil }))
		startClient(t, failingClaims{newStore()}, backwave.Config{
			Handlers:  h,
			Groups:    []backwave.WorkerGroupOptions{group("g", backwave.DefaultQueue)},
			Observers: []backwave.Observer{rec.observer()},
			Logger:    testLogger(t, slog.LevelError+1),
		})
		waitFor(t, "a failed claim", func() bool {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			return slices.ContainsFunc(rec.calls, func(e backwave.StoreCallEvent) bool {
				return e.Operation == "claim" && errors.Is(e.Err, errClaimsDown)
			})
		})
	})
}
