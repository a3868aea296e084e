package sim

import (
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/node"
)

// Snooze in the Simulator (docs/job-shapes.md, Snooze). Handlers draw a
// snooze with weight HandlerProfile.Snooze and a delay in [0, SnoozeMax];
// every node runs with the Scenario's SnoozeCap. The oracles:
//
//   - InvSnoozeUncharged: a snoozed Attempt never counts towards the
//     ceiling. The model's ceiling of each claimed Attempt — the life's
//     base plus MaxAttempts plus the snoozes applied in that life before
//     it (ceilingOf) — must be the ceiling of the row the claim returned,
//     which the Driver decides against.
//   - InvSnoozeCap: the cap holds. No job has more snoozes applied than
//     the cap gives free, and a snooze at the cap (or after a cancel
//     signal) is never decided free.
//   - the decision twin (checkSnoozeDecision, called by checkDecision): a
//     free snooze is Scheduled via snooze after exactly the delay the
//     handler asked for; a charged one is held to the failure twin.

// Invariants of the snooze oracles.
const (
	// InvSnoozeUncharged: a claimed row's ceiling disagrees with the
	// model's, in which snoozed Attempts are not charged.
	InvSnoozeUncharged = "snooze-uncharged"
	// InvSnoozeCap: a job got more free snoozes than its cap, or a snooze
	// the cap (or a cancel) should have charged was decided free.
	InvSnoozeCap = "snooze-cap"
)

// Situations the snooze oracles reach.
var (
	// SitSnoozed: a snooze applied, its Attempt not charged.
	SitSnoozed = newSituation("snoozed")
	// SitSnoozeCharged: a snooze at the cap was charged like a failure.
	SitSnoozeCharged = newSituation("snooze-charged-at-cap")
	// SitSnoozedLastAttempt: a snooze applied on the last Attempt of a
	// life, which a failure would have dead-lettered.
	SitSnoozedLastAttempt = newSituation("snoozed-last-attempt")
)

// drawSnooze draws the snooze shape of a Scenario from a stream of its own,
// so no other draw of NewScenario moves: most Scenarios snooze, a few give
// no free snooze at all.
func drawSnooze(sc *Scenario) {
	d := newDraw(sc.Seed, tagSnooze)
	if !d.chance(0.7) {
		return
	}
	w := float64(d.between(3, 15)) / 100
	sc.Handler.Snooze = w
	sc.Handler.Succeed -= w
	sc.Handler.SnoozeMax = Dur(d.logDur(time.Millisecond, 500*time.Millisecond).Round(time.Millisecond))
	sc.SnoozeCap = d.between(1, 4)
	if d.chance(0.1) {
		sc.SnoozeCap = node.NoFreeSnoozes
	}
}

// planSnooze draws the delay of a snoozing Attempt.
func planSnooze(sc *Scenario, idx int, attempt int32) time.Duration {
	d := newDraw(sc.Seed, tagSnooze, uint64(idx), uint64(attempt))
	return d.dur(0, sc.Handler.SnoozeMax.D()).Round(time.Microsecond)
}

// freeSnoozes is how many snoozes a job of the Scenario gets free.
func (sc *Scenario) freeSnoozes() int {
	switch {
	case sc.SnoozeCap == 0:
		return node.DefaultSnoozeCap
	case sc.SnoozeCap < 0:
		return 0
	}
	return sc.SnoozeCap
}

// ceilingOf is the attempt ceiling of the life Attempt a was charged in:
// the life's base, maxAttempts, and one more for each snooze applied in
// that life before a — a requeue sets the base to the Attempt it found,
// which covers the snoozes of lives before it.
func (js *jobState) ceilingOf(a job.Attempt, maxAttempts int) int {
	base := js.baseOf(a)
	c := int(base) + maxAttempts
	for _, s := range js.snoozed {
		if s > base && s < a {
			c++
		}
	}
	return c
}

// snoozesBefore counts the snoozes applied before Attempt a, over the job's
// whole existence: what the Driver read at a's claim.
func (js *jobState) snoozesBefore(a job.Attempt) int {
	n := 0
	for _, s := range js.snoozed {
		if s < a {
			n++
		}
	}
	return n
}

// checkSnoozeDecision holds the outcome of an Attempt whose handler
// snoozed. It reports whether the snooze should have been free (and is then
// fully checked here); otherwise the caller checks it as a failure.
func (w *world) checkSnoozeDecision(js *jobState, a *attempt, oc core.Outcome) bool {
	free := !a.signalled && js.snoozesBefore(oc.Lease.Attempt) < w.sc.freeSnoozes()
	if !free {
		if oc.Via == core.ViaSnooze {
			w.failf(ClassSafety, InvSnoozeCap, "%s: a snooze after %d snoozes (cap %d, signalled=%v) was decided free",
				oc.Lease, js.snoozesBefore(oc.Lease.Attempt), w.sc.freeSnoozes(), a.signalled)
		}
		if !a.signalled {
			w.cov.hit(SitSnoozeCharged)
		}
		return false
	}
	if oc.State != job.StateScheduled || oc.Via != core.ViaSnooze || oc.RetryDelay != a.plan.snooze || oc.RetryCause != job.RetryCauseNone {
		w.failf(ClassSafety, InvOutcomeDecision, "%s: handler snoozed for %v below the cap and the outcome is %s via %s +%v (%q), want scheduled via snooze +%v",
			oc.Lease, a.plan.snooze, oc.State, oc.Via, oc.RetryDelay, oc.RetryCause, a.plan.snooze)
	}
	return true
}

func init() {
	stateless(InvSnoozeCap, []Situation{SitSnoozed, SitSnoozeCharged, SitSnoozedLastAttempt}, oracleHooks{
		onEdge: func(w *world, id job.ID, e core.Edge, a job.Attempt) {
			if e.Via != core.ViaSnooze {
				return
			}
			js := w.job(id)
			if int(a) >= js.ceilingOf(a, w.wl.jobs[w.byID[id-1]].maxAttempts) {
				w.cov.hit(SitSnoozedLastAttempt)
			}
			js.snoozed = append(js.snoozed, a)
			w.cov.hit(SitSnoozed)
			if n, free := len(js.snoozed), w.sc.freeSnoozes(); n > free {
				w.failf(ClassSafety, InvSnoozeCap, "job %d had snooze %d applied (Attempt %d), its cap gives %d free", id, n, a, free)
			}
		},
	})
	stateless(InvSnoozeUncharged, nil, oracleHooks{
		post: func(w *world, _ *simNode, _ *op, c node.StoreCommand, r *node.Reply) {
			if _, ok := c.(node.Claim); !ok {
				return
			}
			for i := range r.Jobs {
				j := &r.Jobs[i]
				js := w.job(j.ID)
				want := js.ceilingOf(j.Attempt, w.wl.jobs[w.byID[j.ID-1]].maxAttempts)
				if j.Ceiling() != want {
					w.failf(ClassSafety, InvSnoozeUncharged, "job %d claimed at Attempt %d with ceiling %d, want %d (%d snoozes applied, none charged)",
						j.ID, j.Attempt, j.Ceiling(), want, len(js.snoozed))
				}
				if j.Snoozes != len(js.snoozed) {
					w.failf(ClassSafety, InvSnoozeCap, "job %d claimed with %d snoozes counted, %d applied", j.ID, j.Snoozes, len(js.snoozed))
				}
			}
		},
	})
}
