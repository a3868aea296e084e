package main

import (
	"io"
	"os"

	"github.com/mattn/go-isatty"

	"github.com/backwave/backwave"
)

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// colourWanted reports whether the environment allows colour on a
// terminal: not when NO_COLOR is set to anything (no-color.org) or TERM is
// "dumb".
func colourWanted() bool {
	return os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
}

// palette paints the demo's text with ANSI colours; the zero palette (off)
// leaves text as it is. Pad text before painting it: the escape codes have
// no width on screen but do in fmt's.
type palette struct{ on bool }

func (p palette) paint(code, s string) string {
	if !p.on || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (p palette) bold(s string) string { return p.paint("1", s) }
func (p palette) dim(s string) string  { return p.paint("2", s) }

// state paints s in the colour of st: green for succeeded, red for
// dead-lettered and quarantined, yellow for waiting, blue for running.
func (p palette) state(st backwave.JobState, s string) string {
	switch st {
	case backwave.StateSucceeded:
		return p.paint("32", s)
	case backwave.StateDeadLettered, backwave.StateQuarantined:
		return p.paint("31", s)
	case backwave.StateRunning:
		return p.paint("34", s)
	case backwave.StateScheduled, backwave.StateAwaitingParent:
		return p.paint("33", s)
	case backwave.StateCancelled:
		return p.dim(s)
	}
	return s
}
