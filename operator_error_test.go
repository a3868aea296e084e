package backwave_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/store"
)

// An Operator Action refused for the job's state says so once, with what
// the action allows, and still matches ErrIllegalTransition: the one
// wording the CLI, the dashboard and the MCP Server show.
func TestOperatorActionRefusalSaysWhatIsAllowed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStore()
	ids, err := st.JobInsertMany(ctx, store.InsertManyParams{Jobs: []store.NewJob{
		{WireName: "w", Queue: "q", MaxAttempts: 3, ScheduledAt: time.Now().Add(time.Hour)}, // stays scheduled
		{WireName: "w", Queue: "q", MaxAttempts: 3},                                         // runs and succeeds
		{WireName: "w", Queue: "r", MaxAttempts: 3},                                         // left running
	}})
	if err != nil {
		t.Fatal(err)
	}
	claimed, err := st.JobClaim(ctx, store.ClaimParams{Worker: "w", Queues: []string{"q", "r"}, Limit: 3, LeaseDuration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range claimed {
		if j.ID == ids[0] {
			t.Fatalf("claimed the job meant to stay scheduled")
		}
	}
	var done []store.Outcome
	for _, j := range claimed {
		if j.ID == ids[1] {
			info := core.AttemptInfo{Lease: j.Lease(), MaxAttempts: j.Ceiling()}
			done = append(done, store.Outcome{Outcome: core.Decide(info, core.ResultSucceeded, core.RetryPolicy{})})
		}
	}
	if _, err := st.OutcomeReport(ctx, store.ReportParams{Worker: "w", Outcomes: done}); err != nil {
		t.Fatal(err)
	}
	admin, err := backwave.NewAdmin(st, "ops:alice")
	if err != nil {
		t.Fatal(err)
	}
	scheduled, succeeded, running := ids[0], ids[1], ids[2]
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"requeue a scheduled job", second(admin.Requeue(ctx, scheduled)),
			"backwave: requeue job 1: it is scheduled; only dead-lettered or quarantined jobs can be requeued"},
		{"cancel a succeeded job", second(admin.Cancel(ctx, succeeded)),
			"backwave: cancel job 2: it is succeeded; only scheduled, awaiting-parent or running jobs can be cancelled"},
		{"reschedule a running job", second(admin.Reschedule(ctx, running, time.Now().Add(time.Hour))),
			"backwave: reschedule job 3: it is running; only scheduled or awaiting-parent jobs can be rescheduled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !errors.Is(tc.err, backwave.ErrIllegalTransition) {
				t.Fatalf("err = %v, want one wrapping ErrIllegalTransition", tc.err)
			}
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("err = %q\n want %q", got, tc.want)
			}
		})
	}
}
