package storetest

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// The reads of a differential run: the Monitor's, History's,
// Dependencies' and Schedules' reads a call may make, the final comparison
// of everything both stores hold, and the reads of the reference the calls
// pick their targets from.

// read makes one of the Monitor's, History's, Dependencies' or Schedules'
// reads.
func (d *differ) read() {
	switch d.rng.IntN(12) {
	case 0:
		id := d.pickJob()
		d.note("get %d", id)
		check(d, fmt.Sprint("get ", id), id, store.Store.JobGet)
	case 1, 2:
		p := store.JobListParams{JobFilter: d.filter(), Limit: 1 + d.rng.IntN(20)}
		if d.rng.IntN(2) == 0 {
			p.BeforeID = job.ID(1 + d.rng.IntN(int(d.ids.maxRef)+2))
		}
		d.note("list %+v", p)
		check(d, "list", p, store.Store.JobList)
	case 3:
		d.note("counts by queue")
		check(d, "counts by queue", struct{}{}, noParams(store.Store.JobCountByQueue))
		p := store.CountParams{Queue: []string{"", d.queue()}[d.rng.IntN(2)]}
		check(d, "counts", p, store.Store.JobCountByState)
	case 4:
		p := store.TagFacetParams{JobFilter: d.filter(), Limit: d.rng.IntN(5)}
		d.note("tag facet %+v", p)
		check(d, "tag facet", p, store.Store.TagFacet)
	case 5:
		prefixes := []string{"", "t", "T1", "K", "k=", "k=0", "d", "SCHED", "cr", "ä", "ÄR", "team=ø"}
		p := store.TagSuggestParams{Prefix: prefixes[d.rng.IntN(len(prefixes))], Limit: d.rng.IntN(6)}
		d.note("tag suggest %+v", p)
		check(d, "tag suggest", p, store.Store.TagSuggest)
	case 6:
		p := store.AuditListParams{Limit: 1 + d.rng.IntN(10)}
		switch d.rng.IntN(3) {
		case 0:
			p.JobID = d.pickJob()
		case 1:
			p.Queue = d.queue()
		}
		d.note("audit list %+v", p)
		check(d, "audit list", p, store.Store.AuditList)
	case 7:
		id := d.pickJob(job.StateAwaitingParent, job.StateScheduled, job.StateSucceeded, job.StateCancelled)
		d.note("dependencies of %d", id)
		check(d, fmt.Sprint("dependencies of ", id), id, store.Store.JobDependencies)
	case 8:
		d.ancestorOutput()
	case 9:
		p := store.OccurrenceListParams{Schedule: diffSchedules[d.rng.IntN(len(diffSchedules))], Limit: 1 + d.rng.IntN(5)}
		if d.rng.IntN(2) == 0 {
			p.Kinds = []store.OccurrenceKind{store.OccurrenceKind(1 + d.rng.IntN(4))}
		}
		d.note("occurrences %+v", p)
		check(d, "occurrences", p, store.Store.ScheduleOccurrences)
	case 10:
		if d.keys && d.rng.IntN(2) == 0 {
			p := store.QueueKeysParams{Queue: d.queue(), Limit: d.rng.IntN(4)}
			d.note("queue keys %+v", p)
			check(d, "queue keys", p, store.Store.QueueKeys)
			return
		}
		id := d.pickJob()
		d.note("transitions of %d", id)
		check(d, fmt.Sprint("transitions of ", id), id, transitionsNoSeq)
	default:
		id := d.pickJob(job.StateSucceeded)
		d.note("output of %d", id)
		check(d, fmt.Sprint("output of ", id), id, store.Store.JobOutput)
	}
}

// filter draws a JobFilter of a field or two.
func (d *differ) filter() store.JobFilter {
	var f store.JobFilter
	if d.rng.IntN(2) == 0 {
		f.States = []job.State{job.States[d.rng.IntN(len(job.States))]}
	}
	if d.rng.IntN(3) == 0 {
		f.Queue = d.queue()
	}
	if d.rng.IntN(4) == 0 {
		f.Tags = []job.Tag{append(diffTags, job.Label("done"), job.Keyed(store.ScheduleTagKey, "s1"))[d.rng.IntN(len(diffTags)+2)]}
	}
	if d.rng.IntN(6) == 0 {
		f.Retrying = true
	}
	if d.rng.IntN(6) == 0 {
		f.WireName = "diff.scheduled"
	}
	if jobs := d.refJobs(); len(jobs) > 0 && d.rng.IntN(4) == 0 {
		// The bounds fall on creation times: From keeps, To drops a job
		// created exactly there.
		a, b := jobs[d.rng.IntN(len(jobs))].CreatedAt, jobs[d.rng.IntN(len(jobs))].CreatedAt
		if b.Before(a) {
			a, b = b, a
		}
		f.CreatedFrom, f.CreatedTo = a, b
		if d.rng.IntN(2) == 0 {
			f.CreatedTo = time.Time{}
		}
	}
	return f
}

// ancestorOutput reads, for a job with parents, the output of a parent, a
// farther ancestor or a job that is none.
func (d *differ) ancestorOutput() {
	jobs := d.refJobs()
	var withParents []store.DependencyInfo
	var of []job.ID
	for _, j := range jobs {
		info, err := d.ref.JobDependencies(d.ctx, j.ID)
		if err != nil {
			d.fatalf("reference JobDependencies(%d): %v", j.ID, err)
		}
		if len(info.Parents) > 0 {
			withParents, of = append(withParents, info), append(of, j.ID)
		}
	}
	p := store.AncestorOutputParams{Job: d.pickJob(), Ancestor: d.pickJob()}
	if len(of) > 0 && d.rng.IntN(4) != 0 {
		i := d.rng.IntN(len(of))
		p.Job = of[i]
		p.Ancestor = withParents[i].Parents[d.rng.IntN(len(withParents[i].Parents))].ID
		if up, err := d.ref.JobDependencies(d.ctx, p.Ancestor); err == nil && len(up.Parents) > 0 && d.rng.IntN(2) == 0 {
			p.Ancestor = up.Parents[0].ID // a grandparent
		}
	}
	d.note("ancestor output %+v", p)
	check(d, "ancestor output", p, store.Store.JobAncestorOutput)
}

// compareState requires both stores to hold the same jobs, Queues, counts,
// Tags, Transition Logs, Job Output, Dependency edges, schedules,
// occurrence records and audit trail, and the counts to agree with the
// jobs.
func (d *differ) compareState() {
	d.t.Helper()
	d.step = -1
	d.note("final state")
	jobs, _ := check(d, "every job", store.JobListParams{Limit: 10_000}, store.Store.JobList)
	counts, _ := check(d, "counts", store.CountParams{}, store.Store.JobCountByState)
	tally := map[job.State]int{}
	for _, j := range jobs {
		tally[j.State]++
	}
	if !reflect.DeepEqual(rewrite(reflect.ValueOf(counts), nil, true).Interface(), rewrite(reflect.ValueOf(tally), nil, true).Interface()) {
		d.fatalf("counts %v disagree with the %d jobs listed (%v)", counts, len(jobs), tally)
	}
	for _, q := range diffQueues {
		check(d, "counts of "+q, store.CountParams{Queue: q}, store.Store.JobCountByState)
	}
	check(d, "counts by queue", struct{}{}, noParams(store.Store.JobCountByQueue))
	check(d, "queues", struct{}{}, noParams(store.Store.QueueList))
	if d.keys {
		for _, q := range diffQueues {
			check(d, "keys of "+q, store.QueueKeysParams{Queue: q, Limit: store.MaxQueueKeys}, store.Store.QueueKeys)
		}
	}
	check(d, "tag facet", store.TagFacetParams{Limit: 1000}, store.Store.TagFacet)
	check(d, "tag suggest", store.TagSuggestParams{Limit: 1000}, store.Store.TagSuggest)
	check(d, "audit trail", store.AuditListParams{Limit: 10_000}, store.Store.AuditList)
	check(d, "schedules", struct{}{}, noParams(store.Store.ScheduleList))
	for _, name := range diffSchedules {
		occ, _ := check(d, "occurrences of "+name, store.OccurrenceListParams{Schedule: name, Limit: 10_000}, store.Store.ScheduleOccurrences)
		d.reached["occurrence records"] += len(occ)
	}
	listed := map[job.ID]bool{}
	for _, j := range jobs {
		listed[j.ID] = true
		check(d, fmt.Sprint("Transition Log of job ", j.ID), j.ID, transitionsNoSeq)
		check(d, fmt.Sprint("output of job ", j.ID), j.ID, store.Store.JobOutput)
		check(d, fmt.Sprint("dependencies of job ", j.ID), j.ID, store.Store.JobDependencies)
	}
	for id := job.ID(1); id <= d.ids.maxRef+1; id++ {
		if !listed[id] {
			check(d, fmt.Sprint("purged job ", id), id, store.Store.JobGet)
		}
	}
	for _, j := range jobs {
		if j.CancelCause == job.CancelCauseParentFailure {
			d.reached["cancelled by a parent"]++
		}
	}
	d.t.Logf("%d ops, %d jobs, counts %v; reached %v", len(d.trail)-1, len(jobs), counts, d.reached)
}

// refJobs lists the reference's jobs in the given states (every job when
// none is given), to pick the targets of calls from.
func (d *differ) refJobs(states ...job.State) []job.Job {
	d.t.Helper()
	jobs, err := d.ref.JobList(d.ctx, store.JobListParams{JobFilter: store.JobFilter{States: states}, Limit: 10_000})
	if err != nil {
		d.fatalf("reference JobList: %v", err)
	}
	return jobs
}

// pickJob returns the id of a reference job in one of states, or, now and
// then or when there is none, any id up to just past the highest: a job in
// another state, a purged one or one never made.
func (d *differ) pickJob(states ...job.State) job.ID {
	if jobs := d.refJobs(states...); len(jobs) > 0 && d.rng.IntN(6) != 0 {
		return jobs[d.rng.IntN(len(jobs))].ID
	}
	return job.ID(1 + d.rng.IntN(int(d.ids.maxRef)+2))
}

// transitionsNoSeq reads a Transition Log without its Seq numbers: each
// store numbers its own log (a PostgreSQL sequence skips the numbers of a
// rolled-back transaction), so only the entries compare.
func transitionsNoSeq(s store.Store, ctx context.Context, id job.ID) ([]store.Transition, error) {
	log, err := s.JobTransitions(ctx, id)
	for i := range log {
		log[i].Seq = 0
	}
	return log, err
}
