package sim

import (
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/node"
)

// The trace hash digests, in order, every event the run processed, every
// input fed to a Driver, every command a Driver emitted and every state
// change the store applied. Two runs with the same hash took the same path.
// An operation id is mixed as its machine's (m: 0 for the Driver, k+1 for
// the k-th Observer's Walker) one-word identity (opWord).

func (w *world) mix(v uint64) { w.trace = mix64(w.trace^v) + 0x632be59bd9b4e019 }

var evNames = [...]string{
	evEnqueue: "enqueue", evCancel: "operator-cancel", evQueueAction: "queue-action", evQueueUndo: "queue-undo",
	evDeployStop: "deploy-stop", evDrainTimeout: "drain-timeout", evStart: "start", evPoll: "poll-tick",
	evHeartbeat: "heartbeat-tick", evWake: "wake", evHintArrive: "hint-arrive", evHandlerDone: "handler-done",
	evOpApply: "op-apply", evOpResponse: "op-response", evCrash: "crash", evIsolate: "isolate", evHeal: "heal",
	evSkew: "skew", evChaosEnd: "chaos-end", evDeadline: "deadline", evStoreRestart: "store-restart",
	evStoreUp: "store-up", evRequeue: "operator-requeue", evScheduleRemove: "schedule-remove",
	evRateAction: "rate-action", evRateUndo: "rate-undo", evRepoll: "re-poll", evWorkflowRetry: "workflow-retry",
	evWalkTick: "walk-tick", evWalkDelivered: "walk-delivered", evObserverDeadline: "observer-deadline",
	evMigrate: "migrate", evMigrationCheck: "migration-check", evBatchLinger: "batch-linger", evBatchDone: "batch-done",
}

func (w *world) traceEvent(ev *event) {
	if w.log != nil && ev.kind != evPoll && ev.kind != evHeartbeat && ev.kind != evWalkTick {
		w.logf("event %s node=%d inc=%d idx=%d lease=%s", evNames[ev.kind], ev.node, ev.inc, ev.idx, ev.lease)
	}
	w.mix(uint64(ev.at.Sub(w.start)))
	w.mix(uint64(ev.kind)<<48 | uint64(ev.node&0xffff)<<32 | uint64(ev.inc&0xffff)<<16 | uint64(ev.idx&0xffff))
}

func (w *world) traceEdge(id job.ID, e core.Edge, a job.Attempt) {
	if w.log != nil {
		w.logf("store job %d@%d %s", id, a, e)
	}
	w.mix(uint64(id)<<32 | uint64(a))
	w.mix(uint64(e.From)<<16 | uint64(e.To)<<8 | uint64(e.Via))
}

func (w *world) traceInput(n *simNode, m int, ev node.Event) {
	if w.log != nil {
		w.logf("%s <- %T %+v", n.worker, ev, ev)
	}
	var code, a, b uint64
	switch e := ev.(type) {
	case node.Poll:
		code = 1
	case node.Heartbeat:
		code = 2
	case node.Hint:
		code = 14
	case node.ClaimDone:
		code, a, b = 3, uint64(e.Op), uint64(len(e.Jobs))
		if e.Reopen > 0 {
			w.mix(uint64(e.Reopen))
		}
		for i := range e.Jobs {
			w.mix(uint64(e.Jobs[i].ID)<<32 | uint64(e.Jobs[i].Attempt))
		}
	case node.RenewDone:
		code, a, b = 4, uint64(e.Op), uint64(len(e.Results))
		for _, r := range e.Results {
			w.mix(uint64(r.Lease.ID)<<8 | uint64(r.Status))
		}
	case node.JobDone:
		code, a, b = 5, uint64(e.Lease.ID)<<16|uint64(e.Lease.Attempt), uint64(e.Result)
	case node.ReportDone:
		code, a, b = 6, uint64(e.Op), uint64(len(e.Results))
		for _, r := range e.Results {
			v := uint64(r.Lease.ID) << 1
			if r.Applied {
				v |= 1
			}
			w.mix(v)
		}
	case node.ExpireDone:
		code, a, b = 7, uint64(e.Op), uint64(e.Expired)
	case node.RelinquishDone:
		code, a = 8, uint64(e.Op)
	case node.Stop:
		code = 9
	case node.DrainTimeout:
		code = 10
	case node.SchedulesLoaded:
		code, a, b = 11, uint64(e.Op), uint64(len(e.Schedules))
		for _, s := range e.Schedules {
			w.mix(uint64(s.Schedule.Revision)<<32 | uint64(s.Schedule.Cursor.Sub(w.start)/time.Millisecond))
		}
	case node.MintDone:
		code, a, b = 12, uint64(e.Op), uint64(len(e.Results))
		for _, r := range e.Results {
			for _, j := range r.Jobs {
				w.mix(uint64(j.ID)<<32 | uint64(j.At.Sub(w.start)/time.Millisecond))
			}
		}
	case node.PurgeDone:
		code, a, b = 13, uint64(e.Op), uint64(e.Purged)
	case node.WalkTick:
		code = 15
	case node.WalkClaimDone:
		code, a, b = 16, opWord(m, uint64(e.Op)), uint64(len(e.Result.Transitions))
		w.mix(uint64(e.Result.Through.Seq)<<1 | b2u(e.Result.Held))
	case node.WalkAdvanceDone:
		code, a, b = 17, opWord(m, uint64(e.Op)), b2u(e.Err != nil)
	case node.Delivered:
		code, a, b = 18, uint64(e.Position.Seq), b2u(e.Failed)
	}
	if ev.At().IsZero() {
		code |= 1 << 7
	}
	w.mix(code<<56 | uint64(n.idx)<<40 | uint64(n.inc)<<24)
	w.mix(a)
	w.mix(b)
	w.mix(uint64(ev.At().UnixNano()))
}

func (w *world) traceCommand(n *simNode, m int, c node.Command) {
	if w.log != nil {
		w.logf("%s -> %s", n.worker, c)
	}
	var code, a, b uint64
	switch c := c.(type) {
	case node.Claim:
		code, a, b = 1, uint64(c.Op), uint64(c.Limit)
	case node.Execute:
		code, a = 2, uint64(c.Job.ID)<<16|uint64(c.Job.Attempt)
	case node.Renew:
		code, a, b = 3, uint64(c.Op), uint64(len(c.Leases))
	case node.Abandon:
		code, a, b = 4, uint64(c.Lease.ID)<<16|uint64(c.Lease.Attempt), uint64(c.Reason)
	case node.SignalCancel:
		code, a = 5, uint64(c.Lease.ID)<<16|uint64(c.Lease.Attempt)
	case node.Report:
		code, a, b = 6, uint64(c.Op), uint64(len(c.Outcomes))
		for _, o := range c.Outcomes {
			w.mix(uint64(o.Lease.ID)<<16 | uint64(o.Lease.Attempt)<<8 | uint64(o.State))
		}
	case node.ExpireLeases:
		code, a, b = 7, uint64(c.Op), uint64(c.Limit)
	case node.Relinquish:
		code, a, b = 8, uint64(c.Op), uint64(len(c.Leases))
	case node.LoadSchedules:
		code, a = 9, uint64(c.Op)
	case node.Mint:
		code, a, b = 10, uint64(c.Op), uint64(len(c.Plans))
		for _, p := range c.Plans {
			w.mix(uint64(len(p.Mints))<<16 | uint64(len(p.Skips)))
		}
	case node.Purge:
		code, a, b = 11, uint64(c.Op), uint64(c.Sweep)<<32|uint64(c.Limit)
	case node.Forget:
		code, a, b = 12, uint64(len(c.Leases)), uint64(c.Reason)
	case node.PollAfter:
		code, a = 13, uint64(c.Delay)
	case node.WalkClaim:
		code, a, b = 14, opWord(m, uint64(c.Op)), uint64(c.Limit)
	case node.WalkAdvance:
		code, a, b = 15, opWord(m, uint64(c.Op)), uint64(c.To.Seq)<<1|b2u(c.Release)
	case node.Deliver:
		code, a = 16, uint64(c.Transition.Position.Seq)
	}
	w.mix(code<<56 | uint64(n.idx)<<40 | uint64(n.inc)<<24)
	w.mix(a)
	w.mix(b)
}

// b2u is 1 for true, 0 for false.
func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
