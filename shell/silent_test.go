package shell_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/shell"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/memstore"
)

// silent is a store that goes silent when mute is set, as a connection to a
// dead host does: every call then blocks until its context is done. Each
// call that blocks is announced on blocked (dropped while one waits);
// closing release lets blocked calls fail, so a failing test still ends its
// bubble.
type silent struct {
	*memstore.Store
	mute    atomic.Bool
	blocked chan struct{}
	release chan struct{}
}

func newSilent() *silent {
	return &silent{Store: newStore(), blocked: make(chan struct{}, 1), release: make(chan struct{})}
}

func (s *silent) hang(ctx context.Context) error {
	select {
	case s.blocked <- struct{}{}:
	default:
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-s.release:
		return errors.New("released by the test")
	}
}

func (s *silent) JobClaim(ctx context.Context, p store.ClaimParams) ([]job.Job, error) {
	if s.mute.Load() {
		return nil, s.hang(ctx)
	}
	return s.Store.JobClaim(ctx, p)
}

func (s *silent) LeaseRenew(ctx context.Context, p store.RenewParams) ([]store.RenewResult, error) {
	if s.mute.Load() {
		return nil, s.hang(ctx)
	}
	return s.Store.LeaseRenew(ctx, p)
}

func (s *silent) OutcomeReport(ctx context.Context, p store.ReportParams) ([]store.ReportResult, error) {
	if s.mute.Load() {
		return nil, s.hang(ctx)
	}
	return s.Store.OutcomeReport(ctx, p)
}

func (s *silent) LeaseExpire(ctx context.Context, p store.ExpireParams) (store.ExpireResult, error) {
	if s.mute.Load() {
		return store.ExpireResult{}, s.hang(ctx)
	}
	return s.Store.LeaseExpire(ctx, p)
}

func (s *silent) LeaseRelinquish(ctx context.Context, p store.RelinquishParams) (store.RelinquishResult, error) {
	if s.mute.Load() {
		return store.RelinquishResult{}, s.hang(ctx)
	}
	return s.Store.LeaseRelinquish(ctx, p)
}

// A store that stops answering mid-run cannot hold Stop back (glossary,
// Relinquish: a failed hand-back never blocks the host from exiting). The
// Lease is an hour, so no store call's own deadline helps here: the end of
// the drain period cancels the call the loop is blocked in, the handler is
// cancelled with ErrShutdown, the Relinquish fails after RelinquishTimeout,
// and Stop returns DrainTimeout + RelinquishTimeout after it was called.
func TestPumpStopBoundedWhenStoreGoesSilent(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const drain, relinquish = 5 * time.Second, 2 * time.Second
		st := newSilent()
		id := insert(t, st, 1, 5)[0]
		running := make(chan struct{})
		cause := make(chan error, 1)
		p := newPump(t, st, shell.ExecutorFunc(func(ctx context.Context, j job.Job) shell.Result {
			close(running)
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return shell.Result{Result: core.ResultFailed}
		}), func(c *shell.Config) {
			c.Driver.LeaseDuration = time.Hour
			c.DrainTimeout = drain
			c.RelinquishTimeout = relinquish
		})
		start(t, p)
		<-running
		synctest.Wait() // the loop waits for its next tick
		st.mute.Store(true)
		<-st.blocked // the loop is inside a store call that will never answer

		began := time.Now()
		stopped := make(chan error, 1)
		go func() { stopped <- p.Stop(context.Background()) }()
		select {
		case err := <-stopped:
			if err != nil {
				t.Fatalf("Stop: %v", err)
			}
		case <-time.After(drain + relinquish + time.Minute):
			close(st.release)
			t.Fatalf("Stop did not return within a minute past DrainTimeout + RelinquishTimeout (%v)", drain+relinquish)
		}
		if took := time.Since(began); took < drain || took > drain+relinquish {
			t.Errorf("Stop took %v, want between DrainTimeout %v and DrainTimeout + RelinquishTimeout %v", took, drain, drain+relinquish)
		}
		if err := <-cause; !errors.Is(err, shell.ErrShutdown) {
			t.Errorf("handler's cause = %v, want ErrShutdown", err)
		}
		// The hand-back never reached the store: the job waits for its
		// Lease to lapse.
		if j := stateOf(t, st.Store, id); j.State != job.StateRunning || j.Attempt != 1 {
			t.Errorf("after Stop: %s at Attempt %d, want still running at Attempt 1", j.State, j.Attempt)
		}
	})
}

// Every store call has a deadline of a third of the Lease: a call to a store
// that never answers fails then, is logged as timed out, and the loop goes
// on to the next call.
func TestPumpStoreCallDeadline(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const lease = 30 * time.Second
		st := newSilent()
		st.mute.Store(true)
		var logs syncBuffer
		p := newPump(t, st, shell.ExecutorFunc(succeed), func(c *shell.Config) {
			c.Driver.LeaseDuration = lease
			c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
		})
		start(t, p)
		t.Cleanup(func() {
			select {
			case <-st.release:
			default:
				close(st.release)
			}
		})
		<-st.blocked
		first := time.Now()
		select {
		case <-st.blocked:
		case <-time.After(time.Hour):
			close(st.release)
			t.Fatal("the first store call still blocks the loop after an hour")
		}
		if gap := time.Since(first); gap != lease/3 {
			t.Errorf("the next store call came %v after the first, want the deadline %v", gap, lease/3)
		}
		synctest.Wait()
		out := logs.String()
		if !strings.Contains(out, "store call timed out") || !strings.Contains(out, "no answer within 10s") {
			t.Errorf("no timed-out call in the log:\n%s", out)
		}
	})
}
