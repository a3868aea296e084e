package sqlite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"modernc.org/sqlite"

	"github.com/backwave/backwave/store"
)

// Scheme is the URI scheme the package registers with store.Register.
const Scheme = "sqlite"

func init() { store.Register(Scheme, openURI) }

// openURI serves store.Open for "sqlite:" URIs:
//
//	sqlite:///var/lib/app/jobs.db          an absolute path
//	sqlite://jobs.db, sqlite:jobs.db       a path relative to the working directory
//	sqlite:///jobs.db?synchronous=full&schema=app_&migrate=false&busy_timeout=30s
//
// The query may set synchronous (normal or full), schema (the Schema Name),
// migrate (true, the default, or false for Options.ManualMigrate),
// busy_timeout (a Go duration) and read_conns. Any other key is an error.
func openURI(ctx context.Context, u *url.URL) (store.Store, error) {
	path, opts, err := ParseURI(u)
	if err != nil {
		return nil, err
	}
	return Open(ctx, path, opts)
}

// ParseURI turns a "sqlite:" URI into the path and Options Open takes; see
// the package documentation for the form.
func ParseURI(u *url.URL) (string, Options, error) {
	var opts Options
	bad := func(format string, args ...any) error {
		return fmt.Errorf("sqlite: %w: URI %q: %s", store.ErrInvalidParams, u.Redacted(), fmt.Sprintf(format, args...))
	}
	if u.Scheme != Scheme {
		return "", opts, bad("scheme is not %q", Scheme)
	}
	if u.User != nil {
		return "", opts, bad("a file URI takes no user")
	}
	path := u.Opaque
	if path == "" {
		path = u.Host + u.Path
	}
	if path == "" {
		return "", opts, bad("no file path")
	}
	for key, vals := range u.Query() {
		if len(vals) != 1 {
			return "", opts, bad("%s given %d times", key, len(vals))
		}
		v := vals[0]
		switch key {
		case "synchronous":
			opts.Synchronous = Synchronous(strings.ToLower(v))
		case "schema":
			opts.Schema = v
		case "migrate":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return "", opts, bad("migrate=%q is not a boolean", v)
			}
			opts.ManualMigrate = !b
		case "busy_timeout":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return "", opts, bad("busy_timeout=%q is not a positive duration", v)
			}
			opts.BusyTimeout = d
		case "read_conns":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return "", opts, bad("read_conns=%q is not a positive integer", v)
			}
			opts.ReadConns = n
		default:
			return "", opts, bad("unknown parameter %q (known: synchronous, schema, migrate, busy_timeout, read_conns)", key)
		}
	}
	if _, err := opts.withDefaults(); err != nil {
		return "", opts, err
	}
	return path, opts, nil
}

// dsn builds the driver's data source name: WAL, the busy timeout, the
// synchronous setting, and for the write connection BEGIN IMMEDIATE for
// every transaction. The path goes through as a plain file name, so SQLite's
// own URI parameters never apply; checkPath refuses a path with a '?'.
func dsn(path string, opts Options, writer bool) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(opts.BusyTimeout.Milliseconds(), 10)+")")
	q.Add("_pragma", "journal_mode(WAL)")
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
// missing, one that names a directory, and a file that cannot be read.
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
	st, err = os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil // Open creates it.
	case err != nil:
		return fmt.Errorf("sqlite: open %s: %w", path, err)
	case st.IsDir():
		return fmt.Errorf("sqlite: open %s: is a directory, not a database file", path)
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
