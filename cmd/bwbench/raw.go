package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// rawSystem is the baseline with no framework: a minimal job table, a claim
// of a batch with SKIP LOCKED (PostgreSQL) or UPDATE … RETURNING under the
// write lock (SQLite), and the whole batch completed in one statement. No
// leases, no attempts fence, no log: the ceiling a job queue on this
// database could approach.
type rawSystem struct{}

func (rawSystem) name() string { return sysRaw }

func (rawSystem) supports(sc, tg string) bool {
	switch tg {
	case tgPgBouncer:
		return sc == scDrain
	case tgMariaDB:
		return mariaScenario(sc)
	}
	return sc == scInsert || sc == scDrain || sc == scSteady
}

// rawKnobs: loops is the number of claim-then-complete loops (each on its own
// connection), batch the claim size, poll the wait after an empty claim.
func rawKnobs(tg string) *knobs {
	k := newKnobs("loops", "2", "batch", "100", "poll", "10ms", "insert_batch", "5000")
	if tg == tgSQLite {
		k.set("loops", "1") // a single connection
	}
	return k
}

const (
	rawSchemaPG = `CREATE TABLE %[1]s.job (
    id           bigserial PRIMARY KEY,
    queue        text NOT NULL,
    state        smallint NOT NULL DEFAULT 0,
    attempt      integer NOT NULL DEFAULT 0,
    scheduled_at timestamptz NOT NULL DEFAULT now(),
    finalized_at timestamptz,
    args         jsonb NOT NULL
);
CREATE INDEX job_due ON %[1]s.job (queue, scheduled_at, id) WHERE state = 0`
	rawClaimPG = `UPDATE %[1]s.job j SET state = 1, attempt = j.attempt + 1
FROM (SELECT id FROM %[1]s.job WHERE queue = 'default' AND state = 0 AND scheduled_at <= now()
      ORDER BY scheduled_at, id LIMIT $1 FOR UPDATE SKIP LOCKED) c
WHERE j.id = c.id
RETURNING j.id, j.args`
	rawCompletePG = `UPDATE %[1]s.job SET state = 2, finalized_at = now() WHERE id = ANY($1)`

	rawSchemaSQLite = `CREATE TABLE raw_job (
    id           INTEGER PRIMARY KEY,
    queue        TEXT NOT NULL,
    state        INTEGER NOT NULL DEFAULT 0,
    attempt      INTEGER NOT NULL DEFAULT 0,
    scheduled_at INTEGER NOT NULL,
    finalized_at INTEGER,
    args         BLOB NOT NULL
);
CREATE INDEX raw_job_due ON raw_job (queue, scheduled_at, id) WHERE state = 0`
	rawInsertSQLite = `INSERT INTO raw_job (queue, scheduled_at, args) VALUES ('default', ?, ?)`
	rawClaimSQLite  = `UPDATE raw_job SET state = 1, attempt = attempt + 1
WHERE id IN (SELECT id FROM raw_job WHERE queue = 'default' AND state = 0 AND scheduled_at <= ?1
             ORDER BY scheduled_at, id LIMIT ?2)
RETURNING id, args`
	rawCompleteSQLite = `UPDATE raw_job SET state = 2, finalized_at = ?1 WHERE id IN (SELECT value FROM json_each(?2))`
)

type rawInstance struct {
	b      *bench
	k      *knobs
	schema string
	pool   *pgxpool.Pool
	db     *sql.DB
	// mdb and table are the mariadb target's pool and table.
	mdb      *sql.DB
	table    string
	drop     func()
	pendingQ string
	stop     context.CancelFunc
	wg       sync.WaitGroup
	errMu    sync.Mutex
	err      error
}

func (rawSystem) open(ctx context.Context, b *bench, sc, tg string) (instance, string, error) {
	k := rawKnobs(tg)
	if err := k.override(b.cfg.overrides[sysRaw]); err != nil {
		return nil, "", fmt.Errorf("-raw: %w", err)
	}
	in := &rawInstance{b: b, k: k}
	switch tg {
	case tgPostgres, tgPgBouncer:
		schema, drop, err := b.newSchema(ctx, "raw")
		if err != nil {
			return nil, "", err
		}
		in.schema, in.drop = schema, drop
		u, err := b.pgURLWith(tg, sc, k.int("loops")+1, sysRaw)
		if err != nil {
			drop()
			return nil, "", err
		}
		if in.pool, err = pgxpool.New(ctx, u); err != nil {
			drop()
			return nil, "", err
		}
		if _, err := in.pool.Exec(ctx, fmt.Sprintf(rawSchemaPG, schema)); err != nil {
			_ = in.close(ctx)
			return nil, "", err
		}
		in.pendingQ = "SELECT count(*) FROM " + schema + ".job WHERE state IN (0, 1)"
	case tgMariaDB:
		if err := in.openMaria(ctx); err != nil {
			return nil, "", err
		}
	case tgSQLite:
		path, remove := b.newFile("raw")
		in.drop = remove
		var err error
		if in.db, err = sql.Open("sqlite", b.sqliteDSN(path, true)); err != nil {
			remove()
			return nil, "", err
		}
		in.db.SetMaxOpenConns(1)
		if _, err := in.db.ExecContext(ctx, rawSchemaSQLite); err != nil {
			_ = in.close(ctx)
			return nil, "", err
		}
		in.pendingQ = "SELECT count(*) FROM raw_job WHERE state IN (0, 1)"
	}
	return in, k.forScenario(sc), nil
}

var rawArgs = []byte(`{"t":0}`)

func (in *rawInstance) bulkInsert(ctx context.Context, n int) error {
	if in.mdb != nil {
		return in.bulkInsertMaria(ctx, n)
	}
	if in.pool != nil {
		rows := make([][]any, n)
		for i := range rows {
			rows[i] = []any{"default", rawArgs}
		}
		_, err := in.pool.CopyFrom(ctx, pgx.Identifier{in.schema, "job"}, []string{"queue", "args"}, pgx.CopyFromRows(rows))
		return err
	}
	return chunks(n, in.k.int("insert_batch"), func(k int) error {
		tx, err := in.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		st, err := tx.PrepareContext(ctx, rawInsertSQLite)
		if err != nil {
			return err
		}
		now := time.Now().UnixMicro()
		for range k {
			if _, err := st.ExecContext(ctx, now, rawArgs); err != nil {
				return err
			}
		}
		return tx.Commit()
	})
}

func (in *rawInstance) start(ctx context.Context, onWork func(int64)) error {
	lctx, stop := context.WithCancel(ctx)
	in.stop = stop
	for range in.k.int("loops") {
		in.wg.Go(func() {
			if err := in.loop(lctx, onWork); err != nil && lctx.Err() == nil {
				in.errMu.Lock()
				in.err = errors.Join(in.err, err)
				in.errMu.Unlock()
			}
		})
	}
	return nil
}

// loop claims a batch, runs each job's handler, completes the batch, and
// waits a poll interval only after an empty claim.
func (in *rawInstance) loop(ctx context.Context, onWork func(int64)) error {
	batch, poll := in.k.int("batch"), in.k.dur("poll")
	claim := fmt.Sprintf(rawClaimPG, in.schema)
	complete := fmt.Sprintf(rawCompletePG, in.schema)
	var ids []int64
	for ctx.Err() == nil {
		ids = ids[:0]
		each := func(id int64, args []byte) error {
			var a noop
			if err := json.Unmarshal(args, &a); err != nil {
				return err
			}
			onWork(a.T)
			ids = append(ids, id)
			return nil
		}
		var err error
		switch {
		case in.mdb != nil:
			err = in.claimMaria(ctx, batch, each)
		case in.pool != nil:
			err = in.claimPG(ctx, claim, batch, each)
		default:
			err = in.claimSQLite(ctx, batch, each)
		}
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			if err := sleep(ctx, poll); err != nil {
				return nil
			}
			continue
		}
		switch {
		case in.mdb != nil:
			err = in.completeMaria(ctx, ids)
		case in.pool != nil:
			_, err = in.pool.Exec(ctx, complete, ids)
		default:
			_, err = in.db.ExecContext(ctx, rawCompleteSQLite, time.Now().UnixMicro(), jsonInts(ids))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (in *rawInstance) claimPG(ctx context.Context, claim string, batch int, each func(int64, []byte) error) error {
	rows, err := in.pool.Query(ctx, claim, batch)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var args []byte
		if err := rows.Scan(&id, &args); err != nil {
			return err
		}
		if err := each(id, args); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (in *rawInstance) claimSQLite(ctx context.Context, batch int, each func(int64, []byte) error) error {
	rows, err := in.db.QueryContext(ctx, rawClaimSQLite, time.Now().UnixMicro(), batch)
	if err != nil {
		return err
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var id int64
		var args []byte
		if err := rows.Scan(&id, &args); err != nil {
			return err
		}
		if err := each(id, args); err != nil {
			return err
		}
	}
	return rows.Err()
}

func jsonInts(ids []int64) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(id, 10))
	}
	b.WriteByte(']')
	return b.String()
}

func (in *rawInstance) enqueue(context.Context, int64) error {
	return errors.New("the raw baseline has no single-enqueue path")
}

func (in *rawInstance) pending(ctx context.Context) (int, error) {
	if err := in.loopErr(); err != nil {
		return 0, err
	}
	if in.pool != nil {
		var n int
		err := in.pool.QueryRow(ctx, in.pendingQ).Scan(&n)
		return n, err
	}
	if in.mdb != nil {
		var n int
		err := in.mdb.QueryRowContext(ctx, in.pendingQ).Scan(&n)
		return n, err
	}
	var n int
	err := in.db.QueryRowContext(ctx, in.pendingQ).Scan(&n)
	return n, err
}

func (in *rawInstance) loopErr() error {
	in.errMu.Lock()
	defer in.errMu.Unlock()
	return in.err
}

func (in *rawInstance) close(context.Context) error {
	if in.stop != nil {
		in.stop()
		in.wg.Wait()
	}
	err := in.loopErr()
	if in.pool != nil {
		in.pool.Close()
	}
	if in.db != nil {
		err = errors.Join(err, in.db.Close())
	}
	if in.mdb != nil {
		err = errors.Join(err, in.mdb.Close())
	}
	if in.drop != nil {
		in.drop()
	}
	return err
}
