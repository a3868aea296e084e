package sqlite

import (
	"context"
	"errors"
	"fmt"

	"github.com/backwave/backwave/store"
)

// errKeysPending is what the key-policy methods answer until this adapter
// stores Concurrency Keys.
var errKeysPending = errors.New("sqlite: concurrency keys are not implemented yet")

// QueueSetKeyLimit is not implemented yet: it fails and stores nothing.
func (s *Store) QueueSetKeyLimit(ctx context.Context, p store.QueueSetKeyLimitParams) error {
	return fmt.Errorf("queue %q: set key limit: %w", p.Queue, errKeysPending)
}

// QueueSetKeyRate is not implemented yet: it fails and stores nothing.
func (s *Store) QueueSetKeyRate(ctx context.Context, p store.QueueSetKeyRateParams) error {
	return fmt.Errorf("queue %q: set key rate: %w", p.Queue, errKeysPending)
}

// QueueSetFairClaim is not implemented yet: it fails and stores nothing.
func (s *Store) QueueSetFairClaim(ctx context.Context, p store.QueueSetFairClaimParams) error {
	return fmt.Errorf("queue %q: set fair claim: %w", p.Queue, errKeysPending)
}

// QueueKeys is not implemented yet: it fails.
func (s *Store) QueueKeys(ctx context.Context, p store.QueueKeysParams) ([]store.KeyCount, error) {
	return nil, fmt.Errorf("queue %q: keys: %w", p.Queue, errKeysPending)
}
