package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/node"
	"github.com/backwave/backwave/store"
)

// A Mixed-Version Fleet in the Simulator. A Scenario with a FleetSpec runs
// nodes of two versions: version 0 handles the Wire Names "sim" and
// "sim.scheduled", version 1 also handles NewWireName, which a share of the
// workload's jobs carry. Every node takes part in the fleet registry
// (node.Config.WireNames). With a MigrationSpec the store's schema steps one
// n-1 migration ahead mid-run, under the Coordinated Migration lock (every
// store operation a node sends while the lock is held waits for it); then
// the nodes in Upgrade restart onto version 1, one by one, and the others
// stay one behind — and one of those restarts anyway, onto the schema one
// step newer than it knows, as a node of a rolling deploy may.
//
// # The fleet oracle (safety, every level)
//
// No node claims a job whose Wire Name it has no handler for — a job it is
// about to Quarantine for want of a handler — while a live node of the fleet
// handles that Wire Name. "Live" is measured on the store's clock, the only
// clock every node shares: a handler of W is live at store instant r if the
// store applied a stamp of W by it (FleetStamp) at some instant s before r,
// in the store's order, with core.HandlerLive(s, r, grace). A node learns of
// stamps only by reading the registry, on its maintenance beat, so the
// oracle judges each claim against the node's last read whose answer reached
// its Driver before the claim was issued, at that read's store instant r: a
// claim of such a job is a violation if any stamp of W applied before that
// read was live at r, or if the node had not read the registry at all. A
// stamp applied whose answer was lost (an unknown outcome) still counts: the
// store holds it. A crashed, isolated or stopped handler simply stops
// stamping, so within grace of its last stamp it stops counting, and the
// jobs of a Wire Name no live node handles are claimed and Quarantined
// (quarantine-no-live-handler) — Drain-Liveness demands that they are.
//
// # Migration-Liveness (Pristine and Recoverable)
//
// Every node of the fleet resumes claiming after the migration: at
// checkAt — the later of the chaos window's end and the last migration
// restart, plus a bound — every node not lost is up and has had a claim
// answered by the store since the later of the migration lock's release
// and its latest start, or holds no free Worker (a node whose pool is full
// claimed what fills it after it started). The check moves on once by the
// longest request plus response delay the run's faults drew
// (migrationCheckDue): an operation sent in the window may be answered
// that much after it ends. A node that refuses the schema
// and stays down, or that is up and never claims, fails it.

// NewWireName is the Wire Name only version-1 nodes handle.
const NewWireName = "sim.new"

// FleetSpec makes a run a Mixed-Version Fleet.
type FleetSpec struct {
	// NewShare is the share of the workload's jobs enqueued under
	// NewWireName.
	NewShare float64 `json:"new_share"`
	// Grace is every node's node.Config.HandlerGrace.
	Grace Dur `json:"grace"`
	// Versions are the nodes' versions at their first start (0 or 1), by
	// node index.
	Versions []int `json:"versions"`
	// Migration, if set, steps the schema one migration ahead mid-run.
	Migration *MigrationSpec `json:"migration,omitempty"`
}

// MigrationSpec is one In-Place Upgrade of a run.
type MigrationSpec struct {
	// At is when the migration takes the lock; Hold how long it holds it.
	At   Dur `json:"at"`
	Hold Dur `json:"hold"`
	// Upgrade are the nodes that restart onto version 1 after the lock is
	// released, each Stagger[k] after it.
	Upgrade []int `json:"upgrade"`
	Stagger []Dur `json:"stagger"`
	// Behind, if not negative, is a node that stays at version 0 and
	// restarts BehindAfter after the lock is released.
	Behind      int `json:"behind"`
	BehindAfter Dur `json:"behind_after"`
	// Bound is the Migration-Liveness bound.
	Bound Dur `json:"bound"`
}

// fleetWireNames are the Wire Names a node of version v handles.
func fleetWireNames(v int) []string {
	if v >= 1 {
		return []string{"sim", NewWireName, "sim.scheduled"}
	}
	return []string{"sim", "sim.scheduled"}
}

// drawFleet makes some Scenarios a Mixed-Version Fleet, most of them with a
// migration. Its draws are its own (tagFleet), so every other draw of a
// Scenario stays as it was.
func drawFleet(sc *Scenario) {
	d := newDraw(sc.Seed, tagFleet)
	if !d.chance(0.35) {
		return
	}
	var maint, poll, drain time.Duration
	for _, ns := range sc.Nodes {
		maint, poll, drain = max(maint, ns.Maintenance.D()), max(poll, ns.Poll.D()), max(drain, ns.DrainTimeout.D())
	}
	f := &FleetSpec{
		NewShare: float64(d.between(1, 5)) / 10,
		Grace:    Dur((maint + time.Duration(d.between(1, 3))*maint).Round(time.Millisecond) + time.Millisecond),
		Versions: make([]int, len(sc.Nodes)),
	}
	migrate := d.chance(0.8)
	for i := range f.Versions {
		// Node 0 serves every Queue: it is the version-1 node that every
		// NewWireName job can wait for, from the start or once upgraded.
		if i == 0 {
			f.Versions[i] = 1
			if migrate {
				f.Versions[i] = 0
			}
			continue
		}
		if d.chance(0.4) {
			f.Versions[i] = 1
		}
	}
	if migrate {
		chaos := sc.Chaos.D()
		m := &MigrationSpec{
			At:     Dur(d.dur(chaos/5, chaos/2).Round(time.Millisecond)),
			Hold:   Dur(d.dur(0, 300*time.Millisecond).Round(time.Millisecond)),
			Behind: -1,
			Bound:  Dur(2*(poll+maint) + 3*sc.Lease.D() + sc.maxHandler() + drain + 2*time.Second),
		}
		for i, v := range f.Versions {
			if v == 1 {
				continue
			}
			if i == 0 || d.chance(0.6) {
				m.Upgrade = append(m.Upgrade, i)
				m.Stagger = append(m.Stagger, Dur(d.dur(0, chaos*3/10).Round(time.Millisecond)))
			} else if m.Behind < 0 {
				m.Behind, m.BehindAfter = i, Dur(d.dur(0, chaos*3/10).Round(time.Millisecond))
			}
		}
		f.Migration = m
	}
	sc.Fleet = f
}

// validateFleet reports the first reason the FleetSpec cannot run.
func (sc *Scenario) validateFleet() error {
	f := sc.Fleet
	if f == nil {
		return nil
	}
	switch {
	case len(f.Versions) != len(sc.Nodes):
		return fmt.Errorf("%w: fleet: %d versions for %d nodes", ErrInvalidPlan, len(f.Versions), len(sc.Nodes))
	case f.NewShare < 0 || f.NewShare > 1:
		return fmt.Errorf("%w: fleet: new share %v", ErrInvalidPlan, f.NewShare)
	}
	for i, v := range f.Versions {
		if v != 0 && v != 1 {
			return fmt.Errorf("%w: fleet: node %d at version %d (want 0 or 1)", ErrInvalidPlan, i, v)
		}
	}
	m := f.Migration
	if m == nil {
		return nil
	}
	switch {
	case m.At < 0 || m.Hold < 0 || m.Bound <= 0 || m.BehindAfter < 0:
		return fmt.Errorf("%w: migration %+v", ErrInvalidPlan, *m)
	case len(m.Upgrade) != len(m.Stagger):
		return fmt.Errorf("%w: migration: %d upgrades, %d staggers", ErrInvalidPlan, len(m.Upgrade), len(m.Stagger))
	case m.Behind >= len(sc.Nodes):
		return fmt.Errorf("%w: migration: node %d stays behind, of %d", ErrInvalidPlan, m.Behind, len(sc.Nodes))
	}
	for _, i := range m.Upgrade {
		if i < 0 || i >= len(sc.Nodes) {
			return fmt.Errorf("%w: migration: upgrade of node %d, of %d", ErrInvalidPlan, i, len(sc.Nodes))
		}
	}
	return nil
}

// fleetConfig sets node i's fleet registry knobs, at its first version.
func (sc *Scenario) fleetConfig(i int, cfg *node.Config) {
	if sc.Fleet == nil {
		return
	}
	cfg.WireNames = fleetWireNames(sc.Fleet.Versions[i])
	cfg.HandlerGrace = sc.Fleet.Grace.D()
}

// expandFleet adds the migration's restarts to the workload's deploys.
func expandFleet(sc *Scenario, wl *workload) {
	if sc.Fleet == nil || sc.Fleet.Migration == nil {
		return
	}
	m := sc.Fleet.Migration
	released := m.At.D() + m.Hold.D()
	for k, i := range m.Upgrade {
		stop := released + m.Stagger[k].D()
		wl.deploys = append(wl.deploys, deploy{node: i, stopAt: stop, restart: stop + sc.Nodes[i].DrainTimeout.D() + time.Millisecond, upgrade: true})
	}
	if m.Behind >= 0 {
		stop := released + m.BehindAfter.D()
		wl.deploys = append(wl.deploys, deploy{node: m.Behind, stopAt: stop, restart: stop + sc.Nodes[m.Behind].DrainTimeout.D() + time.Millisecond})
	}
}

// readMark is one registry read as the oracle sees it: the store's order
// (seq) and instant (at) it was applied at.
type readMark struct {
	ok  bool
	seq uint64
	at  time.Time
}

// stampMark is one stamp of a Wire Name the store applied.
type stampMark struct {
	seq uint64
	at  time.Time
}

// fleetWorld is the world's side of the fleet: the stamps the store
// applied, per Wire Name, and the migration's state.
type fleetWorld struct {
	seq    uint64
	stamps map[string][]stampMark
	// migrated is set once the schema stepped; holdEnd is when its lock
	// is released.
	migrated bool
	holdEnd  time.Time
	// checkPending keeps the run going until the Migration-Liveness
	// check; checkExtended is set once the check has been moved past the
	// in-flight delay of the faults drawn (migrationCheckDue).
	checkPending  bool
	checkExtended bool
}

// fleetNode is one node's side: its version, the reads its Driver was
// told of, the read each claim was issued under, when its incarnation
// started and last had a claim answered, and why a start was refused.
type fleetNode struct {
	version, toVersion int
	read               readMark
	pending            map[node.OpID]readMark
	claims             map[node.OpID]readMark
	startedAt          time.Time
	claimedAt          time.Time
	refused            error
}

// handles reports whether the node's current version handles wire.
func (n *simNode) handles(wire string) bool {
	return n.w.sc.Fleet == nil || slices.Contains(fleetWireNames(n.fl.version), wire)
}

// wireOf is the Wire Name of workload job i.
func (w *world) wireOf(i int) string {
	if f := w.sc.Fleet; f != nil && newDraw(w.sc.Seed, tagFleet, uint64(i)).chance(f.NewShare) {
		return NewWireName
	}
	return "sim"
}

// setupFleet queues the migration and, under Pristine and Recoverable, the
// Migration-Liveness check.
func (w *world) setupFleet() {
	w.fl.stamps = make(map[string][]stampMark)
	for i, n := range w.nodes {
		n.fl.toVersion = -1
		if w.sc.Fleet != nil {
			n.fl.version = w.sc.Fleet.Versions[i]
		}
	}
	if w.sc.Fleet == nil || w.sc.Fleet.Migration == nil {
		return
	}
	m := w.sc.Fleet.Migration
	w.schedule(event{at: w.at(m.At.D()), kind: evMigrate})
	if w.sc.Level == Adversarial {
		return // Migration-Liveness is a liveness oracle: off under Adversarial
	}
	last := m.At.D() + m.Hold.D() + m.BehindAfter.D()
	for k, i := range m.Upgrade {
		last = max(last, m.At.D()+m.Hold.D()+m.Stagger[k].D()+w.sc.Nodes[i].DrainTimeout.D())
	}
	w.fl.checkPending = true
	w.schedule(event{at: w.at(max(last, w.sc.Chaos.D()) + m.Bound.D()), kind: evMigrationCheck})
}

// migrate is the In-Place Upgrade: the store's schema steps one n-1
// migration ahead, under the Coordinated Migration lock for Hold. A store
// that carries no schema version of its own (a SQL adapter replaying a
// Plan: its schema is its build's) keeps it, and its nodes' starts are
// not checked against it; the lock and the restarts play out the same.
func (w *world) migrate() {
	if s, ok := w.st.(schemaStore); ok {
		if _, err := s.SchemaMigrate(w.ctx, "sim_step", store.CompatN1); err != nil {
			w.mustStore(err)
			return
		}
	}
	w.fl.migrated = true
	w.fl.holdEnd = w.now.Add(w.sc.Fleet.Migration.Hold.D())
	w.cov.hit(SitMigrationFired)
}

// migrationHold is when an operation sent to apply at applyAt applies: at
// the lock's release, if the Coordinated Migration lock holds then.
func (w *world) migrationHold(applyAt time.Time) time.Time {
	if w.fl.migrated && applyAt.Before(w.fl.holdEnd) {
		w.cov.hit(SitMigrationHeld)
		return w.fl.holdEnd
	}
	return applyAt
}

// schemaStore is a store that carries a schema version (the In-Memory
// Store).
type schemaStore interface {
	SchemaMigrate(ctx context.Context, name, compat string) (int, error)
	SchemaCheck(ctx context.Context, known int) error
}

// openCheck is the check a node's store makes at Open, by the node's
// version: version 0 knows the schema as it was, version 1 the step the
// migration adds. A refused start is retried, as a crash-looping process
// would be.
func (n *simNode) openCheck() bool {
	w := n.w
	if n.fl.toVersion >= 0 {
		n.fl.version, n.fl.toVersion = n.fl.toVersion, -1
	}
	if w.sc.Fleet == nil || w.sc.Fleet.Migration == nil {
		return true
	}
	s, ok := w.st.(schemaStore)
	if !ok {
		return true
	}
	err := s.SchemaCheck(w.ctx, n.fl.version)
	switch {
	case errors.Is(err, store.ErrSchemaTooNew):
		n.fl.refused = err
		w.cov.hit(SitMigrationRefused)
		w.schedule(event{at: w.now.Add(500 * time.Millisecond), kind: evStart, node: n.idx, inc: n.inc})
		return false
	case err != nil:
		w.mustStore(err)
		return false
	}
	n.fl.refused = nil
	if w.fl.migrated && n.fl.version == 0 {
		w.cov.hit(SitOpenedNewerSchema)
	}
	return true
}

// started notes a new incarnation's start.
func (n *simNode) started() {
	n.fl.startedAt = n.w.now
	n.fl.claimedAt = time.Time{}
	n.fl.read = readMark{}
	n.fl.pending = make(map[node.OpID]readMark)
	n.fl.claims = make(map[node.OpID]readMark)
}

// afterStamp notes a fleet registry stamp the store applied: each of its
// Wire Names' stamps, and the read it answered, for the Driver to be told.
func (w *world) afterStamp(n *simNode, o *op, p store.FleetStampParams, v store.FleetView) {
	w.fl.seq++
	for _, wire := range p.WireNames {
		w.fl.stamps[wire] = append(w.fl.stamps[wire], stampMark{seq: w.fl.seq, at: v.Now})
	}
	w.fl.seq++
	if c, ok := o.cmd.(node.StampFleet); ok && n.fl.pending != nil {
		n.fl.pending[c.Op] = readMark{ok: true, seq: w.fl.seq, at: v.Now}
	}
}

// noteFleetEvent notes a registry read reaching the Driver.
func (n *simNode) noteFleetEvent(ev node.Event) {
	e, ok := ev.(node.FleetStamped)
	if !ok || n.fl.pending == nil {
		return
	}
	if r, ok := n.fl.pending[e.Op]; ok {
		delete(n.fl.pending, e.Op)
		if e.Err == nil {
			n.fl.read = r
		}
	}
}

// noteIssued notes the read each claim the Driver just issued was decided
// under: the last one its Driver had been told of when it emitted the
// command, which may be carried out after a later read reached it.
func (n *simNode) noteIssued(cmds []node.Command) {
	if n.fl.claims == nil {
		return
	}
	for _, c := range cmds {
		if cl, ok := c.(node.Claim); ok {
			n.fl.claims[cl.Op] = n.fl.read
			if len(cl.Skip) > 0 {
				n.w.cov.hit(SitFleetSkipped)
			}
		}
	}
}

// checkFleetClaim is the fleet oracle on one answered claim.
func (w *world) checkFleetClaim(n *simNode, op node.OpID, jobs []job.Job) {
	if w.sc.Fleet == nil {
		return
	}
	n.fl.claimedAt = w.now
	read, known := n.fl.claims[op]
	delete(n.fl.claims, op)
	grace := w.sc.Fleet.Grace.D()
	for i := range jobs {
		j := &jobs[i]
		if n.handles(j.WireName) {
			continue
		}
		if !known || !read.ok {
			w.failf(ClassSafety, InvFleetQuarantine, "node %s claimed %s of Wire Name %s, which it has no handler for, before reading the fleet registry", n.worker, j.Lease(), j.WireName)
			return
		}
		for _, s := range w.fl.stamps[j.WireName] {
			if s.seq < read.seq && core.HandlerLive(s.at, read.at, grace) {
				w.failf(ClassSafety, InvFleetQuarantine, "node %s claimed %s of Wire Name %s, which it has no handler for, under a registry read at %v that held a stamp of it at %v, within grace %v",
					n.worker, j.Lease(), j.WireName, read.at.Sub(w.start), s.at.Sub(w.start), grace)
				return
			}
		}
		w.cov.hit(SitQuarantineNoHandler)
	}
}

// migrationCheckDue reports whether the Migration-Liveness check may run
// now. Its time was fixed before the run (checkAt), but an operation sent
// during the chaos window may still be held by its drawn request and
// response delays after the window ends (a fleet stamp answered late keeps
// its node from claiming): the first time the check comes due, it moves
// on by the longest such delay the run drew, as the Drain-Liveness bound
// counts in-flight time, and runs when it comes due again.
func (w *world) migrationCheckDue() bool {
	if w.fl.checkExtended {
		return true
	}
	w.fl.checkExtended = true
	var req, resp time.Duration
	for _, f := range w.faults.Ops {
		req, resp = max(req, f.ReqDelay.D()), max(resp, f.RespDelay.D())
	}
	if req+resp == 0 {
		return true
	}
	w.fl.checkPending = true
	w.schedule(event{at: w.now.Add(req + resp), kind: evMigrationCheck})
	return false
}

// checkMigration is the Migration-Liveness oracle.
func (w *world) checkMigration() {
	for _, n := range w.nodes {
		if n.lost {
			continue
		}
		if !n.up {
			w.failf(ClassLiveness, InvMigrationLiveness, "node %d (version %d) is not running %v after the migration (refused: %v)",
				n.idx, n.fl.version, w.now.Sub(w.fl.holdEnd), n.fl.refused)
			return
		}
		since := n.fl.startedAt
		if since.Before(w.fl.holdEnd) {
			since = w.fl.holdEnd
		}
		if n.fl.claimedAt.Before(since) && n.drv.Free() > 0 {
			w.failf(ClassLiveness, InvMigrationLiveness, "node %s (version %d) has had no claim answered since %v, %v after the migration",
				n.worker, n.fl.version, since.Sub(w.start), w.now.Sub(w.fl.holdEnd))
			return
		}
	}
}
