package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// Backing is an implementation of the Storage Contract a run can drive
// through NewFeedStore: every interface a Store serves but the transition
// feed, the Wake-Up Hints and the restart, which the FeedStore adds. Every
// Storage Adapter is one (the SQL adapters replay Plans through it); so is
// the In-Memory Store opened without a transition callback.
type Backing interface {
	store.Inserter
	store.Worker
	store.Queues
	store.Monitor
	store.Operator
	store.Dependencies
	store.Workflows
	store.Schedules
	store.Retention
	store.Observers
	store.Fleet
}

// FeedOptions tune a FeedStore.
type FeedOptions struct {
	// Reopen stands for a restart of the store (Store.Restart): it closes
	// the backing store and opens it again on the same data, returning the
	// reopened one. Closing and opening are I/O, so the caller supplies
	// them. Required.
	Reopen func() (Backing, error)
	// Settle, if set, is called before each read of the feed. A store
	// whose walk may lag behind its own commits (the PostgreSQL adapter's
	// horizon is the cluster's: another database's open transaction holds
	// it back) waits here until every committed entry is readable, so the
	// feed still arrives before the call returns.
	Settle func() error
}

// FeedObserver is the observer name a FeedStore walks the Transition Log
// under. A run's own Transition Observers never take it.
const FeedObserver = "backwave.sim.feed"

const (
	feedHolder job.WorkerID = "sim.feed"
	// feedLease is the feed walk's Lease: far past any run's Virtual Time,
	// though a lapsed one is only taken again.
	feedLease = 10_000 * time.Hour
	feedBatch = 1000
)

// ErrPlantInStore answers NewFeedStore for a Scenario whose planted bug
// lives in the store (plant.Bug.InStore): only the In-Memory Store plants
// one.
var ErrPlantInStore = errors.New("the planted bug lives in memstore only")

// FeedStore makes any Backing a run's Store, from the Storage Contract
// alone:
//
//   - The transition feed is one walk of the Transition Log in the store's
//     commit order (store.Observers, under FeedObserver), read after every
//     call that may move a job and delivered before the call returns: the
//     store's own order across jobs, as memstore's callback feeds it.
//   - Wake-Up Hints follow the rule Store documents (memstore's), from
//     what the feed delivered: after a call, each Queue of a job that left
//     Running, was released by its Dependency latch, requeued or
//     reanimated by a Workflow Retry into Scheduled, of a new job due at
//     once, or that the call names (a resume, a new Concurrency Limit or
//     Rate Limit, a reschedule) — if, read through the Monitor contract,
//     the Queue is not paused, is under its Concurrency Limit and holds a
//     job claimable now (a spent Rate Limit window is hinted: the claim
//     it starts learns when the window reopens). The backing store's own hints are never heard: they
//     name other Queues (a report hints its Queue whether or not anything
//     there is claimable), and hints steer when nodes poll.
//   - Restart is FeedOptions.Reopen; the hint subscribers are dropped,
//     the walk's cursor is durable in the store.
//
// A purge steps out of the walk for the call (ObserverRemove, then a new
// registration read past what was delivered), so that the feed's own
// cursor never keeps a job the run expects purged: a store may keep the
// job of the entry a live cursor stands on (store.Observers).
type FeedStore struct {
	Backing
	ctx   context.Context
	env   StoreEnv
	opts  FeedOptions
	hub   *store.HintHub
	last  store.ObserverPosition
	token int64
	held  bool

	// queues is each delivered job's Queue; candidates the current call's.
	queues     map[job.ID]string
	candidates []string
	inserted   []job.ID
	// delivered and hinted count what the feed delivered and the hints
	// the rule gave.
	delivered, hinted int
}

var _ Store = (*FeedStore)(nil)

// NewFeedStore makes b a Store for a run handed env.
func NewFeedStore(b Backing, env StoreEnv, opts FeedOptions) (*FeedStore, error) {
	if env.Mutation.InStore() {
		return nil, fmt.Errorf("%w: %s", ErrPlantInStore, env.Mutation)
	}
	if opts.Reopen == nil {
		return nil, errors.New("sim: a FeedStore needs FeedOptions.Reopen")
	}
	s := &FeedStore{Backing: b, ctx: context.Background(), env: env, opts: opts, hub: new(store.HintHub), queues: map[job.ID]string{}}
	if err := s.read(); err != nil {
		return nil, fmt.Errorf("sim: the store's Transition Log: %w", err)
	}
	return s, nil
}

// Delivered returns how many state changes the feed delivered.
func (s *FeedStore) Delivered() int { return s.delivered }

// Hinted returns how many Wake-Up Hints the rule announced.
func (s *FeedStore) Hinted() int { return s.hinted }

// SubscribeHints subscribes to the hints of the Simulator's rule.
func (s *FeedStore) SubscribeHints(fn func(queue string)) (unsubscribe func()) {
	return s.hub.Subscribe(fn)
}

// Restart reopens the backing store; the hint subscribers are dropped.
func (s *FeedStore) Restart() error {
	b, err := s.opts.Reopen()
	if err != nil {
		return err
	}
	s.Backing, s.hub, s.held = b, new(store.HintHub), false
	return nil
}

// Verify reports a state change the feed has not delivered: one more read
// must find nothing new, or some call moved a job the FeedStore let pass
// without reading.
func (s *FeedStore) Verify() error {
	n := s.delivered
	if err := s.read(); err != nil {
		return err
	}
	if n != s.delivered {
		return fmt.Errorf("the Transition Log held %d entries the feed had not delivered: a call moved them unseen", s.delivered-n)
	}
	return nil
}

// read walks the Transition Log past the last entry delivered and feeds
// each new entry, in the walk's order.
func (s *FeedStore) read() error {
	if s.opts.Settle != nil {
		if err := s.opts.Settle(); err != nil {
			return err
		}
	}
	for {
		res, err := s.Backing.ObserverClaim(s.ctx, store.ObserverClaimParams{
			Observer: FeedObserver, Holder: feedHolder, LeaseDuration: feedLease, States: job.States, Limit: feedBatch,
		})
		if err != nil {
			return err
		}
		if !res.Held {
			return fmt.Errorf("the walk %q is held by another holder", FeedObserver)
		}
		s.token, s.held = res.Token, true
		for _, t := range res.Transitions {
			if !s.last.Before(t.Position) {
				continue // delivered before a purge re-registered the walk
			}
			s.last = t.Position
			s.deliver(t)
		}
		if res.Cursor.Before(res.Through) {
			err := s.Backing.ObserverAdvance(s.ctx, store.ObserverAdvanceParams{
				Observer: FeedObserver, Holder: feedHolder, Token: res.Token, To: res.Through, LeaseDuration: feedLease,
			})
			if err != nil {
				return err
			}
		}
		if !res.More {
			return nil
		}
	}
}

// deliver feeds one entry and notes the Queue it may leave claimable.
func (s *FeedStore) deliver(t store.ObservedTransition) {
	s.delivered++
	if t.Queue != "" {
		s.queues[t.Job] = t.Queue
	}
	s.env.Feed(t.Job, t.Edge(), t.Attempt)
	q := s.queues[t.Job]
	switch {
	case t.From == job.StateUnknown && t.State == job.StateScheduled:
		s.inserted = append(s.inserted, t.Job)
	case t.From == job.StateRunning, t.Via == core.ViaRelease, t.Via == core.ViaRequeue,
		t.Via == core.ViaWorkflowRetry && t.State == job.StateScheduled:
		s.candidates = append(s.candidates, q)
	}
}

// after ends one call that succeeded: it feeds the call's state changes
// and announces the hints of the Simulator's rule, with named the Queues
// the call names.
func (s *FeedStore) after(named ...string) error {
	s.candidates = append(s.candidates[:0], named...)
	s.inserted = s.inserted[:0]
	if err := s.read(); err != nil {
		return fmt.Errorf("sim: the transition feed: %w", err)
	}
	if !s.hub.Active() {
		return nil
	}
	now := s.env.Clock.Now()
	for _, id := range s.inserted {
		j, err := s.Backing.JobGet(s.ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if core.Claimable(&j, now) {
			s.candidates = append(s.candidates, j.Queue)
		}
	}
	return s.hint(now)
}

// hint announces, in name order, each candidate Queue that is not paused,
// is under its Concurrency Limit and holds a job claimable at now.
func (s *FeedStore) hint(now time.Time) error {
	if len(s.candidates) == 0 {
		return nil
	}
	slices.Sort(s.candidates)
	cands := slices.Compact(s.candidates)
	infos, err := s.Backing.QueueList(s.ctx)
	if err != nil {
		return err
	}
	var out []string
	for _, name := range cands {
		i := slices.IndexFunc(infos, func(q store.QueueInfo) bool { return q.Name == name })
		if i < 0 || infos[i].Paused || (infos[i].Limit > 0 && infos[i].Running >= infos[i].Limit) {
			continue
		}
		// A spent Rate Limit window is hinted all the same, as memstore
		// does: the claim it starts learns when the window reopens.
		ok, err := s.claimable(name, now)
		if err != nil {
			return err
		}
		if ok {
			out = append(out, name)
		}
	}
	s.hinted += len(out)
	s.hub.Announce(out)
	return nil
}

// claimable reports whether the Queue holds a job claimable at now.
func (s *FeedStore) claimable(queue string, now time.Time) (bool, error) {
	p := store.JobListParams{JobFilter: store.JobFilter{States: []job.State{job.StateScheduled}, Queue: queue}}
	for {
		page, err := s.Backing.JobList(s.ctx, p)
		if err != nil || len(page) == 0 {
			return false, err
		}
		for i := range page {
			if core.Claimable(&page[i], now) {
				return true, nil
			}
		}
		p.BeforeID = page[len(page)-1].ID
	}
}

// fed ends a call that answered v: its error, or after's.
func fed[T any](s *FeedStore, v T, err error, named ...string) (T, error) {
	if err != nil {
		return v, err
	}
	return v, s.after(named...)
}

// fedErr is fed for a call that answers only an error.
func fedErr(s *FeedStore, err error, named ...string) error {
	_, err = fed(s, struct{}{}, err, named...)
	return err
}

// The calls that may move a job or name a Queue to hint: each is the
// backing store's call, then after. The rest (renewals, pauses, schedule
// settings, reads) move no job and hint nothing, and pass through.

// JobInsertMany feeds the inserted jobs.
func (s *FeedStore) JobInsertMany(ctx context.Context, p store.InsertManyParams) ([]job.ID, error) {
	ids, err := s.Backing.JobInsertMany(ctx, p)
	return fed(s, ids, err)
}

// JobInsertManyResults feeds the inserted jobs.
func (s *FeedStore) JobInsertManyResults(ctx context.Context, p store.InsertManyParams) ([]store.InsertResult, error) {
	res, err := s.Backing.JobInsertManyResults(ctx, p)
	return fed(s, res, err)
}

// JobClaim feeds the claimed jobs.
func (s *FeedStore) JobClaim(ctx context.Context, p store.ClaimParams) ([]job.Job, error) {
	jobs, err := s.Backing.JobClaim(ctx, p)
	return fed(s, jobs, err)
}

// OutcomeReport feeds the reported jobs and their dependents.
func (s *FeedStore) OutcomeReport(ctx context.Context, p store.ReportParams) ([]store.ReportResult, error) {
	res, err := s.Backing.OutcomeReport(ctx, p)
	return fed(s, res, err)
}

// LeaseExpire feeds the expired jobs and their dependents.
func (s *FeedStore) LeaseExpire(ctx context.Context, p store.ExpireParams) (store.ExpireResult, error) {
	res, err := s.Backing.LeaseExpire(ctx, p)
	return fed(s, res, err)
}

// LeaseRelinquish feeds the jobs handed back and their dependents.
func (s *FeedStore) LeaseRelinquish(ctx context.Context, p store.RelinquishParams) (store.RelinquishResult, error) {
	res, err := s.Backing.LeaseRelinquish(ctx, p)
	return fed(s, res, err)
}

// QueueResume hints the Queue.
func (s *FeedStore) QueueResume(ctx context.Context, p store.QueueParams) error {
	return fedErr(s, s.Backing.QueueResume(ctx, p), p.Queue)
}

// QueueSetLimit hints the Queue.
func (s *FeedStore) QueueSetLimit(ctx context.Context, p store.QueueSetLimitParams) error {
	return fedErr(s, s.Backing.QueueSetLimit(ctx, p), p.Queue)
}

// QueueSetRate hints the Queue.
func (s *FeedStore) QueueSetRate(ctx context.Context, p store.QueueSetRateParams) error {
	return fedErr(s, s.Backing.QueueSetRate(ctx, p), p.Queue)
}

// QueueSetKeyLimit hints the Queue.
func (s *FeedStore) QueueSetKeyLimit(ctx context.Context, p store.QueueSetKeyLimitParams) error {
	return fedErr(s, s.Backing.QueueSetKeyLimit(ctx, p), p.Queue)
}

// QueueSetKeyRate hints the Queue.
func (s *FeedStore) QueueSetKeyRate(ctx context.Context, p store.QueueSetKeyRateParams) error {
	return fedErr(s, s.Backing.QueueSetKeyRate(ctx, p), p.Queue)
}

// QueueSetFairClaim hints the Queue.
func (s *FeedStore) QueueSetFairClaim(ctx context.Context, p store.QueueSetFairClaimParams) error {
	return fedErr(s, s.Backing.QueueSetFairClaim(ctx, p), p.Queue)
}

// JobRequeue feeds the job.
func (s *FeedStore) JobRequeue(ctx context.Context, p store.JobRequeueParams) (job.Job, error) {
	j, err := s.Backing.JobRequeue(ctx, p)
	return fed(s, j, err)
}

// JobCancel feeds the job and its dependents.
func (s *FeedStore) JobCancel(ctx context.Context, p store.JobCancelParams) (job.Job, error) {
	j, err := s.Backing.JobCancel(ctx, p)
	return fed(s, j, err)
}

// JobReschedule hints the job's Queue.
func (s *FeedStore) JobReschedule(ctx context.Context, p store.JobRescheduleParams) (job.Job, error) {
	j, err := s.Backing.JobReschedule(ctx, p)
	return fed(s, j, err, j.Queue)
}

// ScheduleTrigger feeds the new job.
func (s *FeedStore) ScheduleTrigger(ctx context.Context, p store.ScheduleTriggerParams) (job.ID, error) {
	id, err := s.Backing.ScheduleTrigger(ctx, p)
	return fed(s, id, err)
}

// ScheduleMint feeds the minted jobs.
func (s *FeedStore) ScheduleMint(ctx context.Context, p store.MintParams) ([]store.MintResult, error) {
	res, err := s.Backing.ScheduleMint(ctx, p)
	return fed(s, res, err)
}

// WorkflowInsert feeds the inserted members.
func (s *FeedStore) WorkflowInsert(ctx context.Context, p store.WorkflowInsertParams) (store.WorkflowInsertResult, error) {
	res, err := s.Backing.WorkflowInsert(ctx, p)
	return fed(s, res, err)
}

// WorkflowRetry feeds the reanimated members.
func (s *FeedStore) WorkflowRetry(ctx context.Context, p store.WorkflowRetryParams) (store.WorkflowRetryResult, error) {
	res, err := s.Backing.WorkflowRetry(ctx, p)
	return fed(s, res, err)
}

// WorkflowCancel feeds every member and their dependents.
func (s *FeedStore) WorkflowCancel(ctx context.Context, p store.WorkflowActionParams) (store.WorkflowInfo, error) {
	w, err := s.Backing.WorkflowCancel(ctx, p)
	return fed(s, w, err)
}

// JobPurge purges with the feed's walk stepped out (see FeedStore); the
// next read registers it again and skips what was delivered.
func (s *FeedStore) JobPurge(ctx context.Context, p store.PurgeParams) (store.PurgeResult, error) {
	if s.held {
		if err := s.Backing.ObserverRemove(ctx, FeedObserver); err != nil && !errors.Is(err, store.ErrNotFound) {
			return store.PurgeResult{}, fmt.Errorf("sim: the transition feed: %w", err)
		}
		s.held = false
	}
	res, err := s.Backing.JobPurge(ctx, p)
	return fed(s, res, err)
}
