package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"reflect"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// Transactional Enqueue: the jobs go in through the caller's transaction,
// with the statement JobInsertMany runs, so they commit or roll back with
// the caller's business writes. The statement's NOTIFY is transactional
// too: PostgreSQL delivers it at commit, and drops it on rollback.

// JobInsertManyTx is Transactional Enqueue for pgx users: it inserts the
// jobs inside tx, the caller's own transaction on the store's database, so
// they become visible to workers when tx commits and vanish if it rolls
// back. BackWave never commits or rolls back tx. Wake-Up Hints go out at
// commit, and never for a rollback. See JobInsertManyInTx for the checks.
func (s *Store) JobInsertManyTx(ctx context.Context, tx pgx.Tx, p store.InsertManyParams) ([]job.ID, error) {
	res, err := s.insertPgxTx(ctx, tx, p)
	return store.ResultIDs(res), err
}

// insertPgxTx is JobInsertManyTx answering per job.
func (s *Store) insertPgxTx(ctx context.Context, tx pgx.Tx, p store.InsertManyParams) ([]store.InsertResult, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	if err := checkInsert(p); err != nil {
		return nil, err
	}
	if isNil(tx) {
		return nil, fmt.Errorf("postgres: insert jobs: %w: nil pgx.Tx", store.ErrTxUnsupported)
	}
	return s.insertInTx(ctx, pgxTxRunner(tx), false, p)
}

// JobInsertManySQLTx is Transactional Enqueue for database/sql users: it
// inserts the jobs inside tx, the caller's own transaction on the store's
// database through pgx's stdlib driver, whichever connection mode the
// store itself uses. Otherwise it is JobInsertManyTx.
func (s *Store) JobInsertManySQLTx(ctx context.Context, tx *sql.Tx, p store.InsertManyParams) ([]job.ID, error) {
	res, err := s.insertSQLTx(ctx, tx, p)
	return store.ResultIDs(res), err
}

// insertSQLTx is JobInsertManySQLTx answering per job.
func (s *Store) insertSQLTx(ctx context.Context, tx *sql.Tx, p store.InsertManyParams) ([]store.InsertResult, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	if err := checkInsert(p); err != nil {
		return nil, err
	}
	if tx == nil {
		return nil, fmt.Errorf("postgres: insert jobs: %w: nil *sql.Tx", store.ErrTxUnsupported)
	}
	return s.insertInTx(ctx, sqlRunner{q: tx}, true, p)
}

// JobInsertManyInTx implements store.TxInserter: tx is a pgx.Tx (as for
// JobInsertManyTx) or a *sql.Tx on pgx's stdlib driver (as for
// JobInsertManySQLTx), on the store's database. Any other value, a nil
// one, and a transaction on another database or server wrap
// store.ErrTxUnsupported, and nothing is written. Before it inserts, one
// statement in tx (one round trip) checks that tx is on the store's
// database: the same database of the same cluster (pg_control_system's
// system identifier).
func (s *Store) JobInsertManyInTx(ctx context.Context, tx any, p store.InsertManyParams) ([]job.ID, error) {
	res, err := s.JobInsertManyResultsInTx(ctx, tx, p)
	return store.ResultIDs(res), err
}

// JobInsertManyResultsInTx implements store.TxInserter: it is
// JobInsertManyInTx answering per job, as JobInsertManyResults does.
func (s *Store) JobInsertManyResultsInTx(ctx context.Context, tx any, p store.InsertManyParams) ([]store.InsertResult, error) {
	switch t := tx.(type) {
	case pgx.Tx:
		return s.insertPgxTx(ctx, t, p)
	case *sql.Tx:
		return s.insertSQLTx(ctx, t, p)
	default:
		return nil, fmt.Errorf("postgres: insert jobs: %w: a transaction of type %T; the Networked Adapter takes a pgx.Tx or a *sql.Tx on pgx's stdlib driver",
			store.ErrTxUnsupported, tx)
	}
}

// JobRescheduleInTx implements store.TxInserter: tx is a pgx.Tx or a
// *sql.Tx on pgx's stdlib driver, on the store's database, checked as for
// JobInsertManyInTx before the job is touched.
func (s *Store) JobRescheduleInTx(ctx context.Context, tx any, p store.JobRescheduleParams) (job.Job, error) {
	var q querier
	viaSQL := false
	switch t := tx.(type) {
	case pgx.Tx:
		if t == nil {
			return job.Job{}, fmt.Errorf("postgres: reschedule job: %w: a nil pgx.Tx", store.ErrTxUnsupported)
		}
		q = pgxTxRunner(t)
	case *sql.Tx:
		if t == nil {
			return job.Job{}, fmt.Errorf("postgres: reschedule job: %w: a nil *sql.Tx", store.ErrTxUnsupported)
		}
		q, viaSQL = sqlRunner{q: t}, true
	default:
		return job.Job{}, fmt.Errorf("postgres: reschedule job: %w: a transaction of type %T; the Networked Adapter takes a pgx.Tx or a *sql.Tx on pgx's stdlib driver",
			store.ErrTxUnsupported, tx)
	}
	if err := p.Validate(); err != nil {
		return job.Job{}, err
	}
	if err := s.enter(ctx); err != nil {
		return job.Job{}, err
	}
	what := fmt.Sprintf("reschedule job %d in the caller's transaction", p.ID)
	if err := s.checkTx(ctx, q, viaSQL); err != nil {
		return job.Job{}, s.wrap(what, err)
	}
	out, err := s.reschedule(ctx, q, p)
	return out, s.wrap(what, err)
}

// insertInTx checks that q, the caller's transaction, is on the store's
// database, then inserts the jobs of p (checked already) through it. viaSQL
// tells that q is a *sql.Tx, whose driver is not known.
func (s *Store) insertInTx(ctx context.Context, q querier, viaSQL bool, p store.InsertManyParams) ([]store.InsertResult, error) {
	if err := s.checkTx(ctx, q, viaSQL); err != nil {
		return nil, s.wrap("insert jobs in the caller's transaction", err)
	}
	res, err := s.insertChecked(ctx, q, p)
	if err == nil && followsInsert(p) {
		err = s.afterInsert(ctx, q, p, res)
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// dbIdentity names one database of one PostgreSQL cluster.
type dbIdentity struct {
	system int64 // pg_control_system().system_identifier, fixed at initdb
	oid    int64 // the database's oid in its cluster
	name   string
}

// identitySQL reads the identity of the database it runs on. Its parameter
// is an array, the Schema Name in a list, so that a *sql.Tx whose driver
// cannot encode arrays — every statement of the store passes some — fails
// here, before anything is written.
const identitySQL = `SELECT c.system_identifier, d.oid::bigint, d.datname::text, to_regnamespace(($1::text[])[1]) IS NOT NULL
FROM pg_control_system() c, pg_database d
WHERE d.datname = current_database()`

// identity reads the identity of the database q runs on, and whether it
// holds the store's schema.
func (s *Store) identity(ctx context.Context, q querier) (id dbIdentity, hasSchema bool, err error) {
	n := 0
	err = q.query(ctx, identitySQL, []any{[]string{s.schema}}, func(scan scanFunc) error {
		n++
		return scan(&id.system, &id.oid, &id.name, &hasSchema)
	})
	if err == nil && n != 1 {
		err = fmt.Errorf("the database's identity: %d rows", n)
	}
	return id, hasSchema, err
}

// checkTx fails, wrapping store.ErrTxUnsupported, unless q runs on the
// store's database. The store's own identity is read once, on its
// connections, and kept.
func (s *Store) checkTx(ctx context.Context, q querier, viaSQL bool) error {
	if err := checkTxTypes(q); err != nil {
		return err
	}
	mine := s.ident.Load()
	if mine == nil {
		id, _, err := s.identity(ctx, s.db)
		if err != nil {
			return fmt.Errorf("read the store's database identity: %w", err)
		}
		mine = &id
		s.ident.Store(mine)
	}
	theirs, hasSchema, err := s.identity(ctx, q)
	switch {
	case err == nil:
	case viaSQL && !answered(ctx, err):
		return fmt.Errorf("%w: the *sql.Tx is not a PostgreSQL transaction on pgx's stdlib driver (%w)", store.ErrTxUnsupported, err)
	default:
		return fmt.Errorf("check the transaction's database: %w", err)
	}
	if theirs != *mine {
		return fmt.Errorf("%w: the transaction is on database %q (oid %d) of cluster %d, the store on %q (oid %d) of cluster %d",
			store.ErrTxUnsupported, theirs.name, theirs.oid, theirs.system, mine.name, mine.oid, mine.system)
	}
	if !hasSchema {
		return fmt.Errorf("%w: the transaction's database holds no schema %q", store.ErrTxUnsupported, s.schema)
	}
	return nil
}

// checkTxTypes fails, as a store's own connections would, when q is a
// caller's pgx.Tx on a connection that prepares no statement (exec mode or
// the simple protocol, as behind a transaction pooler) and whose type map
// was not told the store's array types (RegisterTypes): its first statement
// with an array argument would fail with pgx's "cannot find encode plan",
// after the check of its database, with nothing said of the cause.
func checkTxTypes(q querier) error {
	r, ok := q.(pgxRunner)
	if !ok {
		return nil
	}
	tx, ok := r.q.(pgx.Tx)
	if !ok || tx.Conn() == nil {
		return nil
	}
	switch tx.Conn().Config().DefaultQueryExecMode {
	case pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol:
		if !typesRegistered(tx.Conn().TypeMap()) {
			return errTxTypesNotRegistered
		}
	}
	return nil
}

// answered reports whether err came from PostgreSQL or from the way to it
// (the server's error, a network failure, a done context or transaction)
// rather than from a driver that is not pgx's or a database that is not
// PostgreSQL.
func answered(ctx context.Context, err error) bool {
	var pe *pgconn.PgError
	var ne net.Error
	return ctx.Err() != nil || errors.As(err, &pe) || errors.As(err, &ne) ||
		errors.Is(err, sql.ErrTxDone) || errors.Is(err, sql.ErrConnDone) || errors.Is(err, driver.ErrBadConn)
}

// isNil reports whether v is nil or holds a nil pointer, which calling a
// method on would dereference.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		return rv.IsNil()
	}
	return false
}
