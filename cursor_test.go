package backwave_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/job"
)

type resumable struct{}

func (resumable) WireName() string { return "test.resumable" }

// exportCursor is what the resumable handler saves: the last row done.
type exportCursor struct {
	Row int `json:"row"`
}

// TestCursorResumesTheNextAttempt: a Cursor saved just before a failing
// handler returns reaches the store with the outcome; the next Attempt
// reads it, and a Cursor saved while an Attempt runs travels with the next
// renewal, where Admin shows it with the Attempt that saved it. A Cursor
// over the limit is refused and records nothing (glossary-style entry in
// docs/job-shapes.md, Resumable jobs).
func TestCursorResumesTheNextAttempt(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := newStore()
		type seen struct {
			attempt backwave.Attempt
			found   bool
			cursor  exportCursor
			err     error
		}
		seenc := make(chan seen, 4)
		release := make(chan struct{})
		h := backwave.NewHandlers()
		mustAdd(t, backwave.AddHandlerFunc(h, func(ctx context.Context, j *backwave.Job[resumable]) error {
			var c exportCursor
			found, err := j.Cursor(&c)
			seenc <- seen{j.Attempt, found, c, err}
			switch j.Attempt {
			case 1:
				if err := j.SaveCursor(strings.Repeat("x", backwave.MaxCursorBytes)); !errors.Is(err, backwave.ErrInvalidParams) {
					return backwave.FailPermanently(errors.New("an oversized cursor was not refused"))
				}
				if err := j.SaveCursor(func() {}); !errors.Is(err, backwave.ErrInvalidParams) {
					return backwave.FailPermanently(errors.New("a cursor that does not encode was not refused"))
				}
				if err := j.SaveCursor(exportCursor{Row: 10}); err != nil {
					return backwave.FailPermanently(err)
				}
				return errors.New("the export died at row 10")
			default:
				if err := j.SaveCursor(exportCursor{Row: c.Row + 10}); err != nil {
					return backwave.FailPermanently(err)
				}
				if _, err := j.Cursor(&c); err != nil || c.Row != 20 {
					return backwave.FailPermanently(errors.New("Cursor does not read back this Attempt's save"))
				}
				<-release
				return nil
			}
		}))
		c := startClient(t, st, backwave.Config{
			Handlers:    h,
			Groups:      []backwave.WorkerGroupOptions{group("g", backwave.DefaultQueue)},
			RetryPolicy: backwave.RetryPolicy{Initial: time.Second, Max: time.Second, Multiplier: 1},
		})
		admin, err := c.Admin("test")
		if err != nil {
			t.Fatal(err)
		}
		id, err := c.Enqueue(ctx, resumable{})
		if err != nil {
			t.Fatal(err)
		}
		if s := <-seenc; s.found || s.err != nil {
			t.Fatalf("first Attempt: Cursor found %v (%v), want none", s.found, s.err)
		}
		s := <-seenc
		if s.attempt != 2 || !s.found || s.err != nil || s.cursor.Row != 10 {
			t.Fatalf("second Attempt read %+v, want Attempt 2 resuming from row 10", s)
		}
		synctest.Wait()
		d, err := admin.Job(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if cur := d.Job.Cursor; cur == nil || cur.Attempt != 1 || string(cur.Value) != `{"row":10}` {
			t.Fatalf("before the second Attempt's renewal: cursor %+v, want Attempt 1's", cur)
		}
		time.Sleep(10*time.Second + time.Millisecond) // the group's HeartbeatInterval
		synctest.Wait()
		if d, err = admin.Job(ctx, id); err != nil {
			t.Fatal(err)
		}
		if cur := d.Job.Cursor; cur == nil || cur.Attempt != 2 || string(cur.Value) != `{"row":20}` {
			t.Fatalf("after a renewal: cursor %+v, want Attempt 2's row 20", cur)
		}
		close(release)
		waitState(t, st, id, job.StateSucceeded)
	})
}

// TestSaveCursorOutsideAPump: a Job no Pump runs has nowhere to save.
func TestSaveCursorOutsideAPump(t *testing.T) {
	t.Parallel()
	var j backwave.Job[resumable]
	if err := j.SaveCursor(1); !errors.Is(err, backwave.ErrInvalidParams) {
		t.Fatalf("SaveCursor outside a Pump: %v, want ErrInvalidParams", err)
	}
	var v int
	if found, err := j.Cursor(&v); found || err != nil {
		t.Fatalf("Cursor outside a Pump: %v, %v; want none", found, err)
	}
}
