package postgres_test

import (
	"context"
	"errors"
	neturl "net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/postgres"
)

// Glossary, Transactional Enqueue: "the business write and the job commit or
// roll back atomically. BackWave rides along on a transaction the user
// owns." Each test enqueues inside the caller's transaction next to a
// business row, checks that nothing is visible to workers before the
// commit, then that commit makes both visible and rollback erases both.

// business creates a table standing in for the application's own data.
func business(t *testing.T, s *postgres.Store) string {
	t.Helper()
	table := s.Schema() + ".orders"
	conn, err := pgx.Connect(t.Context(), testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), "CREATE TABLE "+table+" (id int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	return table
}

// txCase is one way of running the caller's transaction.
type txCase struct {
	name string
	// enqueue runs, in one caller-owned transaction, the business insert
	// and the job insert, then commits or rolls back.
	enqueue func(t *testing.T, s *postgres.Store, table string, commit bool, during func()) []job.ID
}

var txCases = []txCase{
	{"pgx", func(t *testing.T, s *postgres.Store, table string, commit bool, during func()) []job.ID {
		ctx := t.Context()
		conn, err := pgx.Connect(ctx, testURL(t))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(context.Background()) }()
		if _, err := tx.Exec(ctx, "INSERT INTO "+table+" VALUES (1)"); err != nil {
			t.Fatal(err)
		}
		ids, err := s.JobInsertManyTx(ctx, tx, store.InsertManyParams{Jobs: []store.NewJob{
			{WireName: "order.ship", Queue: "orders", MaxAttempts: 3, Payload: []byte(`{"order":1}`), Tags: []job.Tag{job.Keyed("order", "1")}},
		}})
		if err != nil {
			t.Fatalf("JobInsertManyTx: %v", err)
		}
		during()
		if commit {
			err = tx.Commit(ctx)
		} else {
			err = tx.Rollback(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}},
	{"database/sql", func(t *testing.T, s *postgres.Store, table string, commit bool, during func()) []job.ID {
		ctx := t.Context()
		db := openDB(t, testURL(t))
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback() }()
		if _, err := tx.ExecContext(ctx, "INSERT INTO "+table+" VALUES (1)"); err != nil {
			t.Fatal(err)
		}
		ids, err := s.JobInsertManySQLTx(ctx, tx, store.InsertManyParams{Jobs: []store.NewJob{
			{WireName: "order.ship", Queue: "orders", MaxAttempts: 3, Payload: []byte(`{"order":1}`), Tags: []job.Tag{job.Keyed("order", "1")}},
		}})
		if err != nil {
			t.Fatalf("JobInsertManySQLTx: %v", err)
		}
		during()
		if commit {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}},
}

func TestTransactionalEnqueue(t *testing.T) {
	t.Parallel()
	for _, tc := range txCases {
		for _, m := range modes {
			t.Run(tc.name+"/store-"+string(m)+"/commit", func(t *testing.T) {
				t.Parallel()
				s := openStore(t, m, postgres.Options{})
				table := business(t, s)
				ids := tc.enqueue(t, s, table, true, func() {
					// Not yet committed: no worker sees the job.
					claimNothing(t, s)
				})
				jobs, err := s.JobClaim(t.Context(), store.ClaimParams{Worker: "w", Queues: []string{"orders"}, Limit: 10, LeaseDuration: time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				if len(jobs) != 1 || jobs[0].ID != ids[0] || string(jobs[0].Payload) != `{"order":1}` {
					t.Fatalf("after commit claimed %+v, want job %d with its payload", jobs, ids[0])
				}
				if rows := count(t, table); rows != 1 {
					t.Fatalf("business rows after commit = %d, want 1", rows)
				}
			})
			t.Run(tc.name+"/store-"+string(m)+"/rollback", func(t *testing.T) {
				t.Parallel()
				s := openStore(t, m, postgres.Options{})
				table := business(t, s)
				ids := tc.enqueue(t, s, table, false, func() {})
				claimNothing(t, s)
				if _, err := s.JobGet(t.Context(), ids[0]); !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("JobGet(%d) after rollback: %v, want ErrNotFound", ids[0], err)
				}
				if rows := count(t, table); rows != 0 {
					t.Fatalf("business rows after rollback = %d, want 0", rows)
				}
				// The rolled-back id is never handed out again (job.ID: "never
				// reused"), and the store goes on working.
				again := insert(t, s, "orders", 1)
				if again[0] == ids[0] {
					t.Fatalf("id %d reused after rollback", ids[0])
				}
			})
		}
	}
}

func claimNothing(t *testing.T, s *postgres.Store) {
	t.Helper()
	jobs, err := s.JobClaim(t.Context(), store.ClaimParams{Worker: "w", Queues: []string{"orders"}, Limit: 10, LeaseDuration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 0 {
		t.Fatalf("claimed %d uncommitted or rolled-back jobs", len(jobs))
	}
}

func count(t *testing.T, table string) int {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A caller's pgx.Tx on a connection that prepares nothing (exec mode, as an
// application behind a transaction pooler runs) must know the store's array
// types: without postgres.RegisterTypes in its pool's AfterConnect, the
// insert is refused before any statement with the error that says what to
// do, not pgx's "cannot find encode plan"; with it, the insert goes in.
func TestTxInExecModeNeedsRegisteredTypes(t *testing.T) {
	t.Parallel()
	s := openStore(t, modePgx, postgres.Options{})
	u, err := neturl.Parse(testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("default_query_exec_mode", "exec")
	u.RawQuery = q.Encode()
	insert := func(register bool) error {
		cfg, err := pgxpool.ParseConfig(u.String())
		if err != nil {
			t.Fatal(err)
		}
		if register {
			cfg.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
				postgres.RegisterTypes(c.TypeMap())
				return nil
			}
		}
		pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		tx, err := pool.Begin(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(context.Background())
		_, err = s.JobInsertManyTx(t.Context(), tx, store.InsertManyParams{Jobs: []store.NewJob{{WireName: "w", Queue: "q", MaxAttempts: 1}}})
		return err
	}
	if err := insert(false); !errors.Is(err, store.ErrInvalidParams) || !strings.Contains(err.Error(), "RegisterTypes") {
		t.Fatalf("insert in an exec-mode pgx.Tx without RegisterTypes: err = %v, want ErrInvalidParams naming RegisterTypes", err)
	}
	if err := insert(true); err != nil {
		t.Fatalf("insert in an exec-mode pgx.Tx with RegisterTypes: %v", err)
	}
}
