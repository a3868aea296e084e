package dashboard

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/internal/metricsserve"
	"github.com/backwave/backwave/permission"
	"github.com/backwave/backwave/store"
	_ "github.com/backwave/backwave/store/postgres"
)

// The scale benchmark: the dashboard over PostgreSQL holding 10,000,000
// jobs (BACKWAVE_DASHBOARD_BENCH_JOBS to change it), measuring the server
// time of the pages an operator opens first. Run it with
//
//	BACKWAVE_TEST_POSTGRES_URL='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' \
//	  go test ./dashboard -run '^$' -bench Scale -benchtime 20x
//
// The jobs are loaded once, into a schema of their own (benchSchema), with
// set-based SQL straight into the adapter's tables — a benchmark fixture,
// not a way to enqueue. A later run finds them and skips the load.

const benchSchema = "bwdash_bench"

func benchJobs(b *testing.B) int {
	v := os.Getenv("BACKWAVE_DASHBOARD_BENCH_JOBS")
	if v == "" {
		return 10_000_000
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1000 {
		b.Fatalf("BACKWAVE_DASHBOARD_BENCH_JOBS=%q: want a number of at least 1000", v)
	}
	return n
}

// benchURI is the test database's URI with the benchmark's schema.
func benchURI(b *testing.B) string {
	base := os.Getenv("BACKWAVE_TEST_POSTGRES_URL")
	if base == "" {
		b.Skip("BACKWAVE_TEST_POSTGRES_URL is not set: the scale benchmark needs PostgreSQL")
	}
	u, err := url.Parse(base)
	if err != nil {
		b.Fatalf("BACKWAVE_TEST_POSTGRES_URL: %v", err)
	}
	q := u.Query()
	q.Set("schema", benchSchema)
	u.RawQuery = q.Encode()
	return u.String()
}

// loadSQL fills the schema with n jobs in batches: 10 Queues, 20 Wire
// Names, 80% Succeeded, 5% Dead-Lettered, 1% Quarantined, 2% Cancelled,
// 12% Scheduled (1% of all jobs Retrying), created 250 ms apart; a third
// carry a Keyed Tag tenant=tNNN (1,000 tenants) and 1% the Label urgent.
// Each statement fires the adapter's count triggers once, so the
// maintained counts are exact when the load ends.
func loadSQL(lo, hi int) []string {
	return []string{
		fmt.Sprintf(`INSERT INTO %[1]s.job (id, queue, wire_name, state, attempt, max_attempts, scheduled_at, created_at, finalized_at, retry_cause, cancel_cause)
SELECT g, 'q' || (g %% 10), 'wire.' || (g %% 20), s.state, 1, 5, t.ts, t.ts,
    CASE WHEN s.state <> 'scheduled' THEN t.ts + interval '1 second' END,
    CASE WHEN g %% 100 = 99 THEN 'handler_failed' ELSE '' END,
    CASE WHEN s.state = 'cancelled' THEN 'operator' ELSE '' END
FROM generate_series(%[2]d, %[3]d) g,
LATERAL (SELECT timestamptz '2026-10-01 00:00:00+00' + g * interval '250 milliseconds' AS ts) t,
LATERAL (SELECT CASE WHEN g %% 100 < 80 THEN 'succeeded' WHEN g %% 100 < 85 THEN 'dead_lettered'
    WHEN g %% 100 < 86 THEN 'quarantined' WHEN g %% 100 < 88 THEN 'cancelled' ELSE 'scheduled' END AS state) s`, benchSchema, lo, hi),
		fmt.Sprintf(`INSERT INTO %[1]s.job_payload (job_id, payload)
SELECT g, convert_to('{"n":' || g || '}', 'UTF8') FROM generate_series(%[2]d, %[3]d) g`, benchSchema, lo, hi),
		fmt.Sprintf(`INSERT INTO %[1]s.job_tag (job_id, key, value)
SELECT g, 'tenant', 't' || (g %% 1000) FROM generate_series(%[2]d, %[3]d) g WHERE g %% 3 = 0
UNION ALL
SELECT g, '', 'urgent' FROM generate_series(%[2]d, %[3]d) g WHERE g %% 100 = 7`, benchSchema, lo, hi),
	}
}

// ensureLoaded loads n jobs unless the schema holds them already.
func ensureLoaded(b *testing.B, ctx context.Context, uri string, n int) {
	st, err := store.Open(ctx, uri) // migrates the schema
	if err != nil {
		b.Fatalf("open: %v", err)
	}
	_ = st.Close()
	conn, err := pgx.Connect(ctx, os.Getenv("BACKWAVE_TEST_POSTGRES_URL"))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	var have int64
	if err := conn.QueryRow(ctx, fmt.Sprintf(`SELECT coalesce(max(id), 0) FROM %s.job`, benchSchema)).Scan(&have); err != nil {
		b.Fatal(err)
	}
	if have == int64(n) {
		return
	}
	if have != 0 {
		b.Fatalf("schema %s holds jobs up to %d, not %d: drop it (DROP SCHEMA %s CASCADE) to reload", benchSchema, have, n, benchSchema)
	}
	start := time.Now()
	const batch = 500_000
	for lo := 1; lo <= n; lo += batch {
		hi := min(lo+batch-1, n)
		for _, q := range loadSQL(lo, hi) {
			if _, err := conn.Exec(ctx, q); err != nil {
				b.Fatalf("load %d–%d: %v", lo, hi, err)
			}
		}
		b.Logf("loaded %d jobs (%s)", hi, time.Since(start).Round(time.Second))
	}
	for _, q := range []string{
		fmt.Sprintf(`INSERT INTO %[1]s.queue (name, concurrency_limit) SELECT 'q' || g, CASE WHEN g = 1 THEN 5 ELSE 0 END FROM generate_series(0, 9) g ON CONFLICT DO NOTHING`, benchSchema),
		fmt.Sprintf(`INSERT INTO %[1]s.tag (key, value, folded, display)
SELECT 'tenant', 't' || g, 'tenant=t' || g, 'tenant=t' || g FROM generate_series(0, 999) g
UNION ALL SELECT '', 'urgent', 'urgent', 'urgent' ON CONFLICT DO NOTHING`, benchSchema),
		fmt.Sprintf(`SELECT setval('%s.job_id_seq', %d)`, benchSchema, n),
		// VACUUM, as autovacuum would in time: it sets the visibility map,
		// without which no count is index-only and every index entry
		// walked is a heap fetch (BacklogScale in docs/dashboard.md has
		// both). VACUUM cannot run in a transaction: one statement each.
		fmt.Sprintf(`VACUUM (ANALYZE) %s.job`, benchSchema),
		fmt.Sprintf(`VACUUM (ANALYZE) %s.job_tag`, benchSchema),
		fmt.Sprintf(`ANALYZE %[1]s.job_payload, %[1]s.job_count, %[1]s.job_count_delta`, benchSchema),
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			b.Fatalf("finish load: %v", err)
		}
	}
	b.Logf("loaded %d jobs in %s", n, time.Since(start).Round(time.Second))
}

// BenchmarkScale measures the server time of the overview, the first
// job-list page, a Tag-filtered page, a state-filtered page, a job page
// and the Tag Facet over PostgreSQL with 10,000,000 jobs. Server time is
// the handler's, from request to the last byte written, without a
// network in between.
func BenchmarkScale(b *testing.B) {
	uri := benchURI(b)
	n := benchJobs(b)
	ctx := context.Background()
	ensureLoaded(b, ctx, uri, n)
	st, err := store.Open(ctx, uri)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	srv, err := newServer(st, Options{
		Policy: permission.Policy{Allow: func(context.Context, permission.Permission) bool { return true }},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		b.Fatal(err)
	}
	h := srv.handler
	mid := strconv.Itoa(n / 2)
	// One live-refresh check: what every open page's event stream reads
	// each RefreshInterval.
	b.Run("live_refresh_check", func(b *testing.B) {
		for b.Loop() {
			if _, err := srv.fingerprint(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/check")
	})
	// The backlog and throughput reads the Overview, the Queues page and
	// /metrics make: every Scheduled job of the load is due, the worst
	// case for the ready count (it counts the due-index range).
	a := srv.reader
	b.Run("backlog", func(b *testing.B) {
		for b.Loop() {
			if _, err := a.Backlog(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/read")
	})
	b.Run("throughput_last_hour", func(b *testing.B) {
		for b.Loop() {
			if _, err := a.Throughput(ctx, time.Now().Add(-time.Hour)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/read")
	})
	// One scrape of /metrics as `backwave dashboard` serves it: the Backlog
	// gauges (Admin.Backlog again), the counts and the node registry.
	b.Run("metrics_scrape", func(b *testing.B) {
		m, err := metricsserve.New(metricsserve.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = m.Shutdown(context.WithoutCancel(ctx)) }()
		var cfg backwave.Config
		m.Install(&cfg)
		c, err := backwave.NewClient(st, cfg)
		if err != nil {
			b.Fatal(err)
		}
		if err := m.Watch(c); err != nil {
			b.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		for b.Loop() {
			w := httptest.NewRecorder()
			m.Handler.ServeHTTP(w, req)
			if w.Code != http.StatusOK {
				b.Fatalf("GET /metrics: %d %s", w.Code, w.Body.String())
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/scrape")
	})
	pages := []struct{ name, path string }{
		{"overview", "/backwave/"},
		{"jobs_first_page", "/backwave/jobs"},
		{"jobs_tag_tenant", "/backwave/jobs?tk=tenant&tv=t42"},
		{"jobs_tag_urgent", "/backwave/jobs?label=urgent"},
		{"jobs_dead_lettered", "/backwave/jobs?state=dead_lettered"},
		{"jobs_queue_wire", "/backwave/jobs?queue=q3&wire=wire.3"},
		{"job_detail", "/backwave/jobs/" + mid},
		{"tag_facet_all", "/backwave/jobs/facet"},
		{"tag_facet_tenant", "/backwave/jobs/facet?tk=tenant&tv=t42"},
		{"queues", "/backwave/queues"},
		{"nodes", "/backwave/nodes"},
	}
	benchPages(b, h, pages)
	// The same job lists with a live node serving every Queue, as in
	// production: no Queue is unserved, so the list skips the backlog read
	// it makes only for that warning. The node is a registry row stamped
	// here, not a running Client: nothing claims the loaded jobs.
	if _, err := st.NodeStamp(ctx, store.NodeStampParams{
		ID: "bench-node", Groups: []store.NodeGroup{{Name: "all", Queues: []string{"q0", "q1", "q2", "q3", "q4", "q5", "q6", "q7", "q8", "q9"}}},
		Beat: time.Hour, Forget: 24 * time.Hour,
	}); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = st.NodeRemove(context.WithoutCancel(ctx), "bench-node") }()
	var served []struct{ name, path string }
	for _, p := range pages {
		if strings.HasPrefix(p.name, "jobs_") || p.name == "nodes" {
			served = append(served, struct{ name, path string }{"served/" + p.name, p.path})
		}
	}
	benchPages(b, h, served)
}

// benchPages times each page's handler, its mean and its worst.
func benchPages(b *testing.B, h http.Handler, pages []struct{ name, path string }) {
	for _, bc := range pages {
		b.Run(bc.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, bc.path, nil)
			req.Host = "localhost"
			req.RemoteAddr = "127.0.0.1:1"
			var worst time.Duration
			for b.Loop() {
				w := httptest.NewRecorder()
				t0 := time.Now()
				h.ServeHTTP(w, req)
				worst = max(worst, time.Since(t0))
				if w.Code != http.StatusOK {
					b.Fatalf("GET %s: %d %s", bc.path, w.Code, w.Body.String())
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/page")
			b.ReportMetric(float64(worst.Microseconds())/1000, "worst-ms")
		})
	}
}
