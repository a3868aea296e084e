package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// MigrationVersions lists the versions of the embedded migrations, in order.
func MigrationVersions() []int {
	var out []int
	for _, m := range migrations() {
		out = append(out, m.version)
	}
	return out
}

// MigrateLater migrates s as a later build would: the shipped migrations,
// then each of later (the text of one migration file, with its compat
// header), numbered from SchemaVersion()+1. It is how the tests make a
// schema newer than this build without editing the shipped list.
func MigrateLater(ctx context.Context, s *Store, later ...string) (MigrateResult, error) {
	all := migrations()
	for _, text := range later {
		v := all[len(all)-1].version + 1
		m, err := parseMigration(v, fmt.Sprintf("%03d_later_build", v), text)
		if err != nil {
			return MigrateResult{}, err
		}
		all = append(all, m)
	}
	return s.migrate(ctx, all)
}

// HoldMigrationLock takes the Coordinated Migration lock as Migrate does
// and holds it until release is called.
func HoldMigrationLock(ctx context.Context, s *Store) (release func(), err error) {
	got := make(chan error, 1)
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		err := s.db.session(ctx, func(c session) error {
			rel, err := s.acquireMigrationLock(ctx, c)
			if err != nil {
				return err
			}
			got <- nil
			<-done
			rel()
			return nil
		})
		if err != nil {
			got <- err
		}
	}()
	if err := <-got; err != nil {
		<-finished
		return nil, err
	}
	return func() { close(done); <-finished }, nil
}

// errRollBack ends ExplainClaimJIT's transaction without committing it.
var errRollBack = errors.New("roll back")

// ExplainClaimJIT runs a claim of queues as JobClaim's batch does (the plan
// settings first) under EXPLAIN ANALYZE, with jit_above_cost set to 0 so
// any statement left to JIT is compiled, and returns the plan text; the
// claim is rolled back.
func ExplainClaimJIT(ctx context.Context, s *Store, queues []string) (string, error) {
	var plan strings.Builder
	err := s.db.inTx(ctx, func(q querier) error {
		if err := q.query(ctx, `SET LOCAL jit_above_cost = 0`, nil, nil); err != nil {
			return err
		}
		if err := q.query(ctx, genericPlanSQL, nil, nil); err != nil {
			return err
		}
		args := []any{nil, queues, int32(8), "explain", int64(5_000_000), true}
		if err := q.query(ctx, "EXPLAIN (ANALYZE) "+s.sql(claimSQL), args, func(scan scanFunc) error {
			var line string
			if err := scan(&line); err != nil {
				return err
			}
			plan.WriteString(line + "\n")
			return nil
		}); err != nil {
			return err
		}
		return errRollBack
	})
	if err != nil && !errors.Is(err, errRollBack) {
		return "", err
	}
	return plan.String(), nil
}
