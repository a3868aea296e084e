// Command backwave is BackWave's command-line tool: a demo that runs a small
// fleet on an embedded SQLite file, and commands to create and migrate a
// store, look inside it, perform the audited Operator Actions and enqueue
// a job.
//
//	backwave demo [--db PATH] [--for DURATION]
//	backwave migrate --db URI
//	backwave jobs list|show|cancel|requeue|reschedule|counts|audit --db URI …
//	backwave enqueue --db URI --wire-name NAME [--payload JSON|@FILE|-] [--queue Q] [-q]
//	backwave queues list|pause|resume|limit --db URI …
//	backwave schedules list|trigger|pause|resume|remove|occurrences --db URI …
//	backwave tags facet|suggest --db URI …
//	backwave mcp --db URI [--allow PERMISSION,…] [--actor WHO] [--http ADDR]
//	backwave --version
//
// --db takes a SQLite file path, a sqlite: URI or a postgres: URI (or comes
// from $BACKWAVE_DB). Only migrate, enqueue and demo create or migrate a
// store; every other command opens it as it is and refuses a missing or
// un-migrated one with the command to run. Every list takes --limit and
// --json; a job, schedule or Queue the store lacks is "no such …"; Tags
// are --label TEXT and --tag KEY=VALUE. Every command has --help. Bad
// input gets a one-line error on stderr and a non-zero exit status (2 for
// a usage error, 1 otherwise). The commands go through the root package's
// Admin for reads and Operator Actions and its Client to enqueue; mcp
// serves package mcp's MCP Server.
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
	code := run(ctx, os.Args, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
