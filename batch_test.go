package backwave_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/job"
)

type bulkMail struct {
	N int `json:"n"`
}

func (bulkMail) WireName() string { return "test.bulk_mail" }

// calls records the jobs of each call of a batch handler.
type calls struct {
	mu   sync.Mutex
	jobs [][]int
}

func (c *calls) add(jobs []*backwave.Job[bulkMail]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ns := make([]int, len(jobs))
	for i, j := range jobs {
		ns[i] = j.Args.N
	}
	c.jobs = append(c.jobs, ns)
}

func (c *calls) snapshot() [][]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.jobs)
}

// enqueueBulk enqueues n bulkMail jobs numbered 0 … n-1 and returns their
// ids by number.
func enqueueBulk(t *testing.T, c *backwave.Client, n int) []job.ID {
	t.Helper()
	ids := make([]job.ID, n)
	for i := range n {
		id, err := c.Enqueue(context.Background(), bulkMail{N: i})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	return ids
}

// TestBatchHandlerDealsEachJobItsOwnResult: jobs claimed together reach
// the batch handler in calls of at most Size, and each job's outcome,
// Failure Detail and Job Output are its own result's, never a neighbour's
// (glossary-style entry in docs/job-shapes.md, Batch Handlers).
func TestBatchHandlerDealsEachJobItsOwnResult(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		var seen calls
		h := backwave.NewHandlers()
		mustAdd(t, backwave.AddBatchHandlerFunc(h, backwave.BatchOptions{Size: 4, Linger: time.Second},
			func(ctx context.Context, jobs []*backwave.Job[bulkMail]) []error {
				seen.add(jobs)
				errs := make([]error, len(jobs))
				for i, j := range jobs {
					switch j.Args.N % 3 {
					case 0:
						j.SetOutput(fmt.Appendf(nil, `{"sent":%d}`, j.Args.N))
					case 1:
						errs[i] = backwave.FailPermanently(fmt.Errorf("mailbox %d bounced", j.Args.N))
					case 2:
						errs[i] = fmt.Errorf("mail server busy for %d", j.Args.N)
					}
				}
				return errs
			}, backwave.WithRetryPolicy(backwave.RetryPolicy{Initial: time.Hour, Max: time.Hour, Multiplier: 1})))
		c, err := backwave.NewClient(st, backwave.Config{Handlers: h, Groups: []backwave.WorkerGroupOptions{group("g", backwave.DefaultQueue)}})
		if err != nil {
			t.Fatal(err)
		}
		ids := enqueueBulk(t, c, 10) // all due before the first claim takes them together
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Stop(context.Background()) })

		for n, id := range ids {
			want := []job.State{job.StateSucceeded, job.StateDeadLettered, job.StateScheduled}[n%3]
			waitFor(t, fmt.Sprintf("job %d %s", n, want), func() bool {
				j := getJob(t, st, id)
				return j.State == want && j.Attempt == 1
			})
		}
		for n, id := range ids {
			out, err := st.JobOutput(context.Background(), id)
			switch n % 3 {
			case 0:
				if err != nil || string(out) != fmt.Sprintf(`{"sent":%d}`, n) {
					t.Errorf("job %d: output %q, %v; want its own", n, out, err)
				}
			case 1:
				if d := lastDetail(t, st, id); d != fmt.Sprintf("mailbox %d bounced", n) {
					t.Errorf("job %d: detail %q, want its own bounce", n, d)
				}
			case 2:
				if d := lastDetail(t, st, id); d != fmt.Sprintf("mail server busy for %d", n) {
					t.Errorf("job %d: detail %q, want its own failure", n, d)
				}
			}
		}
		got := seen.snapshot()
		var all []int
		for _, call := range got {
			if len(call) > 4 {
				t.Errorf("a call took %d jobs, above Size 4: %v", len(call), got)
			}
			all = append(all, call...)
		}
		slices.Sort(all)
		if want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}; !slices.Equal(all, want) {
			t.Errorf("calls %v: jobs %v, want each of %v once", got, all, want)
		}
		if len(got) > 4 {
			t.Errorf("10 jobs claimed together took %d calls of at most 4: %v", len(got), got)
		}
	})
}

// TestBatchHandlerLingers: a job alone waits Linger for company, then goes
// in a call of its own; jobs that arrive inside the linger join it.
func TestBatchHandlerLingers(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		var seen calls
		var at []time.Time
		var mu sync.Mutex
		h := backwave.NewHandlers()
		mustAdd(t, backwave.AddBatchHandlerFunc(h, backwave.BatchOptions{Size: 5, Linger: 3 * time.Second},
			func(ctx context.Context, jobs []*backwave.Job[bulkMail]) []error {
				mu.Lock()
				at = append(at, time.Now())
				mu.Unlock()
				seen.add(jobs)
				return nil
			}))
		c := startClient(t, st, backwave.Config{Handlers: h, Groups: []backwave.WorkerGroupOptions{group("g", backwave.DefaultQueue)}})
		start := time.Now()
		first := enqueueBulk(t, c, 1)
		time.Sleep(time.Second)
		second, err := c.Enqueue(context.Background(), bulkMail{N: 1})
		if err != nil {
			t.Fatal(err)
		}
		waitState(t, st, first[0], job.StateSucceeded)
		waitState(t, st, second, job.StateSucceeded)
		got := seen.snapshot()
		if len(got) != 1 || len(got[0]) != 2 {
			t.Fatalf("calls %v: want the second job to join the first's call", got)
		}
		mu.Lock()
		defer mu.Unlock()
		if waited := at[0].Sub(start); waited < 3*time.Second || waited > 4*time.Second {
			t.Errorf("the call went %v after the first job, want its Linger of 3s (plus a poll)", waited)
		}
	})
}

// TestBatchHandlerMisanswers: a handler that answers with the wrong number
// of results, or panics, fails every job of the call with a detail that
// says why; none is lost or takes another's result.
func TestBatchHandlerMisanswers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		answer func([]*backwave.Job[bulkMail]) []error
		detail string
	}{
		{"too few results", func(jobs []*backwave.Job[bulkMail]) []error { return make([]error, len(jobs)-1) },
			`batch handler of wire name "test.bulk_mail": batch handler returned the wrong number of results: 2 results for 3 jobs`},
		{"panic", func([]*backwave.Job[bulkMail]) []error { panic("the mail API client is nil") },
			"panic: the mail API client is nil"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				st := newStore()
				h := backwave.NewHandlers()
				mustAdd(t, backwave.AddBatchHandlerFunc(h, backwave.BatchOptions{Size: 3, Linger: time.Minute},
					func(ctx context.Context, jobs []*backwave.Job[bulkMail]) []error { return tc.answer(jobs) },
					backwave.WithRetryPolicy(backwave.RetryPolicy{Initial: time.Hour, Max: time.Hour, Multiplier: 1})))
				c, err := backwave.NewClient(st, backwave.Config{Handlers: h, Groups: []backwave.WorkerGroupOptions{group("g", backwave.DefaultQueue)}})
				if err != nil {
					t.Fatal(err)
				}
				ids := enqueueBulk(t, c, 3)
				if err := c.Start(context.Background()); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = c.Stop(context.Background()) })
				for _, id := range ids {
					waitFor(t, "a failed Attempt", func() bool { j := getJob(t, st, id); return j.State == job.StateScheduled && j.Attempt == 1 })
					if d := lastDetail(t, st, id); !strings.HasPrefix(d, tc.detail) {
						t.Errorf("job %d: detail %q, want it to start %q", id, d, tc.detail)
					}
				}
			})
		})
	}
}

// TestBatchHandlerCallContext: a cancel request for one job of a call does
// not end the call's context while another job's is live; the cancelled
// job still gets its result, and, since it failed, ends Cancelled while its
// neighbour succeeds.
func TestBatchHandlerCallContext(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := newStore()
		started := make(chan struct{})
		release := make(chan struct{})
		var callErr error
		h := backwave.NewHandlers()
		mustAdd(t, backwave.AddBatchHandlerFunc(h, backwave.BatchOptions{Size: 2, Linger: time.Minute},
			func(ctx context.Context, jobs []*backwave.Job[bulkMail]) []error {
				close(started)
				<-release
				callErr = ctx.Err()
				errs := make([]error, len(jobs))
				for i, j := range jobs {
					if j.Args.N == 0 {
						errs[i] = errors.New("stopped on request")
					}
				}
				return errs
			}))
		c, err := backwave.NewClient(st, backwave.Config{Handlers: h, Groups: []backwave.WorkerGroupOptions{group("g", backwave.DefaultQueue)}})
		if err != nil {
			t.Fatal(err)
		}
		ids := enqueueBulk(t, c, 2)
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Stop(ctx) })
		<-started
		admin, err := c.Admin("test")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := admin.Cancel(ctx, ids[0]); err != nil {
			t.Fatal(err)
		}
		time.Sleep(15 * time.Second) // past a heartbeat: the Driver has signalled job 0
		close(release)
		waitState(t, st, ids[0], job.StateCancelled)
		waitState(t, st, ids[1], job.StateSucceeded)
		if callErr != nil {
			t.Errorf("the call's context ended (%v) while job 1's was live", callErr)
		}
	})
}

// TestBatchOptionsRefused: a batch Size of 0, a negative Linger, and a Size
// no Worker Group could fill are each a clear configuration error.
func TestBatchOptionsRefused(t *testing.T) {
	t.Parallel()
	noop := func(context.Context, []*backwave.Job[bulkMail]) []error { return nil }
	for _, tc := range []struct {
		name   string
		opts   backwave.BatchOptions
		group  func(*backwave.WorkerGroupOptions)
		at     string
		reason string
	}{
		{"size 0", backwave.BatchOptions{}, nil, "add", "batch size 0: a batch holds at least 1 job"},
		{"negative linger", backwave.BatchOptions{Size: 2, Linger: -time.Second}, nil, "add", "batch linger -1s is negative"},
		{"above the claim batch", backwave.BatchOptions{Size: 50}, func(g *backwave.WorkerGroupOptions) { g.MaxClaimBatch, g.PoolSize = 20, 100 },
			"client", `batch size 50 is above worker group "g"'s claim batch of 20 (MaxClaimBatch)`},
		{"above the pool", backwave.BatchOptions{Size: 50}, func(g *backwave.WorkerGroupOptions) { g.MaxClaimBatch, g.PoolSize = 100, 10 },
			"client", `batch size 50 is above worker group "g"'s 10 Workers (PoolSize)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := backwave.NewHandlers()
			err := backwave.AddBatchHandlerFunc(h, tc.opts, noop)
			if tc.at == "client" {
				if err != nil {
					t.Fatalf("AddBatchHandlerFunc: %v", err)
				}
				g := group("g", backwave.DefaultQueue)
				tc.group(&g)
				_, err = backwave.NewClient(newStore(), backwave.Config{Handlers: h, Groups: []backwave.WorkerGroupOptions{g}})
			}
			if !errors.Is(err, backwave.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("error %v, want ErrInvalidConfig saying %q", err, tc.reason)
			}
		})
	}
}
