package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v3"
)

// Exit statuses of the command.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// usageError marks an error in how the command was called (a missing
// argument, a malformed flag value) rather than in what it did.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usagef returns a usageError.
func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// run runs the command line args (args[0] is the program name), writing
// output to stdout and errors to stderr, and returns the exit status. A
// failure prints exactly one line: "backwave: <error>".
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	app := newApp(stdout, stderr)
	err := app.Run(ctx, args)
	if err == nil {
		return exitOK
	}
	// Library errors name their package already; say it once.
	fmt.Fprintf(stderr, "backwave: %s\n", oneLine(strings.TrimPrefix(err.Error(), "backwave: ")))
	var ue usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	return exitError
}

// oneLine folds a multi-line message onto one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

// dbFlag is the --db flag of the commands that open a store.
func dbFlag() cli.Flag {
	return &cli.StringFlag{
		Name:    "db",
		Usage:   "the store: a URI (sqlite:///path/jobs.db, postgres://user@host/db, mem://) or a SQLite file path",
		Sources: cli.EnvVars("BACKWAVE_DB"),
	}
}

// newApp builds the command tree.
func newApp(stdout, stderr io.Writer) *cli.Command {
	onUsage := func(_ context.Context, _ *cli.Command, err error, _ bool) error { return usageError{err} }
	app := &cli.Command{
		Name:  "backwave",
		Usage: "a background job system: run the demo, migrate a store, inspect and enqueue jobs, manage Queues",
		Description: "--db takes a store URI or a plain path to a SQLite file; it may also come from $BACKWAVE_DB.\n" +
			"Start with: backwave demo --for 20s",
		Writer:          stdout,
		ErrWriter:       stderr,
		HideHelpCommand: true,
		OnUsageError:    onUsage,
		// Errors are printed once, by run; the library must not exit.
		ExitErrHandler: func(context.Context, *cli.Command, error) {},
		CommandNotFound: func(_ context.Context, cmd *cli.Command, name string) {
			fmt.Fprintf(stderr, "backwave: unknown command %q; see backwave --help\n", name)
		},
		Action: func(_ context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() > 0 {
				return usagef("unknown command %q; see backwave --help", cmd.Args().First())
			}
			return cli.ShowAppHelp(cmd)
		},
		Commands: []*cli.Command{
			demoCommand(),
			migrateCommand(),
			jobsCommand(),
			enqueueCommand(),
			queuesCommand(),
			tagsCommand(),
			schedulesCommand(),
		},
	}
	setUsageHandler(app, onUsage)
	return app
}

// setUsageHandler gives every subcommand the same usage-error handler.
func setUsageHandler(cmd *cli.Command, h cli.OnUsageErrorFunc) {
	for _, sub := range cmd.Commands {
		sub.OnUsageError = h
		sub.HideHelpCommand = true
		setUsageHandler(sub, h)
	}
}

// noArgs fails if the command got positional arguments it does not take.
func noArgs(cmd *cli.Command) error {
	if cmd.Args().Len() > 0 {
		return usagef("%s takes no arguments, got %q", cmd.FullName(), cmd.Args().Slice())
	}
	return nil
}
