// Command backwave is BackWave's command-line tool: a demo that runs a small
// fleet on an embedded SQLite file, and commands to migrate a store, list
// and show jobs, enqueue a job and manage Queues.
//
//	backwave demo [--db PATH] [--for DURATION]
//	backwave migrate --db URI
//	backwave jobs list --db URI [--state S] [--queue Q] [--json]
//	backwave jobs show --db URI ID
//	backwave enqueue --db URI --wire-name NAME --payload JSON [--queue Q]
//	backwave queues list|pause|resume|limit --db URI
//	backwave schedules list|trigger|pause|resume|remove|occurrences --db URI
//
// --db takes a store URI (sqlite:///path/jobs.db, postgres://…, mem://) or
// a plain file path, which means a SQLite file. Every command has --help.
// Bad input gets a one-line error on stderr and a non-zero exit status.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	// Zone data for hosts without it, so time zones always load.
	_ "time/tzdata"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
