package storetest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/core/cron"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// The calls of a differential run. Each draws its params from d.rng alone
// (and from the reference's state, read without changing it), so a seed
// makes the same calls on every adapter.

// Names differ in case and in bytes outside ASCII, so a store that orders
// or folds them other than byte-wise (a database collation) shows it. Free
// text is valid UTF-8 without NUL: PostgreSQL replaces what its text cannot
// hold, a documented difference the run leaves alone.
var (
	diffQueues    = []string{"a", "B", "b"}
	diffWorkers   = []job.WorkerID{"w1", "w2"}
	diffActors    = []store.Actor{"", "ops:alice", "Ops:Ünal"}
	diffSchedules = []string{"s1", "S2", "nightly"}
	// diffConcurrencyKeys are Concurrency Keys drawn skewed: the first holds most
	// keyed jobs; "Acme" and "acme" differ only in case, "Øst" outside
	// ASCII, so a store that folds or orders keys other than byte-wise
	// shows it.
	diffConcurrencyKeys = []string{"acme", "acme", "acme", "acme", "Acme", "beta", "Øst"}
	// diffTags spell alike in ways Tag Suggest and the Tag Facet must
	// keep apart or fold together: case, a Label that reads as a Keyed
	// Tag, letters outside ASCII.
	diffTags = []job.Tag{
		job.Label("t0"), job.Label("t1"), job.Label("T1"), job.Label("k=0"), job.Keyed("k", "0"), job.Keyed("k", "1"),
		job.Keyed("K", "0"), job.Label("Ärger"), job.Label("ärger"), job.Keyed("team", "Øst"),
	}
	// diffSpecs fire every minute or few, so a run of a few simulated
	// hours meets due, missed and overlapping occurrences.
	diffSpecs = []string{"* * * * *", "*/2 * * * *", "*/5 * * * *", "30 * * * *"}
)

// op makes one call, drawn by weight.
func (d *differ) op() {
	ops := []struct {
		weight int
		fn     func()
	}{
		{16, d.insert},
		{6, d.uniqueInsert},
		{16, d.claim},
		{14, d.report},
		{5, d.renew},
		{5, d.expire},
		{4, d.relinquish},
		{5, d.queueSetting},
		{4, d.cancel},
		{3, d.requeue},
		{3, d.reschedule},
		{2, d.delete},
		{5, d.schedule},
		{5, d.mint},
		{3, d.purge},
		{6, d.read},
		{10, d.advance},
		{1, d.churn},
	}
	total := 0
	for _, o := range ops {
		total += o.weight
	}
	n := d.rng.IntN(total)
	for _, o := range ops {
		if n < o.weight {
			o.fn()
			return
		}
		n -= o.weight
	}
}

// tags draws one to three of diffTags.
func (d *differ) tags() []job.Tag {
	var out []job.Tag
	for range 1 + d.rng.IntN(3) {
		out = append(out, diffTags[d.rng.IntN(len(diffTags))])
	}
	return out
}

func (d *differ) queue() string { return diffQueues[d.rng.IntN(len(diffQueues))] }

func (d *differ) worker() job.WorkerID { return diffWorkers[d.rng.IntN(len(diffWorkers))] }

func (d *differ) actor() store.Actor { return diffActors[d.rng.IntN(len(diffActors))] }

// micros returns a random duration below limit on the microsecond grid.
func (d *differ) micros(limit time.Duration) time.Duration {
	return time.Duration(d.rng.Int64N(int64(limit/time.Microsecond))) * time.Microsecond
}

// advance moves both clocks by the same amount: usually seconds, now and
// then exactly to the next due time or Lease expiry, a few microseconds, or
// far enough for schedules to miss occurrences.
func (d *differ) advance() {
	var by time.Duration
	switch n := d.rng.IntN(20); {
	case n < 4:
		by = d.nextInstant()
	case n < 15:
		by = time.Duration(d.rng.IntN(90)) * time.Second
	case n < 19:
		by = d.micros(time.Millisecond)
	default:
		by = time.Duration(5+d.rng.IntN(20)) * time.Minute
	}
	d.note("advance %v", by)
	d.refClock.Advance(by)
	d.h.Advance(by)
	if ref, got := d.refClock.Now(), d.h.Now(); !ref.Equal(got) {
		d.fatalf("after advancing by %v the reference reads %v, the adapter %v", by, ref, got)
	}
}

// nextInstant returns how far the clock is from the next instant at which a
// job falls due or a Lease lapses, so that the stores compare times that
// are equal to the microsecond.
func (d *differ) nextInstant() time.Duration {
	now := d.refClock.Now()
	var next time.Time
	for _, j := range d.refJobs(job.StateScheduled, job.StateRunning) {
		for _, at := range []time.Time{j.ScheduledAt, j.LeaseExpiresAt} {
			if at.After(now) && (next.IsZero() || at.Before(next)) {
				next = at
			}
		}
	}
	if next.IsZero() {
		return 0
	}
	return next.Sub(now)
}

// insert inserts a batch, now and then with Dependencies on stored jobs or
// on earlier jobs of the batch, and rarely a batch the store must refuse.
func (d *differ) insert() {
	var p store.InsertManyParams
	for i := range 1 + d.rng.IntN(4) {
		nj := store.NewJob{WireName: "diff", Queue: d.queue(), MaxAttempts: 1 + d.rng.IntN(3)}
		if d.rng.IntN(4) != 0 {
			nj.Payload = []byte{byte(d.step)}
		}
		switch d.rng.IntN(8) {
		case 0, 1:
			nj.ScheduledAt = d.refClock.Now().Add(d.micros(2 * time.Minute))
		case 2:
			nj.ScheduledAt = d.refClock.Now().Add(-d.micros(time.Minute))
		case 3:
			nj.ScheduledAt = d.refClock.Now()
		}
		if d.rng.IntN(2) == 0 {
			nj.Tags = d.tags()
		}
		if d.rng.IntN(3) == 0 {
			nj.Dependency = d.dependency(i)
		}
		if d.keys && d.rng.IntN(3) != 0 {
			nj.ConcurrencyKey = diffConcurrencyKeys[d.rng.IntN(len(diffConcurrencyKeys))]
		}
		if d.rng.IntN(40) == 0 {
			nj.MaxAttempts = 0 // invalid: nothing of the batch is inserted
		}
		p.Jobs = append(p.Jobs, nj)
	}
	d.note("insert %d jobs %s", len(p.Jobs), describeBatch(p))
	ref, got, ok := call(d, "insert", p, store.Store.JobInsertMany)
	if ok {
		d.ids.pair(d, ref, got)
		d.same("insert", ref, got)
	}
}

// diffUniqueKeys are the unique keys a differential run's inserts share, few so
// that they meet held keys in every mode.
var diffUniqueKeys = []string{"u0", "u1", "U1"}

// uniqueInsert inserts one to three jobs with unique keys of diffUniqueKeys,
// while live or for a period, each keeping, replacing or debouncing a held
// key's holder, and compares the answers: the jobs inserted, the holders
// answered or rewritten, or a refusal (store.ErrHolderNotPending).
func (d *differ) uniqueInsert() {
	var p store.InsertManyParams
	for range 1 + d.rng.IntN(3) {
		nj := store.NewJob{WireName: "diff", Queue: d.queue(), MaxAttempts: 1 + d.rng.IntN(3), Payload: []byte{byte(d.step), 'u'}}
		u := store.Unique{Key: diffUniqueKeys[d.rng.IntN(len(diffUniqueKeys))], Scope: store.UniqueWhileLive}
		if d.rng.IntN(3) == 0 {
			u.Scope, u.Period = store.UniquePeriod, d.micros(10*time.Minute)+time.Minute
		}
		switch d.rng.IntN(3) {
		case 1:
			u.Mode = store.UniqueReplace
			if d.rng.IntN(2) == 0 {
				nj.ScheduledAt = d.refClock.Now().Add(d.micros(2 * time.Minute))
			}
		case 2:
			u.Mode, u.Wait = store.UniqueDebounce, d.micros(time.Minute)+time.Second
			u.MaxWait = u.Wait + d.micros(3*time.Minute)
		}
		if d.rng.IntN(2) == 0 {
			nj.Tags = d.tags()
		}
		nj.Unique = u
		p.Jobs = append(p.Jobs, nj)
	}
	d.note("insert %d jobs with unique keys %s", len(p.Jobs), describeUnique(p))
	ref, got, ok := call(d, "unique insert", p, store.Store.JobInsertManyResults)
	if !ok {
		return
	}
	for _, r := range ref {
		switch {
		case r.Replaced:
			d.reached["unique holders rewritten"]++
		case !r.Inserted:
			d.reached["unique keys held"]++
		}
	}
	var newRef, newGot []job.ID
	for i := range ref {
		if i < len(got) && ref[i].Inserted && got[i].Inserted {
			newRef, newGot = append(newRef, ref[i].ID), append(newGot, got[i].ID)
		}
	}
	d.ids.pair(d, newRef, newGot)
	d.same("unique insert", ref, got)
}

// describeUnique renders a batch's unique keys and modes for the trail.
func describeUnique(p store.InsertManyParams) string {
	out := make([]string, len(p.Jobs))
	for i, nj := range p.Jobs {
		out[i] = fmt.Sprintf("%q %s %s", nj.Unique.Key, nj.Unique.Scope, nj.Unique.Mode)
	}
	return fmt.Sprint(out)
}

// dependency draws the parents of the batch's job i: recent stored jobs,
// earlier jobs of the batch and, rarely, a job never made or a later job of
// the batch (a possible cycle).
func (d *differ) dependency(i int) store.Dependency {
	dep := store.Dependency{Mode: job.DependencyMode(d.rng.IntN(2))}
	for range 1 + d.rng.IntN(3) {
		switch n := d.rng.IntN(20); {
		case n < 11 && d.ids.maxRef > 0:
			recent := min(int(d.ids.maxRef), 12)
			dep.Parents = append(dep.Parents, store.Existing(d.ids.maxRef-job.ID(d.rng.IntN(recent))))
		case n < 18 && i > 0:
			dep.Parents = append(dep.Parents, store.InBatch(d.rng.IntN(i)))
		case n < 19:
			dep.Parents = append(dep.Parents, store.Existing(d.ids.maxRef+1+job.ID(d.rng.IntN(3))))
		default:
			dep.Parents = append(dep.Parents, store.InBatch(i+d.rng.IntN(2)))
		}
	}
	return dep
}

// describeBatch renders a batch's parents for the trail.
func describeBatch(p store.InsertManyParams) string {
	var out []string
	for i, nj := range p.Jobs {
		if len(nj.Dependency.Parents) > 0 {
			out = append(out, fmt.Sprintf("%d %s on %v", i, nj.Dependency.Mode, nj.Dependency.Parents))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return fmt.Sprint(out)
}

// leaseLength draws a Lease length: whole seconds, now and then with
// microseconds.
func (d *differ) leaseLength() time.Duration {
	l := time.Duration(30+d.rng.IntN(60)) * time.Second
	if d.rng.IntN(4) == 0 {
		l += d.micros(time.Second)
	}
	return l
}

func (d *differ) claim() {
	queues := slices.Clone(diffQueues)
	d.rng.Shuffle(len(queues), func(i, j int) { queues[i], queues[j] = queues[j], queues[i] })
	p := store.ClaimParams{Worker: d.worker(), Queues: queues[:1+d.rng.IntN(len(queues))], Limit: 1 + d.rng.IntN(5),
		LeaseDuration: d.leaseLength()}
	d.note("claim %s %v limit %d lease %v", p.Worker, p.Queues, p.Limit, p.LeaseDuration)
	res, _ := check(d, "claim", p, claimWithReopen)
	jobs := res.Jobs
	d.reached["claimed"] += len(jobs)
	if res.Reopen > 0 {
		d.reached["claims a Rate Limit stopped"]++
	}
	for _, j := range jobs {
		d.held = append(d.held, heldLease{worker: p.Worker, lease: j.Lease(), ceiling: j.Ceiling(), snoozes: j.Snoozes})
		d.told[j.Lease()] = j.CancelRequested
	}
}

// claimAnswer is what a claim answers: its jobs and its Reopen.
type claimAnswer struct {
	Jobs   []job.Job
	Reopen time.Duration
}

// claimWithReopen is JobClaim answering its Reopen too, so the
// differential run compares it.
func claimWithReopen(s store.Store, ctx context.Context, p store.ClaimParams) (claimAnswer, error) {
	var a claimAnswer
	p.Reopen = &a.Reopen
	jobs, err := s.JobClaim(ctx, p)
	a.Jobs = jobs
	return a, err
}

// someLeases picks up to n Leases for one worker: mostly ones it holds
// now (read from the reference's Running jobs), else any remembered one,
// most likely stale; now and then under the wrong worker, so the fence
// has work to do.
func (d *differ) someLeases(n int) (job.WorkerID, []heldLease) {
	if len(d.held) == 0 {
		return d.worker(), nil
	}
	running := d.refJobs(job.StateRunning)
	w := d.held[d.rng.IntN(len(d.held))].worker
	if len(running) > 0 {
		w = running[d.rng.IntN(len(running))].Worker
	}
	if d.rng.IntN(6) == 0 {
		w = d.worker()
	}
	var live []job.Job
	for _, j := range running {
		if j.Worker == w {
			live = append(live, j)
		}
	}
	var out []heldLease
	for range 1 + d.rng.IntN(n) {
		if len(live) > 0 && d.rng.IntN(4) != 0 {
			j := live[d.rng.IntN(len(live))]
			out = append(out, heldLease{worker: w, lease: j.Lease(), ceiling: j.Ceiling(), snoozes: j.Snoozes})
		} else {
			out = append(out, d.held[d.rng.IntN(len(d.held))])
		}
	}
	return w, out
}

func (d *differ) report() {
	w, picked := d.someLeases(4)
	p := store.ReportParams{Worker: w}
	for _, h := range picked {
		r := []core.Result{core.ResultSucceeded, core.ResultSucceeded, core.ResultFailed, core.ResultFailed,
			core.ResultFailedPermanently, core.ResultUnroutable, core.ResultSnoozed}[d.rng.IntN(7)]
		if r == core.ResultUnroutable && d.step%2 == 1 {
			// Both Quarantine causes, without a draw more (the draws of
			// older seeds keep their meaning).
			r = core.ResultUndecodable
		}
		policy := core.RetryPolicy{Initial: d.micros(20 * time.Second), Max: time.Minute, Multiplier: 2}
		info := core.AttemptInfo{Lease: h.lease, MaxAttempts: h.ceiling, CancelRequested: d.told[h.lease],
			Snoozes: h.snoozes, MaxSnoozes: 2, SnoozeDelay: d.micros(10 * time.Second)}
		o := store.Outcome{Outcome: core.Decide(info, r, policy)}
		switch {
		case r == core.ResultSnoozed:
			o.FailureDetail = fmt.Sprintf("snoozed at step %d", d.step)
		case r != core.ResultSucceeded:
			o.FailureDetail = fmt.Sprintf("failure at step %d: Ünicode ✓", d.step)
		case d.rng.IntN(4) == 0:
			o.Output = []byte{} // an empty Job Output is one
		case d.rng.IntN(2) == 0:
			o.Output = []byte(fmt.Sprint("out", d.step))
		}
		if d.rng.IntN(3) == 0 {
			o.TagDelta = append(d.tags(), job.Label("done"))
		}
		if d.rng.IntN(4) == 0 {
			o.Cursor = d.cursor() // a Cursor saved after the last renewal
		}
		p.Outcomes = append(p.Outcomes, o)
	}
	d.note("report %s %s", w, describeOutcomes(p.Outcomes))
	res, _ := check(d, "report", p, store.Store.OutcomeReport)
	for i, r := range res {
		if r.Applied {
			d.reached["applied "+p.Outcomes[i].State.String()]++
			if p.Outcomes[i].Via == core.ViaSnooze {
				d.reached["applied snooze"]++
			}
		} else {
			d.reached["stale outcomes"]++
		}
	}
}

func describeOutcomes(os []store.Outcome) string {
	out := make([]string, len(os))
	for i, o := range os {
		out[i] = fmt.Sprintf("%s->%s", o.Lease, o.State)
	}
	return fmt.Sprint(out)
}

func (d *differ) renew() {
	w, picked := d.someLeases(4)
	p := store.RenewParams{Worker: w, LeaseDuration: d.leaseLength()}
	for _, h := range picked {
		if !slices.Contains(p.Leases, h.lease) && d.rng.IntN(3) == 0 {
			p.Cursors = append(p.Cursors, store.CursorSave{Lease: h.lease, Value: d.cursor()})
		}
		p.Leases = append(p.Leases, h.lease)
	}
	d.note("renew %s %v by %v with %d cursors", w, p.Leases, p.LeaseDuration, len(p.Cursors))
	res, _ := check(d, "renew", p, store.Store.LeaseRenew)
	for _, r := range res {
		if r.Status == store.RenewCancelRequested {
			d.told[r.Lease] = true // the worker learns of the cancel here
		}
	}
}

// cursor draws a Cursor value: now and then an empty one, which is one.
func (d *differ) cursor() []byte {
	if d.rng.IntN(5) == 0 {
		return []byte{}
	}
	return []byte(fmt.Sprint("cursor ", d.step, " \x00\xff"))
}

func (d *differ) expire() {
	p := store.ExpireParams{Queues: diffQueues[:d.rng.IntN(len(diffQueues)+1)], Limit: d.rng.IntN(3)}
	d.note("expire %v limit %d", p.Queues, p.Limit)
	res, _ := check(d, "expire", p, store.Store.LeaseExpire)
	d.reached["expired"] += len(res.Expired)
}

func (d *differ) relinquish() {
	w, picked := d.someLeases(3)
	p := store.RelinquishParams{Worker: w}
	for _, h := range picked {
		p.Leases = append(p.Leases, h.lease)
	}
	d.note("relinquish %s %v", w, p.Leases)
	res, _ := check(d, "relinquish", p, store.Store.LeaseRelinquish)
	d.reached["relinquished"] += len(res.Relinquished)
}

func (d *differ) queueSetting() {
	q, a := d.queue(), d.actor()
	if d.keys && d.rng.IntN(3) == 0 {
		d.keySetting(q, a)
		return
	}
	switch d.rng.IntN(7) {
	case 5, 6:
		periods := []time.Duration{time.Second, 2 * time.Second, time.Minute}
		p := store.QueueSetRateParams{Queue: q, Actor: a,
			Rate: store.QueueRate{Limit: 1 + d.rng.IntN(4), Period: periods[d.rng.IntN(len(periods))]}}
		switch d.rng.IntN(10) {
		case 0:
			p.Rate = store.QueueRate{} // removed
		case 1:
			p.Rate.Period = time.Microsecond // invalid
		}
		d.note("rate %s %s", q, p.Rate)
		check(d, "rate "+q, p, errOnly(store.Store.QueueSetRate))
	case 0:
		d.note("pause %s", q)
		check(d, "pause "+q, store.QueueParams{Queue: q, Actor: a}, errOnly(store.Store.QueuePause))
	case 1, 2:
		d.note("resume %s", q)
		check(d, "resume "+q, store.QueueParams{Queue: q, Actor: a}, errOnly(store.Store.QueueResume))
	default:
		p := store.QueueSetLimitParams{Queue: q, Limit: max(0, d.rng.IntN(8)-3), Actor: a}
		if d.rng.IntN(30) == 0 {
			p.Limit = -1 // invalid
		}
		d.note("limit %s %d", q, p.Limit)
		check(d, "limit "+q, p, errOnly(store.Store.QueueSetLimit))
	}
}

// keySetting sets one of the Queue's key policy: a Key Limit (now and then
// above the Queue's Concurrency Limit, or invalid), a Key Rate or Fair
// Claim.
func (d *differ) keySetting(q string, a store.Actor) {
	switch d.rng.IntN(3) {
	case 0:
		p := store.QueueSetKeyLimitParams{Queue: q, Limit: max(0, d.rng.IntN(5)-1), Actor: a}
		if d.rng.IntN(30) == 0 {
			p.Limit = -1 // invalid
		}
		d.note("key limit %s %d", q, p.Limit)
		check(d, "key limit "+q, p, errOnly(store.Store.QueueSetKeyLimit))
	case 1:
		periods := []time.Duration{time.Second, time.Minute}
		p := store.QueueSetKeyRateParams{Queue: q, Actor: a,
			Rate: store.QueueRate{Limit: 1 + d.rng.IntN(3), Period: periods[d.rng.IntN(len(periods))]}}
		if d.rng.IntN(8) == 0 {
			p.Rate = store.QueueRate{} // removed
		}
		d.note("key rate %s %s", q, p.Rate)
		check(d, "key rate "+q, p, errOnly(store.Store.QueueSetKeyRate))
	default:
		p := store.QueueSetFairClaimParams{Queue: q, Fair: d.rng.IntN(3) != 0, Actor: a}
		d.note("fair claim %s %v", q, p.Fair)
		check(d, "fair claim "+q, p, errOnly(store.Store.QueueSetFairClaim))
	}
}

// cancel is the operator cancel of a waiting or Running job (or of any
// other). The script's worker learns of it at its next renewal, or now and
// then at once, as a Driver that was told another way would.
func (d *differ) cancel() {
	id := d.pickJob(job.StateScheduled, job.StateAwaitingParent, job.StateRunning)
	d.note("cancel %d", id)
	_, ok := check(d, fmt.Sprint("cancel ", id), store.JobCancelParams{ID: id, Actor: d.actor()}, store.Store.JobCancel)
	if ok {
		d.reached["operator cancels"]++
	}
	if ok && d.rng.IntN(2) == 0 {
		for _, h := range d.held {
			if h.lease.ID == id {
				d.told[h.lease] = true
			}
		}
	}
}

func (d *differ) requeue() {
	id := d.pickJob(job.StateDeadLettered, job.StateQuarantined)
	d.note("requeue %d", id)
	if _, ok := check(d, fmt.Sprint("requeue ", id), store.JobRequeueParams{ID: id, Actor: d.actor()}, store.Store.JobRequeue); ok {
		d.reached["requeued"]++
	}
}

// delete removes a terminal job, or is refused for a live one or one
// others still need (Operator.JobDelete).
func (d *differ) delete() {
	id := d.pickJob(job.StateSucceeded, job.StateDeadLettered, job.StateCancelled, job.StateQuarantined)
	d.note("delete %d", id)
	if _, ok := check(d, fmt.Sprint("delete ", id), store.JobDeleteParams{ID: id, Actor: d.actor()}, store.Store.JobDelete); ok {
		d.reached["deleted"]++
	}
}

// reschedule moves a waiting job's due time into the past or the future.
func (d *differ) reschedule() {
	id := d.pickJob(job.StateScheduled, job.StateAwaitingParent)
	at := d.refClock.Now().Add(d.micros(4*time.Minute) - 2*time.Minute)
	d.note("reschedule %d to %v", id, at)
	if _, ok := check(d, fmt.Sprint("reschedule ", id), store.JobRescheduleParams{ID: id, Actor: d.actor(), ScheduledAt: at}, store.Store.JobReschedule); ok {
		d.reached["rescheduled"]++
	}
}

// schedule upserts, pauses, resumes, removes or triggers a Recurring
// Schedule.
func (d *differ) schedule() {
	name, a := diffSchedules[d.rng.IntN(len(diffSchedules))], d.actor()
	switch n := d.rng.IntN(10); {
	case n < 4:
		def := d.scheduleDef(name)
		d.note("upsert %s %q zone %q catch-up %s no-overlap %t queue %s", name, def.Spec, def.Zone, def.CatchUp, def.NoOverlap, def.Template.Queue)
		if _, ok := check(d, "upsert "+name, store.ScheduleUpsertParams{Schedule: def}, store.Store.ScheduleUpsert); ok {
			d.defs[name] = def
		}
	case n < 5:
		d.note("pause schedule %s", name)
		check(d, "pause schedule "+name, store.ScheduleParams{Name: name, Actor: a}, errOnly(store.Store.SchedulePause))
	case n < 6:
		d.note("resume schedule %s", name)
		check(d, "resume schedule "+name, store.ScheduleParams{Name: name, Actor: a}, errOnly(store.Store.ScheduleResume))
	case n < 7:
		d.note("remove schedule %s", name)
		if _, ok := check(d, "remove schedule "+name, store.ScheduleParams{Name: name, Actor: a}, errOnly(store.Store.ScheduleRemove)); ok {
			delete(d.defs, name)
		}
	default:
		d.note("trigger %s", name)
		ref, got, ok := call(d, "trigger "+name, store.ScheduleTriggerParams{Name: name, Actor: a}, store.Store.ScheduleTrigger)
		if ok {
			d.ids.pair(d, []job.ID{ref}, []job.ID{got})
			d.reached["triggered"]++
			d.same("trigger "+name, ref, got)
		}
	}
}

// scheduleDef draws a definition for name: a fresh one, or the stored one
// again (an upsert that writes nothing) or with one field changed.
func (d *differ) scheduleDef(name string) store.ScheduleDef {
	if old, ok := d.defs[name]; ok && d.rng.IntN(2) == 0 {
		switch d.rng.IntN(4) {
		case 0:
			old.Spec = diffSpecs[d.rng.IntN(len(diffSpecs))]
		case 1:
			old.Template.MaxAttempts = 1 + d.rng.IntN(3)
		case 2:
			old.Zone = []string{"", "Europe/Berlin"}[d.rng.IntN(2)] // stored as given; plans read UTC
		}
		return old
	}
	def := store.ScheduleDef{
		Name:      name,
		Spec:      diffSpecs[d.rng.IntN(len(diffSpecs))],
		Template:  store.JobTemplate{WireName: "diff.scheduled", Queue: d.queue(), MaxAttempts: 1 + d.rng.IntN(3)},
		CatchUp:   core.CatchUpPolicy(d.rng.IntN(2)),
		NoOverlap: d.rng.IntN(2) == 0,
	}
	if d.rng.IntN(2) == 0 {
		def.Template.Payload = []byte(name)
		def.Template.Tags = append(d.tags(), job.Label("cron"))
	}
	return def
}

// mint is a maintenance beat: both stores list their schedules, the Core
// plans from the reference's list (the same as the adapter's, or the run
// has failed already), and both apply the plans — now and then with an
// earlier plan again, stale by its revision, or restamped with the current
// revision, so its occurrences are minted already.
func (d *differ) mint() {
	d.note("list schedules")
	list, ok := check(d, "schedules", struct{}{}, noParams(store.Store.ScheduleList))
	if !ok {
		return
	}
	set := core.MintSettings{
		MissedAfter:    []time.Duration{30 * time.Second, 2 * time.Minute, 10 * time.Minute}[d.rng.IntN(3)],
		MaxOccurrences: 1 + d.rng.IntN(3),
	}
	if d.rng.IntN(6) == 0 {
		// A beat that catches up on hours at once: a No-Overlap schedule
		// with a live instance skips each occurrence, past MaxSkipRecords
		// in a long run.
		set.MissedAfter, set.MaxOccurrences = 6*time.Hour, 200
	}
	if d.rng.IntN(3) == 0 {
		set.Lookahead = 90 * time.Second
	}
	var p store.MintParams
	for _, sc := range list.Schedules {
		if d.rng.IntN(5) == 0 {
			continue
		}
		expr, err := cron.Parse(sc.Spec)
		if err != nil {
			d.fatalf("stored Spec %q does not parse: %v", sc.Spec, err)
		}
		if plan, ok := core.PlanMint(sc.State(), utc{expr}, list.Now, set); ok {
			p.Plans = append(p.Plans, plan)
		}
	}
	if len(d.plans) > 0 && d.rng.IntN(3) == 0 {
		old := d.plans[d.rng.IntN(len(d.plans))]
		for _, sc := range list.Schedules {
			if sc.Name == old.Schedule && d.rng.IntN(2) == 0 {
				old.Revision = sc.Revision
			}
		}
		at := d.rng.IntN(len(p.Plans) + 1)
		p.Plans = slices.Insert(p.Plans, at, old)
	}
	d.note("mint %s", describePlans(p.Plans))
	ref, got, ok := call(d, "mint", p, store.Store.ScheduleMint)
	if !ok {
		return
	}
	var refIDs, gotIDs []job.ID
	for _, r := range ref {
		for _, m := range r.Jobs {
			refIDs = append(refIDs, m.ID)
		}
	}
	for _, r := range got {
		for _, m := range r.Jobs {
			gotIDs = append(gotIDs, m.ID)
		}
	}
	d.ids.pair(d, refIDs, gotIDs)
	d.same("mint", ref, got)
	d.reached["minted"] += len(refIDs)
	for i, r := range ref {
		if r.Applied {
			d.plans = append(d.plans, p.Plans[i])
		}
	}
}

func describePlans(plans []core.MintPlan) string {
	out := make([]string, len(plans))
	for i, pl := range plans {
		out[i] = fmt.Sprintf("%s@%d cursor %s mints %d skips %d", pl.Schedule, pl.Revision, pl.Cursor.Format(time.TimeOnly), len(pl.Mints), len(pl.Skips))
	}
	return fmt.Sprint(out)
}

// purge is a retention sweep. Which qualifying jobs a bounded batch takes is
// the store's choice (Retention.JobPurge), so a batch either has room for
// every job, or is the first of a sweep repeated until a batch purges
// nothing: the first batch purges min(Limit, qualifying) in both stores,
// and a whole sweep leaves the same jobs whatever each batch took.
func (d *differ) purge() {
	terminal := []job.State{job.StateSucceeded, job.StateDeadLettered, job.StateCancelled, job.StateQuarantined}
	var states []job.State
	for _, s := range terminal {
		if d.rng.IntN(2) == 0 {
			states = append(states, s)
		}
	}
	p := store.PurgeParams{
		States:  states,
		KeepFor: []time.Duration{0, 30 * time.Second, 2 * time.Minute, 10 * time.Minute}[d.rng.IntN(4)],
		Limit:   10_000,
	}
	if d.rng.IntN(2) == 0 {
		p.Limit = 1 + d.rng.IntN(3)
	}
	if jobs := d.refJobs(states...); len(states) > 0 && len(jobs) > 0 && d.rng.IntN(3) == 0 {
		// The horizon falls exactly on a job's FinalizedAt: "at or
		// before" keeps it in the batch.
		p.KeepFor = d.refClock.Now().Sub(jobs[d.rng.IntN(len(jobs))].FinalizedAt)
	}
	d.note("purge %v older than %v limit %d", p.States, p.KeepFor, p.Limit)
	first, ok := check(d, "purge", p, store.Store.JobPurge)
	d.reached["purged"] += first.Purged
	if !ok || first.Purged < p.Limit {
		return
	}
	ref, got := first.Purged, first.Purged
	sweep := func(s store.Store, total *int) {
		for range 10_000 {
			res, err := s.JobPurge(d.ctx, p)
			if err != nil {
				d.fatalf("purge sweep: %v", err)
			}
			if res.Purged == 0 {
				return
			}
			*total += res.Purged
		}
		d.fatalf("a purge sweep did not end")
	}
	sweep(d.ref, &ref)
	d.reached["purged"] += ref - first.Purged
	sweep(d.sut(), &got)
	if ref != got {
		d.fatalf("a purge sweep removed %d jobs from the reference, %d from the adapter", ref, got)
	}
}

// churnQueue is a Queue no other call claims from, so churn alone decides
// which of its jobs a claim takes.
const churnQueue = "churn"

// churn takes one job through enough requeued lives to pass
// TransitionLogCap, so the stores trim its Transition Log (past
// TransitionTrimAttempt): insert, then claim, fail at the ceiling or
// quarantine, and requeue, again and again.
func (d *differ) churn() {
	if d.reached["churned lives"] > 0 {
		return // once a run is enough, and each is a hundred calls
	}
	p := store.InsertManyParams{Jobs: []store.NewJob{{WireName: "diff.churn", Queue: churnQueue, MaxAttempts: 1}}}
	d.note("churn: insert")
	ref, got, ok := call(d, "churn insert", p, store.Store.JobInsertMany)
	if !ok {
		return
	}
	d.ids.pair(d, ref, got)
	lives := store.TransitionTrimAttempt + d.rng.IntN(10)
	for range lives {
		claim := store.ClaimParams{Worker: "w-churn", Queues: []string{churnQueue}, Limit: 1, LeaseDuration: time.Minute}
		jobs, _ := check(d, "churn claim", claim, store.Store.JobClaim)
		if len(jobs) != 1 {
			d.fatalf("churn claimed %d jobs, want 1", len(jobs))
		}
		j := jobs[0]
		r := []core.Result{core.ResultFailed, core.ResultUnroutable}[d.rng.IntN(2)]
		o := store.Outcome{Outcome: core.Decide(core.AttemptInfo{Lease: j.Lease(), MaxAttempts: j.Ceiling()}, r, core.RetryPolicy{Multiplier: 1}),
			FailureDetail: fmt.Sprint("churn attempt ", j.Attempt)}
		check(d, "churn report", store.ReportParams{Worker: claim.Worker, Outcomes: []store.Outcome{o}}, store.Store.OutcomeReport)
		check(d, "churn requeue", store.JobRequeueParams{ID: j.ID, Actor: d.actor()}, store.Store.JobRequeue)
	}
	d.reached["churned lives"] += lives
}

// diffNodes are the node registry ids the run stamps and removes.
var diffNodes = []string{"node-a.1", "node-B.2", "nöde.3"}

// node stamps, restamps or removes a node registry row, then lists the
// registry: the list is compared, liveness included, on the one clock. It
// draws from nodeRNG and nodeRoute only.
func (d *differ) node() {
	rng, route := d.rng, d.route
	d.rng, d.route = d.nodeRNG, d.nodeRoute
	defer func() { d.rng, d.route = rng, route }()
	id := diffNodes[d.rng.IntN(len(diffNodes))]
	if d.rng.IntN(4) == 0 {
		d.note("node remove %s", id)
		check(d, "node remove", id, errOnly(store.Store.NodeRemove))
	} else {
		beat := d.micros(time.Minute) + time.Microsecond
		p := store.NodeStampParams{ID: id, Host: "host", PID: d.rng.IntN(100), Version: "v", Running: d.rng.IntN(5),
			Beat: beat, Forget: store.NodeLiveBeats*beat + d.micros(time.Hour)}
		for i := range d.rng.IntN(3) {
			p.Groups = append(p.Groups, store.NodeGroup{Name: "g" + strconv.Itoa(i), Queues: []string{d.queue()}})
		}
		d.note("node stamp %s beat %v forget %v groups %v", id, p.Beat, p.Forget, p.Groups)
		check(d, "node stamp", p, store.Store.NodeStamp)
	}
	v, ok := check(d, "node list", struct{}{}, noParams(store.Store.NodeList))
	if ok {
		for _, r := range v.Nodes {
			if r.Live(v.Now) {
				d.reached["live nodes listed"]++
			} else {
				d.reached["expired nodes listed"]++
			}
		}
	}
}
