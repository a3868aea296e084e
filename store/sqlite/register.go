package sqlite

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

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
// busy_timeout (a Go duration), read_conns and history (the Job History
// Policy: off, transitions or transitions+detail, the default). Any other
// key is an error.
func openURI(ctx context.Context, u *url.URL) (store.Store, error) {
	path, opts, err := ParseURI(u)
	if err != nil {
		return nil, err
	}
	s, err := Open(ctx, path, opts)
	if err != nil {
		return nil, err // a nil *Store in the interface would not be nil
	}
	return s, nil
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
		case "history":
			var err error
			if opts.History, _, err = store.HistoryFromQuery(u.Query()); err != nil {
				return "", opts, fmt.Errorf("sqlite: URI %q: %w", u.Redacted(), err)
			}
		case "read_conns":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return "", opts, bad("read_conns=%q is not a positive integer", v)
			}
			opts.ReadConns = n
		default:
			return "", opts, bad("unknown parameter %q (known: synchronous, schema, migrate, busy_timeout, read_conns, history)", key)
		}
	}
	if _, err := opts.withDefaults(); err != nil {
		return "", opts, err
	}
	return path, opts, nil
}
