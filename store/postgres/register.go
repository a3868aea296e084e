package postgres

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	"github.com/backwave/backwave/store"
)

// The URI schemes the package registers with store.Register.
const (
	Scheme     = "postgres"
	SchemeLong = "postgresql"
)

func init() {
	store.Register(Scheme, openURI)
	store.Register(SchemeLong, openURI)
}

// ParseURI splits a postgres:// or postgresql:// URI into the connection
// string pgx understands and the adapter's Options. Besides the connection
// parameters pgx understands, the query may carry the adapter's own
// settings, which are removed from the connection string:
//
//	schema=NAME     the Schema Name (default backwave)
//	migrate=false   check the schema version instead of migrating
//	history=POLICY  the Job History Policy: off, transitions or
//	                transitions+detail (the default)
//	pooler=transaction  the store is behind a pooler in transaction
//	                pooling mode (Options.Pooler, PoolerTransaction)
//	listen=URL      the Wake-Up Hint listener's own connection string,
//	                URL-escaped, naming the server directly
//	                (Options.ListenURL)
//
// For example postgres://app@db.internal:5432/app?sslmode=require&schema=jobs.
func ParseURI(u *url.URL) (connString string, opts Options, err error) {
	if u.Scheme != Scheme && u.Scheme != SchemeLong {
		return "", Options{}, fmt.Errorf("postgres: %w: URI scheme %q, want %s or %s", store.ErrInvalidParams, u.Scheme, Scheme, SchemeLong)
	}
	c := *u
	q := c.Query()
	opts.Schema = q.Get("schema")
	if _, err := checkSchema(opts.Schema); err != nil {
		return "", Options{}, err
	}
	if m := q.Get("migrate"); m != "" {
		on, err := strconv.ParseBool(m)
		if err != nil {
			return "", Options{}, fmt.Errorf("postgres: %w: URI parameter migrate=%q: want true or false", store.ErrInvalidParams, m)
		}
		opts.SkipMigrate = !on
	}
	if opts.History, _, err = store.HistoryFromQuery(q); err != nil {
		return "", Options{}, fmt.Errorf("postgres: %w", err)
	}
	q.Del("history")
	q.Del("schema")
	q.Del("migrate")
	c.RawQuery = q.Encode()
	return splitPoolerParams(c.String(), opts)
}

// openURI serves store.Open for the package's schemes (see ParseURI).
func openURI(ctx context.Context, u *url.URL) (store.Store, error) {
	connString, opts, err := ParseURI(u)
	if err != nil {
		return nil, err
	}
	s, err := Open(ctx, connString, opts)
	if err != nil {
		return nil, err // a nil *Store in the interface would not be nil
	}
	return s, nil
}
