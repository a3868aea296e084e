package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/mariadb"
	"github.com/backwave/backwave/store/memstore"
	"github.com/backwave/backwave/store/postgres"
	"github.com/backwave/backwave/store/sqlite"
)

// dbFlag is the --db flag of the commands that open a store.
func dbFlag() cli.Flag {
	return &cli.StringFlag{
		Name:    "db",
		Usage:   "the store: a SQLite file path, sqlite:///path/jobs.db, postgres://user@host/db or mariadb://user@host/db (mysql:// too)",
		Sources: cli.EnvVars("BACKWAVE_DB"),
	}
}

// target is the store --db names, parsed once: a SQLite file or a
// PostgreSQL database, with the adapter's options from the URI.
type target struct {
	// given is --db as the user wrote it, for messages (a password in a
	// URI is masked).
	given string
	// path and lite are set for a SQLite file.
	path string
	lite sqlite.Options
	// conn and pg are set for PostgreSQL.
	conn string
	pg   postgres.Options
	// my and maria are set for MariaDB or MySQL: my is the driver's DSN.
	my    string
	maria mariadb.Options
}

func (t target) isMariaDB() bool { return t.my != "" }

func (t target) isSQLite() bool { return t.path != "" }

// targetOf checks $BACKWAVE_KEYS and parses --db: a plain path or a sqlite: URI is a SQLite file, a
// postgres: or postgresql: URI a PostgreSQL database. mem:// is refused: its
// store would vanish when the command exits.
func targetOf(cmd *cli.Command) (target, error) {
	db := cmd.String("db")
	if db == "" {
		return target{}, usagef("%s needs --db (a SQLite file path or a postgres:// URI; or set $BACKWAVE_DB)", cmd.FullName())
	}
	// A malformed key ring is refused before any store is opened, so no
	// command creates or migrates a store it then cannot use.
	if _, err := keyRing(); err != nil {
		return target{}, err
	}
	u, ok := isURI(db)
	if !ok {
		return target{given: db, path: db}, nil
	}
	t := target{given: db}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			t.given = u.Redacted()
		}
	}
	var err error
	switch u.Scheme {
	case sqlite.Scheme:
		t.path, t.lite, err = sqlite.ParseURI(u)
	case postgres.Scheme, postgres.SchemeLong:
		t.conn, t.pg, err = postgres.ParseURI(u)
		t.pg.DisableListener = true // a command runs no workers: no Wake-Up Hints to hear
	case "mariadb", "mysql":
		cfg, opts, perr := mariadb.ParseURI(u)
		if perr == nil {
			t.my, t.maria = cfg.FormatDSN(), opts
		}
		err = perr
	case memstore.Scheme:
		return target{}, usagef("--db mem:// is an in-memory store that vanishes when this command exits; " +
			"give a SQLite file path or a postgres:// URI (the demo makes its own SQLite file)")
	default:
		return target{}, usagef("--db %q: unknown URI scheme %q (want a SQLite file path, sqlite://, postgres:// or mariadb://)", t.given, u.Scheme)
	}
	if err != nil {
		return target{}, usageError{err}
	}
	return t, nil
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

// notMigrated refuses a command on a store that is missing or behind this
// build: what the store is missing, and the command that creates it.
type notMigrated struct {
	what string
	db   string
}

func (e notMigrated) Error() string {
	return e.what + " — run: backwave migrate --db " + shellQuote(e.db)
}

// openExisting opens the store t names as it is (openRaw), through
// Encryption at Rest when $BACKWAVE_KEYS holds a key ring, so every
// command reads and writes plaintext. Every command but migrate, enqueue
// and demo opens its store this way.
func openExisting(ctx context.Context, t target) (backwave.Store, error) {
	s, err := openRaw(ctx, t)
	if err != nil {
		return nil, err
	}
	return withEncryption(ctx, s)
}

// openRaw opens the store t names as it is: it creates nothing and
// migrates nothing. A missing SQLite file, a missing PostgreSQL schema and
// a schema behind this build are a notMigrated error.
func openRaw(ctx context.Context, t target) (backwave.Store, error) {
	if t.isSQLite() {
		// Look first: opening would create the file.
		if _, err := os.Stat(t.path); errors.Is(err, fs.ErrNotExist) {
			if dir, err := os.Stat(filepath.Dir(t.path)); err == nil && dir.IsDir() {
				return nil, notMigrated{what: fmt.Sprintf("sqlite: open %s: no such file", t.path), db: t.given}
			}
			// A missing directory: the adapter says so, and migrate would not help.
		}
		opts := t.lite
		opts.ManualMigrate = true
		s, err := sqlite.Open(ctx, t.path, opts)
		if err != nil {
			return nil, refusal(err, sqlite.ErrSchemaBehind, t)
		}
		return s, nil
	}
	if t.isMariaDB() {
		opts := t.maria
		opts.ManualMigrate = true
		s, err := mariadb.Open(ctx, t.my, opts)
		if err != nil {
			return nil, refusal(err, mariadb.ErrSchemaBehind, t)
		}
		return s, nil
	}
	opts := t.pg
	opts.SkipMigrate = true
	s, err := postgres.Open(ctx, t.conn, opts)
	if err != nil {
		return nil, refusal(err, postgres.ErrSchemaBehind, t)
	}
	return s, nil
}

// refusal turns an adapter's "schema behind" error into a notMigrated one.
func refusal(err, behind error, t target) error {
	if errors.Is(err, behind) {
		return notMigrated{what: err.Error(), db: t.given}
	}
	return err
}

// openCreating opens the store t names, first creating and migrating it
// when it is missing or behind. It returns what the migration did (zero
// when nothing was needed). Only enqueue opens this way; migrate and demo
// migrate on their own.
func openCreating(ctx context.Context, t target) (backwave.Store, migration, error) {
	s, err := openExisting(ctx, t)
	var nm notMigrated
	if !errors.As(err, &nm) {
		return s, migration{}, err
	}
	m, err := migrate(ctx, t)
	if err != nil {
		return nil, migration{}, err
	}
	s, err = openExisting(ctx, t)
	return s, m, err
}

// openAdmin opens the store --db names as it is (openExisting) and an Admin
// over it acting as the --actor (see actorOf): the commands' one way to the
// Monitor reads and the Operator Actions, with opts. closeStore closes the
// store.
func openAdmin(ctx context.Context, cmd *cli.Command, opts ...backwave.AdminOption) (a *backwave.Admin, closeStore func(), err error) {
	actor, err := actorOf(cmd)
	if err != nil {
		return nil, nil, err
	}
	t, err := targetOf(cmd)
	if err != nil {
		return nil, nil, err
	}
	s, err := openExisting(ctx, t)
	if err != nil {
		return nil, nil, err
	}
	if a, err = backwave.NewAdmin(s, actor, opts...); err != nil {
		_ = s.Close()
		return nil, nil, err
	}
	return a, func() { _ = s.Close() }, nil
}

// shellQuote quotes s for a POSIX shell when it holds anything but the
// characters of plain paths and URIs, so a printed command can be pasted.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-:@+,%=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
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
		log = append(log, transition{At: stampJSON(t.At), From: t.From.String(), State: t.State.String(), Via: t.Via.String(),
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

// validName checks a Queue or schedule name as the store will, before
// anything is opened.
func validName(what, name string) error {
	if err := store.ValidateName(what, name); err != nil {
		return usageError{err}
	}
	return nil
}

// validFilter checks the Queue and Wire Name a job filter names, when it
// names them, as validName does.
func validFilter(f backwave.JobFilter) error {
	if f.Queue != "" {
		if err := validName("queue", f.Queue); err != nil {
			return err
		}
	}
	if f.WireName != "" {
		return validName("wire name", f.WireName)
	}
	return nil
}

// replicaFlag is the --replica flag of the commands that serve the Monitor
// (dashboard, mcp).
func replicaFlag() cli.Flag {
	return &cli.StringFlag{
		Name:  "replica",
		Usage: "serve the Monitor reads from this streaming standby of the --db PostgreSQL (postgres://user@standby/db); actions still go to --db",
	}
}

// openReplica opens --replica, when given, as a read replica of t's
// store, falling back to primary; nil without --replica. The replica must
// be a standby of a PostgreSQL --db, with no Encryption at Rest keys (its
// reads would bypass the decrypting wrapper).
func openReplica(ctx context.Context, cmd *cli.Command, t target, primary backwave.Store) (*postgres.Replica, error) {
	raw := cmd.String("replica")
	if raw == "" {
		return nil, nil
	}
	if t.conn == "" {
		return nil, usagef("--replica is a PostgreSQL standby of a postgres:// --db, not of %s", t.given)
	}
	if os.Getenv(keysEnv) != "" {
		return nil, usagef("--replica with $BACKWAVE_KEYS set: the replica's reads would not be decrypted; serve the Monitor from --db alone")
	}
	r, err := postgres.OpenReplica(ctx, raw, primary, postgres.ReplicaOptions{Schema: t.pg.Schema})
	if err != nil {
		return nil, fmt.Errorf("--replica: %w", err)
	}
	return r, nil
}
