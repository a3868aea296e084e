package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/backwave/backwave"
	"github.com/urfave/cli/v3"

	"github.com/backwave/backwave/store/mariadb"
	"github.com/backwave/backwave/store/postgres"
	"github.com/backwave/backwave/store/sqlite"
)

// versionCommand is "backwave version", the same report as --version.
func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the version of this build and the store schema versions it migrates to",
		Action: func(_ context.Context, cmd *cli.Command) error {
			if err := noArgs(cmd); err != nil {
				return err
			}
			return printVersion(cmd.Root().Writer)
		},
	}
}

// printVersion prints the BackWave release (backwave.Version), the module
// version of this build when it is not a checkout's "(devel)", the commit
// when the build recorded one, and the schema version each adapter
// migrates to.
func printVersion(w io.Writer) error {
	version, commit := backwave.Version, ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if mv := bi.Main.Version; mv != "" && mv != "(devel)" && mv != "v"+backwave.Version {
			version += ", module " + mv
		}
		var modified bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value[:min(12, len(s.Value))]
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if commit != "" && modified {
			commit += ", modified"
		}
	}
	if commit != "" {
		version += " (commit " + commit + ")"
	}
	_, err := fmt.Fprintf(w, "backwave %s, built with %s\nmigrates SQLite stores to schema version %d, PostgreSQL stores to version %d, MariaDB/MySQL stores to version %d\n",
		version, runtime.Version(), sqlite.LatestSchemaVersion(), postgres.SchemaVersion(), mariadb.SchemaVersion())
	return err
}
