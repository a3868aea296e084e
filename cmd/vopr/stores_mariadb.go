package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/backwave/backwave/internal/sim"
	"github.com/backwave/backwave/store/mariadb"
)

// newMariaDB replays on a fresh table prefix (the adapter's Schema Name)
// in the database the URI names: the prefix its schema= names, which must
// have no tables yet and is kept afterwards, or a new one whose tables are
// dropped afterwards. The adapter's walk reads the Transition Log in
// sequence order, which its writer row makes commit order, so it needs no
// Settle.
func newMariaDB(ctx context.Context, u *url.URL) (*otherStore, error) {
	cfg, opts, err := mariadb.ParseURI(u)
	if err != nil {
		return nil, fmt.Errorf("%w: -store: %w", errUsage, err)
	}
	keep := u.Query().Has("schema")
	if !keep {
		var b [6]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		opts.Schema = "vopr_" + hex.EncodeToString(b[:]) + "_"
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("-store: %w", err)
	}
	admin, dsn := sql.OpenDB(connector), cfg.FormatDSN()
	tables, err := prefixTables(ctx, admin, opts.Schema)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("-store: %w", err), admin.Close())
	}
	if len(tables) > 0 {
		return nil, errors.Join(fmt.Errorf("-store: the replay needs a fresh table prefix, and %q has %d tables", opts.Schema, len(tables)), admin.Close())
	}
	opts.ManualMigrate = false
	var st *mariadb.Store
	o := &otherStore{name: "mariadb"}
	open := func(ctx context.Context) (sim.Backing, error) {
		s, err := mariadb.Open(ctx, dsn, opts)
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
	o.cleanup = func() error {
		defer admin.Close()
		if keep {
			return nil
		}
		ctx := context.Background()
		tables, err := prefixTables(ctx, admin, opts.Schema)
		if err != nil || len(tables) == 0 {
			return err
		}
		_, err = admin.ExecContext(ctx, "DROP TABLE IF EXISTS "+strings.Join(tables, ", "))
		return err
	}
	return o, nil
}

// prefixTables lists, quoted, the tables of the connection's database
// whose names start with prefix.
func prefixTables(ctx context.Context, db *sql.DB, prefix string) ([]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = DATABASE() AND table_name LIKE ?`, strings.ReplaceAll(prefix, "_", `\_`)+"%")
	if err != nil {
		return nil, fmt.Errorf("mariadb tables of %q: %w", prefix, err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, fmt.Errorf("mariadb tables of %q: %w", prefix, err)
		}
		names = append(names, "`"+n+"`")
	}
	return names, rows.Err()
}
