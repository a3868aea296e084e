package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/internal/sim"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/vtime"
)

// A Plan replayed on two stores must give the same outcome history (the
// metamorphic check: one Plan replayed against memstore, SQLite and
// PostgreSQL must agree): for every job the same sequence of (Attempt,
// edge) state changes, and the same final state.
//
// Only what the Storage Contract fixes is compared, not the trace hash,
// which also digests what the Contract leaves to each store. Both replays
// run with the store's time quantized to the SQL adapters' microseconds
// (sim.Options.StorePrecision), so they decide alike; the memstore replay
// at microseconds is in turn compared with the plain one, and the summary
// says whether the quantization changed the Plan's path.

// step is one state change a replay's feed delivered.
type step struct {
	seq     int           // its place in the run's feed
	at      time.Duration // Virtual Time since the start
	attempt job.Attempt
	edge    core.Edge
}

func (s step) String() string {
	return fmt.Sprintf("%s at Attempt %d (#%d, at %v)", s.edge, s.attempt, s.seq, s.at)
}

// history is what one replay's store did.
type history struct {
	name  string
	clock vtime.Clock
	steps [][]step // per job id - 1
	n     int
	// final is each job's state at the end, "purged" for one retention
	// removed.
	final []string
	// purges lists the purge calls that removed jobs, in order; gone marks
	// the jobs they removed, per job id - 1.
	purges []purge
	gone   []bool
	rep    sim.Report
	err    error
}

// purge is one purge call that removed jobs: how many state changes the
// feed had delivered before it, and the jobs it removed.
type purge struct {
	at  int
	ids []job.ID
}

// purgeWatch is a run's Store with the jobs each purge removes recorded.
type purgeWatch struct {
	sim.Store
	h *history
}

// JobPurge purges, then finds which terminal jobs are gone.
func (s *purgeWatch) JobPurge(ctx context.Context, p store.PurgeParams) (store.PurgeResult, error) {
	res, err := s.Store.JobPurge(ctx, p)
	if err != nil || res.Purged == 0 {
		return res, err
	}
	h := s.h
	for len(h.gone) < len(h.steps) {
		h.gone = append(h.gone, false)
	}
	pg := purge{at: h.n}
	for i, steps := range h.steps {
		if h.gone[i] || len(steps) == 0 || !steps[len(steps)-1].edge.To.Terminal() {
			continue
		}
		if _, err := s.JobGet(ctx, job.ID(i+1)); errors.Is(err, store.ErrNotFound) {
			h.gone[i] = true
			pg.ids = append(pg.ids, job.ID(i+1))
		}
	}
	h.purges = append(h.purges, pg)
	return res, nil
}

// record wraps open so the run's feed also records into h.
func (h *history) record(open func(sim.StoreEnv) (sim.Store, error), opened *sim.Store) func(sim.StoreEnv) (sim.Store, error) {
	return func(env sim.StoreEnv) (sim.Store, error) {
		h.clock = env.Clock
		next := env.Feed
		env.Feed = func(id job.ID, e core.Edge, a job.Attempt) {
			for int(id) > len(h.steps) {
				h.steps = append(h.steps, nil)
			}
			h.n++
			h.steps[id-1] = append(h.steps[id-1], step{seq: h.n, at: h.clock.Now().Sub(vtime.Epoch), attempt: a, edge: e})
			next(id, e, a)
		}
		st, err := open(env)
		if err != nil {
			return nil, err
		}
		*opened = &purgeWatch{Store: st, h: h}
		return *opened, nil
	}
}

// readFinal reads every job's final state from st.
func (h *history) readFinal(ctx context.Context, st store.Monitor) error {
	h.final = make([]string, len(h.steps))
	for i := range h.steps {
		j, err := st.JobGet(ctx, job.ID(i+1))
		switch {
		case errors.Is(err, store.ErrNotFound):
			h.final[i] = "purged"
		case err != nil:
			return err
		default:
			h.final[i] = j.State.String()
		}
	}
	return nil
}

// outcome renders how the run ended.
func (h *history) outcome() string {
	var f *sim.Failure
	switch {
	case errors.As(h.err, &f):
		return fmt.Sprintf("FAIL %s %s", f.Class, f.Invariant)
	case h.err != nil:
		return "error: " + h.err.Error()
	}
	return "ok"
}

// divergence is where two replays part: the first state change (in the
// reference's feed order) that differs, or a final state.
type divergence struct {
	job        job.ID
	index      int // the change's index in the job's history; -1 for the final state
	ref, other string
	// seq is where in the reference's feed the runs part.
	seq int
	// cause, when set, explains a divergence neither store is at fault
	// for.
	cause string
}

// diverge returns the first divergence of b from the reference a, or nil
// when they agree.
func diverge(a, b *history) *divergence {
	var first *divergence
	firstSeq := 0
	for i := range max(len(a.steps), len(b.steps)) {
		var sa, sb []step
		if i < len(a.steps) {
			sa = a.steps[i]
		}
		if i < len(b.steps) {
			sb = b.steps[i]
		}
		k := 0
		for k < len(sa) && k < len(sb) && sa[k].attempt == sb[k].attempt && sa[k].edge == sb[k].edge {
			k++
		}
		if k == len(sa) && k == len(sb) {
			continue
		}
		d := &divergence{job: job.ID(i + 1), index: k, ref: "nothing", other: "nothing"}
		seq := a.n + 1 // a history that ends early parts where the other goes on
		if k < len(sa) {
			d.ref, seq = sa[k].String(), sa[k].seq
		}
		if k < len(sb) {
			d.other = sb[k].String()
		}
		if first == nil || seq < firstSeq {
			first, firstSeq = d, seq
			d.seq = seq
		}
	}
	if first == nil {
		for i := range min(len(a.final), len(b.final)) {
			if a.final[i] != b.final[i] {
				first = &divergence{job: job.ID(i + 1), index: -1, ref: a.final[i], other: b.final[i], seq: a.n + 1}
				break
			}
		}
	}
	if first == nil && a.outcome() != b.outcome() {
		first = &divergence{index: -2, ref: a.outcome(), other: b.outcome(), seq: a.n + 1}
	}
	if first != nil {
		first.cause = purgeCause(a, b, first.seq)
	}
	return first
}

// purgeCause explains a divergence at the reference's feed position seq
// that a different purge before it accounts for: the Storage Contract
// leaves which qualifying jobs a purge batch takes to the store
// (store.Retention), so two correct stores may remove different jobs of a
// full batch, and from there the runs go apart (a purged job is not
// requeued, not read, and the purges after it find other jobs left).
func purgeCause(a, b *history, seq int) string {
	for k := range max(len(a.purges), len(b.purges)) {
		var pa, pb purge
		if k < len(a.purges) {
			pa = a.purges[k]
		}
		if k < len(b.purges) {
			pb = b.purges[k]
		}
		if slices.Equal(pa.ids, pb.ids) {
			continue
		}
		if k < len(a.purges) && pa.at > seq {
			return ""
		}
		if len(pa.ids) != len(pb.ids) {
			// With the same jobs left by the purges before, the same
			// number qualify: a batch of another size is not a choice.
			return ""
		}
		return fmt.Sprintf("the stores purged different jobs first — %s's purge %d removed %v, %s's %v — and the Storage Contract leaves which qualifying jobs a batch takes to the store (store.Retention): neither store is at fault, and the Plan cannot agree across stores while that choice is open",
			a.name, k+1, pa.ids, b.name, pb.ids)
	}
	return ""
}

// print writes the divergence of other from the reference ref.
func (d *divergence) print(w io.Writer, ref, other string) {
	pad := max(len(ref), len(other)) + 1
	switch d.index {
	case -2:
		fmt.Fprintf(w, "DIVERGE: the runs ended differently\n")
	case -1:
		fmt.Fprintf(w, "DIVERGE at job %d: final state\n", d.job)
	default:
		fmt.Fprintf(w, "DIVERGE at job %d, state change %d:\n", d.job, d.index+1)
	}
	fmt.Fprintf(w, "  %-*s %s\n  %-*s %s\n", pad, ref+":", d.ref, pad, other+":", d.other)
	if d.cause != "" {
		fmt.Fprintf(w, "  cause: %s\n", d.cause)
	}
}

// storeReplay is a Plan replayed on memstore and on another store.
type storeReplay struct {
	// plain is memstore's replay at Virtual Time's nanoseconds, mem at the
	// other store's precision.
	plain, mem, other history
	// hinted counts the hints the Simulator's rule gave on the other store.
	hinted int
}

// replayOn replays p on memstore and on the store uri names (sqlite://FILE,
// a fresh file, or postgres://…, a fresh schema) and records both
// histories. log, if set, receives both runs' stories.
func replayOn(p sim.Plan, uri string, log func(string)) (r *storeReplay, err error) {
	ctx := context.Background()
	if p.Scenario.Mutation.InStore() {
		return nil, fmt.Errorf("%w: %s", errPlantedBug, p.Scenario.Mutation)
	}
	o, err := newOtherStore(ctx, uri)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, o.close(), o.cleanup()) }()
	r = &storeReplay{plain: history{name: "memstore (ns)"}, mem: history{name: "memstore"}, other: history{name: o.name}}
	prefixed := func(name string) func(string) {
		if log == nil {
			return nil
		}
		return func(line string) { log(name + " " + line) }
	}
	var plain, mem sim.Store
	r.plain.rep, r.plain.err = sim.RunWith(p, sim.Options{Store: r.plain.record(sim.NewMemStore, &plain)})
	if plain == nil {
		return nil, r.plain.err
	}
	if err := r.plain.readFinal(ctx, plain); err != nil {
		return nil, err
	}
	r.mem.rep, r.mem.err = sim.RunWith(p, sim.Options{Log: prefixed("memstore"), Store: r.mem.record(sim.NewMemStore, &mem), StorePrecision: storePrecision})
	if err := r.mem.readFinal(ctx, mem); err != nil {
		return nil, err
	}
	var other sim.Store
	r.other.rep, r.other.err = sim.RunWith(p, sim.Options{Log: prefixed(fmt.Sprintf("%-8s", o.name)), Store: r.other.record(o.openStore(ctx), &other), StorePrecision: storePrecision})
	if o.feed == nil {
		return nil, r.other.err
	}
	if err := o.feed.Verify(); err != nil {
		return nil, fmt.Errorf("%s transition feed: %w", o.name, err)
	}
	if err := r.other.readFinal(ctx, o.feed); err != nil {
		return nil, err
	}
	r.hinted = o.feed.Hinted()
	return r, nil
}

// print writes both runs' results and whether they agree; it returns the
// divergence, nil when they agree.
func (r *storeReplay) print(w io.Writer) *divergence {
	for _, h := range []*history{&r.mem, &r.other} {
		fmt.Fprintf(w, "%-8s events=%d virtual=%v drained=%v states=%v transitions=%d %s\n",
			h.name, h.rep.Events, h.rep.Virtual, h.rep.Drained, h.rep.States, h.n, h.outcome())
		var f *sim.Failure
		if errors.As(h.err, &f) {
			fmt.Fprintf(w, "%-8s %s\n", "", f.Detail)
		}
	}
	if d := diverge(&r.plain, &r.mem); d != nil {
		fmt.Fprintf(w, "note: at %v memstore's outcome history parts from the plain replay's at job %d: plain %s; at %v %s\n", storePrecision, d.job, d.ref, storePrecision, d.other)
	} else {
		fmt.Fprintf(w, "at %v memstore gives the plain replay's outcome history\n", storePrecision)
	}
	fmt.Fprintf(w, "%s: %d Wake-Up Hints from the Simulator's rule\n", r.other.name, r.hinted)
	d := diverge(&r.mem, &r.other)
	if d != nil {
		d.print(w, r.mem.name, r.other.name)
		return d
	}
	purged := strings.Count(strings.Join(r.mem.final, " "), "purged")
	fmt.Fprintf(w, "agree: %d jobs (%d purged), %d state changes, the same final states\n", len(r.mem.final), purged, r.mem.n)
	return nil
}
