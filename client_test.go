package backwave_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/shell"
	"github.com/backwave/backwave/store"
)

// greetWorkers registers fn for greet jobs on the default Queue.
func greetWorkers(t *testing.T, fn func(context.Context, *backwave.Job[greet]) error, opts ...backwave.HandlerOption) *backwave.Handlers {
	t.Helper()
	w := backwave.NewHandlers()
	if err := backwave.AddHandlerFunc(w, fn, opts...); err != nil {
		t.Fatal(err)
	}
	return w
}

func greetClient(t *testing.T, st store.Store, fn func(context.Context, *backwave.Job[greet]) error, adjust ...func(*backwave.Config)) *backwave.Client {
	t.Helper()
	cfg := backwave.Config{
		Handlers: greetWorkers(t, fn),
		Groups:   []backwave.WorkerGroupOptions{group("g", backwave.DefaultQueue)},
		Logger:   testLogger(t, slog.LevelError),
	}
	for _, a := range adjust {
		a(&cfg)
	}
	return startClient(t, st, cfg)
}

func enqueue(t *testing.T, c *backwave.Client, args backwave.JobArgs, opts ...backwave.EnqueueOption) job.ID {
	t.Helper()
	id, err := c.Enqueue(context.Background(), args, opts...)
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	return id
}

func TestHandlerSeesItsJob(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		seen := make(chan backwave.Job[greet], 1)
		c := greetClient(t, st, func(ctx context.Context, j *backwave.Job[greet]) error {
			seen <- *j
			j.SetOutput([]byte(`"hi ` + j.Args.Name + `"`))
			return j.AddTags(backwave.Keyed("greeted", j.Args.Name))
		})
		id := enqueue(t, c, greet{"Ada"}, backwave.WithMaxAttempts(4), backwave.WithTags(backwave.Label("t")))
		got := <-seen
		if got.ID != id || got.Args.Name != "Ada" || got.Attempt != 1 || got.AttemptCeiling != 4 ||
			got.Queue != backwave.DefaultQueue || got.WireName != "test.greet" || len(got.Tags) != 1 {
			t.Errorf("handler saw %+v", got)
		}
		j := waitState(t, st, id, job.StateSucceeded)
		if out, _ := st.JobOutput(context.Background(), id); string(out) != `"hi Ada"` {
			t.Errorf("Job Output = %s", out)
		}
		if len(j.Tags) != 2 {
			t.Errorf("Tags = %v, want the enqueued Label and the handler's Keyed Tag", j.Tags)
		}
	})
}

// Glossary, Quarantined: a stored job whose Wire Name has no handler is
// Quarantined, not retried.
func TestUnknownWireNameIsQuarantined(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		greetClient(t, st, nop[greet])
		inserter, err := backwave.NewClient(st, backwave.Config{})
		if err != nil {
			t.Fatal(err)
		}
		// mailArgs has no handler on the working Client.
		id := enqueue(t, inserter, mailArgs{"x"}, backwave.WithQueue(backwave.DefaultQueue), backwave.WithMaxAttempts(5))
		j := waitState(t, st, id, job.StateQuarantined)
		if j.Attempt != 1 {
			t.Errorf("Attempt = %d, want 1 (never retried)", j.Attempt)
		}
		if j.TerminalCause != job.TerminalCauseNoHandler {
			t.Errorf("Terminal Cause = %q, want no_handler", j.TerminalCause)
		}
		if d := lastDetail(t, st, id); !strings.Contains(d, `"test.mail"`) {
			t.Errorf("Failure Detail %q does not name the wire name", d)
		}
	})
}

// Glossary, Quarantined: a payload that no longer decodes is Quarantined.
func TestUndecodablePayloadIsQuarantined(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		var ran atomic.Bool
		greetClient(t, st, func(context.Context, *backwave.Job[greet]) error { ran.Store(true); return nil })
		ids, err := st.JobInsertMany(context.Background(), store.InsertManyParams{Jobs: []store.NewJob{{
			WireName: "test.greet", Queue: backwave.DefaultQueue, Payload: []byte(`{"Name": 42}`), MaxAttempts: 5,
		}}})
		if err != nil {
			t.Fatal(err)
		}
		if j := waitState(t, st, ids[0], job.StateQuarantined); j.TerminalCause != job.TerminalCauseUndecodablePayload {
			t.Errorf("Terminal Cause = %q, want undecodable_payload", j.TerminalCause)
		}
		if ran.Load() {
			t.Error("the handler ran on an undecodable payload")
		}
		if d := lastDetail(t, st, ids[0]); !strings.Contains(d, "does not decode") {
			t.Errorf("Failure Detail %q does not say the payload does not decode", d)
		}
	})
}

// A handler panic is a failed Attempt with its stack as Failure Detail; the
// job is retried.
func TestPanicIsFailedAttemptWithStack(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		c := greetClient(t, st, func(ctx context.Context, j *backwave.Job[greet]) error {
			if j.Attempt == 1 {
				explode(j.Args.Name)
			}
			return nil
		})
		id := enqueue(t, c, greet{"boom"})
		j := waitState(t, st, id, job.StateSucceeded)
		if j.Attempt != 2 || j.RetryCause != job.RetryCauseHandlerFailed {
			t.Errorf("Attempt %d, Retry Cause %q; want 2, handler_failed", j.Attempt, j.RetryCause)
		}
		log := transitions(t, st, id)
		var retry *string
		for i := range log {
			if log[i].Via == core.ViaRetry {
				retry = &log[i].FailureDetail
			}
		}
		if retry == nil {
			t.Fatalf("no retry transition in %+v", log)
		}
		for _, want := range []string{"panic: exploded boom", "explode", "goroutine"} {
			if !strings.Contains(*retry, want) {
				t.Errorf("Failure Detail lacks %q:\n%s", want, *retry)
			}
		}
	})
}

func explode(name string) { panic("exploded " + name) }

// Failure Detail is bounded by the text limit, cut at a rune boundary and
// marked (glossary: Failure Detail; engine-runtime reference).
func TestFailureDetailCutAtRuneBoundary(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		msg := strings.Repeat("日本", 100) // 3-byte runes
		c := greetClient(t, st, func(context.Context, *backwave.Job[greet]) error {
			return errors.New(msg)
		}, func(cfg *backwave.Config) { cfg.FailureDetailLimit = 100 })
		id := enqueue(t, c, greet{}, backwave.WithMaxAttempts(1))
		waitState(t, st, id, job.StateDeadLettered)
		d := lastDetail(t, st, id)
		if len(d) > 100 || !utf8.ValidString(d) || !strings.HasSuffix(d, shell.TruncatedMark) || !strings.HasPrefix(msg, strings.TrimSuffix(d, shell.TruncatedMark)) {
			t.Errorf("Failure Detail (%d bytes) = %q", len(d), d)
		}
	})
}

func TestFailureDetailOffByEnv(t *testing.T) {
	t.Setenv(backwave.FailureDetailEnv, "off") // not parallel: it sets the environment
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		c := greetClient(t, st, func(context.Context, *backwave.Job[greet]) error { return errors.New("secret") })
		id := enqueue(t, c, greet{}, backwave.WithMaxAttempts(1))
		waitState(t, st, id, job.StateDeadLettered)
		if d := lastDetail(t, st, id); d != "" {
			t.Errorf("Failure Detail %q recorded with capture off", d)
		}
	})
}

func TestFailPermanentlyDeadLettersAtOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		c := greetClient(t, st, func(context.Context, *backwave.Job[greet]) error {
			return backwave.FailPermanently(errors.New("bad address"))
		})
		id := enqueue(t, c, greet{}, backwave.WithMaxAttempts(10))
		j := waitState(t, st, id, job.StateDeadLettered)
		if j.Attempt != 1 {
			t.Errorf("Attempt = %d, want 1", j.Attempt)
		}
		if d := lastDetail(t, st, id); d != "bad address" {
			t.Errorf("Failure Detail = %q", d)
		}
	})
}

// An operator cancel reaches the handler's context; the job ends Cancelled.
func TestCancelRequestReachesHandler(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		running := make(chan struct{})
		cause := make(chan error, 1)
		c := greetClient(t, st, func(ctx context.Context, j *backwave.Job[greet]) error {
			close(running)
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return ctx.Err()
		})
		id := enqueue(t, c, greet{})
		<-running
		if err := st.RequestCancel(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		if err := <-cause; !errors.Is(err, backwave.ErrCancelRequested) {
			t.Errorf("cause = %v, want ErrCancelRequested", err)
		}
		waitState(t, st, id, job.StateCancelled)
	})
}

// Graceful Stop relinquishes a hanging handler's job: back to Scheduled at
// once, Attempt kept (glossary: Relinquish).
func TestStopRelinquishesHangingHandler(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		running, release := make(chan struct{}), make(chan struct{})
		defer close(release)
		c, err := backwave.NewClient(st, backwave.Config{
			Handlers: greetWorkers(t, func(ctx context.Context, j *backwave.Job[greet]) error {
				close(running)
				<-release // deaf to ctx
				return nil
			}),
			Groups:       []backwave.WorkerGroupOptions{group("g", backwave.DefaultQueue)},
			DrainTimeout: 2 * time.Second,
			Logger:       testLogger(t, slog.LevelError),
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		id := enqueue(t, c, greet{})
		<-running
		began := time.Now()
		if err := c.Stop(ctx); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		if took := time.Since(began); took != 2*time.Second {
			t.Errorf("Stop took %v, want the 2s drain timeout", took)
		}
		j := getJob(t, st, id)
		if j.State != job.StateScheduled || j.Attempt != 1 {
			t.Errorf("after Stop: %s at Attempt %d; want scheduled at Attempt 1", j.State, j.Attempt)
		}
		if log := transitions(t, st, id); log[len(log)-1].Via != core.ViaRelinquish {
			t.Errorf("last transition %+v, want a Relinquish", log[len(log)-1])
		}
	})
}

// A Stop whose context ends first cuts the drain short and reports it.
func TestStopContextCutsDrainShort(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		running := make(chan struct{})
		c := greetClient(t, st, func(ctx context.Context, j *backwave.Job[greet]) error {
			close(running)
			<-ctx.Done()
			return ctx.Err()
		})
		id := enqueue(t, c, greet{})
		<-running
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		began := time.Now()
		if err := c.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Stop err = %v, want DeadlineExceeded", err)
		}
		if took := time.Since(began); took != time.Second {
			t.Errorf("Stop took %v, want 1s", took)
		}
		if j := getJob(t, st, id); j.State != job.StateScheduled || j.Attempt != 1 {
			t.Errorf("after Stop: %s at Attempt %d", j.State, j.Attempt)
		}
	})
}

// Wake-Up Hints: with an hour-long poll interval, a job enqueued after the
// first poll still starts at once.
func TestHintStartsJobBeforePollInterval(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		store func() store.Store
	}{
		{"store hints", func() store.Store { return newStore() }},
		{"local wake without store hints", func() store.Store { return noHints{newStore()} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				st := tc.store()
				ran := make(chan struct{})
				c := greetClient(t, st, func(context.Context, *backwave.Job[greet]) error {
					close(ran)
					return nil
				}, func(cfg *backwave.Config) {
					cfg.Groups[0].PollInterval = time.Hour
					cfg.Groups[0].MaintenanceInterval = time.Hour
				})
				synctest.Wait() // the first poll found nothing; the Pump waits
				enqueue(t, c, greet{})
				select {
				case <-ran:
				case <-time.After(time.Minute):
					t.Fatal("the job did not start within a minute of the enqueue")
				}
			})
		})
	}
}

// noHints hides the memstore's HintSource.
type noHints struct{ store.Store }

// A worker's own retry policy replaces the Client's.
func TestWorkerRetryPolicy(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		var starts []time.Time
		policy := backwave.RetryPolicy{Initial: 7 * time.Second, Max: 7 * time.Second, Multiplier: 1}
		c := startClient(t, st, backwave.Config{
			Handlers: greetWorkers(t, func(ctx context.Context, j *backwave.Job[greet]) error {
				starts = append(starts, time.Now())
				if j.Attempt == 1 {
					return fmt.Errorf("attempt %d failed", j.Attempt)
				}
				return nil
			}, backwave.WithRetryPolicy(policy)),
			Groups: []backwave.WorkerGroupOptions{group("g", backwave.DefaultQueue)},
			Logger: testLogger(t, slog.LevelError),
		})
		id := enqueue(t, c, greet{})
		waitState(t, st, id, job.StateSucceeded)
		if gap := starts[1].Sub(starts[0]); gap < 7*time.Second || gap > 8*time.Second {
			t.Errorf("retry came %v after the failure, want the worker's 7s", gap)
		}
	})
}

func TestMiddlewareWrapsAttemptsFirstOutermost(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		var trace []string
		mw := func(name string) backwave.Middleware {
			return func(ctx context.Context, a backwave.AttemptInfo, next func(context.Context) error) error {
				trace = append(trace, name+" in "+a.WireName)
				err := next(ctx)
				trace = append(trace, name+" out")
				return err
			}
		}
		c := greetClient(t, st, func(context.Context, *backwave.Job[greet]) error {
			trace = append(trace, "handler")
			return nil
		}, func(cfg *backwave.Config) { cfg.Middleware = []backwave.Middleware{mw("outer"), mw("inner")} })
		id := enqueue(t, c, greet{})
		waitState(t, st, id, job.StateSucceeded)
		want := "outer in test.greet,inner in test.greet,handler,inner out,outer out"
		if got := strings.Join(trace, ","); got != want {
			t.Errorf("trace = %s, want %s", got, want)
		}
	})
}
