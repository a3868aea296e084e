// Command mirrorgen writes the root package's mirror_gen.go from the table
// in package mirror. Run it through go generate in the module root.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/backwave/backwave/internal/mirror"
)

func main() {
	// go generate runs a command in the directory of the file that names
	// it: the module root.
	src, err := mirror.Generate(".")
	if err == nil {
		err = os.WriteFile(filepath.Join(".", mirror.Output), src, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mirrorgen:", err)
		os.Exit(1)
	}
}
