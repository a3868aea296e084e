package store

import (
	"context"
	"fmt"
	"time"

	"github.com/backwave/backwave/job"
)

// Retention deletes terminal jobs in bounded batches.
type Retention interface {
	// JobPurge deletes up to Limit jobs in the given terminal States that
	// reached their terminal state at or before the store's now minus
	// KeepFor, each with everything stored beside it — payload, Tags,
	// Transition Log, Job Output, its own Dependency edges and its schedule
	// occurrence record — in one short transaction. A job that is still a
	// Dependency parent of a job the store holds is kept: its dependents,
	// which may read its state and Job Output, go first, so descendants
	// are purged before their ancestors and a live job never loses an
	// ancestor. Which qualifying jobs a batch takes is the store's choice.
	// A result with Purged == Limit says more may be waiting: the caller
	// issues the same sweep again.
	JobPurge(ctx context.Context, p PurgeParams) (PurgeResult, error)
}

// PurgeParams are the params of Retention.JobPurge.
type PurgeParams struct {
	// States are the terminal states to purge; at least one.
	States []job.State
	// KeepFor is how long a terminal job is kept, from its FinalizedAt;
	// not negative.
	KeepFor time.Duration
	// Limit bounds the batch; at least 1.
	Limit int
}

// PurgeResult reports one purge batch.
type PurgeResult struct {
	Purged int
}

// Validate checks the params of JobPurge.
func (p PurgeParams) Validate() error {
	if len(p.States) == 0 {
		return fmt.Errorf("%w: purge names no state", ErrInvalidParams)
	}
	for _, s := range p.States {
		if !s.Terminal() {
			return fmt.Errorf("%w: purge of %s jobs: only terminal jobs are purged", ErrInvalidParams, s)
		}
	}
	if p.KeepFor < 0 {
		return fmt.Errorf("%w: purge keep horizon %v is negative", ErrInvalidParams, p.KeepFor)
	}
	if p.Limit < 1 {
		return fmt.Errorf("%w: purge limit %d is below 1", ErrInvalidParams, p.Limit)
	}
	return nil
}
