package mariadb

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strconv"

	"github.com/go-sql-driver/mysql"

	"github.com/backwave/backwave/store"
)

// Schemes are the URI schemes the package registers with store.Register:
// one adapter serves both servers.
var Schemes = []string{"mariadb", "mysql"}

func init() {
	for _, s := range Schemes {
		store.Register(s, openURI)
	}
}

// openURI serves store.Open for mariadb:// and mysql:// URIs.
func openURI(ctx context.Context, u *url.URL) (store.Store, error) {
	cfg, opts, err := ParseURI(u)
	if err != nil {
		return nil, err
	}
	s, err := openConfig(ctx, cfg, opts)
	if err != nil {
		return nil, err // a nil *Store in the interface would not be nil
	}
	return s, nil
}

// OpenURI opens a Store on a mariadb:// or mysql:// URI, taking the
// store's own parameters from its query (see ParseURI).
func OpenURI(ctx context.Context, uri string) (*Store, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return nil, fmt.Errorf("mariadb: %w: URI: %v", store.ErrInvalidParams, err)
	}
	cfg, opts, err := ParseURI(u)
	if err != nil {
		return nil, err
	}
	return openConfig(ctx, cfg, opts)
}

// ParseURI turns a URI of the form
//
//	mariadb://user:password@host:port/database?schema=app_&migrate=false&history=transitions
//
// (or mysql://…) into the driver's configuration and the store's Options.
// The query may set schema (the Schema Name, a table prefix), migrate
// (true, the default, or false for Options.ManualMigrate), history (the Job
// History Policy: off, transitions or transitions+detail), tls (the
// driver's tls setting) and timeout (the dial timeout, a Go duration). Any
// other key is an error.
func ParseURI(u *url.URL) (*mysql.Config, Options, error) {
	var opts Options
	bad := func(format string, args ...any) error {
		return fmt.Errorf("mariadb: %w: URI %q: %s", store.ErrInvalidParams, u.Redacted(), fmt.Sprintf(format, args...))
	}
	if u.Scheme != "mariadb" && u.Scheme != "mysql" {
		return nil, opts, bad("scheme is not mariadb or mysql")
	}
	cfg, rest, err := configFromURL(u)
	if err != nil {
		return nil, opts, err
	}
	keys := make([]string, 0, len(rest))
	for k := range rest {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		v := rest.Get(key)
		switch key {
		case "schema":
			opts.Schema = v
		case "migrate":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, opts, bad("migrate=%q is not a boolean", v)
			}
			opts.ManualMigrate = !b
		case "history":
			if opts.History, _, err = store.HistoryFromQuery(rest); err != nil {
				return nil, opts, fmt.Errorf("mariadb: %w", err)
			}
		default:
			return nil, opts, bad("unknown parameter %q (known: schema, migrate, history, tls, timeout)", key)
		}
	}
	if _, err := opts.withDefaults(); err != nil {
		return nil, opts, err
	}
	return cfg, opts, nil
}

// openConfig opens a Store on a driver configuration.
func openConfig(ctx context.Context, cfg *mysql.Config, opts Options) (*Store, error) {
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("mariadb: open: %w", err)
	}
	db := sqlOpenDB(connector)
	s, err := open(ctx, db, opts, true)
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	return s, nil
}
