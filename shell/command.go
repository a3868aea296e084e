package shell

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/node"
	"github.com/backwave/backwave/store"
)

// do carries out one command and returns the event that reports its result,
// or nil for commands that have none.
func (p *Pump) do(c node.Command) node.Event {
	switch c := c.(type) {
	case node.Claim:
		return p.claim(c)
	case node.Execute:
		p.execute(c.Job)
		return nil
	case node.Renew:
		return p.renew(c)
	case node.Abandon:
		p.abandon(c)
		return nil
	case node.SignalCancel:
		if a := p.attempts[c.Lease]; a != nil {
			p.log.Info("cancel requested: signalling handler", p.attrs(c.Lease, a)...)
			a.cancel(ErrCancelRequested)
		}
		return nil
	case node.Report:
		return p.report(c)
	case node.ExpireLeases:
		return p.expire(c)
	case node.Relinquish:
		return p.relinquish(c)
	case node.LoadSchedules:
		return p.loadSchedules(c)
	case node.Mint:
		return p.mint(c)
	case node.Purge:
		return p.purge(c)
	default:
		// A Command the Shell does not know is a broken internal invariant
		// between two packages of this module.
		panic(fmt.Sprintf("shell: unknown command %T", c))
	}
}

func (p *Pump) claim(c node.Claim) node.Event {
	jobs, err := p.cfg.Store.JobClaim(p.ioCtx, store.ClaimParams{
		Worker:        p.cfg.Driver.Worker,
		Queues:        c.Queues,
		Limit:         c.Limit,
		LeaseDuration: c.LeaseDuration,
	})
	if err != nil {
		p.log.Error("claim failed", "queues", c.Queues, "limit", c.Limit, "error", err)
		jobs = nil
	}
	return node.ClaimDone{Now: p.now(), Op: c.Op, Jobs: jobs, Err: err}
}

// execute starts the handler of one claimed Attempt on a handler goroutine:
// an idle one if there is one, else a new one. Handler goroutines outlive
// their Attempt and wait for the next until the loop exits, so a busy Pump
// does not pay for a new goroutine, and for growing its stack, per job.
func (p *Pump) execute(j job.Job) {
	l := j.Lease()
	ctx, cancel := context.WithCancelCause(p.handlerCtx)
	a := &attempt{cancel: cancel, queue: j.Queue, wireName: j.WireName}
	p.attempts[l] = a
	if p.log.Enabled(ctx, slog.LevelDebug) {
		p.log.Debug("attempt started", p.attrs(l, a)...)
	}
	p.peak = max(p.peak, len(p.attempts))
	t := task{ctx: ctx, job: j}
	select {
	case p.tasks <- t:
	default:
		go p.handle(t)
	}
}

// handle runs t and then every task handed to it while idle, until the loop
// retires it (see retireIdle) or exits. An abandoned handler that is still
// running keeps its goroutine busy; the next Attempt gets another.
func (p *Pump) handle(t task) {
	for {
		p.queueResult(finished{lease: t.job.Lease(), result: p.run(t.ctx, t.job)})
		t = task{} // drop the finished Attempt's job and context while idle
		p.idle.Add(1)
		select {
		case t = <-p.tasks:
			p.idle.Add(-1)
		case <-p.retire:
			p.idle.Add(-1)
			return
		case <-p.exited:
			return
		}
	}
}

// retireIdle runs on each heartbeat tick: it ends the idle handler
// goroutines that the busiest moment since the previous tick did not need,
// so the goroutines a burst started do not outlive it by more than two
// heartbeats, while a steady load keeps its own.
func (p *Pump) retireIdle() {
	spare := int(p.idle.Load()) - (p.peak - len(p.attempts))
	p.peak = len(p.attempts)
	for ; spare > 0; spare-- {
		select {
		case p.retire <- struct{}{}:
		default:
			return
		}
	}
}

// run calls the Executor, turning a panic into a failed Attempt whose
// Failure Detail is the panic value and stack.
func (p *Pump) run(ctx context.Context, j job.Job) (r Result) {
	defer func() {
		if v := recover(); v != nil {
			r = Result{Result: core.ResultFailed, FailureDetail: PanicDetail(v)}
		}
	}()
	return p.cfg.Executor.Execute(ctx, j)
}

func (p *Pump) renew(c node.Renew) node.Event {
	res, err := p.cfg.Store.LeaseRenew(p.ioCtx, store.RenewParams{
		Worker:        p.cfg.Driver.Worker,
		Leases:        c.Leases,
		LeaseDuration: c.LeaseDuration,
	})
	if err != nil {
		p.log.Error("lease renewal failed", "leases", len(c.Leases), "error", err)
		res = nil
	}
	return node.RenewDone{Now: p.now(), Op: c.Op, Results: res, Err: err}
}

func (p *Pump) abandon(c node.Abandon) {
	a := p.attempts[c.Lease]
	delete(p.attempts, c.Lease)
	cause := ErrShutdown
	if c.Reason == node.AbandonLeaseLost {
		cause = ErrLeaseLost
		p.log.Warn("lease lost: abandoning attempt", p.attrs(c.Lease, a)...)
	} else {
		p.log.Info("drain period over: abandoning attempt", p.attrs(c.Lease, a)...)
	}
	if a != nil {
		a.cancel(cause)
	}
}

// report joins the Failure Detail, Job Output and Tag delta kept for each
// Lease onto its outcome and reports the batch.
func (p *Pump) report(c node.Report) node.Event {
	outs := make([]store.Outcome, len(c.Outcomes))
	for i, o := range c.Outcomes {
		outs[i] = store.Outcome{Outcome: o}
		if a := p.attempts[o.Lease]; a != nil {
			outs[i].FailureDetail, outs[i].Output, outs[i].TagDelta = a.detail, a.output, a.tags
		}
	}
	res, err := p.cfg.Store.OutcomeReport(p.ioCtx, store.ReportParams{Worker: p.cfg.Driver.Worker, Outcomes: outs})
	if err != nil {
		// The Driver reports these outcomes again; keep their data.
		p.log.Error("outcome report failed", "outcomes", len(outs), "error", err)
		return node.ReportDone{Now: p.now(), Op: c.Op, Err: err}
	}
	applied := make(map[job.Lease]bool, len(res))
	for _, r := range res {
		applied[r.Lease] = r.Applied
	}
	for _, o := range c.Outcomes {
		a := p.attempts[o.Lease]
		delete(p.attempts, o.Lease)
		switch {
		case !applied[o.Lease]:
			p.log.Warn("outcome rejected by the fence: the lease was no longer held", p.attrs(o.Lease, a, "state", o.State.String())...)
		case o.State == job.StateQuarantined:
			p.log.Error("job quarantined", p.attrs(o.Lease, a, "failure_detail", detailOf(a))...)
		case o.State == job.StateDeadLettered:
			p.log.Warn("job dead-lettered", p.attrs(o.Lease, a, "failure_detail", detailOf(a))...)
		case o.State == job.StateScheduled:
			p.log.Info("attempt failed: retry scheduled", p.attrs(o.Lease, a, "retry_delay", o.RetryDelay, "failure_detail", detailOf(a))...)
		case p.log.Enabled(p.ioCtx, slog.LevelDebug):
			p.log.Debug("outcome applied", p.attrs(o.Lease, a, "state", o.State.String())...)
		}
	}
	return node.ReportDone{Now: p.now(), Op: c.Op, Results: res}
}

func detailOf(a *attempt) string {
	if a == nil {
		return ""
	}
	return a.detail
}

func (p *Pump) expire(c node.ExpireLeases) node.Event {
	res, err := p.cfg.Store.LeaseExpire(p.ioCtx, store.ExpireParams{Queues: c.Queues, Limit: c.Limit})
	if err != nil {
		p.log.Error("lease expiry sweep failed", "queues", c.Queues, "error", err)
		return node.ExpireDone{Now: p.now(), Op: c.Op, Err: err}
	}
	if len(res.Expired) > 0 {
		p.log.Info("expired lapsed leases", "queues", c.Queues, "expired", len(res.Expired))
	}
	return node.ExpireDone{Now: p.now(), Op: c.Op, Expired: len(res.Expired)}
}

// relinquish hands Leases back, best effort, under its own short timeout.
func (p *Pump) relinquish(c node.Relinquish) node.Event {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(p.ioCtx), p.cfg.RelinquishTimeout)
	defer cancel()
	res, err := p.cfg.Store.LeaseRelinquish(ctx, store.RelinquishParams{Worker: p.cfg.Driver.Worker, Leases: c.Leases})
	if err != nil {
		p.log.Warn("relinquish failed: the leases will lapse instead", "leases", len(c.Leases), "error", err)
	} else {
		p.log.Info("relinquished leases", "leases", len(c.Leases), "relinquished", len(res.Relinquished))
	}
	return node.RelinquishDone{Now: p.now(), Op: c.Op, Err: err}
}
