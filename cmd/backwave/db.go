package main

import (
	"context"
	"fmt"
	"net/url"

	"github.com/urfave/cli/v3"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/memstore"
	"github.com/backwave/backwave/store/postgres"
	"github.com/backwave/backwave/store/sqlite"
)

// dbArg returns the --db value, required.
func dbArg(cmd *cli.Command) (string, error) {
	db := cmd.String("db")
	if db == "" {
		return "", usagef("%s needs --db (a store URI or a SQLite file path)", cmd.FullName())
	}
	return db, nil
}

// isURI reports whether db names a store by URI rather than by a plain file
// path: it has a scheme of two or more letters ("C:\jobs.db" is a path).
func isURI(db string) (*url.URL, bool) {
	u, err := url.Parse(db)
	if err != nil || len(u.Scheme) < 2 {
		return nil, false
	}
	return u, true
}

// openStore opens the store --db names: a URI through the registry, a plain
// path as a SQLite file. Opening migrates the schema (the adapters' default).
func openStore(ctx context.Context, cmd *cli.Command) (store.Store, error) {
	db, err := dbArg(cmd)
	if err != nil {
		return nil, err
	}
	if _, ok := isURI(db); ok {
		return store.Open(ctx, db)
	}
	return sqlite.Open(ctx, db, sqlite.Options{})
}

func migrateCommand() *cli.Command {
	return &cli.Command{
		Name:      "migrate",
		Usage:     "bring a store's schema up to this version of BackWave",
		UsageText: "backwave migrate --db URI",
		Description: "Applies the missing migrations in one transaction, coordinated with any other migrator\n" +
			"(the SQLite write lock, a PostgreSQL advisory lock). Running it again does nothing.",
		Flags: []cli.Flag{dbFlag()},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := noArgs(cmd); err != nil {
				return err
			}
			db, err := dbArg(cmd)
			if err != nil {
				return err
			}
			u, ok := isURI(db)
			switch {
			case !ok:
				return migrateSQLite(ctx, cmd, db, sqlite.Options{})
			case u.Scheme == sqlite.Scheme:
				path, opts, err := sqlite.ParseURI(u)
				if err != nil {
					return err
				}
				return migrateSQLite(ctx, cmd, path, opts)
			case u.Scheme == memstore.Scheme:
				fmt.Fprintln(cmd.Root().Writer, "mem:// has no schema to migrate")
				return nil
			default:
				s, err := store.Open(ctx, db) // the PostgreSQL adapter migrates on open unless told not to
				if err != nil {
					return err
				}
				defer func() { _ = s.Close() }()
				if ps, ok := s.(*postgres.Store); ok {
					res, err := ps.Migrate(ctx)
					if err != nil {
						return err
					}
					fmt.Fprintf(cmd.Root().Writer, "schema at version %d\n", res.Version)
					return nil
				}
				fmt.Fprintf(cmd.Root().Writer, "%s: opened and migrated\n", u.Scheme)
				return nil
			}
		},
	}
}

func migrateSQLite(ctx context.Context, cmd *cli.Command, path string, opts sqlite.Options) error {
	res, err := sqlite.Migrate(ctx, path, opts)
	if err != nil {
		return err
	}
	w := cmd.Root().Writer
	if len(res.Applied) == 0 {
		fmt.Fprintf(w, "%s: schema already at version %d; nothing to do\n", path, res.To)
		return nil
	}
	fmt.Fprintf(w, "%s: migrated from version %d to %d (%d applied)\n", path, res.From, res.To, len(res.Applied))
	return nil
}

// transition is a Transition Log entry read from any adapter.
type transition struct {
	At            string `json:"at"`
	From          string `json:"from"`
	State         string `json:"state"`
	Via           string `json:"via"`
	Attempt       int    `json:"attempt"`
	FailureDetail string `json:"failure_detail,omitempty"`
}

// extras reads what the contract does not name yet — the Transition Log and
// Job Output — from the adapters that offer it; ok is false for others.
func extras(ctx context.Context, s store.Store, id job.ID) (log []transition, output []byte, ok bool, err error) {
	add := func(at, from, state, via string, attempt job.Attempt, detail string) {
		log = append(log, transition{At: at, From: from, State: state, Via: via, Attempt: int(attempt), FailureDetail: detail})
	}
	switch s := s.(type) {
	case *sqlite.Store:
		trs, err := s.JobTransitions(ctx, id)
		if err != nil {
			return nil, nil, false, err
		}
		for _, t := range trs {
			add(stamp(t.At), t.From.String(), t.State.String(), t.Via.String(), t.Attempt, t.FailureDetail)
		}
		output, err = s.JobOutput(ctx, id)
		return log, output, true, err
	case *postgres.Store:
		trs, err := s.JobTransitions(ctx, id)
		if err != nil {
			return nil, nil, false, err
		}
		for _, t := range trs {
			add(stamp(t.At), t.From.String(), t.State.String(), t.Via.String(), t.Attempt, t.FailureDetail)
		}
		output, err = s.JobOutput(ctx, id)
		return log, output, true, err
	case *memstore.Store:
		trs, err := s.JobTransitions(ctx, id)
		if err != nil {
			return nil, nil, false, err
		}
		for _, t := range trs {
			add(stamp(t.At), t.From.String(), t.State.String(), t.Via.String(), t.Attempt, t.FailureDetail)
		}
		output, err = s.JobOutput(ctx, id)
		return log, output, true, err
	}
	return nil, nil, false, nil
}

// canceller is the operator cancel, offered by every adapter beside the
// contract.
type canceller interface {
	RequestCancel(ctx context.Context, id job.ID) error
}

var (
	_ canceller = (*sqlite.Store)(nil)
	_ canceller = (*postgres.Store)(nil)
	_ canceller = (*memstore.Store)(nil)
)
