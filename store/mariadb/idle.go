package mariadb

import (
	"context"
	"database/sql"
	"errors"
	"strings"
)

// serverNowSQL is the server's clock in microseconds since the Unix epoch,
// exact in any session time zone.
const serverNowSQL = `TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))`

// anyRow reports whether cond holds for some job of queues whose Wire
// Name is not in skip, read without
// the writer row at READ COMMITTED. cond compares against the store's now,
// written "{now}". A poll that finds nothing to claim or expire answers at
// once from this read instead of queueing on the writer row: it is the
// answer a locked call at the same instant would give, since a job that
// is not visible yet was not committed yet.
func (s *Store) anyRow(ctx context.Context, queues, skip []string, cond string) (bool, error) {
	if len(queues) == 0 {
		return false, nil
	}
	var b strings.Builder
	var args []any
	now := serverNowSQL
	if s.opts.Now != nil {
		now = "?"
	}
	b.WriteString(`SELECT 1 FROM backwave_job WHERE `)
	b.WriteString(strings.ReplaceAll(cond, "{now}", now))
	if s.opts.Now != nil {
		args = append(args, micros(s.opts.Now()))
	}
	b.WriteString(` AND queue IN `)
	args = inList(&b, args, queues)
	if len(skip) > 0 {
		b.WriteString(` AND wire_name NOT IN `)
		args = inList(&b, args, skip)
	}
	b.WriteString(` LIMIT 1`)
	var one int
	err := s.db.QueryRowContext(ctx, s.sql.of(b.String()), args...).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}
