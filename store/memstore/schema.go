package memstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/backwave/backwave/internal/plant"
	"github.com/backwave/backwave/store"
)

// The In-Memory Store carries a schema version, so the Simulator can run an
// In-Place Upgrade: SchemaMigrate records one more migration, and
// SchemaCheck is the check a node's store makes at Open, by the same rule
// the SQL adapters apply (store.CheckSchemaWindow). A fresh store is at
// version 0 with no migration recorded; its data never changes shape, since
// memstore keeps no tables to alter: the version is what nodes of two
// releases read and judge.

// SchemaVersion returns the version the store's schema is at.
func (s *Store) SchemaVersion() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.schema)
}

// SchemaMigrate records one migration with compatibility mark compat
// (store.CompatN1 for one the release before can run on) and returns the
// version it brought the schema to.
func (s *Store) SchemaMigrate(ctx context.Context, name, compat string) (int, error) {
	if err := s.lock(ctx); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	v := len(s.schema) + 1
	s.schema = append(s.schema, store.SchemaStep{Version: v, Name: fmt.Sprintf("%04d_%s", v, name), Compat: compat})
	return v, nil
}

// SchemaCheck fails unless a build that knows schema versions up to known
// may run on the store's schema (store.CheckSchemaWindow): the error wraps
// store.ErrSchemaTooNew.
func (s *Store) SchemaCheck(ctx context.Context, known int) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	current := len(s.schema)
	newer := s.schema[min(max(known, 0), current):]
	if s.planted(plant.WindowRefusesNewer) && current > known {
		newer = append(slices.Clone(newer), newer...) // every newer schema looks two steps away
	}
	if err := store.CheckSchemaWindow("memstore", current, known, newer); err != nil {
		return fmt.Errorf("memstore: %w", err)
	}
	return nil
}
