package sim

import (
	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/node"
)

// Terminal Causes in the Simulator (docs/retries.md, Why a job ended). The
// oracle InvTerminalCause holds:
//
//   - the decision: each reported outcome carries the cause the handler's
//     result gives (the twin in checkDecision): ceiling reached or
//     permanent failure into Dead-Lettered, no handler or undecodable
//     payload into Quarantined, none anywhere else;
//   - the store: at the end of the run every job's stored cause fits its
//     state, and is the one its last edge gave it — the reported outcome's
//     for an outcome edge, ceiling reached for a Lease lost at the ceiling,
//     none after any other edge (a requeue or a Workflow Retry clears it).

// InvTerminalCause: a reported outcome's Terminal Cause is not the one its
// result gives, or a stored one does not fit the job's state or is not the
// one the job's last edge gave it.
const InvTerminalCause = "terminal-cause"

// causeOracle remembers the cause each reported outcome carried and the
// cause each job's last edge gave it.
type causeOracle struct {
	reported map[job.Lease]job.TerminalCause
	want     map[job.ID]job.TerminalCause
}

func (c *causeOracle) before(_ *world, _ *simNode, cmd node.StoreCommand) {
	if r, ok := cmd.(node.Report); ok {
		for _, oc := range r.Outcomes {
			c.reported[oc.Lease] = oc.TerminalCause
		}
	}
}

func (c *causeOracle) after(*world, *simNode, *op, node.StoreCommand, *node.Reply) {}

func (c *causeOracle) edge(w *world, id job.ID, e core.Edge, a job.Attempt) {
	switch {
	case e.From == job.StateRunning && (e.Via == core.ViaDeadLetter || e.Via == core.ViaQuarantine):
		got, ok := c.reported[job.Lease{ID: id, Attempt: a}]
		if !ok {
			delete(c.want, id) // an outcome the Simulator did not see reported: nothing to hold it to
			return
		}
		if !got.Fits(e.To) {
			w.failf(ClassSafety, InvTerminalCause, "job %d moved along %s with the reported Terminal Cause %q", id, e, got)
		}
		c.want[id] = got
	case e.To == job.StateDeadLettered:
		c.want[id] = job.TerminalCauseCeilingReached // a Lease lost at the ceiling
	default:
		c.want[id] = job.TerminalCauseNone
	}
}

func (c *causeOracle) end(w *world, _ bool) {
	w.eachStoredJob(func(js *jobState, j job.Job) {
		if !j.TerminalCause.Fits(j.State) {
			w.failf(ClassSafety, InvTerminalCause, "job %d ended %s with Terminal Cause %q", js.id, j.State, j.TerminalCause)
		}
		if want, ok := c.want[js.id]; ok && j.TerminalCause != want {
			w.failf(ClassSafety, InvTerminalCause, "job %d ended %s with Terminal Cause %q, its last edge gave %q", js.id, j.State, j.TerminalCause, want)
		}
	})
}

func init() {
	registerOracle(oracleDef{name: InvTerminalCause, new: func() oracle {
		return &causeOracle{reported: map[job.Lease]job.TerminalCause{}, want: map[job.ID]job.TerminalCause{}}
	}})
}
