package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/postgres"
)

// PostgreSQL text holds neither NUL nor invalid UTF-8. Failure Detail a
// worker reports is made storable rather than failing its whole batch; a Tag
// that is not valid UTF-8 is refused as invalid params (job.Tag.Validate).
func TestTextPostgresCannotHold(t *testing.T) {
	t.Parallel()
	s := openStore(t, modePgx, postgres.Options{})
	ctx := t.Context()

	bad := store.NewJob{WireName: "w", Queue: "q", MaxAttempts: 1, Tags: []job.Tag{job.Label("ok\xffno")}}
	if _, err := s.JobInsertMany(ctx, store.InsertManyParams{Jobs: []store.NewJob{bad}}); !errors.Is(err, store.ErrInvalidParams) {
		t.Fatalf("insert with an invalid UTF-8 Tag: %v, want ErrInvalidParams", err)
	}

	insert(t, s, "q", 2)
	jobs, err := s.JobClaim(ctx, store.ClaimParams{Worker: "w", Queues: []string{"q"}, Limit: 2, LeaseDuration: time.Minute})
	if err != nil || len(jobs) != 2 {
		t.Fatalf("claim: %v, %v", jobs, err)
	}
	fail := store.Outcome{
		Outcome:       core.Decide(core.AttemptInfo{Lease: jobs[0].Lease(), MaxAttempts: 1}, core.ResultFailed, core.DefaultRetryPolicy()),
		FailureDetail: "nul \x00 and \xff\xfe bytes",
	}
	ok := store.Outcome{Outcome: core.Decide(core.AttemptInfo{Lease: jobs[1].Lease(), MaxAttempts: 1}, core.ResultSucceeded, core.DefaultRetryPolicy())}
	res, err := s.OutcomeReport(ctx, store.ReportParams{Worker: "w", Outcomes: []store.Outcome{fail, ok}})
	if err != nil || !res[0].Applied || !res[1].Applied {
		t.Fatalf("report with odd bytes: %v, %v; want both applied", res, err)
	}
	log, err := s.JobTransitions(ctx, jobs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := log[len(log)-1].FailureDetail, "nul \uFFFD and \uFFFD bytes"; got != want {
		t.Fatalf("Failure Detail = %q, want %q", got, want)
	}
}
