package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/internal/sim"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/sqlite"
)

// sqliteStore is the Embedded Adapter (store/sqlite) as a Simulator Store:
// one SQLite file on the run's Virtual Time (sqlite.Options.Clock), which a
// Plan replays on to be compared with its replay on memstore.
//
// The adapter has no transition callback, so the transition feed reads
// Transition Logs (store.History.JobTransitions) after each call that may
// have moved a job: the jobs the call names or answers, the dependents of
// any that became terminal (recursively), and, after an insert, a mint or a
// trigger, the new jobs, found at the next ids. It delivers the new entries before the call returns, each job's in
// order, jobs in ascending id order — the weaker guarantee sim.Store allows.
// A call that moved a job it neither names nor answers would go unseen
// until verify, which holds every stored log to what the feed delivered.
//
// Wake-Up Hints follow the Simulator's rule (sim.Store), which is
// memstore's: after a call, each Queue of a job that left Running, was
// released, requeued or rescheduled, of a new job due at once, or named by a
// resume or a new limit — if a job there is claimable now. The adapter's own
// hints name other Queues (a report hints its Queue whether or not anything
// there is claimable; an expiry or Relinquish that dead-letters or cancels
// hints nothing, though it may free a Concurrency-Limit slot or leave due
// jobs behind), and hints steer when nodes poll, so they would replay the
// Plan along another path. They are only counted (hintsHeard), for the
// replay's summary.
//
// Restart closes the file and opens it again: committed writes survive, the
// hint subscribers do not.
//
// The adapter keeps times in microseconds, so a run on it quantizes the
// store's time to them (sim.Options.StorePrecision), and so does the
// memstore replay it is compared with: at Virtual Time's nanoseconds, a
// retry due 0.7µs after a claim inside the same microsecond is due already
// in SQLite and not in memstore.
type sqliteStore struct {
	*sqlite.Store
	ctx  context.Context
	path string
	opts sqlite.Options
	feed sim.Feed
	hub  *store.HintHub

	// delivered counts, per job id - 1, the Transition Log entries fed.
	delivered []int
	queue     []string                      // per job id - 1: its Queue
	children  map[job.ID][]job.ID           // parent → dependents
	last      job.ID                        // the highest job id fed
	pending   map[job.ID][]store.Transition // the current call's new entries

	// heard is what the adapter itself hinted during the current call.
	heard []string
	// hintsDerived counts the hints the rule gave, hintsHeard those of
	// them the adapter also announced.
	hintsDerived, hintsHeard int
}

// errPlantedBug refuses a Plan whose planted bug lives in memstore.
var errPlantedBug = errors.New("the planted bug lives in memstore only")

// sqlitePrecision is the precision of the adapter's stored times.
const sqlitePrecision = time.Microsecond

// openSQLite opens a fresh SQLite file at path as a Simulator Store.
func openSQLite(ctx context.Context, path string, opts sqlite.Options, env sim.StoreEnv) (*sqliteStore, error) {
	if env.Mutation.InStore() {
		return nil, fmt.Errorf("%w: %s", errPlantedBug, env.Mutation)
	}
	if env.Precision <= 0 || env.Precision%sqlitePrecision != 0 {
		return nil, fmt.Errorf("sqlite keeps times in microseconds: a run on it needs sim.Options.StorePrecision a multiple of %v, not %v", sqlitePrecision, env.Precision)
	}
	opts.Clock = env.Clock
	s := &sqliteStore{ctx: ctx, path: path, opts: opts, feed: env.Feed, children: map[job.ID][]job.ID{}}
	if err := s.open(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *sqliteStore) open() error {
	st, err := sqlite.Open(s.ctx, s.path, s.opts)
	if err != nil {
		return err
	}
	s.Store = st
	s.hub = new(store.HintHub)
	st.SubscribeHints(func(q string) { s.heard = append(s.heard, q) })
	return nil
}

// Restart closes the file and opens it again.
func (s *sqliteStore) Restart() error {
	if err := s.Store.Close(); err != nil {
		return err
	}
	return s.open()
}

// SubscribeHints subscribes to the hints of the Simulator's rule.
func (s *sqliteStore) SubscribeHints(fn func(queue string)) (unsubscribe func()) {
	return s.hub.Subscribe(fn)
}

// call is what a succeeded call may have moved: the jobs it names or
// answers, whether it inserts jobs (an insert, a mint, a trigger) and the
// Queues it hints whatever moved (a resume, a new limit, a reschedule).
type call struct {
	ids     []job.ID
	inserts bool
	hint    []string
}

// after ends one call that succeeded: it feeds the call's state changes —
// of the jobs it names, their dependents and the jobs it inserted — and
// announces the hints of the Simulator's rule.
func (s *sqliteStore) after(c call) error {
	s.pending = map[job.ID][]store.Transition{}
	defer func() { s.pending, s.heard = nil, s.heard[:0] }()
	candidates := c.hint
	if c.inserts {
		var err error
		if candidates, err = s.readNew(candidates); err != nil {
			return err
		}
	}
	queue := slices.Clone(c.ids)
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		if _, ok := s.pending[id]; ok || id < 1 || id > s.last {
			continue
		}
		entries, err := s.read(id)
		if err != nil {
			return err
		}
		s.pending[id] = entries
		if endsTerminal(entries) {
			queue = append(queue, s.children[id]...)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(s.pending)) {
		for _, t := range s.pending[id] {
			s.feed(id, t.Edge(), t.Attempt)
			if t.From == job.StateRunning || t.Via == core.ViaRelease || t.Via == core.ViaRequeue || t.Via == core.ViaWorkflowRetry {
				candidates = append(candidates, s.queue[id-1])
			}
		}
	}
	return s.hint(candidates)
}

// readNew reads the jobs at the ids after the last one fed, until one is
// missing: the jobs the call inserted or minted. It returns candidates with
// the Queue of each new job claimable once inserted added.
func (s *sqliteStore) readNew(candidates []string) ([]string, error) {
	now := s.opts.Clock.Now()
	for {
		id := s.last + 1
		j, err := s.JobGet(s.ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return candidates, nil
		}
		if err != nil {
			return nil, err
		}
		deps, err := s.JobDependencies(s.ctx, id)
		if err != nil {
			return nil, err
		}
		if len(deps.Parents) == 0 && core.Claimable(&j, now) {
			candidates = append(candidates, j.Queue)
		}
		for _, p := range deps.Parents {
			s.children[p.ID] = append(s.children[p.ID], id)
		}
		s.last = id
		s.delivered = append(s.delivered, 0)
		s.queue = append(s.queue, j.Queue)
		entries, err := s.read(id)
		if err != nil {
			return nil, err
		}
		s.pending[id] = entries
	}
}

// read returns the entries of job id's Transition Log not fed yet.
func (s *sqliteStore) read(id job.ID) ([]store.Transition, error) {
	log, err := s.JobTransitions(s.ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil // purged
	}
	if err != nil {
		return nil, err
	}
	n := s.delivered[id-1]
	if len(log) < n {
		return nil, fmt.Errorf("job %d: the Transition Log holds %d entries, %d were fed (trimmed past store.TransitionLogCap?)", id, len(log), n)
	}
	s.delivered[id-1] = len(log)
	return log[n:], nil
}

// endsTerminal reports whether entries move the job into a terminal state.
func endsTerminal(entries []store.Transition) bool {
	for _, t := range entries {
		if t.State.Terminal() && !t.From.Terminal() {
			return true
		}
	}
	return false
}

// hint announces, in name order, each candidate Queue that is not paused,
// is under its Concurrency Limit and its Rate Limit and holds a job
// claimable now.
func (s *sqliteStore) hint(candidates []string) error {
	if len(candidates) == 0 || !s.hub.Active() {
		return nil
	}
	slices.Sort(candidates)
	candidates = slices.Compact(candidates)
	infos, err := s.QueueList(s.ctx)
	if err != nil {
		return err
	}
	now := s.opts.Clock.Now()
	var out []string
	for _, name := range candidates {
		i := slices.IndexFunc(infos, func(q store.QueueInfo) bool { return q.Name == name })
		if i < 0 || infos[i].Paused || (infos[i].Limit > 0 && infos[i].Running >= infos[i].Limit) {
			continue
		}
		if r := infos[i].Rate; !r.IsZero() && infos[i].RateStarted >= r.Limit {
			continue // the Rate Limit's window is spent
		}
		ok, err := s.claimable(name, now)
		if err != nil {
			return err
		}
		if ok {
			out = append(out, name)
		}
	}
	s.hintsDerived += len(out)
	for _, q := range out {
		if slices.Contains(s.heard, q) {
			s.hintsHeard++
		}
	}
	s.hub.Announce(out)
	return nil
}

// claimable reports whether the Queue holds a job claimable at now.
func (s *sqliteStore) claimable(queue string, now time.Time) (bool, error) {
	p := store.JobListParams{JobFilter: store.JobFilter{States: []job.State{job.StateScheduled}, Queue: queue}}
	for {
		page, err := s.JobList(s.ctx, p)
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

// verify holds every stored Transition Log to what the feed delivered: a
// call that moved a job the feed did not read shows here.
func (s *sqliteStore) verify() error {
	for id := job.ID(1); id <= s.last; id++ {
		log, err := s.JobTransitions(s.ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			continue // purged
		}
		if err != nil {
			return err
		}
		if n := s.delivered[id-1]; len(log) != n {
			return fmt.Errorf("job %d: the Transition Log holds %d entries, the feed delivered %d: a call moved it unseen", id, len(log), n)
		}
	}
	if _, err := s.JobGet(s.ctx, s.last+1); !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("job %d exists, the feed never saw it inserted (%v)", s.last+1, err)
	}
	return nil
}

// leaseIDs returns the job ids of leases.
func leaseIDs(leases []job.Lease) []job.ID {
	ids := make([]job.ID, len(leases))
	for i, l := range leases {
		ids[i] = l.ID
	}
	return ids
}

// The calls that may move a job or announce a hint: each is the adapter's
// call, then after. The rest (renewals, pauses, schedule settings, purges)
// move no job and hint nothing, and pass through.

// done ends a call that answered v: its error, or after's.
func done[T any](s *sqliteStore, v T, err error, c call) (T, error) {
	if err != nil {
		return v, err
	}
	return v, s.after(c)
}

// doneErr is done for a call that answers only an error.
func doneErr(s *sqliteStore, err error, c call) error {
	_, err = done(s, struct{}{}, err, c)
	return err
}

// JobInsertMany feeds the inserted jobs.
func (s *sqliteStore) JobInsertMany(ctx context.Context, p store.InsertManyParams) ([]job.ID, error) {
	ids, err := s.Store.JobInsertMany(ctx, p)
	return done(s, ids, err, call{ids: ids, inserts: true})
}

// JobClaim feeds the claimed jobs.
func (s *sqliteStore) JobClaim(ctx context.Context, p store.ClaimParams) ([]job.Job, error) {
	jobs, err := s.Store.JobClaim(ctx, p)
	ids := make([]job.ID, len(jobs))
	for i := range jobs {
		ids[i] = jobs[i].ID
	}
	return done(s, jobs, err, call{ids: ids})
}

// OutcomeReport feeds the reported jobs and their dependents.
func (s *sqliteStore) OutcomeReport(ctx context.Context, p store.ReportParams) ([]store.ReportResult, error) {
	res, err := s.Store.OutcomeReport(ctx, p)
	ids := make([]job.ID, len(p.Outcomes))
	for i, o := range p.Outcomes {
		ids[i] = o.Lease.ID
	}
	return done(s, res, err, call{ids: ids})
}

// LeaseExpire feeds the expired jobs and their dependents.
func (s *sqliteStore) LeaseExpire(ctx context.Context, p store.ExpireParams) (store.ExpireResult, error) {
	res, err := s.Store.LeaseExpire(ctx, p)
	return done(s, res, err, call{ids: leaseIDs(res.Expired)})
}

// LeaseRelinquish feeds the named jobs and their dependents.
func (s *sqliteStore) LeaseRelinquish(ctx context.Context, p store.RelinquishParams) (store.RelinquishResult, error) {
	res, err := s.Store.LeaseRelinquish(ctx, p)
	return done(s, res, err, call{ids: leaseIDs(p.Leases)})
}

// QueueResume hints the Queue.
func (s *sqliteStore) QueueResume(ctx context.Context, p store.QueueParams) error {
	return doneErr(s, s.Store.QueueResume(ctx, p), call{hint: []string{p.Queue}})
}

// QueueSetLimit hints the Queue.
func (s *sqliteStore) QueueSetLimit(ctx context.Context, p store.QueueSetLimitParams) error {
	return doneErr(s, s.Store.QueueSetLimit(ctx, p), call{hint: []string{p.Queue}})
}

// QueueSetRate hints the Queue.
func (s *sqliteStore) QueueSetRate(ctx context.Context, p store.QueueSetRateParams) error {
	return doneErr(s, s.Store.QueueSetRate(ctx, p), call{hint: []string{p.Queue}})
}

// JobRequeue feeds the job.
func (s *sqliteStore) JobRequeue(ctx context.Context, p store.JobRequeueParams) (job.Job, error) {
	j, err := s.Store.JobRequeue(ctx, p)
	return done(s, j, err, call{ids: []job.ID{p.ID}})
}

// JobCancel feeds the job and its dependents.
func (s *sqliteStore) JobCancel(ctx context.Context, p store.JobCancelParams) (job.Job, error) {
	j, err := s.Store.JobCancel(ctx, p)
	return done(s, j, err, call{ids: []job.ID{p.ID}})
}

// JobReschedule moves no job; it hints the job's Queue.
func (s *sqliteStore) JobReschedule(ctx context.Context, p store.JobRescheduleParams) (job.Job, error) {
	j, err := s.Store.JobReschedule(ctx, p)
	return done(s, j, err, call{hint: []string{j.Queue}})
}

// ScheduleTrigger feeds the new job.
func (s *sqliteStore) ScheduleTrigger(ctx context.Context, p store.ScheduleTriggerParams) (job.ID, error) {
	id, err := s.Store.ScheduleTrigger(ctx, p)
	return done(s, id, err, call{inserts: true})
}

// ScheduleMint feeds the minted jobs.
func (s *sqliteStore) ScheduleMint(ctx context.Context, p store.MintParams) ([]store.MintResult, error) {
	res, err := s.Store.ScheduleMint(ctx, p)
	return done(s, res, err, call{inserts: true})
}

// WorkflowInsert feeds the inserted members.
func (s *sqliteStore) WorkflowInsert(ctx context.Context, p store.WorkflowInsertParams) (store.WorkflowInsertResult, error) {
	res, err := s.Store.WorkflowInsert(ctx, p)
	return done(s, res, err, call{ids: res.Jobs, inserts: true})
}

// WorkflowRetry feeds the reanimated members.
func (s *sqliteStore) WorkflowRetry(ctx context.Context, p store.WorkflowRetryParams) (store.WorkflowRetryResult, error) {
	res, err := s.Store.WorkflowRetry(ctx, p)
	return done(s, res, err, call{ids: res.Retried})
}

// WorkflowCancel feeds every member and their dependents.
func (s *sqliteStore) WorkflowCancel(ctx context.Context, p store.WorkflowActionParams) (store.WorkflowInfo, error) {
	var ids []job.ID
	if ms, err := s.Store.WorkflowMembers(ctx, p.ID); err == nil {
		for _, m := range ms {
			ids = append(ids, m.Job.ID)
		}
	}
	w, err := s.Store.WorkflowCancel(ctx, p)
	return done(s, w, err, call{ids: ids})
}
