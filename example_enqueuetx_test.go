package backwave_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/sqlite"
)

// Transactional Enqueue in the co-resident deployment: BackWave's tables
// live in the application's own SQLite file, over the application's own
// *sql.DB, and each welcome job commits or rolls back with its sign-up.
func ExampleClient_EnqueueTx() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "backwave-example-")
	if err != nil {
		panic(err)
	}
	defer func() { _ = os.RemoveAll(dir) }()

	// The application's one pool: WAL, a busy timeout, and BEGIN IMMEDIATE
	// for its write transactions (see sqlite.OpenDB).
	db, err := sql.Open("sqlite", filepath.Join(dir, "app.db")+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_txlock=immediate")
	if err != nil {
		panic(err)
	}
	defer func() { _ = db.Close() }()
	if _, err := db.ExecContext(ctx, `CREATE TABLE signups (email TEXT PRIMARY KEY, referrals INTEGER NOT NULL DEFAULT 0)`); err != nil {
		panic(err)
	}
	st, err := sqlite.OpenDB(ctx, db, sqlite.Options{})
	if err != nil {
		panic(err)
	}
	defer func() { _ = st.Close() }()

	done := make(chan struct{})
	workers := backwave.NewHandlers()
	err = backwave.AddHandlerFunc(workers, func(ctx context.Context, j *backwave.Job[SendWelcome]) error {
		fmt.Printf("welcoming %s\n", j.Args.To)
		close(done)
		return nil
	})
	if err != nil {
		panic(err)
	}
	client, err := backwave.NewClient(st, backwave.Config{
		Handlers: workers,
		Groups:   []backwave.WorkerGroupOptions{backwave.DefaultWorkerGroup("default", backwave.Strict(backwave.DefaultQueue))},
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}

	// signUp stores the sign-up, enqueues its welcome and credits the
	// referrer, all or nothing.
	signUp := func(email, referrer string) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }() // does nothing after Commit
		if _, err := tx.ExecContext(ctx, `INSERT INTO signups (email) VALUES (?)`, email); err != nil {
			return err
		}
		if _, err := client.EnqueueTx(ctx, tx, SendWelcome{To: email}); err != nil {
			return err
		}
		if referrer != "" {
			res, err := tx.ExecContext(ctx, `UPDATE signups SET referrals = referrals + 1 WHERE email = ?`, referrer)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n == 0 {
				return errors.Join(fmt.Errorf("unknown referrer %s", referrer), err)
			}
		}
		return tx.Commit()
	}
	if err := signUp("ada@example.com", ""); err != nil {
		panic(err)
	}
	// Rolled back: neither the sign-up nor its welcome job ever existed.
	fmt.Println("bob@example.com:", signUp("bob@example.com", "eve@example.com"))

	if err := client.Start(ctx); err != nil {
		panic(err)
	}
	<-done
	if err := client.Stop(ctx); err != nil {
		panic(err)
	}
	var signups int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM signups`).Scan(&signups); err != nil {
		panic(err)
	}
	counts, err := st.JobCountByState(ctx, store.CountParams{})
	if err != nil {
		panic(err)
	}
	fmt.Println(signups, "sign-up;", "jobs by state:", counts)
	// Output:
	// bob@example.com: unknown referrer eve@example.com
	// welcoming ada@example.com
	// 1 sign-up; jobs by state: map[succeeded:1]
}
