package backwave_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/job"
)

// TestProgressTravelsWithTheNextRenewal: a handler's progress report makes
// no store call; it reaches the store with the next Lease renewal (the
// heartbeat), and Admin shows it with the Attempt that reported it. A long
// note is cut and marked; a fraction outside [0, 1] is refused.
func TestProgressTravelsWithTheNextRenewal(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := newStore()
		reported := make(chan error, 1)
		release := make(chan struct{})
		h := backwave.NewHandlers()
		mustAdd(t, backwave.AddHandlerFunc(h, func(ctx context.Context, j *backwave.Job[obsOK]) error {
			if err := j.ReportProgress(1.5, "too far"); !errors.Is(err, backwave.ErrInvalidParams) {
				reported <- err
				return nil
			}
			reported <- j.ReportProgress(0.5, "halfway: "+strings.Repeat("é", backwave.MaxProgressNoteBytes))
			<-release
			return nil
		}))
		var (
			mu  sync.Mutex
			ops []string
		)
		c := startClient(t, st, backwave.Config{
			Handlers: h,
			Groups:   []backwave.WorkerGroupOptions{group("g", backwave.DefaultQueue)},
			Observers: []backwave.Observer{{StoreCall: func(_ context.Context, e backwave.StoreCallEvent) {
				mu.Lock()
				ops = append(ops, e.Operation)
				mu.Unlock()
			}}},
		})
		admin, err := c.Admin("test")
		if err != nil {
			t.Fatal(err)
		}
		id, err := c.Enqueue(ctx, obsOK{})
		if err != nil {
			t.Fatal(err)
		}
		if err := <-reported; err != nil {
			t.Fatalf("ReportProgress: %v", err)
		}
		synctest.Wait()
		mu.Lock()
		ops = nil
		mu.Unlock()
		if d, err := admin.Job(ctx, id); err != nil || d.Job.Progress != nil {
			t.Fatalf("before any renewal: progress %+v (%v), want none: a report makes no store call", d.Job.Progress, err)
		}
		// The group's HeartbeatInterval is 10s.
		time.Sleep(10*time.Second + time.Millisecond)
		synctest.Wait()
		d, err := admin.Job(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		p := d.Job.Progress
		if p == nil {
			t.Fatal("no progress after a renewal")
		}
		if p.Attempt != 1 || p.Fraction != 0.5 || !strings.HasPrefix(p.Note, "halfway: é") ||
			!strings.HasSuffix(p.Note, "…[truncated]") || len(p.Note) > backwave.MaxProgressNoteBytes {
			t.Errorf("progress = %+v, want Attempt 1, 0.5, the note cut to %d bytes and marked", *p, backwave.MaxProgressNoteBytes)
		}
		// What carried it: the renewal, and nothing but the Pump's usual
		// calls (claims and the maintenance beat) ran meanwhile.
		mu.Lock()
		renewals := 0
		for _, op := range ops {
			switch op {
			case "renew":
				renewals++
			case "claim", "expire", "load_schedules", "fleet_stamp":
			default:
				t.Errorf("store call %q between the report and its arrival; want only the Pump's usual calls", op)
			}
		}
		mu.Unlock()
		if renewals != 1 {
			t.Errorf("%d renewals carried the report, want 1", renewals)
		}
		close(release)
		waitState(t, st, id, job.StateSucceeded)
	})
}
