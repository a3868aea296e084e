package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/postgres"
)

// The SQL enqueue API (migration/012_sql_enqueue.sql,
// docs/other-languages.md): enqueue and enqueue_many apply the Go insert
// path's validation and defaults and write the rows it writes ("One enqueue
// rule", DESIGN.md).

// greetArgs is the args type the SQL enqueue tests enqueue from Go and from
// SQL alike.
type greetArgs struct {
	To   string `json:"to"`
	Lang string `json:"lang,omitempty"`
	N    int    `json:"n"`
}

func (greetArgs) WireName() string { return "sqlenqueue.greet" }

// sqlPool opens a pgx pool on the test database, closed at cleanup.
func sqlPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// inSchema renames the literal schema backwave of query to schema, as the
// store does.
func inSchema(schema, query string) string {
	return strings.ReplaceAll(query, "backwave.", schema+".")
}

// rowsSQL renders every row an insert writes in one schema as one JSON
// document, ordered by job id: the job table's every column, its payload
// (hex), Tags, Transition Log, unique keys, trace contexts, the Tag
// dictionary, the Queues and the job counts. Timestamps are rendered
// relative to the job's created_at — the one column that is the clock of
// the inserting statement, so it differs between two inserts made at two
// instants — and created_at itself is left out; a due time given at insert
// is rendered as given. A Transition Log entry's xid (the inserting
// transaction's id, migration/009_observer.sql) differs by nature between
// two transactions and is rendered as whether it is set.
const rowsSQL = `SELECT jsonb_build_object(
    'job', (SELECT coalesce(jsonb_agg(to_jsonb(j) - 'created_at' - 'scheduled_at' || jsonb_build_object('scheduled_at',
              CASE WHEN j.scheduled_at = j.created_at THEN 'created_at' ELSE to_char(j.scheduled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') END)
              ORDER BY j.id), '[]') FROM backwave.job j),
    'payload', (SELECT coalesce(jsonb_agg(jsonb_build_object('job_id', p.job_id, 'payload', encode(p.payload, 'escape')) ORDER BY p.job_id), '[]')
              FROM backwave.job_payload p),
    'job_tag', (SELECT coalesce(jsonb_agg(to_jsonb(t) ORDER BY t.job_id, t.key, t.value), '[]') FROM backwave.job_tag t),
    'transition', (SELECT coalesce(jsonb_agg(to_jsonb(x) - 'seq' - 'at' - 'xid' || jsonb_build_object('at', (x.at - j.created_at)::text, 'xid', x.xid IS NOT NULL)
              ORDER BY x.job_id, x.seq), '[]') FROM backwave.job_transition x JOIN backwave.job j ON j.id = x.job_id),
    'unique', (SELECT coalesce(jsonb_agg(to_jsonb(u) - 'expires_at' || jsonb_build_object('expires_at', (u.expires_at - j.created_at)::text)
              ORDER BY u.key), '[]') FROM backwave.job_unique u JOIN backwave.job j ON j.id = u.job_id),
    'trace', (SELECT coalesce(jsonb_agg(to_jsonb(x) ORDER BY x.job_id), '[]') FROM backwave.job_trace x),
    'tag', (SELECT coalesce(jsonb_agg(to_jsonb(t) ORDER BY t.key, t.value), '[]') FROM backwave.tag t),
    'queue', (SELECT coalesce(jsonb_agg(to_jsonb(q) ORDER BY q.name), '[]') FROM backwave.queue q),
    'count', (SELECT coalesce(jsonb_agg(to_jsonb(c) ORDER BY c.queue, c.state), '[]')
              FROM (SELECT d.queue, d.state, sum(d.n) AS n FROM backwave.job_count_delta d GROUP BY d.queue, d.state) c)
)::text`

// schemaRows returns rowsSQL of schema, indented for a readable diff.
func schemaRows(t *testing.T, pool *pgxpool.Pool, schema string) string {
	t.Helper()
	var doc string
	if err := pool.QueryRow(context.Background(), inSchema(schema, rowsSQL)).Scan(&doc); err != nil {
		t.Fatalf("read the rows of %s: %v", schema, err)
	}
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSQLEnqueueConformance: jobs enqueued through the SQL functions and
// the same jobs enqueued through a Client are the same rows, column for
// column, on every Job History Policy — defaults (Queue, attempt budget,
// due now), options, Tags, both unique scopes, a held key and a batch. Each
// path gets a fresh schema of its own, so even the ids match.
func TestSQLEnqueueConformance(t *testing.T) {
	t.Parallel()
	runAt := time.Date(2031, 5, 6, 7, 8, 9, 123456000, time.UTC)
	for _, policy := range []store.HistoryPolicy{store.HistoryTransitionsWithDetail, store.HistoryTransitions, store.HistoryOff} {
		t.Run(policy.String(), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool := sqlPool(t)

			goStore := openStore(t, modePgx, postgres.Options{History: policy})
			client, err := backwave.NewClient(goStore, backwave.Config{Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			_, err = client.EnqueueMany(ctx, []backwave.EnqueueParams{
				{Args: greetArgs{To: "ada@example.com", N: 1}, Options: []backwave.EnqueueOption{backwave.WithConcurrencyKey("acme")}},
				{Args: greetArgs{To: "bob@example.com", Lang: "fr", N: 2}, Options: []backwave.EnqueueOption{
					backwave.WithQueue("mail"), backwave.WithMaxAttempts(3), backwave.WithRunAt(runAt),
					backwave.WithTags(backwave.Label("urgent"), backwave.Keyed("tenant", "Acme"), backwave.Keyed("tenant", "Beta"), backwave.Label("urgent"), backwave.Label("Ärger")),
				}},
				{Args: greetArgs{To: "cy@example.com", N: 3}, Options: []backwave.EnqueueOption{backwave.WithUnique("greet:cy", backwave.UniqueWhileLive())}},
				{Args: greetArgs{To: "cy@example.com", N: 4}, Options: []backwave.EnqueueOption{backwave.WithUnique("greet:cy", backwave.UniqueWhileLive())}},
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := client.Enqueue(ctx, greetArgs{To: "dee@example.com", N: 5},
				backwave.WithUnique("greet:dee", backwave.UniqueFor(90*time.Minute)), backwave.WithTags(backwave.Label("Later"))); err != nil {
				t.Fatal(err)
			}
			if _, err := client.Enqueue(ctx, greetArgs{To: "dee@example.com", N: 6},
				backwave.WithUnique("greet:dee", backwave.UniqueFor(90*time.Minute))); err != nil {
				t.Fatal(err)
			}

			sqlStore := openStore(t, modePgx, postgres.Options{History: policy})
			schema := sqlStore.Schema()
			history := policy.String()
			batch := `[
			  {"wire_name": "sqlenqueue.greet", "payload": {"to":"ada@example.com","n":1}, "concurrency_key": "acme"},
			  {"wire_name": "sqlenqueue.greet", "payload": {"to":"bob@example.com","lang":"fr","n":2}, "queue": "mail",
			   "max_attempts": 3, "run_at": "2031-05-06T07:08:09.123456Z", "labels": ["urgent", "urgent", "Ärger"],
			   "keyed_tags": {"tenant": ["Acme", "Beta"]}},
			  {"wire_name": "sqlenqueue.greet", "payload": {"to":"cy@example.com","n":3}, "unique_key": "greet:cy"},
			  {"wire_name": "sqlenqueue.greet", "payload": {"to":"cy@example.com","n":4}, "unique_key": "greet:cy"}
			]`
			got := queryResults(t, pool, inSchema(schema, `SELECT ord, job_id, inserted FROM backwave.enqueue_many($1, history => $2)`), batch, history)
			if want := "1:1:true 2:2:true 3:3:true 4:3:false"; got != want {
				t.Errorf("enqueue_many answered %s, want %s", got, want)
			}
			for _, q := range []string{
				`SELECT 0, job_id, inserted FROM backwave.enqueue('sqlenqueue.greet', '{"to":"dee@example.com","n":5}',
				    unique_key => 'greet:dee', unique_period => '90 minutes', labels => '{Later}', history => $1)`,
				`SELECT 0, job_id, inserted FROM backwave.enqueue('sqlenqueue.greet', '{"to":"dee@example.com","n":6}',
				    unique_key => 'greet:dee', unique_period => '5400 seconds', history => $1)`,
			} {
				queryResults(t, pool, inSchema(schema, q), history)
			}

			want, got := schemaRows(t, pool, goStore.Schema()), schemaRows(t, pool, schema)
			if want != got {
				t.Fatalf("rows through SQL differ from rows through Go:\n%s", lineDiff(want, got))
			}
			if !strings.Contains(got, `"payload": "{\"to\":\"bob@example.com\",\"lang\":\"fr\",\"n\":2}"`) {
				t.Fatalf("the rows lack the payload they should hold byte for byte:\n%s", got)
			}
		})
	}
}

// lineDiff shows the lines of want and got from the first that differs
// ("-" want, "+" got), a few either side.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	i := 0
	for i < len(w) && i < len(g) && w[i] == g[i] {
		i++
	}
	from := max(0, i-5)
	var sb strings.Builder
	for k := from; k < i; k++ {
		fmt.Fprintf(&sb, "  %s\n", w[k])
	}
	for k := i; k < min(len(w), i+8); k++ {
		fmt.Fprintf(&sb, "- %s\n", w[k])
	}
	for k := i; k < min(len(g), i+8); k++ {
		fmt.Fprintf(&sb, "+ %s\n", g[k])
	}
	return sb.String()
}

// queryResults runs q and renders its (ord, id, inserted) rows as
// "ord:id:inserted ...".
func queryResults(t *testing.T, pool *pgxpool.Pool, q string, args ...any) string {
	t.Helper()
	rows, err := pool.Query(context.Background(), q, args...)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		var ord int32
		var id int64
		var inserted bool
		if err := rows.Scan(&ord, &id, &inserted); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d:%d:%v", ord, id, inserted))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return strings.Join(out, " ")
}

// TestSQLEnqueueBadInput: every input the Go insert path refuses is an
// SQL error through enqueue or enqueue_many — the SQLSTATE, a message
// naming the field and the field in the error's COLUMN field — that
// inserts nothing, and the caller's transaction goes on after a rollback
// to its savepoint: the good job enqueued after every refusal commits.
func TestSQLEnqueueBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := sqlPool(t)
	s := openStore(t, modePgx, postgres.Options{})
	over := `{"x":"` + strings.Repeat("a", store.MaxPayloadBytes) + `"}`
	cases := []struct {
		name, call string
		args       []any
		code       string // SQLSTATE
		field      string // COLUMN, and named in the message
	}{
		{"null wire name", `backwave.enqueue(NULL)`, nil, "22004", "wire_name"},
		{"empty wire name", `backwave.enqueue('')`, nil, "22023", "wire_name"},
		{"wire name with spaces", `backwave.enqueue(' a')`, nil, "22023", "wire_name"},
		{"wire name too long", `backwave.enqueue(repeat('w', 129))`, nil, "22023", "wire_name"},
		{"control character", `backwave.enqueue(E'a\tb')`, nil, "22023", "wire_name"},
		{"array payload", `backwave.enqueue('w', '[1, 2]')`, nil, "22023", "payload"},
		{"string payload", `backwave.enqueue('w', '"hello"')`, nil, "22023", "payload"},
		{"null payload", `backwave.enqueue('w', NULL)`, nil, "22004", "payload"},
		{"payload over the limit", `backwave.enqueue('w', $1::json)`, []any{over}, "22023", "payload"},
		{"negative max_attempts", `backwave.enqueue('w', max_attempts => -1)`, nil, "22023", "max_attempts"},
		{"zero max_attempts", `backwave.enqueue('w', max_attempts => 0)`, nil, "22023", "max_attempts"},
		{"null queue", `backwave.enqueue('w', queue => NULL)`, nil, "22004", "queue"},
		{"run_at in year 10000", `backwave.enqueue('w', run_at => '10000-01-01 00:00:00+00')`, nil, "22023", "run_at"},
		{"run_at before year 1", `backwave.enqueue('w', run_at => '0001-12-31 23:59:59+00 BC')`, nil, "22023", "run_at"},
		{"run_at infinity", `backwave.enqueue('w', run_at => 'infinity')`, nil, "22023", "run_at"},
		{"unknown history policy", `backwave.enqueue('w', history => 'everything')`, nil, "22023", "history"},
		{"null history policy", `backwave.enqueue('w', history => NULL)`, nil, "22004", "history"},
		{"empty label", `backwave.enqueue('w', labels => '{""}')`, nil, "22023", "labels"},
		{"keyed tag not a string", `backwave.enqueue('w', keyed_tags => '{"k": 1}')`, nil, "22023", "keyed_tags"},
		{"empty unique key", `backwave.enqueue('w', unique_key => '')`, nil, "22023", "unique_key"},
		{"unique key too long", `backwave.enqueue('w', unique_key => repeat('k', 257))`, nil, "22023", "unique_key"},
		{"negative unique period", `backwave.enqueue('w', unique_key => 'k', unique_period => '-1 second')`, nil, "22023", "unique_period"},
		{"period without key", `backwave.enqueue('w', unique_period => '1 hour')`, nil, "22023", "unique_period"},
		{"batch not an array", `backwave.enqueue_many('{}')`, nil, "22023", "jobs"},
		{"batch with an unknown field", `backwave.enqueue_many('[{"wire_name": "w", "concurrency_keys": "c"}]')`, nil, "22023", "concurrency_keys"},
		{"empty concurrency key", `backwave.enqueue_many('[{"wire_name": "w", "concurrency_key": ""}]')`, nil, "22023", "concurrency_key"},
		{"concurrency key too long", `backwave.enqueue_many(json_build_array(json_build_object('wire_name', 'w', 'concurrency_key', repeat('k', 129))))`, nil, "22023", "concurrency_key"},
		{"concurrency key with a control character", `backwave.enqueue_many('[{"wire_name": "w", "concurrency_key": "a\tb"}]')`, nil, "22023", "concurrency_key"},
		{"batch concurrency key a number", `backwave.enqueue_many('[{"wire_name": "w", "concurrency_key": 7}]')`, nil, "22023", "concurrency_key"},
		{"batch wire name a number", `backwave.enqueue_many('[{"wire_name": 7}]')`, nil, "22023", "wire_name"},
		{"batch null wire name", `backwave.enqueue_many('[{"wire_name": "w"}, {"wire_name": null}]')`, nil, "22004", "wire_name"},
		{"batch bad run_at", `backwave.enqueue_many('[{"wire_name": "w", "run_at": "soon"}]')`, nil, "22023", "run_at"},
		{"batch fractional max_attempts", `backwave.enqueue_many('[{"wire_name": "w", "max_attempts": 2.5}]')`, nil, "22023", "max_attempts"},
		{"batch array payload", `backwave.enqueue_many('[{"wire_name": "w", "payload": []}]')`, nil, "22023", "payload"},
		{"batch label a number", `backwave.enqueue_many('[{"wire_name": "w", "labels": [1]}]')`, nil, "22023", "labels"},
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	for _, c := range cases {
		if _, err := tx.Exec(ctx, "SAVEPOINT bad"); err != nil {
			t.Fatal(err)
		}
		_, err := tx.Exec(ctx, inSchema(s.Schema(), "SELECT * FROM "+c.call), c.args...)
		var pe *pgconn.PgError
		switch {
		case !errors.As(err, &pe):
			t.Errorf("%s: %s answered %v, want an SQL error", c.name, c.call, err)
		case pe.Code != c.code || pe.ColumnName != c.field || !strings.Contains(pe.Message, c.field):
			t.Errorf("%s: SQLSTATE %s, column %q, message %q; want SQLSTATE %s naming %s", c.name, pe.Code, pe.ColumnName, pe.Message, c.code, c.field)
		}
		if _, err := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT bad"); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, inSchema(s.Schema(), `SELECT * FROM backwave.enqueue('good', json_build_object('case', $1::text))`), c.name); err != nil {
			t.Fatalf("after %s: the transaction is not usable: %v", c.name, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var jobs, good int
	if err := pool.QueryRow(ctx, inSchema(s.Schema(), `SELECT count(*), count(*) FILTER (WHERE wire_name = 'good') FROM backwave.job`)).Scan(&jobs, &good); err != nil {
		t.Fatal(err)
	}
	if jobs != len(cases) || good != len(cases) {
		t.Fatalf("%d jobs stored, %d of them the good ones; want the %d good ones only", jobs, good, len(cases))
	}
}

// TestSQLEnqueueKnownWireNames: a Queue with rows in queue_wire_name
// refuses through SQL a Wire Name not listed for it; every other Queue
// takes any Wire Name (the check is off by default).
func TestSQLEnqueueKnownWireNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := sqlPool(t)
	schema := openStore(t, modePgx, postgres.Options{}).Schema()
	exec := func(q string) error {
		_, err := pool.Exec(ctx, inSchema(schema, q))
		return err
	}
	if err := exec(`SELECT * FROM backwave.enqueue('anything', queue => 'mail')`); err != nil {
		t.Fatalf("with no known Wire Names: %v", err)
	}
	if err := exec(`INSERT INTO backwave.queue_wire_name (queue, wire_name) VALUES ('mail', 'mail.send')`); err != nil {
		t.Fatal(err)
	}
	if err := exec(`SELECT * FROM backwave.enqueue('mail.send', queue => 'mail')`); err != nil {
		t.Fatalf("a known Wire Name: %v", err)
	}
	err := exec(`SELECT * FROM backwave.enqueue('mail.sned', queue => 'mail')`)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "22023" || pe.ColumnName != "wire_name" || !strings.Contains(pe.Message, "mail.sned") {
		t.Fatalf("an unknown Wire Name on a checked Queue answered %v, want SQLSTATE 22023 naming it", err)
	}
	if err := exec(`SELECT * FROM backwave.enqueue('mail.sned', queue => 'other')`); err != nil {
		t.Fatalf("an unchecked Queue: %v", err)
	}
}

// TestSQLEnqueueHint: an SQL enqueue of jobs due now sends the Wake-Up
// Hint on its schema's channel at commit, once per Queue; a rolled-back
// enqueue sends none, nor does a job due later (hint_test.go's listen and
// drain).
func TestSQLEnqueueHint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := sqlPool(t)
	s := openStore(t, modePgx, postgres.Options{})
	conn := listen(t, s)
	enqueue := func(jobs string, commit bool) {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, inSchema(s.Schema(), `SELECT * FROM backwave.enqueue_many($1)`), jobs); err != nil {
			t.Fatal(err)
		}
		if commit {
			err = tx.Commit(ctx)
		} else {
			err = tx.Rollback(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	enqueue(`[{"wire_name": "w", "queue": "rolled-back"}]`, false)
	enqueue(`[{"wire_name": "w", "queue": "later", "run_at": "3000-01-01T00:00:00Z"},
	          {"wire_name": "w", "queue": "a"}, {"wire_name": "w", "queue": "a"}, {"wire_name": "w", "queue": "b"}]`, true)
	if _, err := pool.Exec(ctx, inSchema(s.Schema(), `SELECT * FROM backwave.enqueue('w', queue => 'quiet', notify => false)`)); err != nil {
		t.Fatal(err)
	}
	got := drain(t, conn, s)
	slices.Sort(got)
	if !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("notifications = %q, want one each for a and b", got)
	}
}

// TestSQLEnqueuePrivileges: a role holding only the privileges
// docs/other-languages.md lists ("Privileges") enqueues through both
// functions — Tags, a unique key taken and then found held, the Known
// Wire Names check — and revoking EXECUTE on enqueue_jobs from PUBLIC
// keeps it from enqueueing at all.
func TestSQLEnqueuePrivileges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := sqlPool(t)
	schema := openStore(t, modePgx, postgres.Options{}).Schema()
	role := newEnqueueRole(t, pool, schema, "bw_enq_")
	sc := pgx.Identifier{schema}.Sanitize()
	for _, q := range []string{
		`SELECT * FROM backwave.enqueue('w', labels => '{a}', keyed_tags => '{"k": "v"}', unique_key => 'u')`,
		`SELECT * FROM backwave.enqueue('w', unique_key => 'u')`,
		`SELECT * FROM backwave.enqueue_many('[{"wire_name": "w", "queue": "q2", "unique_key": "p", "unique_period": 60}]')`,
	} {
		if err := role.run(q); err != nil {
			t.Fatalf("with the documented privileges: %s: %v", q, err)
		}
	}
	if _, err := pool.Exec(ctx, `REVOKE EXECUTE ON FUNCTION `+sc+`.enqueue_jobs FROM PUBLIC`); err != nil {
		t.Fatal(err)
	}
	err := role.run(`SELECT * FROM backwave.enqueue('w')`)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42501" {
		t.Fatalf("after REVOKE EXECUTE on enqueue_jobs: %v, want SQLSTATE 42501 (insufficient_privilege)", err)
	}
}

// enqueueRole is a role of its own for one test, holding the privileges
// docs/other-languages.md lists for enqueueing through SQL ("Privileges"),
// dropped at cleanup.
type enqueueRole struct {
	t      *testing.T
	pool   *pgxpool.Pool
	schema string
	name   string // the role's name, quoted
}

// newEnqueueRole creates the role prefix + schema's suffix and grants it
// the enqueue privileges on schema.
func newEnqueueRole(t *testing.T, pool *pgxpool.Pool, schema, prefix string) enqueueRole {
	t.Helper()
	r := enqueueRole{t: t, pool: pool, schema: schema, name: pgx.Identifier{prefix + strings.TrimPrefix(schema, "bwtest_")}.Sanitize()}
	t.Cleanup(func() {
		_, _ = pool.Exec(context.Background(), fmt.Sprintf(`DROP OWNED BY %[1]s; DROP ROLE IF EXISTS %[1]s`, r.name))
	})
	sc := pgx.Identifier{schema}.Sanitize()
	r.grant(`CREATE ROLE `+r.name,
		`GRANT USAGE ON SCHEMA `+sc+` TO `+r.name,
		`GRANT USAGE ON SEQUENCE `+sc+`.job_id_seq TO `+r.name,
		`GRANT SELECT, INSERT ON `+sc+`.queue, `+sc+`.job, `+sc+`.job_payload, `+sc+`.job_tag, `+
			sc+`.job_transition, `+sc+`.tag, `+sc+`.job_count_delta, `+sc+`.job_key_count_delta TO `+r.name,
		`GRANT SELECT, INSERT, UPDATE ON `+sc+`.job_unique TO `+r.name,
		`GRANT SELECT ON `+sc+`.queue_wire_name TO `+r.name)
	return r
}

// grant runs each statement as the test's own user.
func (r enqueueRole) grant(qs ...string) {
	r.t.Helper()
	for _, q := range qs {
		if _, err := r.pool.Exec(context.Background(), q); err != nil {
			r.t.Fatalf("%s: %v", q, err)
		}
	}
}

// run runs q, in the role's schema, as the role, in a transaction of its
// own, and commits it.
func (r enqueueRole) run(q string) error {
	ctx := context.Background()
	tx, err := r.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SET LOCAL ROLE `+r.name); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, inSchema(r.schema, q)); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
