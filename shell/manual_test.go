package shell_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/shell"
	"github.com/backwave/backwave/store/memstore"
	"github.com/backwave/backwave/vtime"
)

func succeedExec() shell.Executor {
	return shell.ExecutorFunc(func(context.Context, job.Job) shell.Result {
		return shell.Result{Result: core.ResultSucceeded}
	})
}

// A Pump is either started or driven by hand, never both, and Stop on a
// Pump driven by hand returns at once.
func TestManualExclusive(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		started := newPump(t, newStore(), succeedExec(), nil)
		if err := started.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		if _, err := started.Manual(t.Context()); err == nil {
			t.Fatal("Manual on a started Pump succeeded")
		}
		if err := started.Stop(t.Context()); err != nil {
			t.Fatal(err)
		}

		p := newPump(t, newStore(), succeedExec(), nil)
		m, err := p.Manual(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Start(t.Context()); err == nil {
			t.Fatal("Start on a Pump driven by hand succeeded")
		}
		if _, err := p.Manual(t.Context()); err == nil {
			t.Fatal("a second Manual succeeded")
		}
		if err := p.Stop(t.Context()); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Run(); !errors.Is(err, shell.ErrManualClosed) {
			t.Fatalf("Run after Close: %v, want ErrManualClosed", err)
		}
	})
}

// A Manual runs a due job at the first Run, on its own clock, and its
// tickers skip the ticks an idle stretch jumped over.
func TestManualRuns(t *testing.T) {
	t.Parallel()
	clock := vtime.NewManual(vtime.Epoch)
	st := memstore.New(memstore.Options{Clock: clock})
	ran := 0
	p := newPump(t, st, shell.ExecutorFunc(func(context.Context, job.Job) shell.Result {
		ran++
		return shell.Result{Result: core.ResultSucceeded, Output: []byte("ok")}
	}), func(c *shell.Config) { c.Clock = clock })
	m, err := p.Manual(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ids := insert(t, st, 1, 3)
	if _, ok := m.Next(clock.Now()); ok {
		t.Fatal("an idle Manual reports an instant of its own")
	}
	clock.Advance(time.Hour)
	if did, err := m.Run(); err != nil || !did {
		t.Fatalf("Run = %v, %v; want it to poll", did, err)
	}
	if ran != 1 {
		t.Fatalf("ran %d Attempts, want 1", ran)
	}
	j, err := st.JobGet(t.Context(), ids[0])
	if err != nil || j.State != job.StateSucceeded {
		t.Fatalf("job %v, %v; want succeeded", j.State, err)
	}
	if did, err := m.Run(); err != nil || did {
		t.Fatalf("a second Run at the same instant = %v, %v; want nothing to do", did, err)
	}
}

// Sleep outside a Manual waits on the host's timer (the bubble's here) and
// ends early with the context's cause.
func TestSleepOutsideManual(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if err := shell.Sleep(t.Context(), time.Minute); err != nil || time.Since(start) != time.Minute {
			t.Fatalf("Sleep = %v after %v; want nil after 1m", err, time.Since(start))
		}
		ctx, cancel := context.WithCancelCause(t.Context())
		cause := errors.New("stop")
		time.AfterFunc(time.Second, func() { cancel(cause) })
		if err := shell.Sleep(ctx, time.Hour); !errors.Is(err, cause) {
			t.Fatalf("Sleep = %v, want the cause", err)
		}
		if err := shell.Sleep(ctx, time.Hour); !errors.Is(err, cause) {
			t.Fatalf("Sleep on a done context = %v, want the cause", err)
		}
		if err := shell.Sleep(t.Context(), 0); err != nil {
			t.Fatalf("Sleep(0) = %v", err)
		}
	})
}
