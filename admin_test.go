package backwave_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// Cancel of a Running job through the Admin handle: a handler that watches
// its context stops, and the job ends Cancelled (glossary, Cancelled:
// "Cancelling an executing job is cooperative — the handler's
// CancellationToken fires via heartbeat").
func TestAdminCancelRunningWatchingHandler(t *testing.T) {
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
		admin, err := c.Admin("ops:alice")
		if err != nil {
			t.Fatal(err)
		}
		if j, err := admin.Cancel(context.Background(), id); err != nil || !j.CancelRequested {
			t.Fatalf("Cancel = %v, %v; want a cancel request", j.State, err)
		}
		waitState(t, st, id, job.StateCancelled)
		entries, err := admin.Audit(context.Background(), store.AuditListParams{JobID: id})
		if err != nil || len(entries) != 1 || entries[0].Actor != "ops:alice" || entries[0].Action != store.AuditCancelRequest {
			t.Fatalf("audit trail %+v, %v", entries, err)
		}
	})
}

// A handler that ignores its context and succeeds after its cancel was
// recorded still cannot apply Succeeded: the store applies Cancelled under
// the fence (core.UnderCancel cites the glossary: Cancelled "stays
// Cancelled under every automatic path"; Operator Action; Effect-Once). Its
// Job Output is not stored.
func TestAdminCancelWinsOverIgnoringHandler(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		running, proceed := make(chan struct{}), make(chan struct{})
		c := greetClient(t, st, func(ctx context.Context, j *backwave.Job[greet]) error {
			close(running)
			<-proceed // deaf to ctx
			j.SetOutput([]byte(`"done anyway"`))
			return nil
		})
		id := enqueue(t, c, greet{})
		<-running
		admin, err := c.Admin("ops:bob")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := admin.Cancel(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		close(proceed)
		got := waitState(t, st, id, job.StateCancelled)
		if got.CancelCause != job.CancelCauseOperator {
			t.Fatalf("CancelCause = %q", got.CancelCause)
		}
		d, err := admin.Job(context.Background(), id)
		if err != nil || d.Output != nil {
			t.Fatalf("Job detail: output %q, %v; want none", d.Output, err)
		}
		if last := d.Transitions[len(d.Transitions)-1]; last.State != job.StateCancelled {
			t.Fatalf("last transition %s, want cancelled", last.Edge())
		}
		// An action on the wrong state is a clear error.
		if _, err := admin.Reschedule(context.Background(), id, got.ScheduledAt); !errors.Is(err, store.ErrIllegalTransition) {
			t.Fatalf("Reschedule(cancelled job) = %v, want ErrIllegalTransition", err)
		}
	})
}

func TestAdminNeedsAnActor(t *testing.T) {
	t.Parallel()
	c, err := backwave.NewClient(newStore(), backwave.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Admin(""); !errors.Is(err, backwave.ErrNoActor) {
		t.Fatalf("Admin(\"\") = %v, want ErrNoActor", err)
	}
}

type named struct {
	wire string
	Blob string
}

func (n named) WireName() string { return n.wire }

// Bad input at enqueue is a clear error wrapping ErrInvalidJob: an empty
// Wire Name, a Tag key or value over job.MaxTagLen bytes, a payload over
// store.MaxPayloadBytes.
func TestEnqueueRejectsBadInput(t *testing.T) {
	t.Parallel()
	c, err := backwave.NewClient(newStore(), backwave.Config{})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", job.MaxTagLen+1)
	for _, tc := range []struct {
		name string
		args backwave.JobArgs
		opts []backwave.EnqueueOption
	}{
		{"empty wire name", named{wire: ""}, nil},
		{"tag value too long", named{wire: "w"}, []backwave.EnqueueOption{backwave.WithTags(backwave.Label(long))}},
		{"tag key too long", named{wire: "w"}, []backwave.EnqueueOption{backwave.WithTags(backwave.Keyed(long, "v"))}},
		{"payload too large", named{wire: "w", Blob: strings.Repeat("p", store.MaxPayloadBytes)}, nil},
	} {
		if _, err := c.Enqueue(context.Background(), tc.args, tc.opts...); !errors.Is(err, backwave.ErrInvalidJob) {
			t.Errorf("%s: Enqueue = %v, want ErrInvalidJob", tc.name, err)
		}
	}
}
