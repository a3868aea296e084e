package postgres

import (
	"context"
	"fmt"
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
