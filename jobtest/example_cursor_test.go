package jobtest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/jobtest"
)

// ExportOrders is a long job that resumes from its Cursor.
type ExportOrders struct{}

func (ExportOrders) WireName() string { return "example.export_orders" }

type exportAt struct {
	Page int `json:"page"`
}

// A resumable job on Virtual Time: the first Attempt exports two pages,
// saving a Cursor after each (the first rides a heartbeat's renewal, the
// second the failed outcome), and dies; the second Attempt resumes at page
// 3 instead of starting over. The test sees the stored Cursor without
// waiting for any of the work.
func TestExampleCursorResumes(t *testing.T) {
	t.Parallel()
	var started []int
	handlers := backwave.NewHandlers()
	err := backwave.AddHandlerFunc(handlers, func(ctx context.Context, j *backwave.Job[ExportOrders]) error {
		var at exportAt
		if _, err := j.Cursor(&at); err != nil {
			return err
		}
		started = append(started, at.Page+1)
		for page := at.Page + 1; page <= 4; page++ {
			if err := jobtest.Sleep(ctx, time.Minute); err != nil { // a page's work
				return err
			}
			if err := j.SaveCursor(exportAt{Page: page}); err != nil {
				return err
			}
			if j.Attempt == 1 && page == 2 {
				return errors.New("the export's connection dropped")
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c := jobtest.New(t, backwave.Config{
		Handlers:    handlers,
		RetryPolicy: backwave.RetryPolicy{Initial: time.Minute, Max: time.Minute, Multiplier: 1},
	})
	id, err := c.Enqueue(t.Context(), ExportOrders{})
	if err != nil {
		t.Fatal(err)
	}
	c.RunUntilIdle()
	jobtest.RequireState(t, c, id, backwave.StateSucceeded)
	if len(started) != 2 || started[0] != 1 || started[1] != 3 {
		t.Fatalf("Attempts started at pages %v, want [1 3]: the second resumes after the Cursor", started)
	}
	jobtest.RequireCursor(t, c, id, 2, []byte(`{"page": 4}`))
}
