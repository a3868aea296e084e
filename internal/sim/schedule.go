package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/core/cron"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/node"
	"github.com/backwave/backwave/store"
)

// Recurring Schedules and the Retention Policy in the Simulator. A Scenario
// may carry schedules (registered at the start, removed when the chaos
// window ends) and a retention policy; every node mints and purges on its
// maintenance beat, through the same faulty store path as its other
// operations. Their oracles:
//
//   - occurrence-dealt-twice (every level): no occurrence of a schedule is
//     minted twice, or minted and also skipped or covered by a make-up job;
//     checked on every applied mint, from the store's own answer (before an
//     unknown-outcome fault hides it from the node).
//   - make-up-per-outage (every level): a mint plan holds at most one
//     make-up job, and a make-up job covers only occurrences nothing else
//     dealt with: Coalesce never mints more than one make-up job per
//     outage.
//   - occurrence-not-minted (Pristine and Recoverable): under Pristine
//     every occurrence due while the schedule existed, up to MissedAfter
//     before its removal, was minted or recorded as skipped by No-Overlap
//     — none missed, none made up. Under Recoverable the schedules outlive
//     the chaos window by a tail (schedTail), and every occurrence due
//     from the recovery bound T1 after the faults ceased to the tail's lag
//     before the removal was dealt with somehow — minted, skipped or made
//     up, as a late beat may rightly do — and none was silently lost.
//   - purged-early (every level): a job the store no longer has was
//     terminal in a purged state, and its keep horizon had passed at the
//     last purge.

// Invariants of schedules and retention.
const (
	// InvOccurrenceTwice: an occurrence was minted twice, or minted and
	// also skipped or made up.
	InvOccurrenceTwice = "occurrence-dealt-twice"
	// InvMakeUpPerOutage: a mint plan held more than one make-up job.
	InvMakeUpPerOutage = "make-up-per-outage"
	// InvOccurrenceNotMinted: under Pristine, a due occurrence was neither
	// minted nor skipped by No-Overlap; under Recoverable, one due after
	// the faults ceased was not dealt with at all.
	InvOccurrenceNotMinted = "occurrence-not-minted"
	// InvPurgedEarly: a job vanished from the store while live, or before
	// its keep horizon.
	InvPurgedEarly = "purged-early"
)

// SitOccurrencesAfterChaos: under Recoverable, a schedule's occurrences
// due after the faults ceased were checked by occurrence-not-minted.
var SitOccurrencesAfterChaos = newSituation("schedule-occurrences-after-chaos")

// tagSchedule draws the schedules and retention policy of a Scenario, apart
// from every other draw, so adding them changed no other seed's world.
const tagSchedule uint64 = 0x5c4ed

// ScheduleSpec is one Recurring Schedule of a run, always in UTC.
type ScheduleSpec struct {
	Name        string `json:"name"`
	Spec        string `json:"spec"`
	Queue       string `json:"queue"`
	MaxAttempts int    `json:"max_attempts"`
	// CatchUp is "skip" or "coalesce".
	CatchUp   string `json:"catch_up"`
	NoOverlap bool   `json:"no_overlap,omitempty"`
}

// RetentionSpec is the Retention Policy every node runs. Its keep horizons
// must outlast the workload's inserts when graph roots name earlier jobs
// as parents (an insert naming a purged parent is refused).
type RetentionSpec struct {
	KeepSucceeded    Dur `json:"keep_succeeded"`
	KeepDeadLettered Dur `json:"keep_dead_lettered"`
	Batch            int `json:"batch"`
}

func (r *RetentionSpec) policy() *node.RetentionPolicy {
	if r == nil {
		return nil
	}
	return &node.RetentionPolicy{KeepSucceeded: r.KeepSucceeded.D(), KeepDeadLettered: r.KeepDeadLettered.D(), Batch: r.Batch}
}

// keep is how long a job that ended in state s is kept.
func (r *RetentionSpec) keep(s job.State) (time.Duration, bool) {
	switch s {
	case job.StateSucceeded, job.StateCancelled:
		return r.KeepSucceeded.D(), true
	case job.StateDeadLettered, job.StateQuarantined:
		return r.KeepDeadLettered.D(), true
	}
	return 0, false
}

// scheduleSpecs are the expressions drawn from: every second or few, in
// both syntaxes, so a chaos window sees a few to a few dozen occurrences.
var scheduleSpecs = []string{"@every 1s", "@every 2s", "*/3 * * * * *", "*/2 * * * * *", "@every 4s", "* * * * * *"}

// drawSchedules adds schedules and a retention policy to a Scenario drawn
// by NewScenario, from their own draw stream.
func drawSchedules(sc *Scenario) {
	d := newDraw(sc.Seed, tagSchedule)
	for i := range d.intn(4) {
		s := ScheduleSpec{
			Name:        fmt.Sprintf("s%d", i),
			Spec:        scheduleSpecs[d.intn(len(scheduleSpecs))],
			Queue:       sc.Queues[d.intn(len(sc.Queues))].Name,
			MaxAttempts: d.between(1, 3),
			CatchUp:     core.CatchUpSkip.String(),
			NoOverlap:   d.chance(0.4),
		}
		if d.chance(0.5) {
			s.CatchUp = core.CatchUpCoalesce.String()
		}
		sc.Schedules = append(sc.Schedules, s)
	}
	if len(sc.Schedules) > 0 {
		// Long enough that no Pristine run misses an occurrence: a beat may
		// come a maintenance interval plus a poll late, and a node in a
		// graceful restart is away for its drain timeout plus half a second.
		var maint, poll, drain time.Duration
		for _, ns := range sc.Nodes {
			maint, poll, drain = max(maint, ns.Maintenance.D()), max(poll, ns.Poll.D()), max(drain, ns.DrainTimeout.D())
		}
		sc.MissedAfter = Dur(drain + 500*time.Millisecond + 2*(maint+poll) + 100*time.Millisecond)
		if sc.Level != Pristine && d.chance(0.5) {
			// Tight enough that a late beat or a short outage misses
			// occurrences, so the Catch-Up Policy runs.
			sc.MissedAfter = Dur(maint + d.dur(time.Millisecond, poll).Round(time.Millisecond))
			if d.chance(0.5) {
				sc.MintLookahead = Dur(time.Millisecond)
			}
			if d.chance(0.5) {
				sc.MintNodes = 1 // one minter: its outages are the schedules' outages
			}
		}
	}
	if d.chance(0.5) {
		// A graph root may name an earlier job as its parent; that job must
		// still be in the store when the root is enqueued, so with such
		// roots nothing is purged before the workload is all in.
		var base time.Duration
		if sc.Work.Graphs.Graphs > 0 && sc.Work.Graphs.ExistingProb > 0 {
			base = sc.Chaos.D()
		}
		sc.Retention = &RetentionSpec{
			KeepSucceeded:    Dur(base + d.dur(0, 2*time.Second).Round(time.Millisecond)),
			KeepDeadLettered: Dur(base + d.dur(0, 3*time.Second).Round(time.Millisecond)),
			Batch:            d.between(1, 20),
		}
	}
}

// validateSchedules reports the first reason the Scenario's schedules or
// retention policy cannot run.
func (sc *Scenario) validateSchedules(known map[string]bool) error {
	names := map[string]bool{}
	for _, s := range sc.Schedules {
		def := s.def()
		if err := def.Validate(); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidPlan, err)
		}
		if !known[s.Queue] || names[s.Name] {
			return fmt.Errorf("%w: schedule %q: unknown queue %q or a second schedule of that name", ErrInvalidPlan, s.Name, s.Queue)
		}
		names[s.Name] = true
	}
	if len(sc.Schedules) > 0 && sc.MissedAfter <= 0 {
		return fmt.Errorf("%w: schedules without missed_after", ErrInvalidPlan)
	}
	if r := sc.Retention; r != nil && (r.KeepSucceeded < 0 || r.KeepDeadLettered < 0 || r.Batch < 1) {
		return fmt.Errorf("%w: retention %+v", ErrInvalidPlan, *r)
	}
	return nil
}

// def is the stored definition of the schedule.
func (s *ScheduleSpec) def() store.ScheduleDef {
	cu, err := core.ParseCatchUpPolicy(s.CatchUp)
	if err != nil {
		cu = 99 // invalid: Validate says so
	}
	return store.ScheduleDef{
		Name: s.Name, Spec: s.Spec, CatchUp: cu, NoOverlap: s.NoOverlap,
		Template: store.JobTemplate{WireName: "sim.scheduled", Queue: s.Queue, MaxAttempts: s.MaxAttempts},
	}
}

// maintenanceConfig sets the schedule and retention knobs of node i's
// Driver configuration.
func (sc *Scenario) maintenanceConfig(i int, cfg *node.Config) {
	if len(sc.Schedules) > 0 && (sc.MintNodes <= 0 || i < sc.MintNodes) {
		cfg.Schedules = true
		cfg.MissedAfter = sc.MissedAfter.D()
		cfg.MintLookahead = sc.MintLookahead.D()
	}
	cfg.Retention = sc.Retention.policy()
}

// schedWorld is what the world tracks of schedules and retention.
type schedWorld struct {
	exprs   []*cron.Expr
	created []time.Time
	removed []time.Time
	// dealt records, per schedule, what became of each occurrence the
	// store applied a plan for.
	dealt []map[time.Time]string
	// last is, per schedule, the cursor of the last plan applied.
	last []time.Time
	// finalAt is when each tracked job (by index) became terminal.
	finalAt map[int]time.Time
	// lastPurge is the store's time of the latest purge call.
	lastPurge time.Time
	// pending counts the schedules still to be removed after the chaos
	// window (Recoverable); the Drain-Liveness deadline waits for them.
	pending int
	// tail, from and lag are schedTail's, fixed when the chaos window
	// ends (Recoverable only).
	tail, from, lag time.Duration
}

// schedTail is how long the schedules outlive the chaos window: 0 but
// under Recoverable, where occurrence-not-minted checks the occurrences
// due once the faults ceased. It reads the faults, so it is taken when the
// chaos window ends, once they are all drawn. from is where the checked occurrences start
// after the chaos window (the recovery bound T1), and lag how long before
// the removal they end: a late beat, a graceful restart of a minting node
// or a clock standing behind may leave the last ones to the next beat,
// which the removal forestalls. The tail leaves at least one occurrence of
// the slowest expression (every 4s) between the two.
func (w *world) schedTail() (tail, from, lag time.Duration) {
	if w.sc.Level != Recoverable || len(w.sc.Schedules) == 0 {
		return 0, 0, 0
	}
	r := w.recoveryTerms()
	from = r.bound()
	lag = max(w.sc.MissedAfter.D(), r.drain+500*time.Millisecond+2*(r.maint+r.poll)+2*r.skew+r.inflight+100*time.Millisecond)
	return from + lag + 4*time.Second, from, lag
}

// setupSchedules registers the Scenario's schedules at the start and queues
// their removal at the end of the chaos window, or its tail (schedTail).
func (w *world) setupSchedules() {
	n := len(w.sc.Schedules)
	w.sched = schedWorld{
		exprs: make([]*cron.Expr, n), created: make([]time.Time, n), removed: make([]time.Time, n),
		dealt: make([]map[time.Time]string, n), last: make([]time.Time, n), finalAt: map[int]time.Time{},
	}
	for i, s := range w.sc.Schedules {
		w.workloadCall()
		_, err := w.st.ScheduleUpsert(w.ctx, store.ScheduleUpsertParams{Schedule: s.def()})
		w.mustStore(err)
		w.sched.exprs[i] = cron.MustParse(s.Spec)
		w.sched.created[i], w.sched.last[i] = w.now, w.now
		w.sched.dealt[i] = map[time.Time]string{}
		if w.sc.Level == Recoverable {
			w.sched.pending++ // queued when the chaos window ends (queueTail)
			continue
		}
		w.workload(event{at: w.at(w.sc.Chaos.D()), kind: evScheduleRemove, idx: i})
	}
}

// queueTail, at the end of the chaos window under Recoverable, fixes the
// schedules' tail and queues their removal at its end.
func (w *world) queueTail() {
	if w.sched.pending == 0 {
		return
	}
	w.sched.tail, w.sched.from, w.sched.lag = w.schedTail()
	for i := range w.sc.Schedules {
		w.workload(event{at: w.now.Add(w.sched.tail), kind: evScheduleRemove, idx: i})
	}
}

// removeSchedule removes schedule i, as an operator would.
func (w *world) removeSchedule(i int) {
	w.workloadCall()
	w.mustStore(w.st.ScheduleRemove(w.ctx, store.ScheduleParams{Name: w.sc.Schedules[i].Name}))
	w.sched.removed[i] = w.now
	if w.sched.pending > 0 {
		if w.sched.pending--; w.sched.pending == 0 && w.chaosOver {
			w.armDrainDeadline() // the last jobs the schedules minted count too
		}
	}
}

// scheduleIndex returns the index of the named schedule.
func (w *world) scheduleIndex(name string) int {
	for i, s := range w.sc.Schedules {
		if s.Name == name {
			return i
		}
	}
	w.failf(ClassSafety, InvStoreError, "the store named unknown schedule %q", name)
	return -1
}

// adoptMinted starts tracking a job the store inserted outside the
// workload: a minted one. Its Queue, attempt ceiling and due time are
// filled in from the mint's answer before anything can claim it.
func (w *world) adoptMinted(id job.ID) {
	w.byID = append(w.byID, len(w.jobs))
	w.jobs = append(w.jobs, jobState{id: id, due: w.storeNow()})
	w.wl.jobs = append(w.wl.jobs, jobSpec{cancelAt: -1, maxAttempts: 1})
}

// noteTerminal records when a tracked job became terminal.
func (w *world) noteTerminal(id job.ID, e core.Edge) {
	if e.To.Terminal() && id >= 1 && int(id) <= len(w.byID) {
		w.sched.finalAt[w.byID[id-1]] = w.storeNow()
	}
}

// checkMakeUps holds a mint's plans to the Catch-Up Policy: at most one
// make-up job per schedule per plan.
func (w *world) checkMakeUps(n *simNode, plans []core.MintPlan) {
	for _, p := range plans {
		makeUps := 0
		for _, m := range p.Mints {
			if m.MakeUp {
				makeUps++
			}
		}
		if makeUps > 1 {
			w.failf(ClassSafety, InvMakeUpPerOutage, "%s planned %d make-up jobs for schedule %s in one plan", n.worker, makeUps, p.Schedule)
		}
	}
}

// afterMint checks what the store answered a mint of plans.
func (w *world) afterMint(n *simNode, plans []core.MintPlan, results []store.MintResult) {
	for i, res := range results {
		if res.Applied {
			w.applied(n, plans[i], res)
		} else {
			w.cov.hit(SitMintStale)
		}
	}
}

// afterPurge notes a purge of at most limit jobs the store answered.
func (w *world) afterPurge(limit int, res store.PurgeResult) {
	w.sched.lastPurge = w.storeNow()
	if res.Purged > 0 {
		w.cov.hit(SitPurged)
	}
	if res.Purged >= limit {
		w.cov.hit(SitPurgeFullBatch)
	}
}

// applied checks one applied mint plan against what was dealt with before
// and adopts the jobs it minted.
func (w *world) applied(n *simNode, p core.MintPlan, r store.MintResult) {
	i := w.scheduleIndex(p.Schedule)
	if i < 0 {
		return
	}
	s := &w.sc.Schedules[i]
	expr := w.sched.exprs[i]
	deal := func(at time.Time, what string) {
		if prev, ok := w.sched.dealt[i][at]; ok {
			w.failf(ClassSafety, InvOccurrenceTwice, "schedule %s: occurrence %v %s by %s after being %s", p.Schedule, at.Sub(w.start), what, n.worker, prev)
		}
		w.sched.dealt[i][at] = what
	}
	for _, j := range r.Jobs {
		if j.MakeUp {
			w.cov.hit(SitMadeUp)
			// The make-up job stands for every occurrence since the last
			// plan's cursor.
			for at := expr.Next(w.sched.last[i], time.UTC); !at.IsZero() && at.Before(j.At); at = expr.Next(at, time.UTC) {
				deal(at, "made up")
			}
			deal(j.At, "made up")
		} else {
			w.cov.hit(SitMinted)
			deal(j.At, "minted")
		}
		if j.ID < 1 || int(j.ID) > len(w.byID) {
			w.failf(ClassSafety, InvStoreError, "mint answered job %d, which the store never inserted", j.ID)
			continue
		}
		x := w.byID[j.ID-1]
		w.wl.jobs[x].queue = w.queueIx[j.Queue]
		w.wl.jobs[x].maxAttempts = s.MaxAttempts
		w.jobs[x].due = j.At
	}
	for _, sk := range p.Skips {
		what := "skipped (" + sk.Reason.String() + ")"
		if sk.Reason == core.SkipOverlap {
			w.cov.hit(SitSkippedOverlap)
		} else {
			w.cov.hit(SitSkippedMissed)
		}
		for at := sk.First; !at.IsZero() && !at.After(sk.At); at = expr.Next(at, time.UTC) {
			deal(at, what)
		}
	}
	if p.Cursor.After(w.sched.last[i]) {
		w.sched.last[i] = p.Cursor
	}
}

// checkSchedules is the end-of-run check: under Pristine every occurrence
// due while a schedule existed was minted or skipped by No-Overlap; under
// Recoverable every one due after the faults ceased was dealt with.
func (w *world) checkSchedules() {
	switch w.sc.Level {
	case Pristine:
	case Recoverable:
		w.checkSchedulesRecovered()
		return
	default:
		return
	}
	for i, s := range w.sc.Schedules {
		end := w.sched.removed[i].Add(-w.sc.MissedAfter.D())
		if w.sched.removed[i].IsZero() {
			continue
		}
		expr := w.sched.exprs[i]
		for at := expr.Next(w.sched.created[i], time.UTC); !at.IsZero() && !at.After(end); at = expr.Next(at, time.UTC) {
			switch what := w.sched.dealt[i][at]; what {
			case "minted", "skipped (overlap)":
			case "":
				w.failf(ClassLiveness, InvOccurrenceNotMinted, "schedule %s (%q): occurrence %v was never minted", s.Name, s.Spec, at.Sub(w.start))
				return
			default:
				w.failf(ClassLiveness, InvOccurrenceNotMinted, "schedule %s (%q): occurrence %v was %s under Pristine", s.Name, s.Spec, at.Sub(w.start), what)
				return
			}
		}
	}
}

// checkSchedulesRecovered is occurrence-not-minted under Recoverable:
// every occurrence due from T1 after the chaos window to the tail's lag
// before the schedule's removal was minted, skipped or made up — unless
// no node that mints is left (a permanent loss, which Recoverable does
// not draw, but a plan may hold).
func (w *world) checkSchedulesRecovered() {
	from, lag := w.sched.from, w.sched.lag
	minter := false
	for _, n := range w.nodes {
		if (w.sc.MintNodes <= 0 || n.idx < w.sc.MintNodes) && !n.lost && !n.isoPermanent {
			minter = true
		}
	}
	if !minter {
		return
	}
	start := w.at(w.sc.Chaos.D() + from)
	for i, s := range w.sc.Schedules {
		if w.sched.removed[i].IsZero() {
			continue
		}
		end := w.sched.removed[i].Add(-lag)
		expr := w.sched.exprs[i]
		checked := false
		for at := expr.Next(start, time.UTC); !at.IsZero() && !at.After(end); at = expr.Next(at, time.UTC) {
			checked = true
			if w.sched.dealt[i][at] == "" {
				w.failf(ClassLiveness, InvOccurrenceNotMinted, "schedule %s (%q): occurrence %v, due %v after the faults ceased, was never minted, skipped or made up",
					s.Name, s.Spec, at.Sub(w.start), at.Sub(w.at(w.sc.Chaos.D())))
				return
			}
		}
		if checked {
			w.cov.hit(SitOccurrencesAfterChaos)
		}
	}
}

// purgedOK reports whether a tracked job the store no longer has was one
// retention could purge: terminal, in a purged state, past its keep
// horizon at the last purge. It fails the run otherwise.
func (w *world) purgedOK(x int, err error) bool {
	if !errors.Is(err, store.ErrNotFound) {
		return false
	}
	js := &w.jobs[x]
	r := w.sc.Retention
	if r == nil {
		w.failf(ClassSafety, InvPurgedEarly, "job %d vanished from the store with no retention policy", js.id)
		return true
	}
	keep, purgeable := r.keep(js.state)
	final, ok := w.sched.finalAt[x]
	switch {
	case !purgeable || !ok:
		w.failf(ClassSafety, InvPurgedEarly, "job %d vanished from the store while %s", js.id, js.state)
	case final.Add(keep).After(w.sched.lastPurge):
		w.failf(ClassSafety, InvPurgedEarly, "job %d, %s at %v, was purged by %v, inside its keep horizon %v",
			js.id, js.state, final.Sub(w.start), w.sched.lastPurge.Sub(w.start), keep)
	}
	return true
}
