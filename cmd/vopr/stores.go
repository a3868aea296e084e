package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/backwave/backwave/internal/sim"
	"github.com/backwave/backwave/store/postgres"
	"github.com/backwave/backwave/store/sqlite"
)

// errPlantedBug refuses a Plan whose planted bug lives in memstore.
var errPlantedBug = sim.ErrPlantInStore

// storePrecision is the precision of the SQL adapters' stored times: each
// keeps microseconds.
const storePrecision = time.Microsecond

// otherStore is a Storage Adapter a Plan replays on beside memstore: it
// opens the adapter on the run's Virtual Time and makes it a run's Store
// through sim.NewFeedStore, which derives the transition feed and the
// Wake-Up Hints from the Storage Contract alone. What is particular to an
// adapter is here: how it is opened fresh, reopened for a store restart,
// and cleaned up.
type otherStore struct {
	name string
	// open opens the adapter fresh on env's clock.
	open func(ctx context.Context, env sim.StoreEnv) (sim.Backing, error)
	// reopen closes the open adapter and opens it again on the same data.
	reopen func(ctx context.Context) (sim.Backing, error)
	// settle, if set, waits until the adapter's walk can read every
	// committed Transition Log entry (sim.FeedOptions.Settle).
	settle func(ctx context.Context) error
	// close closes the open adapter; cleanup removes what the replay
	// created, where that is not kept for inspection.
	close, cleanup func() error

	feed *sim.FeedStore
}

// openStore makes the run's Store of o, for sim.Options.Store.
func (o *otherStore) openStore(ctx context.Context) func(sim.StoreEnv) (sim.Store, error) {
	return func(env sim.StoreEnv) (sim.Store, error) {
		if env.Mutation.InStore() {
			return nil, fmt.Errorf("%w: %s", errPlantedBug, env.Mutation)
		}
		if env.Precision <= 0 || env.Precision%storePrecision != 0 {
			return nil, fmt.Errorf("%s keeps times in microseconds: a run on it needs sim.Options.StorePrecision a multiple of %v, not %v", o.name, storePrecision, env.Precision)
		}
		b, err := o.open(ctx, env)
		if err != nil {
			return nil, err
		}
		opts := sim.FeedOptions{Reopen: func() (sim.Backing, error) { return o.reopen(ctx) }}
		if o.settle != nil {
			opts.Settle = func() error { return o.settle(ctx) }
		}
		fs, err := sim.NewFeedStore(b, env, opts)
		if err != nil {
			return nil, errors.Join(err, o.close())
		}
		o.feed = fs
		return fs, nil
	}
}

// newOtherStore returns the adapter uri names: sqlite://FILE (a file that
// must not exist yet), postgres://… (a fresh schema: the one the URI's
// schema= names, which must not exist yet and is kept afterwards, or a new
// one dropped afterwards) or mariadb://… / mysql://… (a fresh table
// prefix, on the same terms).
func newOtherStore(ctx context.Context, uri string) (*otherStore, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return nil, fmt.Errorf("%w: -store %q: %w", errUsage, uri, err)
	}
	switch u.Scheme {
	case sqlite.Scheme:
		return newSQLite(u)
	case postgres.Scheme, postgres.SchemeLong:
		return newPostgres(ctx, u)
	case "mariadb", "mysql":
		return newMariaDB(ctx, u)
	}
	return nil, fmt.Errorf("%w: -store %q: replays on sqlite://FILE, postgres://… or mariadb://…", errUsage, uri)
}

func newSQLite(u *url.URL) (*otherStore, error) {
	path, opts, err := sqlite.ParseURI(u)
	if err != nil {
		return nil, fmt.Errorf("%w: -store: %w", errUsage, err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("-store %s: the replay needs a fresh file, and this one exists", path)
	}
	var st *sqlite.Store
	o := &otherStore{name: "sqlite"}
	o.open = func(ctx context.Context, env sim.StoreEnv) (sim.Backing, error) {
		opts.Clock = env.Clock
		s, err := sqlite.Open(ctx, path, opts)
		st = s
		return s, err
	}
	o.close = func() error {
		if st == nil {
			return nil
		}
		err := st.Close()
		st = nil
		return err
	}
	o.reopen = func(ctx context.Context) (sim.Backing, error) {
		if err := o.close(); err != nil {
			return nil, err
		}
		s, err := sqlite.Open(ctx, path, opts)
		st = s
		return s, err
	}
	o.cleanup = func() error { return nil } // the file is kept
	return o, nil
}

func newPostgres(ctx context.Context, u *url.URL) (*otherStore, error) {
	conn, opts, err := postgres.ParseURI(u)
	if err != nil {
		return nil, fmt.Errorf("%w: -store: %w", errUsage, err)
	}
	keep := opts.Schema != ""
	if !keep {
		var b [6]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		opts.Schema = "vopr_" + hex.EncodeToString(b[:])
	}
	admin, err := pgx.Connect(ctx, conn)
	if err != nil {
		return nil, fmt.Errorf("-store: %w", err)
	}
	var exists bool
	if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, opts.Schema).Scan(&exists); err != nil {
		return nil, errors.Join(fmt.Errorf("-store: %w", err), admin.Close(ctx))
	}
	if exists {
		return nil, errors.Join(fmt.Errorf("-store: the replay needs a fresh schema, and %q exists", opts.Schema), admin.Close(ctx))
	}
	opts.DisableListener, opts.DisableNotify, opts.SkipMigrate = true, true, false
	var st *postgres.Store
	o := &otherStore{name: "postgres"}
	open := func(ctx context.Context) (sim.Backing, error) {
		s, err := postgres.Open(ctx, conn, opts)
		if err != nil {
			return nil, err
		}
		st = s
		return s, nil
	}
	o.open = func(ctx context.Context, env sim.StoreEnv) (sim.Backing, error) {
		opts.Now = env.Clock.Now
		return open(ctx)
	}
	o.close = func() error {
		if st == nil {
			return nil
		}
		err := st.Close()
		st = nil
		return err
	}
	o.reopen = func(ctx context.Context) (sim.Backing, error) {
		if err := o.close(); err != nil {
			return nil, err
		}
		return open(ctx)
	}
	// The walk reads only entries below the cluster's xid horizon, which
	// an open transaction of any database on the server holds back: wait
	// until every entry of the schema is below it.
	lagging := fmt.Sprintf(`SELECT EXISTS (SELECT 1 FROM %s.job_transition WHERE xid >= pg_snapshot_xmin(pg_current_snapshot()))`, pgx.Identifier{opts.Schema}.Sanitize())
	o.settle = func(ctx context.Context) error {
		deadline := time.Now().Add(time.Minute)
		for {
			var lag bool
			if err := admin.QueryRow(ctx, lagging).Scan(&lag); err != nil {
				return fmt.Errorf("postgres horizon: %w", err)
			}
			if !lag {
				return nil
			}
			if time.Now().After(deadline) {
				return errors.New("postgres horizon: an open transaction on the server held the Transition Log walk back for a minute")
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	o.cleanup = func() error {
		defer admin.Close(context.Background())
		if keep {
			return nil
		}
		_, err := admin.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{opts.Schema}.Sanitize()+" CASCADE")
		return err
	}
	return o, nil
}
