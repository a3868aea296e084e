package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/memstore"
	"github.com/backwave/backwave/store/sqlite"
	"github.com/backwave/backwave/vtime"
)

// TestDifferentialAgainstMemstore replays random sequences of contract calls
// on this adapter and on the In-Memory Store, the executable reference, each
// on its own Manual clock moved in step, and requires every answer and the
// final state — jobs, Queues, counts, Transition Logs — to be identical
// (DESIGN.md: "differential tests of each store against the in-memory
// reference").
func TestDifferentialAgainstMemstore(t *testing.T) {
	t.Parallel()
	seeds := []uint64{1, 2, 3, 4}
	ops := 250
	if raceEnabled || testing.Short() {
		seeds, ops = seeds[:2], 150
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			t.Parallel()
			differential(t, seed, ops)
		})
	}
}

// pair is the two stores under one script.
type pair struct {
	t        *testing.T
	ctx      context.Context
	rng      *rand.Rand
	ref      *memstore.Store
	sql      *sqlite.Store
	refClock *vtime.Manual
	sqlClock *vtime.Manual
	step     int
	// held remembers Leases the script claimed, stale ones included, so
	// later calls can name both live and stale Leases.
	held []heldLease
}

type heldLease struct {
	worker job.WorkerID
	lease  job.Lease
	max    int
	cancel bool
}

var (
	diffQueues  = []string{"a", "b", "c"}
	diffWorkers = []job.WorkerID{"w1", "w2"}
)

func differential(t *testing.T, seed uint64, ops int) {
	refClock := vtime.NewManual(vtime.Epoch)
	s, sqlClock := newStore(t, sqlite.Options{})
	p := &pair{
		t: t, ctx: context.Background(), rng: rand.New(rand.NewPCG(seed, 0x5eed)),
		ref: memstore.New(memstore.Options{Clock: refClock}), sql: s,
		refClock: refClock, sqlClock: sqlClock,
	}
	for p.step = 0; p.step < ops; p.step++ {
		switch n := p.rng.IntN(100); {
		case n < 20:
			p.insert()
		case n < 40:
			p.claim()
		case n < 55:
			p.report()
		case n < 62:
			p.renew()
		case n < 68:
			p.expire()
		case n < 73:
			p.relinquish()
		case n < 80:
			p.queueSetting()
		case n < 85:
			p.cancel()
		default:
			d := time.Duration(p.rng.IntN(90)) * time.Second
			p.refClock.Advance(d)
			p.sqlClock.Advance(d)
		}
	}
	p.compareState()
}

// same fails the test unless the two answers are equal.
func (p *pair) same(what string, ref, got any) {
	p.t.Helper()
	if !reflect.DeepEqual(normalize(ref), normalize(got)) {
		p.t.Fatalf("step %d, %s:\nmemstore: %+v\nsqlite:   %+v", p.step, what, ref, got)
	}
}

// sameErr fails unless both calls failed alike or both succeeded.
func (p *pair) sameErr(what string, ref, got error) {
	p.t.Helper()
	for _, sentinel := range []error{store.ErrNotFound, store.ErrIllegalTransition, store.ErrInvalidParams} {
		if errors.Is(ref, sentinel) != errors.Is(got, sentinel) {
			p.t.Fatalf("step %d, %s: memstore error %v, sqlite error %v", p.step, what, ref, got)
		}
	}
	if (ref == nil) != (got == nil) {
		p.t.Fatalf("step %d, %s: memstore error %v, sqlite error %v", p.step, what, ref, got)
	}
}

// normalize makes values from both stores comparable: times in UTC without
// monotonic readings, empty slices as nil.
func normalize(v any) any {
	return normalizeValue(reflect.ValueOf(v)).Interface()
}

func normalizeValue(v reflect.Value) reflect.Value {
	if !v.IsValid() {
		return v
	}
	if t, ok := v.Interface().(time.Time); ok {
		return reflect.ValueOf(t.UTC().Round(0))
	}
	switch v.Kind() {
	case reflect.Slice:
		if v.Len() == 0 {
			return reflect.Zero(v.Type())
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			out.Index(i).Set(normalizeValue(v.Index(i)))
		}
		return out
	case reflect.Struct:
		out := reflect.New(v.Type()).Elem()
		for i := range v.NumField() {
			if out.Field(i).CanSet() {
				out.Field(i).Set(normalizeValue(v.Field(i)))
			}
		}
		return out
	case reflect.Map:
		out := reflect.MakeMap(v.Type())
		for _, k := range v.MapKeys() {
			out.SetMapIndex(k, normalizeValue(v.MapIndex(k)))
		}
		return out
	}
	return v
}

func (p *pair) queue() string { return diffQueues[p.rng.IntN(len(diffQueues))] }

func (p *pair) worker() job.WorkerID { return diffWorkers[p.rng.IntN(len(diffWorkers))] }

func (p *pair) insert() {
	var params store.InsertManyParams
	for range 1 + p.rng.IntN(4) {
		nj := store.NewJob{WireName: "diff", Queue: p.queue(), MaxAttempts: 1 + p.rng.IntN(3), Payload: []byte{byte(p.step)}}
		if p.rng.IntN(3) == 0 {
			nj.ScheduledAt = p.refClock.Now().Add(time.Duration(p.rng.IntN(120)) * time.Second)
		}
		if p.rng.IntN(2) == 0 {
			nj.Tags = []job.Tag{job.Label("t" + fmt.Sprint(p.rng.IntN(3))), job.Keyed("k", fmt.Sprint(p.rng.IntN(2)))}
		}
		params.Jobs = append(params.Jobs, nj)
	}
	ref, refErr := p.ref.JobInsertMany(p.ctx, params)
	got, gotErr := p.sql.JobInsertMany(p.ctx, params)
	p.sameErr("insert", refErr, gotErr)
	p.same("insert", ref, got)
}

func (p *pair) claim() {
	queues := slices.Clone(diffQueues)
	p.rng.Shuffle(len(queues), func(i, j int) { queues[i], queues[j] = queues[j], queues[i] })
	params := store.ClaimParams{Worker: p.worker(), Queues: queues[:1+p.rng.IntN(len(queues))], Limit: 1 + p.rng.IntN(5),
		LeaseDuration: time.Duration(30+p.rng.IntN(60)) * time.Second}
	ref, refErr := p.ref.JobClaim(p.ctx, params)
	got, gotErr := p.sql.JobClaim(p.ctx, params)
	p.sameErr("claim", refErr, gotErr)
	p.same("claim", ref, got)
	for _, j := range ref {
		p.held = append(p.held, heldLease{worker: params.Worker, lease: j.Lease(), max: j.MaxAttempts, cancel: j.CancelRequested})
	}
}

// someLeases picks up to n remembered Leases, sometimes under the wrong
// worker so the fence has work to do.
func (p *pair) someLeases(n int) (job.WorkerID, []heldLease) {
	if len(p.held) == 0 {
		return p.worker(), nil
	}
	w := p.held[p.rng.IntN(len(p.held))].worker
	if p.rng.IntN(5) == 0 {
		w = p.worker()
	}
	var out []heldLease
	for range 1 + p.rng.IntN(n) {
		i := p.rng.IntN(len(p.held))
		if recent := min(len(p.held), 8); p.rng.IntN(4) != 0 {
			i = len(p.held) - 1 - p.rng.IntN(recent) // mostly the latest claims, still live
		}
		out = append(out, p.held[i])
	}
	return w, out
}

func (p *pair) report() {
	w, picked := p.someLeases(4)
	var params store.ReportParams
	params.Worker = w
	for _, h := range picked {
		r := []core.Result{core.ResultSucceeded, core.ResultFailed, core.ResultFailed, core.ResultFailedPermanently, core.ResultUnroutable}[p.rng.IntN(5)]
		policy := core.RetryPolicy{Initial: time.Duration(p.rng.IntN(3)) * 10 * time.Second, Max: time.Minute, Multiplier: 2}
		o := store.Outcome{Outcome: core.Decide(core.AttemptInfo{Lease: h.lease, MaxAttempts: h.max, CancelRequested: h.cancel}, r, policy)}
		if r != core.ResultSucceeded {
			o.FailureDetail = fmt.Sprintf("failure at step %d", p.step)
		} else if p.rng.IntN(2) == 0 {
			o.Output = []byte(fmt.Sprint("out", p.step))
		}
		if p.rng.IntN(3) == 0 {
			o.TagDelta = []job.Tag{job.Label("done")}
		}
		params.Outcomes = append(params.Outcomes, o)
	}
	ref, refErr := p.ref.OutcomeReport(p.ctx, params)
	got, gotErr := p.sql.OutcomeReport(p.ctx, params)
	p.sameErr("report", refErr, gotErr)
	p.same("report", ref, got)
}

func (p *pair) renew() {
	w, picked := p.someLeases(4)
	params := store.RenewParams{Worker: w, LeaseDuration: time.Duration(30+p.rng.IntN(60)) * time.Second}
	for _, h := range picked {
		params.Leases = append(params.Leases, h.lease)
	}
	ref, refErr := p.ref.LeaseRenew(p.ctx, params)
	got, gotErr := p.sql.LeaseRenew(p.ctx, params)
	p.sameErr("renew", refErr, gotErr)
	p.same("renew", ref, got)
}

func (p *pair) expire() {
	params := store.ExpireParams{Queues: diffQueues[:1+p.rng.IntN(len(diffQueues))], Limit: p.rng.IntN(3)}
	ref, refErr := p.ref.LeaseExpire(p.ctx, params)
	got, gotErr := p.sql.LeaseExpire(p.ctx, params)
	p.sameErr("expire", refErr, gotErr)
	p.same("expire", ref, got)
}

func (p *pair) relinquish() {
	w, picked := p.someLeases(3)
	params := store.RelinquishParams{Worker: w}
	for _, h := range picked {
		params.Leases = append(params.Leases, h.lease)
	}
	ref, refErr := p.ref.LeaseRelinquish(p.ctx, params)
	got, gotErr := p.sql.LeaseRelinquish(p.ctx, params)
	p.sameErr("relinquish", refErr, gotErr)
	p.same("relinquish", ref, got)
}

func (p *pair) queueSetting() {
	q := p.queue()
	var refErr, gotErr error
	switch p.rng.IntN(3) {
	case 0:
		refErr, gotErr = p.ref.QueuePause(p.ctx, store.QueueParams{Queue: q}), p.sql.QueuePause(p.ctx, store.QueueParams{Queue: q})
	case 1:
		refErr, gotErr = p.ref.QueueResume(p.ctx, store.QueueParams{Queue: q}), p.sql.QueueResume(p.ctx, store.QueueParams{Queue: q})
	default:
		l := store.QueueSetLimitParams{Queue: q, Limit: p.rng.IntN(4)}
		refErr, gotErr = p.ref.QueueSetLimit(p.ctx, l), p.sql.QueueSetLimit(p.ctx, l)
	}
	p.sameErr("queue setting", refErr, gotErr)
}

func (p *pair) cancel() {
	id := job.ID(1 + p.rng.IntN(p.step+1))
	p.sameErr(fmt.Sprint("cancel ", id), p.ref.RequestCancel(p.ctx, id), p.sql.RequestCancel(p.ctx, id))
	for i := range p.held {
		if p.held[i].lease.ID == id {
			p.held[i].cancel = true
		}
	}
}

// compareState requires both stores to hold the same jobs, Queues, counts
// and Transition Logs.
func (p *pair) compareState() {
	p.t.Helper()
	params := store.JobListParams{Limit: 10_000}
	refJobs, refErr := p.ref.JobList(p.ctx, params)
	gotJobs, gotErr := p.sql.JobList(p.ctx, params)
	p.sameErr("list", refErr, gotErr)
	p.same("every job", refJobs, gotJobs)
	refQueues, refErr := p.ref.QueueList(p.ctx)
	gotQueues, gotErr := p.sql.QueueList(p.ctx)
	p.sameErr("queues", refErr, gotErr)
	p.same("queues", refQueues, gotQueues)
	refCounts, refErr := p.ref.JobCountByState(p.ctx, store.CountParams{})
	gotCounts, gotErr := p.sql.JobCountByState(p.ctx, store.CountParams{})
	p.sameErr("counts", refErr, gotErr)
	p.same("counts", refCounts, gotCounts)
	for _, j := range refJobs {
		refLog, refErr := p.ref.JobTransitions(p.ctx, j.ID)
		gotLog, gotErr := p.sql.JobTransitions(p.ctx, j.ID)
		p.sameErr("transitions", refErr, gotErr)
		if len(refLog) != len(gotLog) {
			p.t.Fatalf("job %d: memstore log %+v, sqlite log %+v", j.ID, refLog, gotLog)
		}
		for i := range refLog {
			r, g := refLog[i], gotLog[i]
			if !r.At.Equal(g.At) || r.From != g.From || r.State != g.State || r.Via != g.Via || r.Attempt != g.Attempt || r.FailureDetail != g.FailureDetail {
				p.t.Fatalf("job %d entry %d: memstore %+v, sqlite %+v", j.ID, i, r, g)
			}
		}
		refOut, refErr := p.ref.JobOutput(p.ctx, j.ID)
		gotOut, gotErr := p.sql.JobOutput(p.ctx, j.ID)
		p.sameErr("output", refErr, gotErr)
		p.same(fmt.Sprint("output of job ", j.ID), refOut, gotOut)
	}
	p.t.Logf("%d steps, %d jobs, counts %v", p.step, len(refJobs), refCounts)
}
