package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// selfCommand is how the user runs this command again from where they
// are, for the commands the demo prints: "backwave" when that is on the
// PATH, "go run ./cmd/backwave" from a checkout under "go run" without it
// installed, and otherwise the path of this very executable.
func selfCommand() string {
	exe, _ := os.Executable()
	_, err := os.Stat(filepath.Join("cmd", "backwave", "main.go"))
	return selfCommandFor(exe, exec.LookPath, err == nil)
}

// selfCommandFor decides selfCommand for the executable exe, with lookPath
// finding a command on the PATH, and inCheckout telling whether the
// working directory is this module's checkout.
func selfCommandFor(exe string, lookPath func(string) (string, error), inCheckout bool) string {
	installed, err := lookPath("backwave")
	onPath := err == nil
	// "go run" builds into a temporary go-build directory, gone afterwards.
	goRun := exe == "" || strings.Contains(filepath.ToSlash(exe), "/go-build")
	switch {
	case goRun && onPath:
		return "backwave"
	case goRun && inCheckout:
		return "go run ./cmd/backwave"
	case goRun:
		return "go run github.com/backwave/backwave/cmd/backwave@latest"
	case onPath && samePath(installed, exe):
		return "backwave"
	}
	return shellQuote(exe)
}

// samePath reports whether a and b name the same file, through symlinks.
func samePath(a, b string) bool {
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	if errA != nil || errB != nil {
		return filepath.Clean(a) == filepath.Clean(b)
	}
	return ra == rb
}
