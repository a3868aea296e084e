package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// TestCountFlipUpgrade upgrades a version 4 file with jobs in flight to
// version 5 in place and checks that the Monitor's counts stay exact: for
// what happened before the upgrade, for statements of the previous release
// (which leave count_flip alone, so the triggers count them) run after it,
// and for this release's inserts, claims and outcomes, which count
// themselves — on jobs claimed before the upgrade too.
func TestCountFlipUpgrade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "jobs.db")

	// A version 4 file, written by the previous release's statements.
	old, err := connect(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	exec := func(s *Store, query string, args ...any) {
		t.Helper()
		if _, err := s.w.ExecContext(ctx, query, args...); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
	}
	exec(old, versionsTable)
	for _, m := range migrations {
		if m.version > 4 {
			break
		}
		exec(old, m.sql)
		exec(old, `INSERT INTO backwave_schema_version (version, name, applied_at) VALUES (?, ?, 0)`, m.version, m.name)
	}
	for i := range 10 {
		queue := []string{"a", "b"}[i%2]
		exec(old, `INSERT INTO backwave_job (queue, wire_name, state, max_attempts, scheduled_at, created_at) VALUES (?, 'w', 1, 3, 0, 0)`, queue)
	}
	exec(old, `INSERT INTO backwave_queue (name) VALUES ('a'), ('b')`)
	// The previous release's claim of six jobs, and its outcome for two.
	exec(old, `UPDATE backwave_job SET state = 3, attempt = attempt + 1, worker = 'old', lease_expires_at = 1 WHERE id <= 6`)
	exec(old, `UPDATE backwave_job SET state = 4, finalized_at = 1, worker = NULL, lease_expires_at = NULL WHERE id <= 2`)
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	check := func(when string) {
		t.Helper()
		drift, err := CountsDrift(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if drift != "" {
			t.Fatalf("%s: the Monitor's counts drifted: %s", when, drift)
		}
	}
	check("after the upgrade")

	// A node one release behind ends job 3's Attempt and inserts a job
	// after the upgrade.
	exec(s, `UPDATE backwave_job SET state = 5, finalized_at = 1, worker = NULL, lease_expires_at = NULL WHERE id = 3`)
	exec(s, `INSERT INTO backwave_job (queue, wire_name, state, max_attempts, scheduled_at, created_at) VALUES ('a', 'w', 1, 3, 0, 0)`)
	check("after statements of the previous release")

	// This release inserts a bulk batch and a mixed one.
	for _, queues := range [][]string{{"a", "a", "a"}, {"a", "b", "c"}} {
		var jobs []store.NewJob
		for _, q := range queues {
			jobs = append(jobs, store.NewJob{WireName: "w", Queue: q, MaxAttempts: 3})
		}
		if _, err := s.JobInsertMany(ctx, store.InsertManyParams{Jobs: jobs}); err != nil {
			t.Fatal(err)
		}
	}
	check("after inserts")

	// This release reports jobs 4 and 5, claimed before the upgrade (job 6
	// stays Running), then claims and fails the rest.
	outs := []store.Outcome{
		{Outcome: core.Outcome{Lease: job.Lease{ID: 4, Attempt: 1}, State: job.StateSucceeded, Via: core.ViaSucceed}},
		{Outcome: core.Outcome{Lease: job.Lease{ID: 5, Attempt: 1}, State: job.StateDeadLettered, Via: core.ViaDeadLetter, TerminalCause: job.TerminalCausePermanentFailure}},
	}
	res, err := s.OutcomeReport(ctx, store.ReportParams{Worker: "old", Outcomes: outs})
	if err != nil || !res[0].Applied || !res[1].Applied {
		t.Fatalf("report: %v %v", res, err)
	}
	check("after outcomes for jobs claimed before the upgrade")
	claimed, err := s.JobClaim(ctx, store.ClaimParams{Worker: "new", Queues: []string{"a", "b", "c"}, Limit: 20, LeaseDuration: time.Minute})
	if err != nil || len(claimed) != 11 {
		t.Fatalf("claim: %d jobs, %v", len(claimed), err)
	}
	check("after a claim")
	outs = outs[:0]
	for _, j := range claimed {
		outs = append(outs, store.Outcome{Outcome: core.Decide(core.AttemptInfo{Lease: j.Lease(), MaxAttempts: j.MaxAttempts}, core.ResultFailed, core.DefaultRetryPolicy())})
	}
	if _, err := s.OutcomeReport(ctx, store.ReportParams{Worker: "new", Outcomes: outs}); err != nil {
		t.Fatal(err)
	}
	check("after retries")
}
