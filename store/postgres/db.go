package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/backwave/backwave/store"
)

// The Store runs its SQL through one of two connection modes: a pgx pool
// (the native API: pipelined batches, one round trip per claim) or a
// database/sql DB over pgx's stdlib driver. The same statements, already
// renamed for the Schema Name, go through either.

// scanFunc scans the current row into dest.
type scanFunc func(dest ...any) error

// querier runs single statements: a pool, a DB, or a transaction of either
// (the caller's, for Transactional Enqueue).
type querier interface {
	// query runs one statement and calls each for every row it returns.
	query(ctx context.Context, sql string, args []any, each func(scan scanFunc) error) error
	// exec runs one statement and returns the number of rows it affected.
	exec(ctx context.Context, sql string, args ...any) (int64, error)
}

// stmt is one statement of a batch; each, if set, is called for every row.
type stmt struct {
	sql  string
	args []any
	each func(scan scanFunc) error
}

// database is a connection mode.
type database interface {
	querier
	// batch runs the statements in one transaction, each with its own
	// snapshot (READ COMMITTED). With pgx it is one pipelined round trip in
	// an implicit transaction; with database/sql an explicit transaction.
	batch(ctx context.Context, stmts ...stmt) error
	// inTx runs fn in one explicit transaction, committed if fn returns nil.
	inTx(ctx context.Context, fn func(q querier) error) error
	// session runs fn on one connection held for the whole call, so that
	// session state (Migrate's advisory lock) lasts from one statement to
	// the next; statements on it run outside any transaction unless inside
	// its inTx.
	session(ctx context.Context, fn func(c session) error) error
	ping(ctx context.Context) error
	// checkTypes fails unless a connection's type map knows the store's
	// array types (RegisterTypes).
	checkTypes(ctx context.Context) error
	// connConfig returns the settings to open a dedicated connection with
	// (the Wake-Up Hint listener's), or nil if the mode cannot tell.
	connConfig(ctx context.Context) (*pgx.ConnConfig, error)
	close()
}

// session is one dedicated connection (database.session).
type session interface {
	querier
	// inTx runs fn in one explicit transaction on this connection.
	inTx(ctx context.Context, fn func(q querier) error) error
	// discard closes the connection when the session ends instead of
	// returning it to the pool: for a connection whose session state could
	// not be cleaned up (a lock it failed to release).
	discard()
}

// pgxRunner adapts a pgx pool, connection or transaction to querier.
type pgxRunner struct {
	q interface {
		Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	}
	e func(ctx context.Context, sql string, args ...any) (int64, error)
}

func (r pgxRunner) query(ctx context.Context, sql string, args []any, each func(scan scanFunc) error) error {
	rows, err := r.q.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	return eachPgxRow(rows, each)
}

func (r pgxRunner) exec(ctx context.Context, sql string, args ...any) (int64, error) {
	return r.e(ctx, sql, args...)
}

func eachPgxRow(rows pgx.Rows, each func(scan scanFunc) error) error {
	defer rows.Close()
	scan := rows.Scan // one method value for every row, not an allocation each
	for rows.Next() {
		if each == nil {
			continue
		}
		if err := each(scan); err != nil {
			return err
		}
	}
	return rows.Err()
}

func pgxTxRunner(tx pgx.Tx) pgxRunner {
	return pgxRunner{q: tx, e: func(ctx context.Context, sql string, args ...any) (int64, error) {
		tag, err := tx.Exec(ctx, sql, args...)
		return tag.RowsAffected(), err
	}}
}

// poolDB is the pgx connection mode.
type poolDB struct {
	pgxRunner
	pool *pgxpool.Pool
	owns bool // Close closes the pool
}

func newPoolDB(pool *pgxpool.Pool, owns bool) *poolDB {
	return &poolDB{
		pgxRunner: pgxRunner{q: pool, e: func(ctx context.Context, sql string, args ...any) (int64, error) {
			tag, err := pool.Exec(ctx, sql, args...)
			return tag.RowsAffected(), err
		}},
		pool: pool,
		owns: owns,
	}
}

func (d *poolDB) batch(ctx context.Context, stmts ...stmt) error {
	b := &pgx.Batch{}
	for _, s := range stmts {
		b.Queue(s.sql, s.args...)
	}
	br := d.pool.SendBatch(ctx, b)
	for _, s := range stmts {
		rows, err := br.Query()
		if err != nil {
			_ = br.Close()
			return err
		}
		if err := eachPgxRow(rows, s.each); err != nil {
			_ = br.Close()
			return err
		}
	}
	return br.Close()
}

func (d *poolDB) inTx(ctx context.Context, fn func(q querier) error) error {
	return pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error { return fn(pgxTxRunner(tx)) })
}

func (d *poolDB) session(ctx context.Context, fn func(c session) error) error {
	c, err := d.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	ps := &pgxSession{c: c, pgxRunner: pgxRunner{q: c, e: func(ctx context.Context, sql string, args ...any) (int64, error) {
		tag, err := c.Exec(ctx, sql, args...)
		return tag.RowsAffected(), err
	}}}
	defer func() {
		if ps.bad {
			// The pool destroys a closed connection instead of reusing it.
			_ = c.Conn().Close(context.Background())
		}
		c.Release()
	}()
	return fn(ps)
}

// pgxSession is a session on a connection acquired from a pgx pool.
type pgxSession struct {
	pgxRunner
	c   *pgxpool.Conn
	bad bool
}

func (s *pgxSession) inTx(ctx context.Context, fn func(q querier) error) error {
	return pgx.BeginFunc(ctx, s.c, func(tx pgx.Tx) error { return fn(pgxTxRunner(tx)) })
}

func (s *pgxSession) discard() { s.bad = true }

func (d *poolDB) ping(ctx context.Context) error { return d.pool.Ping(ctx) }

func (d *poolDB) checkTypes(ctx context.Context) error {
	c, err := d.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres: connect: %w", err)
	}
	defer c.Release()
	if !typesRegistered(c.Conn().TypeMap()) {
		return errTypesNotRegistered
	}
	return nil
}

func (d *poolDB) connConfig(context.Context) (*pgx.ConnConfig, error) {
	return d.pool.Config().ConnConfig.Copy(), nil
}

func (d *poolDB) close() {
	if d.owns {
		d.pool.Close()
	}
}

// sqlRunner adapts a *sql.DB or *sql.Tx to querier.
type sqlRunner struct {
	q interface {
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
		ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	}
}

func (r sqlRunner) query(ctx context.Context, query string, args []any, each func(scan scanFunc) error) error {
	rows, err := r.q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	scan := rows.Scan // one method value for every row, not an allocation each
	for rows.Next() {
		if each == nil {
			continue
		}
		if err := each(scan); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return rows.Close()
}

func (r sqlRunner) exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := r.q.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// sqlDB is the database/sql connection mode.
type sqlDB struct {
	sqlRunner
	db   *sql.DB
	owns bool
}

func newSQLDB(db *sql.DB, owns bool) *sqlDB {
	return &sqlDB{sqlRunner: sqlRunner{q: db}, db: db, owns: owns}
}

func (d *sqlDB) batch(ctx context.Context, stmts ...stmt) error {
	if len(stmts) == 1 {
		return d.query(ctx, stmts[0].sql, stmts[0].args, stmts[0].each)
	}
	return d.inTx(ctx, func(q querier) error {
		for _, s := range stmts {
			if err := q.query(ctx, s.sql, s.args, s.each); err != nil {
				return err
			}
		}
		return nil
	})
}

func (d *sqlDB) inTx(ctx context.Context, fn func(q querier) error) error {
	return sqlInTx(ctx, d.db, fn)
}

func (d *sqlDB) session(ctx context.Context, fn func(c session) error) error {
	c, err := d.db.Conn(ctx)
	if err != nil {
		return err
	}
	ss := &sqlSession{sqlRunner: sqlRunner{q: c}, c: c}
	defer func() {
		if ss.bad {
			// ErrBadConn from Raw makes database/sql close the connection
			// instead of returning it to the pool.
			_ = c.Raw(func(any) error { return driver.ErrBadConn })
		}
		_ = c.Close()
	}()
	return fn(ss)
}

// sqlSession is a session on a connection reserved from a *sql.DB.
type sqlSession struct {
	sqlRunner
	c   *sql.Conn
	bad bool
}

func (s *sqlSession) inTx(ctx context.Context, fn func(q querier) error) error {
	return sqlInTx(ctx, s.c, fn)
}

func (s *sqlSession) discard() { s.bad = true }

// sqlInTx runs fn in one transaction begun on db (a *sql.DB or *sql.Conn),
// committed if fn returns nil and rolled back otherwise.
func sqlInTx(ctx context.Context, db interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}, fn func(q querier) error) (err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if err := fn(sqlRunner{q: tx}); err != nil {
		return err
	}
	return tx.Commit()
}

func (d *sqlDB) ping(ctx context.Context) error { return d.db.PingContext(ctx) }

// checkDriver fails unless db's connections are pgx's stdlib ones: the
// statements pass Go slices as PostgreSQL arrays, which only pgx encodes.
func (d *sqlDB) checkDriver(ctx context.Context) error {
	c, err := d.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("postgres: connect: %w", err)
	}
	defer c.Close()
	return c.Raw(func(dc any) error {
		if _, ok := dc.(*stdlib.Conn); !ok {
			return fmt.Errorf("postgres: %w: the *sql.DB's driver connection is %T; open it with pgx's stdlib driver (driver name \"pgx\" or stdlib.OpenDB)",
				store.ErrInvalidParams, dc)
		}
		return nil
	})
}

func (d *sqlDB) checkTypes(ctx context.Context) error {
	c, err := d.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("postgres: connect: %w", err)
	}
	defer c.Close()
	return c.Raw(func(dc any) error {
		if sc, ok := dc.(*stdlib.Conn); !ok || !typesRegistered(sc.Conn().TypeMap()) {
			return errTypesNotRegistered
		}
		return nil
	})
}

// connConfig borrows a connection to read its pgx settings; a DB whose
// driver is not pgx's stdlib has none to give.
func (d *sqlDB) connConfig(ctx context.Context) (*pgx.ConnConfig, error) {
	c, err := d.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var cfg *pgx.ConnConfig
	err = c.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("driver connection is %T, not pgx's stdlib", dc)
		}
		cfg = sc.Conn().Config().Copy()
		return nil
	})
	return cfg, err
}

func (d *sqlDB) close() {
	if d.owns {
		_ = d.db.Close()
	}
}
