package sim

import (
	"time"

	"github.com/backwave/backwave/job"
)

// Drain-Liveness: under Pristine and Recoverable, once the faults have ceased
// (at the end of the chaos window every isolation heals and releases what it
// withheld, every crashed node restarts, clocks stop jumping, hints and store
// operations stop misbehaving), every job must be terminal within a bound
// derived from the Scenario and the store's state at that instant. The bound
// is deliberately conservative: a passing run stops as soon as every job is
// terminal, so only a failing run ever waits for it.
//
// Write L for the Lease duration, P, H, M and T for the largest poll,
// heartbeat, maintenance interval and drain timeout over the nodes, S for
// the largest clock offset any node ever stood at, X for the longest request
// plus response delay of an operation still in flight, D for the longest
// handler (a long handler outlives up to three Leases) plus its cancel
// reaction, F = max over nodes of min(P, H) for the longest an outcome waits
// in a Driver's buffer (a Poll or a Heartbeat flushes it, as do a full batch
// and going idle), and B = max(Retry.Max × (1 + Jitter), SnoozeMax) for the
// longest backoff or snooze.
//
// Recovery, T1 = X + L + M + P + 2S + T + 500ms. A Lease held by a node that
// crashed, or that an isolated node believed it held, was renewed at the
// latest by an operation in flight at the heal (X), so it lapses within
// X + L. A node runs maintenance on the first Poll at least M after its last
// maintenance by its own clock; a clock that jumped back by up to 2S just
// before the end delays that by 2S, and the Poll comes within P. That sweep
// expires every lapsed Lease (a full sweep re-issues itself at once). A node
// caught in a graceful restart is back within its drain timeout T plus the
// restart pause (at most 500ms).
//
// Work, T2 = Σ_q ⌈W_q / c_q⌉ × (P + D + F) + W × (B + P). Every claim
// charges an Attempt and no job is claimed past its attempt ceiling, so a
// job has at most W_j = MaxAttempts − Attempt claims left (plus the one it
// is Running under), plus its free snoozes left when handlers snooze (each
// is one more claim, and a snooze waits at most SnoozeMax, counted in B);
// W_q sums W_j over the live jobs of Queue q and W over all. One Attempt occupies a Worker for at most P (the claim waits for a
// Poll) + D (the handler) + F (the flush). At most c_q Attempts of q run at
// once: its Concurrency Limit, or the pools of the nodes serving q that are
// not lost.
// Serialising the Queues one after another over their c_q Workers bounds
// the busy time; the remaining time is spent with no job due, which happens
// only while every live job waits out a backoff, at most B + P before the
// next claim, once per Attempt at most.
//
// The bound is measured from the later of the end of the chaos window and
// the latest due time of a live Scheduled or Awaiting-Parent job (a released
// dependent keeps a later due time it was enqueued with).
//
// Rate Limits, T4 = Σ_q (⌈W_q / r_q⌉ + 1) × (R_q + P) over the Queues
// with a Rate of r_q starts per R_q (rateBound): the Queue's claims left
// need that many windows at most, the one in progress included, and each
// window's claims start within P of its opening.
//
// Concurrency Keys, T5 (keyBound): under a Key Limit of K_q a key's
// Attempts run min(c_q, K_q) at once, ⌈W_qk / min(c_q, K_q)⌉ slots; under
// a Key Rate of r_q per R_q its claims need (⌈W_qk / r_q⌉ + 1) × (R_q + P),
// as for a Rate Limit; summed over the keys on top of the Queue's terms.
//
// Dependencies, T3 = W_dep × (P + D + F). The Queue-parallel term above
// assumes c_q Attempts of q can run at once, but a dependent's Attempts wait
// for its parents, so a graph may keep Workers idle while one chain runs.
// Counting every Attempt left to a job with parents (W_dep) once more, run
// alone, covers that: while any dependent waits, some ancestor of it is live
// (no orphan may exist) and is itself Running, due, backing off or waiting
// on a live ancestor; charging each dependent Attempt a full slot of its own
// bounds the time the graph's order adds. A release costs no extra: it
// applies with its parent's outcome, and the outcome's re-poll (or the next
// Poll) claims the released job.
func (w *world) drainBound() (anchor time.Time, bound time.Duration) {
	sc := w.sc
	var poll, flush time.Duration
	for _, ns := range sc.Nodes {
		poll = max(poll, ns.Poll.D())
		flush = max(flush, min(ns.Poll.D(), ns.Heartbeat.D()))
	}
	maint := w.recoveryTerms().maint
	backoff := time.Duration(float64(sc.Retry.Max.D()) * (1 + sc.Retry.Jitter))
	backoff = max(backoff, sc.Handler.SnoozeMax.D()) // a snooze waits like a backoff
	handler := sc.maxHandler() + sc.Handler.CancelReaction.D()

	t1 := w.recoveryTerms().bound()
	if sc.Fleet != nil {
		// A job of a Wire Name whose last live handler is gone waits out
		// the grace, and a maintenance beat, before it is claimed.
		t1 += sc.Fleet.Grace.D() + maint
	}

	pool := make([]int, len(sc.Queues))
	for _, n := range w.nodes {
		if n.lost || n.isoPermanent || (sc.Fleet != nil && n.fl.version == 0) {
			// In a Mixed-Version Fleet only version-1 nodes are counted:
			// a version-0 node leaves the jobs of NewWireName alone, so
			// counting only the others keeps the bound conservative.
			continue
		}
		for _, q := range n.spec.Policy.Queues {
			pool[w.queueIx[q]] += n.spec.PoolSize
		}
	}
	work := make([]int, len(sc.Queues))
	keyWork := map[[2]string]int{}
	total, dependent := 0, 0
	anchor = w.now
	for i := range w.jobs {
		js := &w.jobs[i]
		if !js.inserted || js.state.Terminal() {
			continue
		}
		j, err := w.st.JobGet(w.ctx, js.id)
		if err != nil {
			w.mustStore(err)
			continue
		}
		left := max(j.Ceiling()-int(j.Attempt), 0)
		if sc.Handler.Snooze > 0 {
			// Each free snooze left is one more claim (snooze.go).
			left += max(sc.freeSnoozes()-j.Snoozes, 0)
		}
		if j.State == job.StateRunning {
			left++
		}
		if (j.State == job.StateScheduled || j.State == job.StateAwaitingParent) && j.ScheduledAt.After(anchor) {
			anchor = j.ScheduledAt
		}
		work[w.wl.jobs[i].queue] += left
		keyWork[[2]string{sc.Queues[w.wl.jobs[i].queue].Name, w.wl.jobs[i].key}] += left
		total += left
		if len(w.wl.jobs[i].parents) > 0 {
			dependent += left
		}
	}
	slot := poll + handler + flush
	var t2 time.Duration
	for q, wq := range work {
		if wq == 0 {
			continue
		}
		c := max(pool[q], 1)
		if lim := w.limits[q]; lim > 0 {
			c = min(c, lim)
		}
		t2 += time.Duration((wq+c-1)/c) * slot
	}
	t2 += time.Duration(total) * (backoff + poll)
	t2 += time.Duration(dependent) * slot
	t2 += w.rateBound(work, poll)
	t2 += w.keyBound(keyWork, pool, slot, poll)
	return anchor, t1 + t2
}

// recovery holds the terms of the recovery bound T1 (drainBound), from the
// Scenario and its faults alone.
type recovery struct {
	// inflight is X, the longest request plus response delay; skew S, the
	// largest clock offset.
	inflight, skew time.Duration
	// lease is L; maint, poll and drain are M, P and T, the largest over
	// the nodes.
	lease, maint, poll, drain time.Duration
}

// recoveryTerms reads T1's terms from the Scenario and its faults.
func (w *world) recoveryTerms() recovery {
	r := recovery{lease: w.sc.Lease.D()}
	for _, ns := range w.sc.Nodes {
		r.poll = max(r.poll, ns.Poll.D())
		r.maint = max(r.maint, ns.Maintenance.D())
		r.drain = max(r.drain, ns.DrainTimeout.D())
	}
	var req, resp time.Duration
	for _, f := range w.faults.Skews {
		r.skew = max(r.skew, f.Offset.D(), -f.Offset.D())
	}
	for _, f := range w.faults.Ops {
		req, resp = max(req, f.ReqDelay.D()), max(resp, f.RespDelay.D())
	}
	r.inflight = req + resp
	return r
}

// bound is T1 = X + L + M + P + 2S + T + 500ms.
func (r recovery) bound() time.Duration {
	return r.inflight + r.lease + r.maint + r.poll + 2*r.skew + r.drain + 500*time.Millisecond
}
