package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/mariadb"
)

// The mariadb target: BackWave's MariaDB adapter (store/mariadb) against a
// raw FOR UPDATE SKIP LOCKED loop on the same server (-mariadb, else
// BWBENCH_MARIADB_URL, else BACKWAVE_TEST_MARIADB_URL), the insert and the
// drain. River has no MySQL driver, and the peers run on PostgreSQL or
// Redis, so the row is BackWave against raw alone. Each run gets tables of
// its own: BackWave's under a fresh Schema Name (the adapter's table
// prefix), raw's a fresh table, dropped afterwards.
const tgMariaDB = "mariadb"

// mariaScenario reports whether sc runs on the mariadb target.
func mariaScenario(sc string) bool { return sc == scInsert || sc == scDrain }

// openMaria opens the target's admin pool and reads the server's version.
func (b *bench) openMaria(ctx context.Context) error {
	if b.cfg.mariaURL == "" {
		return errors.New("no MariaDB URL (-mariadb, $BWBENCH_MARIADB_URL or $BACKWAVE_TEST_MARIADB_URL)")
	}
	cfg, err := mariadb.ParseDSN(b.cfg.mariaURL)
	if err != nil {
		return err
	}
	b.mariaCfg = cfg
	db, err := b.mariaDB(1)
	if err != nil {
		return err
	}
	var version string
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		_ = db.Close()
		return fmt.Errorf("mariadb: %w", err)
	}
	b.maria, b.mariaVersion = db, version
	return nil
}

// mariaDB opens a pool of at most conns connections on the target.
func (b *bench) mariaDB(conns int) (*sql.DB, error) {
	c, err := mysql.NewConnector(b.mariaCfg.Clone())
	if err != nil {
		return nil, fmt.Errorf("mariadb: %w", err)
	}
	db := sql.OpenDB(c)
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	return db, nil
}

// mariaPrefix names a fresh table prefix for one run; drop removes every
// table it begins.
func (b *bench) mariaPrefix(ctx context.Context, system string) (prefix string, drop func()) {
	prefix = fmt.Sprintf("bwbench_%s_%d_%d_", system, os.Getpid(), b.seq.Add(1))
	return prefix, func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		rows, err := b.maria.QueryContext(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name LIKE ?`,
			strings.ReplaceAll(prefix, "_", `\_`)+"%")
		if err != nil {
			b.log.Warn("list tables to drop", "prefix", prefix, "error", err)
			return
		}
		var names []string
		for rows.Next() {
			var n string
			if rows.Scan(&n) == nil {
				names = append(names, "`"+n+"`")
			}
		}
		_ = rows.Close()
		if len(names) == 0 {
			return
		}
		if _, err := b.maria.ExecContext(ctx, "DROP TABLE IF EXISTS "+strings.Join(names, ", ")); err != nil {
			b.log.Warn("drop tables", "prefix", prefix, "error", err)
		}
	}
}

// openBackWaveMaria opens BackWave's store for one run on the target.
func (in *backwaveInstance) openMaria(ctx context.Context, history store.HistoryPolicy) error {
	b := in.b
	prefix, drop := b.mariaPrefix(ctx, "bw")
	in.drop = drop
	// The Schema Name is the adapter's table prefix, used as it is.
	st, err := mariadb.Open(ctx, b.cfg.mariaURL, mariadb.Options{Schema: prefix, History: history})
	if err != nil {
		drop()
		return err
	}
	reader, err := b.mariaDB(2) // closed with the instance
	if err != nil {
		_ = st.Close()
		drop()
		return err
	}
	in.st, in.reader = st, reader
	in.pendingQ = fmt.Sprintf("SELECT count(*) FROM `%sjob` WHERE state IN (1, 2, 3)", prefix)
	return nil
}

const (
	rawSchemaMaria = "CREATE TABLE `%s` (" + `
    id           bigint AUTO_INCREMENT PRIMARY KEY,
    queue        varchar(128) NOT NULL,
    state        smallint NOT NULL DEFAULT 0,
    attempt      int NOT NULL DEFAULT 0,
    scheduled_at datetime(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    finalized_at datetime(6),
    args         json NOT NULL,
    KEY job_due (state, queue, scheduled_at, id)
) ENGINE=InnoDB`
	rawClaimSelectMaria = "SELECT id, args FROM `%s` WHERE state = 0 AND queue = 'default' AND scheduled_at <= NOW(6) ORDER BY scheduled_at, id LIMIT ? FOR UPDATE SKIP LOCKED"
)

// openMaria makes the raw loop's table for one run.
func (in *rawInstance) openMaria(ctx context.Context) error {
	b := in.b
	prefix, drop := b.mariaPrefix(ctx, "raw")
	in.drop = drop
	in.table = prefix + "job"
	db, err := b.mariaDB(in.k.int("loops") + 1)
	if err != nil {
		drop()
		return err
	}
	in.mdb = db
	if _, err := db.ExecContext(ctx, fmt.Sprintf(rawSchemaMaria, in.table)); err != nil {
		_ = in.close(ctx)
		return err
	}
	in.pendingQ = "SELECT count(*) FROM `" + in.table + "` WHERE state IN (0, 1)"
	return nil
}

// bulkInsertMaria inserts n jobs in multi-row INSERTs of insert_batch rows.
func (in *rawInstance) bulkInsertMaria(ctx context.Context, n int) error {
	return chunks(n, min(in.k.int("insert_batch"), 1000), func(k int) error {
		var q strings.Builder
		q.WriteString("INSERT INTO `" + in.table + "` (queue, args) VALUES ")
		args := make([]any, 0, k)
		for i := range k {
			if i > 0 {
				q.WriteByte(',')
			}
			q.WriteString("('default', ?)")
			args = append(args, rawArgs)
		}
		_, err := in.mdb.ExecContext(ctx, q.String(), args...)
		return err
	})
}

// claimMaria claims a batch in one transaction: the locking read that
// skips rows other claimers hold, then the update that marks them taken.
func (in *rawInstance) claimMaria(ctx context.Context, batch int, each func(int64, []byte) error) error {
	tx, err := in.mdb.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	rows, err := tx.QueryContext(ctx, fmt.Sprintf(rawClaimSelectMaria, in.table), batch)
	if err != nil {
		return err
	}
	type claimed struct {
		id   int64
		args []byte
	}
	var got []claimed
	for rows.Next() {
		var c claimed
		if err := rows.Scan(&c.id, &c.args); err != nil {
			_ = rows.Close()
			return err
		}
		got = append(got, c)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return err
	}
	if len(got) == 0 {
		return tx.Commit()
	}
	ids := make([]int64, len(got))
	for i, c := range got {
		ids[i] = c.id
	}
	if _, err := tx.ExecContext(ctx, "UPDATE `"+in.table+"` SET state = 1, attempt = attempt + 1 WHERE id IN ("+intList(ids)+")"); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	for _, c := range got {
		if err := each(c.id, c.args); err != nil {
			return err
		}
	}
	return nil
}

// completeMaria marks a claimed batch done.
func (in *rawInstance) completeMaria(ctx context.Context, ids []int64) error {
	_, err := in.mdb.ExecContext(ctx, "UPDATE `"+in.table+"` SET state = 2, finalized_at = NOW(6) WHERE id IN ("+intList(ids)+")")
	return err
}

// intList is ids as an SQL list's inside: 1,2,3.
func intList(ids []int64) string {
	s := jsonInts(ids)
	return s[1 : len(s)-1]
}
