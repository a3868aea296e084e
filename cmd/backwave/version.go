package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/backwave/backwave/store/mariadb"
	"github.com/backwave/backwave/store/postgres"
	"github.com/backwave/backwave/store/sqlite"
)

// printVersion prints the module version of this build ("(devel)" from a
// checkout), the commit when the build recorded one, and the schema version
// each adapter migrates to.
func printVersion(w io.Writer) error {
	version, commit := "(unknown)", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		version = bi.Main.Version
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
