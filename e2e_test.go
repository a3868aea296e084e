package backwave_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/memstore"
)

// The acceptance run: three nodes (three Clients, each its own Worker Group
// and Worker ids) share one store. Ten thousand jobs across three Queues all
// succeed; jobs that fail twice succeed on Attempt 3 after the retry policy's
// backoff; jobs that always fail dead-letter at the ceiling; and a node
// isolated from the store while its handler hangs loses the Lease, another
// node runs the job again, and the first node's late outcome is fenced out.
// Every Attempt's outcome applies exactly once (glossary: Effect-Once).

const (
	e2eJobs     = 10_000
	e2eFlaky    = 30
	e2eDoomed   = 30
	e2eCeiling  = 3
	e2eHangQ    = "hang"
	e2eLease    = 3 * time.Second
	e2eNodes    = 3
	e2eInitial  = 10 * time.Millisecond
	e2eDoomedQ  = "q3"
	e2eFlakyQ   = "q2"
	e2eDefaultQ = "q1"
)

var e2eQueues = []string{"q1", "q2", "q3"}

type okArgs struct{ N int }

func (okArgs) WireName() string { return "e2e.ok" }
func (okArgs) JobOptions() backwave.JobOptions {
	return backwave.JobOptions{Queue: e2eDefaultQ}
}

type flakyArgs struct{ N int }

func (flakyArgs) WireName() string { return "e2e.flaky" }
func (flakyArgs) JobOptions() backwave.JobOptions {
	return backwave.JobOptions{Queue: e2eFlakyQ, MaxAttempts: 5}
}

type doomedArgs struct{ N int }

func (doomedArgs) WireName() string { return "e2e.doomed" }
func (doomedArgs) JobOptions() backwave.JobOptions {
	return backwave.JobOptions{Queue: e2eDoomedQ, MaxAttempts: e2eCeiling}
}

type hangArgs struct{}

func (hangArgs) WireName() string { return "e2e.hang" }
func (hangArgs) JobOptions() backwave.JobOptions {
	return backwave.JobOptions{Queue: e2eHangQ, MaxAttempts: 5}
}

// outcomes counts, per Lease, the reported outcomes the store applied and
// the ones its fence rejected.
type outcomes struct {
	mu    sync.Mutex
	count map[job.Lease]*[2]int // [applied, stale]
}

func (o *outcomes) record(res []store.ReportResult) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range res {
		c := o.count[r.Lease]
		if c == nil {
			c = new([2]int)
			o.count[r.Lease] = c
		}
		if r.Applied {
			c[0]++
		} else {
			c[1]++
		}
	}
}

func (o *outcomes) get(l job.Lease) (applied, stale int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if c := o.count[l]; c != nil {
		return c[0], c[1]
	}
	return 0, 0
}

// partition is the fault: the node that claims Attempt 1 of the hang job is
// cut off from the store for that job — its renewals fail and it claims
// nothing more from the hang Queue — while its other traffic flows.
type partition struct {
	mu     sync.Mutex
	id     job.ID
	holder string
}

func (p *partition) isolated(node string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.holder == node
}

// nodeStore is one node's view of the shared store: it records outcomes and
// applies the partition.
type nodeStore struct {
	*memstore.Store
	name string
	rec  *outcomes
	part *partition
}

func (n *nodeStore) JobClaim(ctx context.Context, p store.ClaimParams) ([]job.Job, error) {
	if n.part.isolated(n.name) {
		p.Queues = slices.DeleteFunc(slices.Clone(p.Queues), func(q string) bool { return q == e2eHangQ })
		if len(p.Queues) == 0 {
			return nil, nil
		}
	}
	jobs, err := n.Store.JobClaim(ctx, p)
	for _, j := range jobs {
		if j.ID == n.part.id && j.Attempt == 1 {
			n.part.mu.Lock()
			n.part.holder = n.name
			n.part.mu.Unlock()
		}
	}
	return jobs, err
}

func (n *nodeStore) LeaseRenew(ctx context.Context, p store.RenewParams) ([]store.RenewResult, error) {
	if n.part.isolated(n.name) && slices.Contains(p.Leases, job.Lease{ID: n.part.id, Attempt: 1}) {
		return nil, errors.New("e2e: network partition")
	}
	return n.Store.LeaseRenew(ctx, p)
}

func (n *nodeStore) OutcomeReport(ctx context.Context, p store.ReportParams) ([]store.ReportResult, error) {
	res, err := n.Store.OutcomeReport(ctx, p)
	if err == nil {
		n.rec.record(res)
	}
	return res, err
}

func TestEndToEndThreeNodes(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) { runEndToEnd(t) })
}

func runEndToEnd(t *testing.T) {
	ctx := context.Background()
	shared := newStore()
	rec := &outcomes{count: make(map[job.Lease]*[2]int)}
	part := &partition{}
	release := make(chan struct{})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()

	var (
		okRuns    [e2eJobs + e2eFlaky + e2eDoomed + 2]atomic.Int32
		startsMu  sync.Mutex
		starts    = make(map[job.ID][]time.Time) // flaky Attempt start times
		hangRuns  atomic.Int32
		flakyPol  = backwave.RetryPolicy{Initial: e2eInitial, Max: time.Second, Multiplier: 2, Jitter: 0.2}
		clientPol = backwave.RetryPolicy{Initial: 20 * time.Millisecond, Max: time.Second, Multiplier: 2, Jitter: 0.2}
	)
	workers := func() *backwave.Handlers {
		w := backwave.NewHandlers()
		must(t, backwave.AddHandlerFunc(w, func(ctx context.Context, j *backwave.Job[okArgs]) error {
			okRuns[j.ID].Add(1)
			return nil
		}))
		must(t, backwave.AddHandlerFunc(w, func(ctx context.Context, j *backwave.Job[flakyArgs]) error {
			startsMu.Lock()
			starts[j.ID] = append(starts[j.ID], time.Now())
			startsMu.Unlock()
			if j.Attempt <= 2 {
				return fmt.Errorf("flaky: attempt %d fails", j.Attempt)
			}
			return nil
		}, backwave.WithRetryPolicy(flakyPol)))
		must(t, backwave.AddHandlerFunc(w, func(ctx context.Context, j *backwave.Job[doomedArgs]) error {
			return errors.New("doomed: always fails")
		}))
		must(t, backwave.AddHandlerFunc(w, func(ctx context.Context, j *backwave.Job[hangArgs]) error {
			hangRuns.Add(1)
			if j.Attempt == 1 {
				<-release // hangs past its Lease, deaf to ctx
			}
			return nil
		}))
		return w
	}
	policies := []backwave.DispatchPolicy{
		backwave.Strict("q1", "q2", "q3", e2eHangQ),
		backwave.Weighted(
			backwave.QueueWeight{Queue: "q1", Weight: 1}, backwave.QueueWeight{Queue: "q2", Weight: 2},
			backwave.QueueWeight{Queue: "q3", Weight: 1}, backwave.QueueWeight{Queue: e2eHangQ, Weight: 1}),
		backwave.Strict("q3", "q2", "q1", e2eHangQ),
	}

	// Enqueue first, so every node sees the whole backlog on its first poll.
	inserter, err := backwave.NewClient(shared, backwave.Config{})
	must(t, err)
	hangID, err := inserter.Enqueue(ctx, hangArgs{})
	must(t, err)
	part.id = hangID
	var params []backwave.EnqueueParams
	for i := range e2eJobs {
		params = append(params, backwave.EnqueueParams{Args: okArgs{i}, Options: []backwave.EnqueueOption{backwave.WithQueue(e2eQueues[i%3])}})
	}
	for i := range e2eFlaky {
		params = append(params, backwave.EnqueueParams{Args: flakyArgs{i}})
	}
	for i := range e2eDoomed {
		params = append(params, backwave.EnqueueParams{Args: doomedArgs{i}})
	}
	ids, err := inserter.EnqueueMany(ctx, params)
	must(t, err)
	flakyIDs := ids[e2eJobs : e2eJobs+e2eFlaky]
	doomedIDs := ids[e2eJobs+e2eFlaky:]

	clients := make([]*backwave.Client, e2eNodes)
	for i := range clients {
		name := fmt.Sprintf("node%d", i+1)
		c, err := backwave.NewClient(&nodeStore{Store: shared, name: name, rec: rec, part: part}, backwave.Config{
			Handlers:    workers(),
			NodeID:      name,
			RetryPolicy: clientPol,
			Logger:      testLogger(t, slog.LevelError).With("node", name),
			Groups: []backwave.WorkerGroupOptions{{
				Name:                "g",
				Policy:              policies[i],
				PoolSize:            40,
				LeaseDuration:       e2eLease,
				PollInterval:        100 * time.Millisecond,
				MaintenanceInterval: 500 * time.Millisecond,
				Pumps:               1 + i%2, // node2 runs two Pumps
			}},
		})
		must(t, err)
		must(t, c.Start(ctx))
		clients[i] = c
	}

	// Phase 1: everything ends; the hang job through its second Attempt.
	wantSucceeded := e2eJobs + e2eFlaky + 1
	waitFor(t, "every job terminal", func() bool {
		n, err := shared.JobCountByState(ctx, store.CountParams{})
		must(t, err)
		return n[job.StateSucceeded] == wantSucceeded && n[job.StateDeadLettered] == e2eDoomed
	})
	// Phase 2: the isolated node's hung Attempt returns; its outcome must be
	// fenced out.
	close(release)
	hungLease := job.Lease{ID: hangID, Attempt: 1}
	waitFor(t, "the late outcome reported", func() bool {
		_, stale := rec.get(hungLease)
		return stale > 0
	})
	for _, c := range clients {
		must(t, c.Stop(ctx))
	}

	n, err := shared.JobCountByState(ctx, store.CountParams{})
	must(t, err)
	if len(n) != 2 || n[job.StateSucceeded] != wantSucceeded || n[job.StateDeadLettered] != e2eDoomed {
		t.Errorf("final counts %v, want %d succeeded and %d dead-lettered", n, wantSucceeded, e2eDoomed)
	}

	// The hang job: lost by the isolated node, re-run and succeeded by
	// another, the late outcome rejected.
	hj := getJob(t, shared, hangID)
	if hj.State != job.StateSucceeded || hj.Attempt != 2 || hj.RetryCause != job.RetryCauseLeaseExpired {
		t.Errorf("hang job: %s at Attempt %d cause %q; want succeeded at 2, lease_expired", hj.State, hj.Attempt, hj.RetryCause)
	}
	if applied, stale := rec.get(hungLease); applied != 0 || stale != 1 {
		t.Errorf("hung Attempt's outcome: applied %d, stale %d; want 0 and 1", applied, stale)
	}
	if applied, _ := rec.get(job.Lease{ID: hangID, Attempt: 2}); applied != 1 {
		t.Errorf("second Attempt's outcome applied %d times, want 1", applied)
	}
	if got := hangRuns.Load(); got != 2 {
		t.Errorf("hang handler ran %d times, want 2", got)
	}

	// Flaky jobs: Attempt 3, with the policy's backoff between Attempts.
	for _, id := range flakyIDs {
		j := getJob(t, shared, id)
		if j.State != job.StateSucceeded || j.Attempt != 3 || j.RetryCause != job.RetryCauseHandlerFailed {
			t.Errorf("flaky job %d: %s at Attempt %d cause %q", id, j.State, j.Attempt, j.RetryCause)
			continue
		}
		st := starts[id]
		for a := 1; a < len(st); a++ {
			if gap, min := st[a].Sub(st[a-1]), flakyPol.Delay(id, job.Attempt(a)); gap < min {
				t.Errorf("flaky job %d: Attempt %d started %v after Attempt %d, before the %v backoff", id, a+1, gap, a, min)
			}
		}
	}
	// Doomed jobs: Dead-Lettered at the ceiling.
	for _, id := range doomedIDs {
		if j := getJob(t, shared, id); j.State != job.StateDeadLettered || j.Attempt != e2eCeiling {
			t.Errorf("doomed job %d: %s at Attempt %d, want dead_lettered at %d", id, j.State, j.Attempt, e2eCeiling)
		}
	}
	// At-least-once: every ok job ran (exactly once here: no Lease lapsed).
	for _, id := range ids[:e2eJobs] {
		if r := okRuns[id].Load(); r != 1 {
			t.Errorf("ok job %d ran %d times", id, r)
			break
		}
	}

	// Effect-Once, from both sides: no reported outcome applied twice, and
	// the Transition Log ends every Attempt exactly once.
	rec.mu.Lock()
	for l, c := range rec.count {
		if c[0] > 1 {
			t.Errorf("outcome of %s applied %d times", l, c[0])
		}
	}
	rec.mu.Unlock()
	all := append([]job.ID{hangID}, ids...)
	for _, id := range all {
		checkOneEndPerAttempt(t, shared, id)
	}
}

// checkOneEndPerAttempt asserts that each Attempt of the job was claimed once
// and ended once (an applied outcome or a lease expiry) in its Transition Log.
func checkOneEndPerAttempt(t *testing.T, st *memstore.Store, id job.ID) {
	t.Helper()
	claims := make(map[job.Attempt]int)
	ends := make(map[job.Attempt]int)
	var last job.Attempt
	for _, tr := range transitions(t, st, id) {
		switch tr.Via {
		case core.ViaClaim:
			claims[tr.Attempt]++
			last = max(last, tr.Attempt)
		case core.ViaSucceed, core.ViaRetry, core.ViaDeadLetter, core.ViaQuarantine, core.ViaCancel, core.ViaExpire, core.ViaRelinquish:
			ends[tr.Attempt]++
		}
	}
	for a := job.Attempt(1); a <= last; a++ {
		if claims[a] != 1 || ends[a] != 1 {
			t.Errorf("job %d Attempt %d: claimed %d times, ended %d times; want once each", id, a, claims[a], ends[a])
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
