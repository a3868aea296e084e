package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/postgres"
)

// The rewrite modes of SQL enqueue (migration/017_sql_enqueue_modes.sql,
// docs/other-languages.md "Replace and Debounce"): unique_mode replace and
// debounce rewrite a Scheduled holder as the Go path does
// (store/postgres/replace.go), and refuse any other holder.

// auditSQL renders one schema's audit trail as JSON, in id order, its time
// relative to the job's created_at as rowsSQL renders times.
const auditRowsSQL = `SELECT coalesce(jsonb_agg(to_jsonb(a) - 'id' - 'at' || jsonb_build_object('at', (a.at - j.created_at)::text)
    ORDER BY a.id), '[]')::text
FROM backwave.audit a LEFT JOIN backwave.job j ON j.id = a.job_id`

// rewriteRows is schemaRows with the audit trail.
func rewriteRows(t *testing.T, pool *pgxpool.Pool, schema string) string {
	t.Helper()
	var audit string
	if err := pool.QueryRow(context.Background(), inSchema(schema, auditRowsSQL)).Scan(&audit); err != nil {
		t.Fatalf("read the audit trail of %s: %v", schema, err)
	}
	return schemaRows(t, pool, schema) + "\naudit: " + audit
}

// quietClient is a Client on s that only enqueues, logging nothing.
func quietClient(t *testing.T, s store.Store) *backwave.Client {
	t.Helper()
	c, err := backwave.NewClient(s, backwave.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// rowQuerier is what sqlResults runs on: a pool, or a transaction.
type rowQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// sqlResults runs enqueue_many_results(jobs, history) through q and renders
// its rows as "ord:id:inserted:replaced ...".
func sqlResults(t *testing.T, q rowQuerier, schema, jobs, history string) string {
	t.Helper()
	rows, err := q.Query(context.Background(), inSchema(schema, `SELECT ord, job_id, inserted, replaced FROM backwave.enqueue_many_results($1, $2)`),
		jobs, history)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		var ord int32
		var id int64
		var inserted, replaced bool
		if err := rows.Scan(&ord, &id, &inserted, &replaced); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d:%d:%v:%v", ord, id, inserted, replaced))
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("enqueue_many_results(%s): %v", jobs, err)
	}
	return strings.Join(out, " ")
}

// TestSQLEnqueueRewriteConformance: Replace and Debounce enqueues through
// enqueue_many_results and the same enqueues through a Go Client give the
// same rows — job, payload, Tags, Tag dictionary, unique keys, Transition
// Log, counts and audit trail — on every Job History Policy. Each step runs
// the Go enqueue and the SQL one in one transaction (Transactional Enqueue
// for Go), so both see the same now() and even the audit entries' due
// times match; the steps commit one after another, so a rewrite meets a
// holder a committed transaction left. Covered: a free key taken in each
// mode (a debounced job due its wait later), an in-batch double rewrite,
// Replace with and without run_at, Debounce pushing the due time out and
// capped by the max wait, a held key in skip mode beside them, and the old
// Tags of a rewritten job pruned from the dictionary but for the one
// another job carries.
func TestSQLEnqueueRewriteConformance(t *testing.T) {
	t.Parallel()
	runAt := time.Date(2031, 5, 6, 7, 8, 9, 120000000, time.UTC)
	replace := backwave.UniqueWhileLive().Replace()
	debounce := backwave.UniqueWhileLive().Debounce(time.Minute, 5*time.Minute)
	type step struct {
		goJobs  []backwave.EnqueueParams
		sqlJobs string
		want    string // enqueue_many_results
		prepare string // SQL run in both schemas before the step
	}
	steps := []step{{
		goJobs: []backwave.EnqueueParams{
			{Args: greetArgs{To: "a", N: 1}, Options: []backwave.EnqueueOption{backwave.WithUnique("k:a", replace),
				backwave.WithTags(backwave.Label("old"), backwave.Label("shared"), backwave.Keyed("tenant", "Acme"))}},
			{Args: greetArgs{To: "b", N: 1}, Options: []backwave.EnqueueOption{backwave.WithUnique("k:b", debounce)}},
			{Args: greetArgs{To: "c", N: 1}, Options: []backwave.EnqueueOption{backwave.WithUnique("k:c", replace), backwave.WithTags(backwave.Label("c1"))}},
			{Args: greetArgs{To: "c", N: 2}, Options: []backwave.EnqueueOption{backwave.WithUnique("k:c", replace), backwave.WithRunAt(runAt),
				backwave.WithTags(backwave.Label("c2"))}},
			{Args: greetArgs{To: "c", N: 3}, Options: []backwave.EnqueueOption{backwave.WithUnique("k:c", replace), backwave.WithTags(backwave.Label("c3"))}},
			{Args: greetArgs{To: "d", N: 1}, Options: []backwave.EnqueueOption{backwave.WithUnique("k:d", backwave.UniqueFor(90*time.Minute).Replace())}},
			{Args: greetArgs{To: "shared", N: 1}, Options: []backwave.EnqueueOption{backwave.WithTags(backwave.Label("shared"))}},
		},
		sqlJobs: `[
		  {"wire_name": "sqlenqueue.greet", "payload": {"to":"a","n":1}, "unique_key": "k:a", "unique_mode": "replace",
		   "labels": ["old", "shared"], "keyed_tags": {"tenant": "Acme"}},
		  {"wire_name": "sqlenqueue.greet", "payload": {"to":"b","n":1}, "unique_key": "k:b", "unique_mode": "debounce",
		   "debounce_wait": "1 minute", "debounce_max_wait": 300},
		  {"wire_name": "sqlenqueue.greet", "payload": {"to":"c","n":1}, "unique_key": "k:c", "unique_mode": "replace", "labels": ["c1"]},
		  {"wire_name": "sqlenqueue.greet", "payload": {"to":"c","n":2}, "unique_key": "k:c", "unique_mode": "replace",
		   "run_at": "2031-05-06T07:08:09.12Z", "labels": ["c2"]},
		  {"wire_name": "sqlenqueue.greet", "payload": {"to":"c","n":3}, "unique_key": "k:c", "unique_mode": "replace", "labels": ["c3"]},
		  {"wire_name": "sqlenqueue.greet", "payload": {"to":"d","n":1}, "unique_key": "k:d", "unique_period": "90 minutes", "unique_mode": "replace"},
		  {"wire_name": "sqlenqueue.greet", "payload": {"to":"shared","n":1}, "labels": ["shared"]}
		]`,
		want: "1:1:true:false 2:2:true:false 3:3:true:false 4:3:false:true 5:3:false:true 6:6:true:false 7:7:true:false",
	}, {
		goJobs: []backwave.EnqueueParams{
			{Args: greetArgs{To: "a", Lang: "fr", N: 2}, Options: []backwave.EnqueueOption{backwave.WithUnique("k:a", replace),
				backwave.WithTags(backwave.Keyed("tenant", "Beta"), backwave.Label("fresh"), backwave.Label("fresh"))}},
			{Args: greetArgs{To: "b", N: 2}, Options: []backwave.EnqueueOption{backwave.WithUnique("k:b", debounce)}},
			{Args: greetArgs{To: "d", N: 2}, Options: []backwave.EnqueueOption{backwave.WithUnique("k:d", backwave.UniqueFor(90*time.Minute).Replace()),
				backwave.WithRunAt(runAt)}},
			{Args: greetArgs{To: "a", N: 3}, Options: []backwave.EnqueueOption{backwave.WithUnique("k:a", backwave.UniqueWhileLive())}},
		},
		sqlJobs: `[
		  {"wire_name": "sqlenqueue.greet", "payload": {"to":"a","lang":"fr","n":2}, "unique_key": "k:a", "unique_mode": "replace",
		   "labels": ["fresh", "fresh"], "keyed_tags": {"tenant": ["Beta"]}},
		  {"wire_name": "sqlenqueue.greet", "payload": {"to":"b","n":2}, "unique_key": "k:b", "unique_mode": "debounce",
		   "debounce_wait": 60, "debounce_max_wait": "5 minutes"},
		  {"wire_name": "sqlenqueue.greet", "payload": {"to":"d","n":2}, "unique_key": "k:d", "unique_period": 5400, "unique_mode": "replace",
		   "run_at": "2031-05-06T07:08:09.12Z"},
		  {"wire_name": "sqlenqueue.greet", "payload": {"to":"a","n":3}, "unique_key": "k:a", "unique_mode": "skip"}
		]`,
		want: "1:1:false:true 2:2:false:true 3:6:false:true 4:1:false:false",
	}, {
		// The burst began 4m30s ago: the max wait caps the push at its
		// created_at + 5m, 30s from now.
		prepare: `UPDATE backwave.job SET created_at = created_at - interval '4 minutes 30 seconds' WHERE id = 2`,
		goJobs: []backwave.EnqueueParams{
			{Args: greetArgs{To: "b", N: 3}, Options: []backwave.EnqueueOption{backwave.WithUnique("k:b", debounce),
				backwave.WithTags(backwave.Label("capped"))}},
		},
		sqlJobs: `[{"wire_name": "sqlenqueue.greet", "payload": {"to":"b","n":3}, "unique_key": "k:b", "unique_mode": "debounce",
		   "debounce_wait": "PT1M", "debounce_max_wait": "PT5M", "labels": ["capped"]}]`,
		want: "1:2:false:true",
	}}
	for _, policy := range []store.HistoryPolicy{store.HistoryTransitionsWithDetail, store.HistoryOff} {
		t.Run(policy.String(), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool := sqlPool(t)
			goStore := openStore(t, modePgx, postgres.Options{History: policy})
			client := quietClient(t, goStore)
			sqlSchema := openStore(t, modePgx, postgres.Options{History: policy}).Schema()
			for i, st := range steps {
				tx, err := pool.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, schema := range []string{goStore.Schema(), sqlSchema} {
					if st.prepare != "" {
						if _, err := tx.Exec(ctx, inSchema(schema, st.prepare)); err != nil {
							t.Fatal(err)
						}
					}
				}
				if _, err := client.EnqueueManyTx(ctx, tx, st.goJobs); err != nil {
					t.Fatalf("step %d: Go: %v", i, err)
				}
				if got := sqlResults(t, tx, sqlSchema, st.sqlJobs, policy.String()); got != st.want {
					t.Errorf("step %d: enqueue_many_results answered %s, want %s", i, got, st.want)
				}
				if err := tx.Commit(ctx); err != nil {
					t.Fatal(err)
				}
			}
			want, got := rewriteRows(t, pool, goStore.Schema()), rewriteRows(t, pool, sqlSchema)
			if want != got {
				t.Fatalf("rows through SQL differ from rows through Go:\n%s", lineDiff(want, got))
			}
			for _, s := range []string{
				`"payload": "{\"to\":\"c\",\"n\":3}"`, // the in-batch double rewrite: the last one wins
				`"display": "fresh"`,
				`"display": "shared"`,
				`"detail": "key \"k:d\" scheduled_at 2031-05-06T07:08:09.12Z"`,
				`"action": "unique_debounce"`,
			} {
				if !strings.Contains(got, s) {
					t.Errorf("the rows lack %s:\n%s", s, got)
				}
			}
			for _, s := range []string{`"display": "old"`, `"display": "c1"`, `"display": "tenant=Acme"`} {
				if strings.Contains(got, s) {
					t.Errorf("the Tag dictionary keeps %s, which no job carries any more:\n%s", s, got)
				}
			}
			// The Debounce due times: pushed out to now + 1m, then capped at
			// created_at + 5m.
			var due string
			if err := pool.QueryRow(ctx, inSchema(sqlSchema, `SELECT (scheduled_at - created_at)::text FROM backwave.job WHERE id = 2`)).Scan(&due); err != nil {
				t.Fatal(err)
			}
			if due != "00:05:00" {
				t.Errorf("the capped debounced job is due created_at + %s, want + 00:05:00", due)
			}
		})
	}
}

// TestSQLEnqueueRewriteRefused: a replace or debounce whose key's holder is
// not Scheduled — Running, or ended while a unique_period key outlives it —
// raises SQLSTATE 55000 naming the key, the holder and its state, with
// COLUMN unique_key, and stores nothing of its call (not even the good job
// beside it); the Go path refuses the same enqueue with ErrHolderNotPending.
// A skip-mode enqueue of the same key still answers the holder.
func TestSQLEnqueueRewriteRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := sqlPool(t)
	s := openStore(t, modePgx, postgres.Options{})
	client := quietClient(t, s)
	exec := func(q string, args ...any) error {
		_, err := pool.Exec(ctx, inSchema(s.Schema(), q), args...)
		return err
	}
	if err := exec(`SELECT * FROM backwave.enqueue_many('[{"wire_name": "w", "unique_key": "run"},
	    {"wire_name": "w", "unique_key": "done", "unique_period": "1 hour"}]')`); err != nil {
		t.Fatal(err)
	}
	if err := exec(`UPDATE backwave.job SET state = 'running', attempt = 1, worker = 'w1', lease_expires_at = now() + interval '1 hour' WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	if err := exec(`UPDATE backwave.job SET state = 'succeeded', attempt = 1, finalized_at = now() WHERE id = 2`); err != nil {
		t.Fatal(err)
	}
	count := func() string {
		var n string
		err := pool.QueryRow(ctx, inSchema(s.Schema(), `SELECT (SELECT count(*) FROM backwave.job) || ' jobs ' ||
		    (SELECT count(*) FROM backwave.job_payload) || ' payloads ' || (SELECT count(*) FROM backwave.audit) || ' audit ' ||
		    (SELECT count(*) FROM backwave.job_tag) || ' tags'`)).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := count()
	for _, c := range []struct {
		key, mode, state string
		goScope          backwave.UniqueScope
	}{
		{"run", `"unique_mode": "replace"`, "running", backwave.UniqueWhileLive().Replace()},
		{"run", `"unique_mode": "debounce", "debounce_wait": 1, "debounce_max_wait": 2`, "running", backwave.UniqueWhileLive().Debounce(time.Second, 2*time.Second)},
		{"done", `"unique_mode": "replace", "unique_period": "1 hour"`, "succeeded", backwave.UniqueFor(time.Hour).Replace()},
	} {
		err := exec(`SELECT * FROM backwave.enqueue_many_results($1)`,
			`[{"wire_name": "good", "labels": ["l"]}, {"wire_name": "w", "labels": ["l"], "unique_key": "`+c.key+`", `+c.mode+`}]`)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "55000" || pe.ColumnName != "unique_key" ||
			!strings.Contains(pe.Message, "'"+c.key+"'") || !strings.Contains(pe.Message, c.state) {
			t.Errorf("%s held by a %s job: %v, want SQLSTATE 55000 naming the key and the state", c.mode, c.state, err)
		}
		if _, err := client.Enqueue(ctx, greetArgs{To: "x"}, backwave.WithUnique(c.key, c.goScope)); !errors.Is(err, backwave.ErrHolderNotPending) {
			t.Errorf("Go, %s held by a %s job: %v, want ErrHolderNotPending", c.goScope, c.state, err)
		}
		if got := count(); got != before {
			t.Fatalf("after a refused rewrite the schema holds %s, before %s", got, before)
		}
	}
	if got := sqlResults(t, pool, s.Schema(), `[{"wire_name": "w", "unique_key": "run", "unique_mode": "skip"}]`, "transitions+detail"); got != "1:1:false:false" {
		t.Fatalf("skip mode on a Running holder answered %s, want 1:1:false:false", got)
	}
}

// TestSQLEnqueueModeBadInput: every unique_mode, debounce_wait and
// debounce_max_wait the Go rules refuse (store.Unique.Validate, the root
// package's uniqueKey) is an SQL error with its SQLSTATE, naming the field
// in the message and in COLUMN, that stores nothing; where Go can express
// the same job, the Go enqueue is refused too.
func TestSQLEnqueueModeBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := sqlPool(t)
	s := openStore(t, modePgx, postgres.Options{})
	client := quietClient(t, s)
	soon := time.Now().Add(time.Hour)
	cases := []struct {
		name, job string // the fields of one job object beside wire_name
		code      string
		field     string
		goOpts    []backwave.EnqueueOption // the same job from Go, if Go can say it
	}{
		{"unknown mode", `"unique_key": "k", "unique_mode": "Replace"`, "22023", "unique_mode", nil},
		{"empty mode", `"unique_key": "k", "unique_mode": ""`, "22023", "unique_mode", nil},
		{"mode a number", `"unique_key": "k", "unique_mode": 1`, "22023", "unique_mode", nil},
		{"replace without a key", `"unique_mode": "replace"`, "22023", "unique_mode", nil},
		{"skip without a key", `"unique_mode": "skip"`, "22023", "unique_mode", nil},
		{"debounce without a key", `"unique_mode": "debounce", "debounce_wait": 1, "debounce_max_wait": 1`, "22023", "unique_mode", nil},
		{"wait without a mode", `"unique_key": "k", "debounce_wait": 1`, "22023", "debounce_wait", nil},
		{"max wait in replace mode", `"unique_key": "k", "unique_mode": "replace", "debounce_max_wait": 1`, "22023", "debounce_max_wait", nil},
		{"wait in skip mode", `"unique_key": "k", "unique_mode": "skip", "debounce_wait": "1 minute"`, "22023", "debounce_wait", nil},
		{"wait without a key", `"debounce_wait": 1`, "22023", "debounce_wait", nil},
		{"debounce without a wait", `"unique_key": "k", "unique_mode": "debounce", "debounce_max_wait": 60`, "22004", "debounce_wait", nil},
		{"debounce with a null wait", `"unique_key": "k", "unique_mode": "debounce", "debounce_wait": null, "debounce_max_wait": 60`, "22004", "debounce_wait", nil},
		{"debounce without a max wait", `"unique_key": "k", "unique_mode": "debounce", "debounce_wait": 60`, "22004", "debounce_max_wait", nil},
		{"zero wait", `"unique_key": "k", "unique_mode": "debounce", "debounce_wait": 0, "debounce_max_wait": 60`, "22023", "debounce_wait",
			[]backwave.EnqueueOption{backwave.WithUnique("k", backwave.UniqueWhileLive().Debounce(0, time.Minute))}},
		{"negative wait", `"unique_key": "k", "unique_mode": "debounce", "debounce_wait": "-5 seconds", "debounce_max_wait": 60`, "22023", "debounce_wait",
			[]backwave.EnqueueOption{backwave.WithUnique("k", backwave.UniqueWhileLive().Debounce(-5*time.Second, time.Minute))}},
		{"zero max wait", `"unique_key": "k", "unique_mode": "debounce", "debounce_wait": 60, "debounce_max_wait": "0 seconds"`, "22023", "debounce_max_wait",
			[]backwave.EnqueueOption{backwave.WithUnique("k", backwave.UniqueWhileLive().Debounce(time.Minute, 0))}},
		{"max wait below the wait", `"unique_key": "k", "unique_mode": "debounce", "debounce_wait": "2 minutes", "debounce_max_wait": 60`, "22023", "debounce_max_wait",
			[]backwave.EnqueueOption{backwave.WithUnique("k", backwave.UniqueWhileLive().Debounce(2*time.Minute, time.Minute))}},
		{"wait beyond a Go duration", `"unique_key": "k", "unique_mode": "debounce", "debounce_wait": "300 years", "debounce_max_wait": "300 years"`, "22023", "debounce_wait", nil},
		{"wait not an interval", `"unique_key": "k", "unique_mode": "debounce", "debounce_wait": "soon", "debounce_max_wait": 60`, "22023", "debounce_wait", nil},
		{"wait a boolean", `"unique_key": "k", "unique_mode": "debounce", "debounce_wait": true, "debounce_max_wait": 60`, "22023", "debounce_wait", nil},
		{"max wait an object", `"unique_key": "k", "unique_mode": "debounce", "debounce_wait": 1, "debounce_max_wait": {}`, "22023", "debounce_max_wait", nil},
		{"debounce with run_at", `"unique_key": "k", "unique_mode": "debounce", "debounce_wait": 60, "debounce_max_wait": 60, "run_at": "2030-01-01T00:00:00Z"`, "22023", "run_at",
			[]backwave.EnqueueOption{backwave.WithUnique("k", backwave.UniqueWhileLive().Debounce(time.Minute, time.Minute)), backwave.WithRunAt(soon)}},
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	for _, c := range cases {
		for _, fn := range []string{"enqueue_many", "enqueue_many_results"} {
			if _, err := tx.Exec(ctx, "SAVEPOINT bad"); err != nil {
				t.Fatal(err)
			}
			call := `SELECT * FROM backwave.` + fn + `('[{"wire_name": "good"}, {"wire_name": "w", ` + c.job + `}]')`
			_, err := tx.Exec(ctx, inSchema(s.Schema(), call))
			var pe *pgconn.PgError
			switch {
			case !errors.As(err, &pe):
				t.Errorf("%s: %s answered %v, want an SQL error", c.name, call, err)
			case pe.Code != c.code || pe.ColumnName != c.field || !strings.Contains(pe.Message, c.field) || !strings.Contains(pe.Message, "jobs[1]"):
				t.Errorf("%s: %s: SQLSTATE %s, column %q, message %q; want SQLSTATE %s naming jobs[1] and %s", c.name, fn, pe.Code, pe.ColumnName, pe.Message, c.code, c.field)
			}
			if _, err := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT bad"); err != nil {
				t.Fatal(err)
			}
		}
		if c.goOpts != nil {
			if _, err := client.Enqueue(ctx, greetArgs{To: "x"}, c.goOpts...); !errors.Is(err, backwave.ErrInvalidJob) {
				t.Errorf("%s: Go answered %v, want ErrInvalidJob", c.name, err)
			}
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var jobs int
	if err := pool.QueryRow(ctx, inSchema(s.Schema(), `SELECT count(*) FROM backwave.job`)).Scan(&jobs); err != nil {
		t.Fatal(err)
	}
	if jobs != 0 {
		t.Fatalf("%d jobs stored, want none", jobs)
	}
}

// TestSQLEnqueueAuditDetail: the audit detail's two Go renderings restated
// in SQL — enqueue_go_quote, strconv.Quote of a unique key, and
// enqueue_rfc3339, time.RFC3339Nano in UTC — agree with Go for every
// assigned code point a key may hold, alone and beside others, and for due
// times with and without a fraction. Unassigned code points, which Go
// escapes by its Unicode tables, are written as they are (the migration's
// documented limit).
func TestSQLEnqueueAuditDetail(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := sqlPool(t)
	schema := openStore(t, modePgx, postgres.Options{}).Schema()
	assigned := []*unicode.RangeTable{unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Zs, unicode.Zl, unicode.Zp,
		unicode.Cf, unicode.Co, unicode.Cc}
	keys := []string{"invoice:1042:send", `a "quoted" \ key`, "Ärger €", "tab-free \u00a0nbsp\u200b", "emoji 🎉 \U000f0001"}
	for r := rune(0x20); r <= unicode.MaxRune; r++ {
		if r == 0x7f || (r >= 0xd800 && r <= 0xdfff) || !unicode.In(r, assigned...) {
			continue
		}
		keys = append(keys, string(r))
	}
	var got []string
	if err := pool.QueryRow(ctx, inSchema(schema, `SELECT array_agg(backwave.enqueue_go_quote(k) ORDER BY n) FROM unnest($1::text[]) WITH ORDINALITY AS u(k, n)`),
		keys).Scan(&got); err != nil {
		t.Fatal(err)
	}
	bad := 0
	for i, k := range keys {
		if want := strconv.Quote(k); got[i] != want {
			if bad++; bad <= 20 {
				t.Errorf("enqueue_go_quote(%U…) = %s, want %s", []rune(k)[0], got[i], want)
			}
		}
	}
	if bad > 20 {
		t.Errorf("… and %d more", bad-20)
	}
	for _, at := range []time.Time{
		time.Date(2031, 5, 6, 7, 8, 9, 120000000, time.UTC),
		time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC),
		time.Date(2026, 12, 31, 23, 59, 59, 999999000, time.FixedZone("x", 5*3600)),
		time.Date(1, 1, 1, 0, 0, 0, 1000, time.UTC),
	} {
		var s string
		if err := pool.QueryRow(ctx, inSchema(schema, `SELECT backwave.enqueue_rfc3339($1)`), at).Scan(&s); err != nil {
			t.Fatal(err)
		}
		if want := at.UTC().Format(time.RFC3339Nano); s != want {
			t.Errorf("enqueue_rfc3339(%v) = %s, want %s", at, s, want)
		}
	}
}

// TestSQLEnqueueRewriteHint: a rewrite that leaves its holder due now sends
// the Wake-Up Hint of the holder's Queue at commit, as replace.go does; a
// rewrite due later, a debounced job's first wait, a rewrite with notify
// false and a rolled-back one send none.
func TestSQLEnqueueRewriteHint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := sqlPool(t)
	s := openStore(t, modePgx, postgres.Options{})
	conn := listen(t, s)
	enqueue := func(jobs string, notify, commit bool) {
		t.Helper()
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		if _, err := tx.Exec(ctx, inSchema(s.Schema(), `SELECT * FROM backwave.enqueue_many_results($1, notify => $2)`), jobs, notify); err != nil {
			t.Fatal(err)
		}
		if commit {
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	enqueue(`[{"wire_name": "w", "queue": "later", "unique_key": "a", "unique_mode": "replace", "run_at": "3000-01-01T00:00:00Z"},
	          {"wire_name": "w", "queue": "debounced", "unique_key": "b", "unique_mode": "debounce", "debounce_wait": 60, "debounce_max_wait": 60},
	          {"wire_name": "w", "queue": "quiet", "unique_key": "c", "unique_mode": "replace", "run_at": "3000-01-01T00:00:00Z"}]`, true, true)
	if got := drain(t, conn, s); len(got) != 0 {
		t.Fatalf("inserts due later sent %q, want no hint", got)
	}
	enqueue(`[{"wire_name": "w", "queue": "later", "unique_key": "a", "unique_mode": "replace"}]`, true, false)
	enqueue(`[{"wire_name": "w", "queue": "other", "unique_key": "a", "unique_mode": "replace"},
	          {"wire_name": "w", "unique_key": "b", "unique_mode": "debounce", "debounce_wait": 60, "debounce_max_wait": 60}]`, true, true)
	enqueue(`[{"wire_name": "w", "unique_key": "c", "unique_mode": "replace"}]`, false, true)
	if got := drain(t, conn, s); len(got) != 1 || got[0] != "later" {
		t.Fatalf("rewrites sent %q, want one hint, for the Queue of the holder made due now", got)
	}
}

// TestSQLEnqueueRewritePrivileges: a role holding the privileges
// docs/other-languages.md lists for enqueueing ("Privileges") and those it
// adds for Replace and Debounce rewrites holders of both scopes, with Tags
// replaced and pruned; with the enqueue privileges alone a rewrite is
// refused (SQLSTATE 42501) while a plain enqueue goes on.
func TestSQLEnqueueRewritePrivileges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := sqlPool(t)
	schema := openStore(t, modePgx, postgres.Options{}).Schema()
	role := newEnqueueRole(t, pool, schema, "bw_rw_")
	sc, r := pgx.Identifier{schema}.Sanitize(), role.name
	batch := `SELECT * FROM backwave.enqueue_many_results('[
	    {"wire_name": "w", "unique_key": "r", "unique_mode": "replace", "labels": ["a"]},
	    {"wire_name": "w", "unique_key": "p", "unique_period": 60, "unique_mode": "debounce", "debounce_wait": 1, "debounce_max_wait": 2,
	     "keyed_tags": {"k": "v"}}]')`
	if err := role.run(batch); err != nil {
		t.Fatalf("the first of a key, with the enqueue privileges: %v", err)
	}
	err := role.run(batch)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42501" {
		t.Fatalf("a rewrite with the enqueue privileges alone: %v, want SQLSTATE 42501 (insufficient_privilege)", err)
	}
	role.grant(`GRANT UPDATE ON `+sc+`.job, `+sc+`.job_payload, `+sc+`.tag TO `+r,
		`GRANT DELETE ON `+sc+`.job_tag, `+sc+`.tag, `+sc+`.job_unique TO `+r,
		`GRANT INSERT ON `+sc+`.audit TO `+r)
	for i := range 2 {
		if err := role.run(batch); err != nil {
			t.Fatalf("rewrite %d with the documented privileges: %v", i, err)
		}
	}
	var audits int
	if err := pool.QueryRow(ctx, inSchema(schema, `SELECT count(*) FROM backwave.audit`)).Scan(&audits); err != nil {
		t.Fatal(err)
	}
	if audits != 4 {
		t.Fatalf("%d audit entries, want 4 (two rewrites of two holders)", audits)
	}
}
