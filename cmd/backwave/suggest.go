package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v3"
)

// The first hour at the command line: "help" as a command, global flags
// given before the subcommand, and the nearest name offered on a typo.

// globalFlags are the flags that may come before the subcommand
// ("backwave --db jobs.db jobs list"), each with whether it takes a value.
// They are moved after the command path, where the subcommand reads them.
var globalFlags = map[string]bool{"db": true, "actor": true, "json": false}

// normalizeArgs rewrites args (without the program name) into the form the
// command tree parses: "help X Y" becomes "X Y --help", and global flags
// before the first subcommand move to just after the command path.
func normalizeArgs(root *cli.Command, args []string) []string {
	if len(args) > 0 && args[0] == "help" {
		return append(slices.Clone(args[1:]), "--help")
	}
	var moved, rest []string
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		takes, global := globalFlags[name]
		if !strings.HasPrefix(a, "-") || a == "--" || !global {
			break
		}
		moved = append(moved, a)
		if takes && !hasValue && i+1 < len(args) {
			i++
			moved = append(moved, args[i])
		}
	}
	if len(moved) == 0 {
		return args
	}
	rest = args[i:]
	// The command path: the words naming subcommands, down the tree.
	cmd, n := root, 0
	for n < len(rest) && len(cmd.Commands) > 0 && !strings.HasPrefix(rest[n], "-") {
		sub := cmd.Command(rest[n])
		if sub == nil {
			break
		}
		cmd, n = sub, n+1
	}
	out := append(slices.Clone(rest[:n]), moved...)
	return append(out, rest[n:]...)
}

// nearest returns the name in names closest to word by edit distance
// (editDistance), if it is close enough to be a likely typo: within two
// edits, and fewer edits than word has bytes. The first of equals wins.
func nearest(word string, names []string) (string, bool) {
	best, bestD := "", 3
	for _, n := range names {
		if d := editDistance(word, n); d < bestD && d < len(word) {
			best, bestD = n, d
		}
	}
	return best, best != ""
}

// didYouMean is `did you mean "x"? ` for a typo of one of names, or "".
func didYouMean(word string, names []string) string {
	if n, ok := nearest(word, names); ok {
		return fmt.Sprintf("did you mean %q? ", n)
	}
	return ""
}

// flagNames lists the long names of cmd's flags.
func flagNames(cmd *cli.Command) []string {
	var out []string
	for _, f := range cmd.Flags {
		names := f.Names()
		if len(names) > 0 {
			out = append(out, names[0])
		}
	}
	return out
}
