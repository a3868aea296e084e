package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/sqlite"
)

// Greet is a job's arguments; its Wire Name is its identity in storage.
type Greet struct {
	Name string `json:"name"`
}

func (Greet) WireName() string { return "greet" }

// Open a SQLite file through the URI registry, enqueue a job and work it.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "backwave-example-")
	if err != nil {
		panic(err)
	}
	defer func() { _ = os.RemoveAll(dir) }()

	// Opening creates the file and migrates its schema.
	st, err := store.Open(ctx, "sqlite://"+filepath.Join(dir, "jobs.db")+"?synchronous=full")
	if err != nil {
		panic(err)
	}
	defer func() { _ = st.Close() }()

	done := make(chan struct{})
	workers := backwave.NewHandlers()
	err = backwave.AddHandlerFunc(workers, func(ctx context.Context, j *backwave.Job[Greet]) error {
		fmt.Printf("hello, %s (attempt %d)\n", j.Args.Name, j.Attempt)
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
	if err := client.Start(ctx); err != nil {
		panic(err)
	}
	id, err := client.Enqueue(ctx, Greet{Name: "Ada"})
	if err != nil {
		panic(err)
	}
	<-done
	if err := client.Stop(ctx); err != nil {
		panic(err)
	}
	j, err := st.JobGet(ctx, id)
	if err != nil {
		panic(err)
	}
	fmt.Println(j.State)
	// Output:
	// hello, Ada (attempt 1)
	// succeeded
}

// Transactional Enqueue in the co-resident deployment: BackWave's tables
// live in the application's own file, and the job commits or rolls back
// with the business write.
func ExampleStore_JobInsertManyTx() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "backwave-example-")
	if err != nil {
		panic(err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	path := filepath.Join(dir, "app.db")

	jobs, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		panic(err)
	}
	defer func() { _ = jobs.Close() }()

	// The application's own connection to the same file.
	app, err := sql.Open("sqlite", path+"?_txlock=immediate&_pragma=busy_timeout(5000)")
	if err != nil {
		panic(err)
	}
	defer func() { _ = app.Close() }()
	if _, err := app.ExecContext(ctx, `CREATE TABLE signups (email TEXT PRIMARY KEY)`); err != nil {
		panic(err)
	}

	tx, err := app.BeginTx(ctx, nil)
	if err != nil {
		panic(err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO signups (email) VALUES ('ada@example.com')`); err != nil {
		panic(err)
	}
	ids, err := jobs.JobInsertManyTx(ctx, tx, store.InsertManyParams{Jobs: []store.NewJob{
		{WireName: "send_welcome", Queue: "mail", Payload: []byte(`{"to":"ada@example.com"}`), MaxAttempts: 5},
	}})
	if err != nil {
		panic(err)
	}
	if err := tx.Commit(); err != nil {
		panic(err)
	}
	j, err := jobs.JobGet(ctx, ids[0])
	if err != nil {
		panic(err)
	}
	fmt.Println(j.WireName, j.State)
	// Output:
	// send_welcome scheduled
}
