package postgres_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store/postgres"
)

// sqlClient is one real client of another language that enqueues through
// the SQL functions: testdata/sqlenqueue/client.{sql,py,js}.
type sqlClient struct {
	lang string
	// missing says why the client cannot run here, and how to install it.
	missing string
	// cmd is the command line that enqueues one job for note, with unique
	// key (empty for none), holding the transaction open for hold seconds
	// before it commits or rolls back.
	cmd func(url, schema, note, key, hold string, commit bool) *exec.Cmd
}

// sqlClients returns the psql, Python (Debian's python3-psycopg2) and Node
// (npm pg, installed by .ci/run into testdata/sqlenqueue) clients.
func sqlClients() []sqlClient {
	dir, _ := filepath.Abs(filepath.Join("testdata", "sqlenqueue"))
	action := func(commit bool) string {
		if commit {
			return "commit"
		}
		return "rollback"
	}
	clients := []sqlClient{
		{lang: "psql", cmd: func(url, schema, note, key, hold string, commit bool) *exec.Cmd {
			return exec.Command("psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-v", "schema="+schema, "-v", "lang=psql",
				"-v", "note="+note, "-v", "key="+key, "-v", "hold="+hold, "-v", fmt.Sprintf("commit=%v", commit),
				"-f", filepath.Join(dir, "client.sql"), url)
		}},
		{lang: "python", cmd: func(url, schema, note, key, hold string, commit bool) *exec.Cmd {
			return exec.Command("/usr/bin/python3", filepath.Join(dir, "client.py"), url, schema, note, key, hold, action(commit))
		}},
		{lang: "node", cmd: func(url, schema, note, key, hold string, commit bool) *exec.Cmd {
			return exec.Command("node", filepath.Join(dir, "client.js"), url, schema, note, key, hold, action(commit))
		}},
	}
	if _, err := exec.LookPath("psql"); err != nil {
		clients[0].missing = "psql is not installed (apt-get install postgresql-client)"
	}
	if err := exec.Command("/usr/bin/python3", "-c", "import psycopg2").Run(); err != nil {
		clients[1].missing = "/usr/bin/python3 cannot import psycopg2 (apt-get install python3-psycopg2)"
	}
	if _, err := exec.LookPath("node"); err != nil {
		clients[2].missing = "node is not installed"
	} else if _, err := os.Stat(filepath.Join(dir, "node_modules", "pg")); err != nil {
		clients[2].missing = "the npm package pg is not installed (npm ci --prefix store/postgres/testdata/sqlenqueue, as .ci/run does)"
	}
	return clients
}

// enqueueResult runs one client and returns the id it enqueued and
// whether it was inserted.
func enqueueResult(c sqlClient, cmd *exec.Cmd) (id int64, inserted bool, err error) {
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, false, fmt.Errorf("%s client: %w\n%s", c.lang, err, out)
	}
	var ins string
	if _, err := fmt.Sscanf(strings.TrimSpace(string(out)), "%d %s", &id, &ins); err != nil || (ins != "true" && ins != "false" && ins != "t" && ins != "f") {
		return 0, false, fmt.Errorf("%s client printed %q, want \"<id> <inserted>\"", c.lang, out)
	}
	return id, ins == "true" || ins == "t", nil
}

// TestSQLEnqueueClients: psql, Python (psycopg2) and Node (pg) each enqueue
// a job inside a transaction with a row of their own, once committed and
// once rolled back; then the three race one unique key, holding their
// transactions open so that they overlap. A Client's workers run exactly
// the committed jobs — one per language and one for the raced key — and
// every committed row of the application's is there.
func TestSQLEnqueueClients(t *testing.T) {
	t.Parallel()
	clients := sqlClients()
	var missing []string
	for _, c := range clients {
		if c.missing != "" {
			missing = append(missing, c.lang+": "+c.missing)
		}
	}
	if len(missing) > 0 {
		t.Skipf("SQL enqueue clients missing: %s", strings.Join(missing, "; "))
	}
	url := testURL(t)
	ctx := context.Background()
	pool := sqlPool(t)
	s := openStore(t, modePgx, postgres.Options{})
	schema := s.Schema()
	if _, err := pool.Exec(ctx, inSchema(schema, `CREATE TABLE backwave.app_row (lang text NOT NULL, note text NOT NULL)`)); err != nil {
		t.Fatal(err)
	}

	// Each language commits one job and rolls one back; the languages run
	// side by side.
	want := map[string]bool{} // the notes of the committed jobs
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		want[c.lang+"-true"] = true
		wg.Go(func() {
			for _, commit := range []bool{true, false} {
				_, inserted, err := enqueueResult(c, c.cmd(url, schema, fmt.Sprintf("%s-%v", c.lang, commit), "", "0", commit))
				if err == nil && !inserted {
					err = fmt.Errorf("%s: a job without a unique key was not inserted", c.lang)
				}
				if err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	type answer struct {
		id       int64
		inserted bool
		err      error
	}
	answers := make([]answer, len(clients))
	for i, c := range clients {
		wg.Go(func() {
			id, inserted, err := enqueueResult(c, c.cmd(url, schema, "race-"+c.lang, "greet:race", "0.5", true))
			answers[i] = answer{id, inserted, err}
		})
	}
	wg.Wait()
	winners := 0
	for i, a := range answers {
		if a.err != nil {
			t.Fatal(a.err)
		}
		if a.inserted {
			winners++
			want["race-"+clients[i].lang] = true
		}
		if a.id != answers[0].id {
			t.Errorf("the racing clients answered ids %v, want one id", answers)
		}
	}
	if winners != 1 {
		t.Fatalf("%d of the racing clients inserted the unique key's job (%v), want exactly one", winners, answers)
	}

	var rows []string
	r, err := pool.Query(ctx, inSchema(schema, `SELECT lang || '/' || note FROM backwave.app_row ORDER BY 1`))
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		var row string
		if err := r.Scan(&row); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, row)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	wantRows := []string{"node/node-true", "node/race-node", "psql/psql-true", "psql/race-psql", "python/python-true", "python/race-python"}
	if !slices.Equal(rows, wantRows) {
		t.Fatalf("the application's rows are %q, want %q", rows, wantRows)
	}

	// Go workers run exactly the committed jobs.
	var mu sync.Mutex
	ran := map[string]int{}
	done := make(chan struct{})
	handlers := backwave.NewHandlers()
	err = backwave.AddHandlerFunc(handlers, func(ctx context.Context, j *backwave.Job[greetArgs]) error {
		mu.Lock()
		defer mu.Unlock()
		ran[j.Args.To]++
		if len(ran) == len(want) {
			select {
			case <-done:
			default:
				close(done)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	g := backwave.DefaultWorkerGroup("sql", backwave.Strict(backwave.DefaultQueue))
	g.PollInterval = 50 * time.Millisecond
	client, err := backwave.NewClient(s, backwave.Config{Handlers: handlers, Groups: []backwave.WorkerGroupOptions{g},
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Errorf("the workers ran %v in a minute, want %v", ran, want)
	}
	if err := client.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	var stored, succeeded int
	if err := pool.QueryRow(ctx, inSchema(schema, `SELECT count(*), count(*) FILTER (WHERE state = 'succeeded') FROM backwave.job`)).Scan(&stored, &succeeded); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for note := range ran {
		if !want[note] {
			t.Errorf("the workers ran a job for %q, which was not committed", note)
		}
	}
	if stored != len(want) || succeeded != len(want) {
		t.Fatalf("%d jobs stored, %d succeeded; want the %d committed ones (%v), all succeeded", stored, succeeded, len(want), want)
	}
}
