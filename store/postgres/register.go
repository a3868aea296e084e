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

// openURI serves store.Open for postgres:// and postgresql:// URIs. Besides
// the connection parameters pgx understands, the query may carry the
// adapter's own settings, which are removed before connecting:
//
//	schema=NAME     the Schema Name (default backwave)
//	migrate=false   check the schema version instead of migrating
//
// For example postgres://app@db.internal:5432/app?sslmode=require&schema=jobs.
func openURI(ctx context.Context, u *url.URL) (store.Store, error) {
	c := *u
	q := c.Query()
	var opts Options
	opts.Schema = q.Get("schema")
	if m := q.Get("migrate"); m != "" {
		on, err := strconv.ParseBool(m)
		if err != nil {
			return nil, fmt.Errorf("postgres: %w: URI parameter migrate=%q: want true or false", store.ErrInvalidParams, m)
		}
		opts.SkipMigrate = !on
	}
	q.Del("schema")
	q.Del("migrate")
	c.RawQuery = q.Encode()
	return Open(ctx, c.String(), opts)
}
