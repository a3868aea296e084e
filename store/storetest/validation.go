package storetest

import (
	"strings"
	"testing"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// testValidation checks ErrInvalidParams: "the params break a documented
// precondition (empty Wire Name, negative limit, …). Nothing was written."
func testValidation(t *testing.T, s *suite) {
	// JobInsertMany: "Validation failures (ErrInvalidParams) insert
	// nothing" — not even the valid jobs of the batch, nor their Queues.
	s.run(t, "Insert", func(t *testing.T, e *env) {
		bad := map[string]func(*store.NewJob){
			"empty wire name":    func(j *store.NewJob) { j.WireName = "" },
			"empty queue":        func(j *store.NewJob) { j.Queue = "" },
			"padded queue":       func(j *store.NewJob) { j.Queue = " q" },
			"long queue":         func(j *store.NewJob) { j.Queue = strings.Repeat("q", store.MaxNameLen+1) },
			"control char":       func(j *store.NewJob) { j.WireName = "a\nb" },
			"zero max attempts":  func(j *store.NewJob) { j.MaxAttempts = 0 },
			"empty tag":          func(j *store.NewJob) { j.Tags = []job.Tag{job.Label("")} },
			"control in tag key": func(j *store.NewJob) { j.Tags = []job.Tag{job.Keyed("a\tb", "v")} },
		}
		for name, breakIt := range bad {
			j := newJob("bad-batch")
			breakIt(&j)
			_, err := e.s.JobInsertMany(e.ctx, store.InsertManyParams{Jobs: []store.NewJob{newJob("bad-batch"), j}})
			e.wantErr("JobInsertMany("+name+")", err, store.ErrInvalidParams)
		}
		if got, err := e.s.JobList(e.ctx, store.JobListParams{}); err != nil || len(got) != 0 {
			t.Fatalf("JobList after refused inserts = %d jobs, %v; want none", len(got), err)
		}
		if qs, err := e.s.QueueList(e.ctx); err != nil || len(qs) != 0 {
			t.Fatalf("QueueList after refused inserts = %v, %v; want none", qs, err)
		}
	})

	// ClaimParams: a worker id, a Limit of at least 1, a Queue, a positive
	// LeaseDuration.
	s.run(t, "Claim", func(t *testing.T, e *env) {
		id := e.insertN("q", 1)[0]
		before := e.get(id)
		ok := store.ClaimParams{Worker: w1, Queues: []string{"q"}, Limit: 1, LeaseDuration: lease}
		bad := map[string]func(*store.ClaimParams){
			"no worker":      func(p *store.ClaimParams) { p.Worker = "" },
			"zero limit":     func(p *store.ClaimParams) { p.Limit = 0 },
			"negative limit": func(p *store.ClaimParams) { p.Limit = -1 },
			"no queues":      func(p *store.ClaimParams) { p.Queues = nil },
			"zero lease":     func(p *store.ClaimParams) { p.LeaseDuration = 0 },
			"negative lease": func(p *store.ClaimParams) { p.LeaseDuration = -time.Second },
		}
		for name, breakIt := range bad {
			p := ok
			breakIt(&p)
			jobs, err := e.s.JobClaim(e.ctx, p)
			e.wantErr("JobClaim("+name+")", err, store.ErrInvalidParams)
			if len(jobs) != 0 {
				t.Fatalf("JobClaim(%s) returned jobs with its error", name)
			}
		}
		e.unchanged(before)
	})

	// RenewParams: a worker id and a positive LeaseDuration.
	s.run(t, "Renew", func(t *testing.T, e *env) {
		e.insertN("q", 1)
		j := e.claimOne(w1, "q")
		for name, p := range map[string]store.RenewParams{
			"no worker":      {Leases: []job.Lease{j.Lease()}, LeaseDuration: time.Hour},
			"zero lease":     {Worker: w1, Leases: []job.Lease{j.Lease()}},
			"negative lease": {Worker: w1, Leases: []job.Lease{j.Lease()}, LeaseDuration: -time.Hour},
		} {
			_, err := e.s.LeaseRenew(e.ctx, p)
			e.wantErr("LeaseRenew("+name+")", err, store.ErrInvalidParams)
		}
		e.unchanged(j)
	})

	// ReportParams: a worker id; each outcome a terminal state or a retry,
	// a non-negative RetryDelay, valid Tags. A bad row refuses the whole
	// batch: even the valid outcome beside it is not applied.
	s.run(t, "Report", func(t *testing.T, e *env) {
		e.insertN("q", 2)
		jobs := e.claim(w1, 2, "q")
		good := succeeded(jobs[0])
		bad := map[string]store.Outcome{
			"running state":  {Outcome: core.Outcome{Lease: jobs[1].Lease(), State: job.StateRunning, Via: core.ViaClaim}},
			"negative delay": {Outcome: core.Outcome{Lease: jobs[1].Lease(), State: job.StateScheduled, Via: core.ViaRetry, RetryDelay: -time.Second, RetryCause: job.RetryCauseHandlerFailed}},
			"invalid tag":    {Outcome: succeeded(jobs[1]).Outcome, TagDelta: []job.Tag{job.Label("")}},
			// The Terminal Cause must fit the outcome's state.
			"dead letter without cause": {Outcome: core.Outcome{Lease: jobs[1].Lease(), State: job.StateDeadLettered, Via: core.ViaDeadLetter}},
			"dead letter, no handler":   {Outcome: core.Outcome{Lease: jobs[1].Lease(), State: job.StateDeadLettered, Via: core.ViaDeadLetter, TerminalCause: job.TerminalCauseNoHandler}},
			"quarantine, ceiling":       {Outcome: core.Outcome{Lease: jobs[1].Lease(), State: job.StateQuarantined, Via: core.ViaQuarantine, TerminalCause: job.TerminalCauseCeilingReached}},
			"quarantine without cause":  {Outcome: core.Outcome{Lease: jobs[1].Lease(), State: job.StateQuarantined, Via: core.ViaQuarantine}},
			"success with a cause":      {Outcome: core.Outcome{Lease: jobs[1].Lease(), State: job.StateSucceeded, Via: core.ViaSucceed, TerminalCause: job.TerminalCausePermanentFailure}},
			"cancel with a cause":       {Outcome: core.Outcome{Lease: jobs[1].Lease(), State: job.StateCancelled, Via: core.ViaCancel, TerminalCause: job.TerminalCauseUndecodablePayload}},
			"unknown cause":             {Outcome: core.Outcome{Lease: jobs[1].Lease(), State: job.StateDeadLettered, Via: core.ViaDeadLetter, TerminalCause: 99}},
		}
		for name, o := range bad {
			_, err := e.s.OutcomeReport(e.ctx, store.ReportParams{Worker: w1, Outcomes: []store.Outcome{good, o}})
			e.wantErr("OutcomeReport("+name+")", err, store.ErrInvalidParams)
		}
		_, err := e.s.OutcomeReport(e.ctx, store.ReportParams{Outcomes: []store.Outcome{good}})
		e.wantErr("OutcomeReport(no worker)", err, store.ErrInvalidParams)
		e.unchanged(jobs[0])
		e.unchanged(jobs[1])
	})

	// ExpireParams: a non-negative Limit.
	s.run(t, "Expire", func(t *testing.T, e *env) {
		e.insertN("q", 1)
		j := e.claimOne(w1, "q")
		if e.h.Advance != nil {
			e.advance(lease + time.Second)
		}
		_, err := e.s.LeaseExpire(e.ctx, store.ExpireParams{Queues: []string{"q"}, Limit: -1})
		e.wantErr("LeaseExpire(negative limit)", err, store.ErrInvalidParams)
		e.unchanged(j)
	})

	// RelinquishParams: a worker id.
	s.run(t, "Relinquish", func(t *testing.T, e *env) {
		e.insertN("q", 1)
		j := e.claimOne(w1, "q")
		_, err := e.s.LeaseRelinquish(e.ctx, store.RelinquishParams{Leases: []job.Lease{j.Lease()}})
		e.wantErr("LeaseRelinquish(no worker)", err, store.ErrInvalidParams)
		e.unchanged(j)
	})

	// QueueParams and QueueSetLimitParams: a valid Queue name, a
	// non-negative Limit; a refused setting makes no Queue known.
	s.run(t, "Queue", func(t *testing.T, e *env) {
		for _, name := range []string{"", " padded", strings.Repeat("q", store.MaxNameLen+1)} {
			e.wantErr("QueuePause", e.s.QueuePause(e.ctx, store.QueueParams{Queue: name}), store.ErrInvalidParams)
			e.wantErr("QueueResume", e.s.QueueResume(e.ctx, store.QueueParams{Queue: name}), store.ErrInvalidParams)
			e.wantErr("QueueSetLimit", e.s.QueueSetLimit(e.ctx, store.QueueSetLimitParams{Queue: name, Limit: 1}), store.ErrInvalidParams)
		}
		e.wantErr("QueueSetLimit(-1)", e.s.QueueSetLimit(e.ctx, store.QueueSetLimitParams{Queue: "q", Limit: -1}), store.ErrInvalidParams)
		if qs, err := e.s.QueueList(e.ctx); err != nil || len(qs) != 0 {
			t.Fatalf("QueueList after refused settings = %v, %v; want none", qs, err)
		}
	})
}

// testClose checks Store.Close: "Calls after Close fail with ErrClosed."
func testClose(t *testing.T, s *suite) {
	s.run(t, "CallsFailAfterClose", func(t *testing.T, e *env) {
		id := e.insertN("q", 1)[0]
		if err := e.s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		ctx := e.ctx
		l := job.Lease{ID: id, Attempt: 1}
		calls := map[string]func() error{
			"JobInsertMany": func() error {
				_, err := e.s.JobInsertMany(ctx, store.InsertManyParams{Jobs: []store.NewJob{newJob("q")}})
				return err
			},
			"JobClaim": func() error {
				_, err := e.s.JobClaim(ctx, store.ClaimParams{Worker: w1, Queues: []string{"q"}, Limit: 1, LeaseDuration: lease})
				return err
			},
			"LeaseRenew": func() error {
				_, err := e.s.LeaseRenew(ctx, store.RenewParams{Worker: w1, Leases: []job.Lease{l}, LeaseDuration: lease})
				return err
			},
			"OutcomeReport": func() error {
				_, err := e.s.OutcomeReport(ctx, store.ReportParams{Worker: w1, Outcomes: []store.Outcome{succeeded(job.Job{ID: id, Attempt: 1, MaxAttempts: 5})}})
				return err
			},
			"LeaseExpire": func() error {
				_, err := e.s.LeaseExpire(ctx, store.ExpireParams{Queues: []string{"q"}})
				return err
			},
			"LeaseRelinquish": func() error {
				_, err := e.s.LeaseRelinquish(ctx, store.RelinquishParams{Worker: w1, Leases: []job.Lease{l}})
				return err
			},
			"QueuePause":  func() error { return e.s.QueuePause(ctx, store.QueueParams{Queue: "q"}) },
			"QueueResume": func() error { return e.s.QueueResume(ctx, store.QueueParams{Queue: "q"}) },
			"QueueSetLimit": func() error {
				return e.s.QueueSetLimit(ctx, store.QueueSetLimitParams{Queue: "q", Limit: 1})
			},
			"QueueList": func() error { _, err := e.s.QueueList(ctx); return err },
			"JobGet":    func() error { _, err := e.s.JobGet(ctx, id); return err },
			"JobList":   func() error { _, err := e.s.JobList(ctx, store.JobListParams{}); return err },
			"JobCountByState": func() error {
				_, err := e.s.JobCountByState(ctx, store.CountParams{})
				return err
			},
		}
		for name, call := range calls {
			e.wantErr(name+" after Close", call(), store.ErrClosed)
		}
	})
}
