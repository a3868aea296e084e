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

// String describes the scope: "while live", "for 1h0m0s" or "none".
func (s UniqueScope) String() string {
	switch s.scope {
	case store.UniqueWhileLive:
		return "while live"
	case store.UniquePeriod:
		return "for " + s.period.String()
	}
	return "none"
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
func WithUnique(key string, scope UniqueScope) EnqueueOption {
	return func(s *enqueueSettings) {
		s.unique, s.hasUnique = store.Unique{Key: key, Scope: scope.scope, Period: scope.period}, true
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
	out := make([]EnqueueResult, len(res))
	for i, r := range res {
		out[i] = EnqueueResult{ID: r.ID, Inserted: r.Inserted}
	}
	return out, nil
}
