package sqlite

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"modernc.org/sqlite"

	"github.com/backwave/backwave/internal/filecheck"
	"github.com/backwave/backwave/store"
)

// walSizeLimit is the size SQLite truncates the write-ahead log back to
// each time a checkpoint resets it (PRAGMA journal_size_limit). The log can
// still grow past it while a reader holds an old snapshot, since no
// checkpoint can pass that reader; without the limit the file would keep
// that size for good once the reader is gone.
const walSizeLimit = 64 << 20

// dsn builds the driver's data source name: WAL with its size limit, the
// busy timeout, the synchronous setting, and for the write connection
// BEGIN IMMEDIATE for every transaction. The path goes through as a plain file name, so SQLite's
// own URI parameters never apply; checkPath refuses a path with a '?'.
func dsn(path string, opts Options, writer bool) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(opts.BusyTimeout.Milliseconds(), 10)+")")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "journal_size_limit("+strconv.Itoa(walSizeLimit)+")")
	q.Add("_pragma", "synchronous("+strings.ToUpper(string(opts.Synchronous))+")")
	q.Add("_pragma", "foreign_keys(0)")
	if writer {
		q.Set("_txlock", "immediate")
	} else {
		q.Add("_pragma", "query_only(1)")
	}
	return path + "?" + q.Encode()
}

// checkPath refuses, with a one-line error wrapping the cause, a path the
// driver would fail on with a less helpful message: one whose directory is
// missing, one that names a directory or anything else that is not a
// regular file (a FIFO would block the open forever), and a file that
// cannot be read.
func checkPath(path string) error {
	if path == "" || strings.ContainsAny(path, "?#") || strings.HasPrefix(path, "file:") || path == ":memory:" {
		return fmt.Errorf("sqlite: %w: %q is not a plain file path", store.ErrInvalidParams, path)
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("sqlite: open %s: directory %s does not exist: %w", path, dir, err)
	case err != nil:
		return fmt.Errorf("sqlite: open %s: %w", path, err)
	case !st.IsDir():
		return fmt.Errorf("sqlite: open %s: %s is not a directory", path, dir)
	}
	switch exists, err := filecheck.Regular(path, true); {
	case errors.Is(err, filecheck.ErrNotRegular):
		// A directory, or a FIFO, socket or device: opening a FIFO would
		// block forever.
		return fmt.Errorf("sqlite: open %w, not a database file: %w", err, store.ErrInvalidParams)
	case err != nil:
		return fmt.Errorf("sqlite: open %s: %w", path, err)
	case !exists:
		return nil // Open creates it.
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("sqlite: open %s: cannot read and write the file: %w", path, err)
	}
	defer func() { _ = f.Close() }()
	header := make([]byte, 16)
	n, err := io.ReadFull(f, header)
	switch {
	case n == 0 && (err == io.EOF || err == nil):
		return nil // An empty file becomes a new database.
	case err != nil && !errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("sqlite: open %s: cannot read the file: %w", path, err)
	case string(header[:n]) != "SQLite format 3\x00":
		return fmt.Errorf("sqlite: open %s: %w", path, ErrNotDatabase)
	}
	return nil
}

// ErrNotDatabase is wrapped by Open for a file that is not a SQLite
// database.
var ErrNotDatabase = errors.New("the file is not a SQLite database")

// openError wraps a failure of the first connection with the path and, for
// the driver's "not a database" code, ErrNotDatabase.
func openError(path string, err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) && se.Code()&0xff == 26 { // SQLITE_NOTADB
		return fmt.Errorf("sqlite: open %s: %w: %w", path, ErrNotDatabase, err)
	}
	return fmt.Errorf("sqlite: open %s: %w", path, err)
}
