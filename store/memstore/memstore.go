package memstore

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/internal/plant"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/vtime"
)

// Options configure a Store.
type Options struct {
	// Clock is the store's clock: every Lease and due comparison reads it,
	// and nothing else does. Nil means a fresh vtime.Manual standing at
	// vtime.Epoch, which Store.Clock returns so the caller can move it.
	Clock vtime.Clock

	// OnTransition, if set, is called once for every state change the store
	// applies — insert, claim, outcome, expiry, Relinquish, cancel — with
	// the job, the edge it moved along and its Attempt after the change.
	// It is called synchronously, in the order the changes apply, while the
	// store's lock is held: it must not block and must not call the Store.
	// The Simulator uses it to check every edge against core.Edges and to
	// record Coverage.
	OnTransition func(id job.ID, e core.Edge, attempt job.Attempt)

	// History is the Job History Policy: how much of each job's Transition
	// Log the store records. The zero value records every entry with its
	// Failure Detail. OnTransition is called whatever the policy.
	History store.HistoryPolicy

	// plant is the known bug the Simulator's tests plant so they can prove
	// their oracles catch it: set only by SetPlant, which only a build with
	// the tag backwave_plant has (package internal/plant).
	plant plant.Bug
}

// Store is the In-Memory Store. It implements store.Store,
// store.HintSource and store.ClockSource. Create one with New; the zero value is not usable.
type Store struct {
	clock        vtime.Clock
	onTransition func(job.ID, core.Edge, job.Attempt)
	plant        plant.Bug
	history      store.HistoryPolicy
	hints        store.HintHub

	mu     sync.Mutex
	closed bool
	jobs   []*row // jobs[id-1]; ids are never reused; nil once purged
	queues map[string]*queue
	// tags is Tag Suggest's dictionary: every distinct Tag a stored job
	// carries, with how many stored jobs carry it. A Tag whose last job is
	// purged leaves it.
	tags map[job.Tag]int
	// audit is the audit trail of Operator Actions, oldest first.
	audit []store.AuditEntry

	// settleQueue, settling and released are scratch space of one call:
	// the terminal parents whose dependents are being settled, and the
	// Queues that got a released dependent (see settle).
	settleQueue []*row
	settling    bool
	released    hintSet
	// schedules are the Recurring Schedules by name; occSeq numbers
	// their occurrence records (schedule.go).
	schedules map[string]*schedule
	occSeq    int64
	// purgeFrom is the index in jobs of the first row JobPurge may find:
	// every row before it is purged.
	purgeFrom int
	// holds are the unique keys held, by key (unique.go).
	holds map[string]hold
	// walk indexes every Transition Log entry the store holds in sequence
	// order, for the Transition Observer walk; tseq numbers the entries;
	// observers are the walk's registrations by name (observer.go).
	walk      []walkRef
	tseq      int64
	observers map[string]*observerReg
	// workflows are the Workflows, workflows[id-1]; nil once purged
	// (workflow.go).
	workflows []*workflowRow
	// fleet is the fleet registry: each Worker's Wire Names with their
	// stamps (fleet.go).
	fleet map[job.WorkerID]map[string]time.Time
	// nodes is the node registry by node id (node.go).
	nodes map[string]store.NodeRecord
	// schema are the migrations recorded, oldest first (schema.go).
	schema []store.SchemaStep
}

var (
	_ store.Store       = (*Store)(nil)
	_ store.HintSource  = (*Store)(nil)
	_ store.ClockSource = (*Store)(nil)
)

// row is one stored job with what the contract stores beside it.
type row struct {
	job    job.Job
	output []byte
	log    []store.Transition
	// seqs are the Transition Log sequence numbers of log, entry by entry.
	seqs []int64
	// dep is the job's Dependency latch; nil for a job without parents.
	dep *latch
	// dependents lists the jobs naming this one as a parent, ascending.
	dependents []job.ID
	// schedule names the Recurring Schedule that made the job, if any.
	schedule string
	// unique is the while-live unique key the job holds, until it first
	// ends terminal; empty if none.
	unique string
	// workflow is the Workflow the job is a member of; 0 if none.
	workflow job.WorkflowID
}

// queue is one known Queue's settings and bookkeeping.
type queue struct {
	paused bool
	limit  int
	// running counts the Queue's Running jobs: the Concurrency-Limit slots
	// in use. Only Store.move changes it.
	running int
	// rate is the Queue's Rate Limit and its window's count.
	rate rateState
	// ids lists every job of the Queue in ascending id order.
	ids []job.ID
	// policy is the Queue's KeyPolicy; keys its per-key counters, by
	// Concurrency Key ("" for jobs without one), kept by Store.move and the
	// claim.
	policy store.KeyPolicy
	keys   map[string]*keyCounter
	// turn is the Queue's last Fair Claim turn (store.KeyPolicy.Pick).
	turn int64
}

// New returns an empty Store.
func New(opts Options) *Store {
	clock := opts.Clock
	if clock == nil {
		clock = vtime.NewManual(vtime.Epoch)
	}
	return &Store{
		clock:        clock,
		onTransition: opts.OnTransition,
		plant:        opts.plant,
		history:      opts.History,
		queues:       make(map[string]*queue),
		tags:         make(map[job.Tag]int),
		schedules:    make(map[string]*schedule),
		holds:        make(map[string]hold),
		observers:    make(map[string]*observerReg),
	}
}

// Clock returns the store's clock: Options.Clock, or the vtime.Manual New
// made when that was nil.
func (s *Store) Clock() vtime.Clock { return s.clock }

// History returns the Job History Policy the store records under.
func (s *Store) History() store.HistoryPolicy { return s.history }

// Close marks the store closed; every later call, Close included, fails
// with store.ErrClosed. The data stays readable through a Clone taken
// before.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("memstore: %w", store.ErrClosed)
	}
	s.closed = true
	return nil
}

// Clone returns a deep copy of the store: every job, Transition Log, Job
// Output, Queue setting, Recurring Schedule and held unique key, and the id
// sequences, so the copy and the original never share a mutable byte. It models a crash and restart: every
// call to a Store is durable once it returns, so a crash-clone keeps all of
// it. The copy shares the original's Clock and OnTransition observer (which
// receives the copy's transitions too) but no hint subscribers: those belong
// to the processes that crashed.
func (s *Store) Clone() *Store {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &Store{
		clock:        s.clock,
		onTransition: s.onTransition,
		plant:        s.plant,
		history:      s.history,
		closed:       s.closed,
		jobs:         make([]*row, len(s.jobs)),
		queues:       make(map[string]*queue, len(s.queues)),
		tags:         maps.Clone(s.tags),
		audit:        slices.Clone(s.audit),
		schedules:    make(map[string]*schedule, len(s.schedules)),
		occSeq:       s.occSeq,
		purgeFrom:    s.purgeFrom,
		holds:        maps.Clone(s.holds),
		walk:         slices.Clone(s.walk),
		tseq:         s.tseq,
		observers:    cloneObservers(s.observers),
		workflows:    make([]*workflowRow, len(s.workflows)),
		fleet:        cloneFleet(s.fleet),
		nodes:        cloneNodes(s.nodes),
		schema:       slices.Clone(s.schema),
	}
	for i, w := range s.workflows {
		c.workflows[i] = w.clone()
	}
	for i, r := range s.jobs {
		if r == nil {
			continue // purged
		}
		c.jobs[i] = &row{
			job:        copyJob(&r.job),
			output:     bytes.Clone(r.output),
			log:        slices.Clone(r.log),
			seqs:       slices.Clone(r.seqs),
			dep:        r.dep.clone(),
			dependents: slices.Clone(r.dependents),
			schedule:   r.schedule,
			unique:     r.unique,
			workflow:   r.workflow,
		}
	}
	for name, sc := range s.schedules {
		c.schedules[name] = sc.clone()
	}
	for name, q := range s.queues {
		qc := *q
		qc.ids = slices.Clone(q.ids)
		qc.keys = cloneKeys(q.keys)
		c.queues[name] = &qc
	}
	return c
}

// lock takes the store's lock for one call, failing if ctx is done or the
// store is closed. On success the caller must unlock s.mu.
func (s *Store) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("memstore: %w", store.ErrClosed)
	}
	s.released = hintSet{}
	return nil
}

// row returns the stored job id, or nil. The caller holds s.mu.
func (s *Store) row(id job.ID) *row {
	if id < 1 || int64(id) > int64(len(s.jobs)) {
		return nil
	}
	return s.jobs[id-1] // nil if purged
}

// find returns the job or an error wrapping store.ErrNotFound. The caller
// holds s.mu.
func (s *Store) find(id job.ID) (*row, error) {
	r := s.row(id)
	if r == nil {
		return nil, fmt.Errorf("memstore: job %d: %w", id, store.ErrNotFound)
	}
	return r, nil
}

// held returns the job the Lease names if it is still Running under worker
// at exactly that Attempt — the fence every worker write passes — or nil.
// The caller holds s.mu.
func (s *Store) held(worker job.WorkerID, l job.Lease) *row {
	r := s.row(l.ID)
	if r == nil || r.job.State != job.StateRunning || r.job.Worker != worker {
		return nil
	}
	if r.job.Attempt != l.Attempt && !s.planted(plant.FenceIgnoresAttempt) {
		return nil
	}
	return r
}

// queue returns the named Queue, making it known if it was not. The caller
// holds s.mu.
func (s *Store) queue(name string) *queue {
	q := s.queues[name]
	if q == nil {
		q = &queue{}
		s.queues[name] = q
	}
	return q
}

// move applies one state change to r along the edge (r's state → to, via):
// it keeps the Queue's Running count, clears the Lease when the job leaves
// Running, applies the Retry Cause rule and the Terminal Cause rule
// (core.TerminalCauseAfter), stamps FinalizedAt on a terminal
// state, appends the Transition Log entry, tells the observer and, for a
// terminal state, settles the job's dependents' latches (settle). Callers
// set the Attempt, due time, Lease and cancel cause the edge needs before
// or after calling. The caller holds s.mu and has already checked the edge
// against its inputs, so an illegal edge here is a bug in this package.
func (s *Store) move(r *row, to job.State, via core.Via, now time.Time, detail string) {
	e := core.Edge{From: r.job.State, To: to, Via: via}
	s.moveCaused(r, e, core.TerminalCauseAfter(e, 0), now, detail)
}

// moveCaused is move along e with the job's Terminal Cause set to cause:
// an applied outcome's (core.Decide), or core.TerminalCauseAfter's for an
// edge no Result ends. The caller holds s.mu.
func (s *Store) moveCaused(r *row, e core.Edge, cause job.TerminalCause, now time.Time, detail string) {
	to, via := e.To, e.Via
	if !core.Legal(e) {
		panic(fmt.Sprintf("memstore: job %d: illegal state edge %s", r.job.ID, e))
	}
	q := s.queues[r.job.Queue]
	q.countKey(r.job.ConcurrencyKey, e.From, to)
	if e.From == job.StateRunning {
		q.running--
		r.job.Worker = ""
		r.job.LeaseExpiresAt = time.Time{}
	}
	if to == job.StateRunning {
		q.running++
	}
	r.job.State = to
	if r.workflow != 0 {
		s.countMember(r.workflow, e.From, to)
	}
	r.job.RetryCause = core.RetryCauseAfter(e, r.job.RetryCause)
	r.job.TerminalCause = cause
	if to.Terminal() {
		r.job.FinalizedAt = now
		if r.unique != "" {
			s.release(r)
		}
	}
	if s.history.Records() {
		if len(r.log) >= store.TransitionLogCap {
			n := s.trimmable(r, len(r.log)-store.TransitionLogCap+1, now)
			r.log = slices.Delete(r.log, 0, n)
			r.seqs = slices.Delete(r.seqs, 0, n)
		}
		s.tseq++
		r.seqs = append(r.seqs, s.tseq)
		s.walk = append(s.walk, walkRef{seq: s.tseq, id: r.job.ID})
		r.log = append(r.log, store.Transition{
			At:            now,
			From:          e.From,
			State:         to,
			Via:           via,
			Attempt:       r.job.Attempt,
			FailureDetail: s.history.Detail(detail),
		})
	}
	if s.onTransition != nil {
		s.onTransition(r.job.ID, e, r.job.Attempt)
	}
	if to.Terminal() && len(r.dependents) > 0 {
		s.settle(r, now)
	}
}

// addTags merges tags into r's set and counts the Tags new to r in the
// store's dictionary. The caller holds s.mu.
func (s *Store) addTags(r *row, tags []job.Tag) {
	if len(tags) == 0 {
		return
	}
	for _, t := range job.NormalizeTags(tags) {
		if _, had := slices.BinarySearchFunc(r.job.Tags, t, job.CompareTags); !had {
			s.tags[t]++ // one more job carries t; a job's Tags are a set
		}
	}
	r.job.Tags = job.MergeTags(r.job.Tags, tags)
}

// dropTags takes a purged job's Tags out of the dictionary: a Tag no stored
// job carries any more leaves it. The caller holds s.mu.
func (s *Store) dropTags(r *row) {
	for _, t := range r.job.Tags {
		if s.tags[t]--; s.tags[t] <= 0 {
			delete(s.tags, t)
		}
	}
}

// copyJob returns j with its slices copied, so the caller cannot reach the
// store's memory through it.
func copyJob(j *job.Job) job.Job {
	c := *j
	c.Payload = bytes.Clone(j.Payload)
	c.Tags = slices.Clone(j.Tags)
	c.TraceContext = maps.Clone(j.TraceContext)
	if j.Progress != nil {
		p := *j.Progress
		c.Progress = &p
	}
	if j.Cursor != nil {
		cur := *j.Cursor
		cur.Value = bytes.Clone(j.Cursor.Value)
		c.Cursor = &cur
	}
	return c
}

// planted reports whether the Store plants bug b: never, outside a build
// with the tag backwave_plant, where the check folds away.
func (s *Store) planted(b plant.Bug) bool { return plant.Enabled && s.plant == b }
