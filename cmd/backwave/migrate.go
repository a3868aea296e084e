package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/backwave/backwave/store/mariadb"
	"github.com/backwave/backwave/store/postgres"
	"github.com/backwave/backwave/store/sqlite"
)

func migrateCommand() *cli.Command {
	return &cli.Command{
		Name:      "migrate",
		Usage:     "create a store, or bring its schema up to this version of BackWave",
		UsageText: "backwave migrate --db URI",
		Description: "Creates the SQLite file or the PostgreSQL schema if it is missing, then applies the missing\n" +
			"migrations one transaction per migration (PostgreSQL builds its job-table indexes concurrently\n" +
			"after it), coordinated with any other migrator (the SQLite write lock, a PostgreSQL advisory lock).\n" +
			"It says which versions it applied; running it again does nothing. The other commands, but\n" +
			"enqueue and demo, never create or migrate a store: they ask for this one.",
		Flags: []cli.Flag{dbFlag()},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := noArgs(cmd); err != nil {
				return err
			}
			t, err := targetOf(cmd)
			if err != nil {
				return err
			}
			m, err := migrate(ctx, t)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.Root().Writer, m)
			return nil
		},
	}
}

// migration is what one migrate did to a store.
type migration struct {
	// where names the store: the SQLite file, or "PostgreSQL schema NAME".
	where    string
	from, to int
	// applied are the versions applied, in order.
	applied []int
	// built counts the PostgreSQL indexes built as index steps.
	built int
}

// String says what the migration did, in one line.
func (m migration) String() string {
	if len(m.applied) == 0 {
		return fmt.Sprintf("%s: already at schema version %d; nothing to do", m.where, m.to)
	}
	s := fmt.Sprintf("%s: migrated from schema version %d to version %d (applied %s)", m.where, m.from, m.to, versionRanges(m.applied))
	switch {
	case m.built == 1:
		s += "; built 1 index concurrently"
	case m.built > 1:
		s += fmt.Sprintf("; built %d indexes concurrently", m.built)
	}
	return s
}

// migrate creates the store t names if it is missing and brings its schema
// up to this build, under the adapter's Coordinated Migration.
func migrate(ctx context.Context, t target) (migration, error) {
	if t.isSQLite() {
		res, err := sqlite.Migrate(ctx, t.path, t.lite)
		if err != nil {
			return migration{}, err
		}
		m := migration{where: t.path, from: res.From, to: res.To}
		for _, name := range res.Applied {
			num, _, _ := strings.Cut(name, "_") // "0001_init"
			v, err := strconv.Atoi(num)
			if err != nil {
				return migration{}, fmt.Errorf("sqlite: migration %q has no version number", name)
			}
			m.applied = append(m.applied, v)
		}
		return m, nil
	}
	if t.isMariaDB() {
		res, err := mariadb.Migrate(ctx, t.my, t.maria)
		if err != nil {
			return migration{}, err
		}
		schema := t.maria.Schema
		if schema == "" {
			schema = mariadb.DefaultSchema
		}
		return migration{where: "MariaDB/MySQL tables " + schema + "*", from: res.From, to: res.Version, applied: res.Applied}, nil
	}
	res, err := postgres.Migrate(ctx, t.conn, t.pg)
	if err != nil {
		return migration{}, err
	}
	schema := t.pg.Schema
	if schema == "" {
		schema = postgres.DefaultSchema
	}
	return migration{where: "PostgreSQL schema " + schema, from: res.From, to: res.Version, applied: res.Applied, built: len(res.Built)}, nil
}

// versionRanges writes ascending versions as ranges: "1–4, 6".
func versionRanges(vs []int) string {
	var parts []string
	for i := 0; i < len(vs); {
		j := i
		for j+1 < len(vs) && vs[j+1] == vs[j]+1 {
			j++
		}
		switch {
		case j == i:
			parts = append(parts, strconv.Itoa(vs[i]))
		case j == i+1:
			parts = append(parts, strconv.Itoa(vs[i]), strconv.Itoa(vs[j]))
		default:
			parts = append(parts, fmt.Sprintf("%d–%d", vs[i], vs[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}
