package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/backwave/backwave"
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
		Description: "Applies the missing migrations one transaction per migration (PostgreSQL builds its job-table indexes concurrently after it), coordinated with any other migrator\n" +
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

// openAdmin opens the store --db names and an Admin over it acting as the
// --actor (see actorOf): the command's one way to the Monitor reads and the
// Operator Actions. closeStore closes the store.
func openAdmin(ctx context.Context, cmd *cli.Command) (a *backwave.Admin, closeStore func(), err error) {
	actor, err := actorOf(cmd)
	if err != nil {
		return nil, nil, err
	}
	s, err := openStore(ctx, cmd)
	if err != nil {
		return nil, nil, err
	}
	if a, err = backwave.NewAdmin(s, actor); err != nil {
		_ = s.Close()
		return nil, nil, err
	}
	return a, func() { _ = s.Close() }, nil
}

// transition is a Transition Log entry as the command prints it.
type transition struct {
	At            string `json:"at"`
	From          string `json:"from"`
	State         string `json:"state"`
	Via           string `json:"via"`
	Attempt       int    `json:"attempt"`
	FailureDetail string `json:"failure_detail,omitempty"`
}

// transitionsOf renders a job's Transition Log.
func transitionsOf(trs []backwave.Transition) []transition {
	var log []transition
	for _, t := range trs {
		log = append(log, transition{At: stamp(t.At), From: t.From.String(), State: t.State.String(), Via: t.Via.String(),
			Attempt: int(t.Attempt), FailureDetail: t.FailureDetail})
	}
	return log
}

// actorFlag names who performs an Operator Action, for the audit trail.
func actorFlag() cli.Flag {
	return &cli.StringFlag{
		Name:    "actor",
		Usage:   "who performs the action, recorded in the audit trail (default cli:$USER)",
		Sources: cli.EnvVars("BACKWAVE_ACTOR"),
	}
}

// actorOf returns the --actor flag, or "cli:" and the user's name (for the
// commands without the flag, too: the Monitor reads record nothing).
func actorOf(cmd *cli.Command) (backwave.Actor, error) {
	a := backwave.Actor(cmd.String("actor"))
	if a == "" {
		user := os.Getenv("USER")
		if user == "" {
			user = "unknown"
		}
		a = backwave.Actor("cli:" + user)
	}
	if err := a.Validate(); err != nil {
		return "", usageError{err}
	}
	return a, nil
}

// parseTag reads a command-line Tag: KEY=VALUE is a Keyed Tag, anything
// else a Label.
func parseTag(raw string) backwave.Tag {
	if k, v, ok := strings.Cut(raw, "="); ok {
		return backwave.Keyed(k, v)
	}
	return backwave.Label(raw)
}
