package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// timedStore counts and times BackWave's hot store calls (-calls): how many
// round trips a run made, how long each took, how many jobs each carried.
// It forwards Wake-Up Hints.
type timedStore struct {
	store.Store
	hints store.HintSource
	mu    sync.Mutex
	calls map[string]*callStat
}

type callStat struct {
	n     int
	jobs  int
	total time.Duration
	max   time.Duration
}

func newTimedStore(s store.Store) *timedStore {
	t := &timedStore{Store: s, calls: map[string]*callStat{}}
	t.hints, _ = s.(store.HintSource)
	return t
}

func (t *timedStore) record(name string, jobs int, d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := t.calls[name]
	if c == nil {
		c = &callStat{}
		t.calls[name] = c
	}
	c.n++
	c.jobs += jobs
	c.total += d
	c.max = max(c.max, d)
}

// SubscribeHints forwards to the wrapped store.
func (t *timedStore) SubscribeHints(fn func(queue string)) func() {
	if t.hints == nil {
		return func() {}
	}
	return t.hints.SubscribeHints(fn)
}

// JobInsertMany times the insert.
func (t *timedStore) JobInsertMany(ctx context.Context, p store.InsertManyParams) ([]job.ID, error) {
	t0 := time.Now()
	ids, err := t.Store.JobInsertMany(ctx, p)
	t.record("insert", len(p.Jobs), time.Since(t0))
	return ids, err
}

// JobInsertManyResults times the insert (Client.EnqueueMany's call).
func (t *timedStore) JobInsertManyResults(ctx context.Context, p store.InsertManyParams) ([]store.InsertResult, error) {
	t0 := time.Now()
	res, err := t.Store.JobInsertManyResults(ctx, p)
	t.record("insert", len(p.Jobs), time.Since(t0))
	return res, err
}

// JobClaim times the claim.
func (t *timedStore) JobClaim(ctx context.Context, p store.ClaimParams) ([]job.Job, error) {
	t0 := time.Now()
	jobs, err := t.Store.JobClaim(ctx, p)
	name := "claim"
	if len(jobs) == 0 {
		name = "claim (empty)"
	}
	t.record(name, len(jobs), time.Since(t0))
	return jobs, err
}

// OutcomeReport times the report.
func (t *timedStore) OutcomeReport(ctx context.Context, p store.ReportParams) ([]store.ReportResult, error) {
	t0 := time.Now()
	res, err := t.Store.OutcomeReport(ctx, p)
	t.record("report", len(p.Outcomes), time.Since(t0))
	return res, err
}

// LeaseRenew times the renewal.
func (t *timedStore) LeaseRenew(ctx context.Context, p store.RenewParams) ([]store.RenewResult, error) {
	t0 := time.Now()
	res, err := t.Store.LeaseRenew(ctx, p)
	t.record("renew", len(p.Leases), time.Since(t0))
	return res, err
}

// LeaseExpire times the sweep.
func (t *timedStore) LeaseExpire(ctx context.Context, p store.ExpireParams) (store.ExpireResult, error) {
	t0 := time.Now()
	res, err := t.Store.LeaseExpire(ctx, p)
	t.record("expire", len(res.Expired), time.Since(t0))
	return res, err
}

// print writes one line per call kind.
func (t *timedStore) print(w io.Writer, label string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	names := make([]string, 0, len(t.calls))
	for n := range t.calls {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := t.calls[n]
		fmt.Fprintf(w, "calls %s: %-14s n=%-6d jobs/call=%-7.1f mean=%-9v max=%v\n",
			label, n, c.n, float64(c.jobs)/float64(c.n), (c.total / time.Duration(c.n)).Round(time.Microsecond), c.max.Round(time.Microsecond))
	}
}
