package backwave

import (
	"context"
	"fmt"
	"time"

	"github.com/backwave/backwave/store"
)

// UniqueScope says how long a unique key, once a job took it, keeps later
// enqueues of the same key out. Make one with UniqueWhileLive or UniqueFor;
// the zero value is no scope, and WithUnique refuses it.
type UniqueScope struct {
	scope  store.UniqueScope
	period time.Duration
	// mode, wait and maxWait are what an enqueue of the key, held, does to
	// the holder (Replace, Debounce).
	mode          store.UniqueMode
	wait, maxWait time.Duration
}

// UniqueWhileLive holds the key while the job that took it is not
// terminal: Scheduled, Awaiting Parent, Running, or Scheduled again for a
// retry. Once the job ends Succeeded, Dead-Lettered, Cancelled or
// Quarantined the key is free, for good: an operator requeue brings the job
// back without it.
func UniqueWhileLive() UniqueScope { return UniqueScope{scope: store.UniqueWhileLive} }

// UniqueFor holds the key for d from the enqueue of the job that took it,
// on the store's clock, whatever that job's state meanwhile: "at most one
// such job per d". d must be positive. The next job to take the key starts
// a new period from its own enqueue.
func UniqueFor(d time.Duration) UniqueScope {
	return UniqueScope{scope: store.UniquePeriod, period: d}
}

// Replace returns the scope in Replace mode: an enqueue that finds the key
// held by a Scheduled job — waiting for its due time or for a retry —
// rewrites that job in place of storing its own: the holder takes the new
// job's payload (args), Tags and due time (WithRunAt or WithDelay, or now), and
// keeps its id, Queue, Wire Name, attempt ceiling, Attempt count and
// Transition Log. Each rewrite is recorded in the audit trail
// (AuditUniqueReplace), not in the Transition Log: it changes no state.
// A holder that is Running, Awaiting Parent or ended (a UniqueFor key
// outlives its job) is not rewritten: the enqueue fails with
// ErrHolderNotPending and stores nothing, since the Attempt under way read
// the old args already. A job in Replace mode names no parents.
func (s UniqueScope) Replace() UniqueScope {
	s.mode, s.wait, s.maxWait = store.UniqueReplace, 0, 0
	return s
}

// Debounce returns the scope in Debounce mode: Replace, except that the due
// time is the debounce's, never the job's own. The job that takes the free
// key is due wait after its enqueue; each later enqueue while it is still
// Scheduled rewrites it (args, Tags) and moves its due time to wait after
// that enqueue, but never past maxWait after the first: a burst runs once,
// wait after its last enqueue, and a burst that never pauses still runs
// maxWait after it began. wait must be positive and maxWait at least wait;
// WithRunAt and WithDelay are refused beside it. Each rewrite is recorded as
// AuditUniqueDebounce; a Running holder refuses the enqueue as for Replace.
func (s UniqueScope) Debounce(wait, maxWait time.Duration) UniqueScope {
	s.mode, s.wait, s.maxWait = store.UniqueDebounce, wait, maxWait
	return s
}

// String describes the scope: "while live", "for 1h0m0s" or "none", with
// its mode: "while live, replace", "for 1h0m0s, debounce 1m0s up to
// 10m0s".
func (s UniqueScope) String() string {
	var out string
	switch s.scope {
	case store.UniqueWhileLive:
		out = "while live"
	case store.UniquePeriod:
		out = "for " + s.period.String()
	default:
		return "none"
	}
	switch s.mode {
	case store.UniqueReplace:
		out += ", replace"
	case store.UniqueDebounce:
		out += ", debounce " + s.wait.String() + " up to " + s.maxWait.String()
	}
	return out
}

// WithUnique gives the job a unique key: the job is stored only if no
// other job holds key, and then holds it itself for scope. key names the
// work in the application's own terms ("invoice:1042:send"): non-empty
// valid UTF-8 of at most 256 bytes without control characters. Keys form
// one namespace whatever their scope: a held key holds off every enqueue
// that names it.
//
// A held key is not an error. Enqueue and EnqueueMany then return the id
// of the job holding it in the refused job's place, and store nothing for
// it; EnqueueUnique and EnqueueManyUnique also say whether the job was
// stored. In one EnqueueMany call the first job with a key takes it and the
// later ones answer that job; none of them may be named by
// WithParentsInBatch. The rule holds across every Client and process on the
// same store: of any number of concurrent enqueues of one free key, exactly
// one stores its job. Inside the caller's own transaction (Transactional
// Enqueue) the key is taken with the job: other enqueues of it wait for
// that transaction to end, and a rollback frees it again.
//
// A scope in Replace or Debounce mode (UniqueScope.Replace,
// UniqueScope.Debounce) makes a held key rewrite its holder instead, while
// the holder is Scheduled, and answers ErrHolderNotPending otherwise (see
// docs/job-shapes.md).
func WithUnique(key string, scope UniqueScope) EnqueueOption {
	return func(s *enqueueSettings) {
		s.unique, s.hasUnique = store.Unique{Key: key, Scope: scope.scope, Period: scope.period,
			Mode: scope.mode, Wait: scope.wait, MaxWait: scope.maxWait}, true
	}
}

// uniqueKey checks the WithUnique option of one job.
func (s *enqueueSettings) uniqueKey() (store.Unique, error) {
	switch u := s.unique; {
	case !s.hasUnique:
		return store.Unique{}, nil
	case u.Key == "":
		return store.Unique{}, fmt.Errorf("%w: WithUnique with an empty key", ErrInvalidJob)
	case u.Scope == 0:
		return store.Unique{}, fmt.Errorf("%w: WithUnique(%q) without a scope (use UniqueWhileLive or UniqueFor)", ErrInvalidJob, u.Key)
	case u.Scope == store.UniquePeriod && u.Period <= 0:
		return store.Unique{}, fmt.Errorf("%w: WithUnique(%q, UniqueFor(%v)): the period must be positive", ErrInvalidJob, u.Key, u.Period)
	case u.Mode == store.UniqueDebounce && u.Wait <= 0:
		return store.Unique{}, fmt.Errorf("%w: WithUnique(%q, ….Debounce(%v, %v)): the wait must be positive", ErrInvalidJob, u.Key, u.Wait, u.MaxWait)
	case u.Mode == store.UniqueDebounce && u.MaxWait < u.Wait:
		return store.Unique{}, fmt.Errorf("%w: WithUnique(%q, ….Debounce(%v, %v)): the max wait must be at least the wait", ErrInvalidJob, u.Key, u.Wait, u.MaxWait)
	case u.Mode == store.UniqueDebounce && (!s.runAt.IsZero() || s.hasDelay):
		return store.Unique{}, fmt.Errorf("%w: WithUnique(%q, ….Debounce(%v, %v)) decides the due time; drop WithRunAt and WithDelay", ErrInvalidJob, u.Key, u.Wait, u.MaxWait)
	case u.Mode.Rewrites() && len(s.parents) > 0:
		return store.Unique{}, fmt.Errorf("%w: WithUnique(%q) in %s mode names parents, which a rewrite of its holder could not keep", ErrInvalidJob, u.Key, u.Mode)
	}
	if err := s.unique.Validate(); err != nil {
		return store.Unique{}, fmt.Errorf("%w: %w", ErrInvalidJob, err)
	}
	return s.unique, nil
}

// EnqueueResult is what one enqueue did.
type EnqueueResult struct {
	// ID names the job stored, or, when Inserted is false, the job that
	// holds the unique key (which a RetentionPolicy may since have purged).
	ID JobID
	// Inserted is false when the job's unique key (WithUnique) was held and
	// nothing was stored for it. A job without a unique key is always
	// inserted.
	Inserted bool
	// Replaced is true when the key was held and the job's Replace or
	// Debounce mode rewrote the holder, ID, with the job's args, Tags and a
	// new due time.
	Replaced bool
}

// EnqueueUnique is Enqueue that also says whether the job was stored: a job
// whose unique key (WithUnique) is held answers the holder's id with
// Inserted false, and a nil error.
func (c *Client) EnqueueUnique(ctx context.Context, args JobArgs, opts ...EnqueueOption) (EnqueueResult, error) {
	res, err := c.EnqueueManyUnique(ctx, []EnqueueParams{{Args: args, Options: opts}})
	if err != nil {
		return EnqueueResult{}, err
	}
	return res[0], nil
}

// EnqueueManyUnique is EnqueueMany that answers per job, in input order,
// whether it was stored (see EnqueueResult).
func (c *Client) EnqueueManyUnique(ctx context.Context, params []EnqueueParams) ([]EnqueueResult, error) {
	res, err := c.enqueue(ctx, params)
	if err != nil || res == nil {
		return nil, err
	}
	return enqueueResults(res), nil
}

// enqueueResults turns the store's per-job results into the Client's.
func enqueueResults(res []store.InsertResult) []EnqueueResult {
	out := make([]EnqueueResult, len(res))
	for i, r := range res {
		out[i] = EnqueueResult{ID: r.ID, Inserted: r.Inserted, Replaced: r.Replaced}
	}
	return out
}
