package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// A migration runs as one or more steps, each in a write transaction of its
// own, so it holds the file's write lock — which every claim and report of
// every process on the file waits for — only as long as its longest step
// rather than as long as all of it. A line that is exactly "-- step" ends
// one step and begins the next; a migration without one is a single step,
// as before.
//
// Each step commits with a row in the step table naming it done, and the
// last one commits with the migration's version instead (the step rows of
// that version are removed with it), so an interrupted migration — a crash,
// a cancelled deploy, a busy timeout — is resumed where it stopped by the
// next Migrate, on any process: a step is never applied twice, and the
// version is recorded only once every step is.
//
// Coordinated Migration: one migrator at a time runs the steps. The first
// step it applies records it as the migrator (the migrator table, with a
// lease of migratorLease renewed by every step); a concurrent migrator that
// finds another's live lease waits, re-checking between pauses, and finds
// the schema migrated when the lease's holder is done — nothing to do. A
// lease left by a migrator that stopped part way lapses, and the next
// migrator takes it and resumes.
//
// While a migration is part applied the schema's version is still the one
// before it, so the release before runs on it as on that version: a step
// boundary must leave the schema one that release runs on, and what the
// steps leave behind must be additive in the sense of the migration's mark.
// The statements that must see each other's rows — a backfill and the
// triggers that keep it current from then on — belong in one step.
//
// What bounds a step: SQLite builds an index, and runs a backfill, under
// the write lock from start to end, so a step that builds an index on the
// job table holds it for the whole scan of the table; splitting index builds
// into steps of their own bounds the stall by the longest single build
// instead of their sum, and nothing shorter is possible on SQLite.

// stepPause is how long the migrator waits between two steps of a
// migration. A writer that found the lock taken sleeps in SQLite's busy
// handler, waking at intervals of up to 100 ms, and a migrator that began
// its next step at once would take the lock again before any of them woke:
// the steps would stall writers as long as the whole migration. Waiting a
// little longer than the longest interval lets every waiting writer in.
// A step that held the lock no longer than stepPauseAfter (any step on a
// small file) kept no writer waiting long, and the next follows at once.
const (
	stepPause      = 120 * time.Millisecond
	stepPauseAfter = 20 * time.Millisecond
)

// pause waits d, or until ctx is done.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// stepsTable records the steps done of a migration not yet recorded.
const stepsTable = `CREATE TABLE IF NOT EXISTS backwave_schema_step (
	version INTEGER NOT NULL,
	step    INTEGER NOT NULL,
	PRIMARY KEY (version, step)
) WITHOUT ROWID`

// migratorTable records the migrator running the steps and its lease.
const migratorTable = `CREATE TABLE IF NOT EXISTS backwave_schema_migrator (
	id      INTEGER PRIMARY KEY CHECK (id = 1),
	owner   TEXT    NOT NULL,
	expires INTEGER NOT NULL
)`

// migratorLease is how long a migrator's claim on the steps lasts past its
// latest step.
const migratorLease = 30 * time.Second

// stepMarker is the line that separates two steps of a migration.
const stepMarker = "-- step"

// steps returns the migration's statements split at its step markers.
func (m migration) steps() []string {
	var out []string
	var cur strings.Builder
	for line := range strings.Lines(m.sql) {
		if strings.TrimSpace(line) == stepMarker {
			out = append(out, cur.String())
			cur.Reset()
			continue
		}
		cur.WriteString(line)
	}
	return append(out, cur.String())
}

// migrate is Migrate over a given migration list (tests append to it the
// migrations of a later build): a first transaction reads the version (and
// checks the version window of a newer schema), then each step of each
// missing migration runs in its own.
func (s *Store) migrate(ctx context.Context, all []migration) (MigrateResult, error) {
	var res MigrateResult
	var pending []migration
	err := s.write(ctx, "migrate", func(tx *sql.Tx) error {
		res, pending = MigrateResult{}, nil
		if _, err := tx.ExecContext(ctx, s.schema.Rename(versionsTable)); err != nil {
			return fmt.Errorf("create the versions table: %w", err)
		}
		v, err := schemaVersion(ctx, tx, s.schema)
		if err != nil {
			return err
		}
		res.From, res.To = v, v
		if latest := all[len(all)-1].version; v > latest {
			return checkWindow(ctx, tx, s.schema, v, latest)
		}
		for _, m := range all {
			if m.version > v {
				pending = append(pending, m)
			}
		}
		if len(pending) == 0 {
			return nil
		}
		if err := addCompatColumn(ctx, tx, s.schema); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.schema.Rename(stepsTable)); err != nil {
			return fmt.Errorf("create the steps table: %w", err)
		}
		if _, err := tx.ExecContext(ctx, s.schema.Rename(migratorTable)); err != nil {
			return fmt.Errorf("create the migrator table: %w", err)
		}
		return nil
	})
	if err != nil {
		return MigrateResult{}, err
	}
	owner := migratorID()
	if len(pending) > 0 {
		defer s.releaseMigrator(context.WithoutCancel(ctx), owner)
	}
	for _, m := range pending {
		steps := m.steps()
		var took time.Duration
		for i, text := range steps {
			if took > stepPauseAfter {
				if err := pause(ctx, stepPause); err != nil {
					return MigrateResult{}, fmt.Errorf("sqlite: migrate: %w", err)
				}
			}
			start := time.Now()
			applied, err := s.migrateStep(ctx, owner, m, i, len(steps), text)
			took = time.Since(start)
			for errors.Is(err, errOtherMigrator) {
				// Another migrator runs the steps: wait for it.
				if err := pause(ctx, stepPause); err != nil {
					return MigrateResult{}, fmt.Errorf("sqlite: migrate: %w", err)
				}
				applied, err = s.migrateStep(ctx, owner, m, i, len(steps), text)
				took = 0
			}
			if err != nil {
				return MigrateResult{}, err
			}
			if applied && i == len(steps)-1 {
				res.Applied = append(res.Applied, fmt.Sprintf("%04d_%s", m.version, m.name))
			}
		}
		res.To = m.version
	}
	return res, nil
}

// migrateStep applies step i of n of migration m in one write transaction,
// unless it is done already (by this process before an interruption, or by
// another migrator meanwhile), and reports whether it applied it.
func (s *Store) migrateStep(ctx context.Context, owner string, m migration, i, n int, text string) (bool, error) {
	applied, other := false, false
	err := s.write(ctx, "migrate", func(tx *sql.Tx) error {
		applied, other = false, false
		v, err := schemaVersion(ctx, tx, s.schema)
		if err != nil {
			return err
		}
		if v >= m.version {
			return nil // recorded, by another migrator
		}
		now := micros(time.Now())
		var holder string
		var expires int64
		err = tx.QueryRowContext(ctx, s.schema.Rename(`SELECT owner, expires FROM backwave_schema_migrator WHERE id = 1`)).Scan(&holder, &expires)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return fmt.Errorf("read the migrator: %w", err)
		case holder != owner && expires > now:
			other = true
			return nil
		}
		if _, err := tx.ExecContext(ctx, s.schema.Rename(`INSERT INTO backwave_schema_migrator (id, owner, expires) VALUES (1, ?, ?)
ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, expires = excluded.expires`), owner, now+migratorLease.Microseconds()); err != nil {
			return fmt.Errorf("record the migrator: %w", err)
		}
		var done bool
		if err := tx.QueryRowContext(ctx, s.schema.Rename(`SELECT EXISTS (SELECT 1 FROM backwave_schema_step WHERE version = ? AND step = ?)`),
			m.version, i).Scan(&done); err != nil {
			return fmt.Errorf("read the progress of migration %04d_%s: %w", m.version, m.name, err)
		}
		if done {
			return nil
		}
		if _, err := tx.ExecContext(ctx, s.schema.Rename(text)); err != nil {
			if n > 1 {
				return fmt.Errorf("apply migration %04d_%s, step %d of %d: %w", m.version, m.name, i+1, n, err)
			}
			return fmt.Errorf("apply migration %04d_%s: %w", m.version, m.name, err)
		}
		if i < n-1 {
			if _, err := tx.ExecContext(ctx, s.schema.Rename(`INSERT INTO backwave_schema_step (version, step) VALUES (?, ?)`), m.version, i); err != nil {
				return fmt.Errorf("record step %d of migration %04d_%s: %w", i+1, m.version, m.name, err)
			}
		} else {
			if _, err := tx.ExecContext(ctx, s.schema.Rename(`INSERT INTO backwave_schema_version (version, name, applied_at, compat) VALUES (?, ?, ?, ?)`),
				m.version, m.name, micros(s.clock.Now()), string(m.compat)); err != nil {
				return fmt.Errorf("record migration %04d_%s: %w", m.version, m.name, err)
			}
			if _, err := tx.ExecContext(ctx, s.schema.Rename(`DELETE FROM backwave_schema_step WHERE version = ?`), m.version); err != nil {
				return fmt.Errorf("clear the steps of migration %04d_%s: %w", m.version, m.name, err)
			}
		}
		applied = true
		return nil
	})
	if err == nil && other {
		return false, errOtherMigrator
	}
	return applied, err
}

// releaseMigrator gives up owner's lease on the steps, if it holds it, so
// the next migrator need not wait for it to lapse. It is best effort: a
// lease left behind lapses.
func (s *Store) releaseMigrator(ctx context.Context, owner string) {
	_ = s.write(ctx, "migrate", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, s.schema.Rename(`DELETE FROM backwave_schema_migrator WHERE id = 1 AND owner = ?`), owner)
		return err
	})
}

// errOtherMigrator says another migrator holds the lease on the steps.
var errOtherMigrator = errors.New("another migrator runs the steps")

// migratorID names one Migrate call among every process's: the process id
// and a random number.
func migratorID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%d-%x", os.Getpid(), b)
}
