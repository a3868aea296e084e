package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
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

// run runs the command line args (args[0] is the program name), reading
// stdin (enqueue --payload -), writing output to stdout and errors to
// stderr, and returns the exit status. A
// failure prints exactly one line: "backwave: <error>".
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	app := newApp(stdout, stderr)
	app.Reader = stdin
	args = append(args[:1:1], normalizeArgs(app, args[1:])...)
	err := checkCommandPath(app, args[1:])
	if err == nil {
		err = app.Run(ctx, args)
	}
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

// Help categories of the top-level commands (help sorts them by name).
const (
	categoryStart = "getting started"
	categoryStore = "working with a store"
)

// commands is the command table: every top-level subcommand, one entry
// each, with its help category. A new subcommand is one more entry.
func commands() []*cli.Command {
	var out []*cli.Command
	for _, e := range []struct {
		category string
		cmd      *cli.Command
	}{
		{categoryStart, demoCommand()},
		{categoryStart, migrateCommand()},
		{categoryStart, manifestCommand()},
		{categoryStart, versionCommand()},
		{categoryStore, jobsCommand()},
		{categoryStore, workflowsCommand()},
		{categoryStore, enqueueCommand()},
		{categoryStore, queuesCommand()},
		{categoryStore, nodesCommand()},
		{categoryStore, schedulesCommand()},
		{categoryStore, tagsCommand()},
		{categoryStore, dashboardCommand()},
		{categoryStore, mcpCommand()},
		{categoryStore, keysCommand()},
	} {
		e.cmd.Category = e.category
		out = append(out, e.cmd)
	}
	return out
}

// newApp builds the command tree.
func newApp(stdout, stderr io.Writer) *cli.Command {
	onUsage := func(_ context.Context, cmd *cli.Command, err error, _ bool) error {
		return usageError{flagSpelling(err, flagNames(cmd))}
	}
	app := &cli.Command{
		Name:  "backwave",
		Usage: "a background job system for Go: run the demo, migrate a store, look inside it, enqueue jobs",
		Description: "Start with: backwave demo --for 20s\n" +
			"--db takes a SQLite file path, sqlite:///path/jobs.db or postgres://user@host/db; it may also come\n" +
			"from $BACKWAVE_DB. Only migrate, enqueue and demo create a store; the other commands refuse a\n" +
			"missing or un-migrated one and say what to run. Every command has --help (or: backwave help COMMAND);\n" +
			"--db, --actor and --json may also come before the command.",
		Writer:          stdout,
		ErrWriter:       stderr,
		HideHelpCommand: true,
		OnUsageError:    onUsage,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "version", Usage: "print the version of this build and the store schema versions it migrates to"},
		},
		// Errors are printed once, by run; the library must not exit.
		ExitErrHandler: func(context.Context, *cli.Command, error) {},
		Action: func(_ context.Context, cmd *cli.Command) error {
			if cmd.Bool("version") {
				return printVersion(cmd.Root().Writer)
			}
			return cli.ShowAppHelp(cmd)
		},
		Commands: commands(),
	}
	setUsageHandler(app, onUsage)
	return app
}

// setUsageHandler gives every subcommand the same usage-error handler, and
// every command with subcommands an action that shows its help.
func setUsageHandler(cmd *cli.Command, h cli.OnUsageErrorFunc) {
	for _, sub := range cmd.Commands {
		sub.OnUsageError = h
		sub.HideHelpCommand = true
		if len(sub.Commands) > 0 && sub.Action == nil {
			sub.Action = func(_ context.Context, cmd *cli.Command) error { return cli.ShowSubcommandHelp(cmd) }
		}
		setUsageHandler(sub, h)
	}
}

// checkCommandPath walks args down the command tree before anything runs
// and refuses a word that names no subcommand where one is expected, with
// the valid ones: "jobs lst --db x" is an unknown command, not an unknown
// flag. A command with subcommands takes no flag with a value (only --help
// and --version), so every word not starting with "-" is a command name
// until a command without subcommands is reached.
func checkCommandPath(cmd *cli.Command, args []string) error {
	path := cmd.Name
	for _, a := range args {
		if a == "--" || len(cmd.Commands) == 0 {
			return nil
		}
		if strings.HasPrefix(a, "-") {
			continue
		}
		sub := cmd.Command(a)
		if sub == nil {
			names := make([]string, 0, len(cmd.Commands))
			for _, c := range cmd.Commands {
				if !c.Hidden {
					names = append(names, c.Name)
				}
			}
			return usagef("unknown command %q for %s (%sits commands: %s; see %s --help)",
				a, path, didYouMean(a, names), strings.Join(names, ", "), path)
		}
		cmd, path = sub, path+" "+sub.Name
	}
	return nil
}

var (
	// The flag parser's own messages spell a flag with one dash.
	oneDashFlag = regexp.MustCompile(`(flag(?: needs an argument:)?|provided but not defined:) -([A-Za-z][\w-]*)`)
	// "invalid value "x" for flag -limit: strconv.ParseInt: parsing "x": invalid syntax"
	invalidValue = regexp.MustCompile(`^invalid value "(.*)" for flag -+([\w-]+): (?:strconv\.\w+: parsing "(?:.*)": )?(.*)$`)
)

// flagSpelling rewrites the flag parser's messages to spell flags the way
// the help does, with two dashes, and in plain words.
func flagSpelling(err error, flags []string) error {
	msg := err.Error()
	if m := invalidValue.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("--%s %q is not a valid value (%s)", m[2], m[1], m[3])
	}
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		name = strings.TrimLeft(name, "-")
		if n, ok := nearest(name, flags); ok {
			return fmt.Errorf("unknown flag --%s (did you mean --%s?)", name, n)
		}
		return fmt.Errorf("unknown flag --%s", name)
	}
	return errors.New(oneDashFlag.ReplaceAllString(msg, "$1 --$2"))
}

// noArgs fails if the command got positional arguments it does not take.
func noArgs(cmd *cli.Command) error {
	if cmd.Args().Len() > 0 {
		return usagef("%s takes no arguments, got %q", cmd.FullName(), cmd.Args().Slice())
	}
	return nil
}
