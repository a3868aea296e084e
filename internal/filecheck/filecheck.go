// Package filecheck is the one check every BackWave surface makes before
// it opens a file it was named (a SQLite database, a password file): the
// path must be a regular file, or absent where the caller creates it. A
// FIFO, socket or device is refused before it is opened, since opening a
// FIFO blocks until a writer comes, which may be never.
package filecheck

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ErrNotRegular is wrapped by Regular for a path that names a directory,
// FIFO, socket or device.
var ErrNotRegular = errors.New("not a regular file")

// Regular reports whether path exists, refusing with an error wrapping
// ErrNotRegular anything that is not a regular file (a symbolic link is
// followed). A missing path is (false, nil) when absentOK, and the
// fs.ErrNotExist error otherwise.
func Regular(path string, absentOK bool) (exists bool, err error) {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && absentOK:
		return false, nil
	case err != nil:
		return false, err
	case st.IsDir():
		return true, fmt.Errorf("%s is a directory: %w", path, ErrNotRegular)
	case !st.Mode().IsRegular():
		return true, fmt.Errorf("%s is a %s: %w", path, Kind(st.Mode()), ErrNotRegular)
	}
	return true, nil
}

// Kind names the type of a file that is not regular, for errors.
func Kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}
