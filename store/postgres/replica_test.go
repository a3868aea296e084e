package postgres_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/dashboard"
	"github.com/backwave/backwave/internal/privatedb"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/postgres"
)

// streamingPair starts a private primary and a streaming standby of it
// (pg_basebackup, standby.signal) on loopback ports of their own.
func streamingPair(t *testing.T, ctx context.Context) (primary, standby *privatedb.Postgres) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts two PostgreSQL servers")
	}
	if _, err := privatedb.PostgresBin(); err != nil {
		t.Skipf("no private PostgreSQL: %v", err)
	}
	work, err := os.MkdirTemp("", "backwave-replica-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(work) })
	ports := make([]int, 0, 2)
	for len(ports) < 2 {
		p, err := privatedb.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if len(ports) == 0 || ports[0] != p {
			ports = append(ports, p)
		}
	}
	settings := map[string]string{"fsync": "off", "max_connections": "40", "hot_standby_feedback": "on"}
	primary, err = privatedb.StartPostgres(ctx, privatedb.PostgresConfig{Dir: filepath.Join(work, "primary"), Within: work, Port: ports[0], Settings: settings})
	if err != nil {
		t.Fatalf("primary: %v", err)
	}
	t.Cleanup(func() { _ = primary.Stop(context.Background(), privatedb.Immediate) })
	standby, err = privatedb.StartStandby(ctx, primary, privatedb.PostgresConfig{Dir: filepath.Join(work, "standby"), Within: work, Port: ports[1], Settings: settings})
	if err != nil {
		t.Fatalf("standby: %v", err)
	}
	t.Cleanup(func() { _ = standby.Stop(context.Background(), privatedb.Immediate) })
	return primary, standby
}

// TestReplicaMonitor runs the Monitor of an Admin on a real streaming
// standby: its reads are served by the standby (in recovery, and blind to
// a job enqueued while its replay is paused), every Operator Action goes
// to the primary, a lag past the bound and a standby that is down send the
// reads to the primary, and a primary named as the replica is refused at
// open.
func TestReplicaMonitor(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	primary, standby := streamingPair(t, ctx)
	const schema = "replica_t"
	ps, err := postgres.Open(ctx, primary.URL("postgres"), postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	insert := func() backwave.JobID {
		t.Helper()
		ids, err := ps.JobInsertMany(ctx, store.InsertManyParams{Jobs: []store.NewJob{{WireName: "replica.test", Queue: "q", Payload: []byte(`{}`), MaxAttempts: 3}}})
		if err != nil {
			t.Fatal(err)
		}
		return ids[0]
	}
	first := insert()
	sc, err := pgx.Connect(ctx, standby.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close(ctx)
	// Wait until the standby has replayed the schema and the first job.
	for {
		var n int
		err := sc.QueryRow(ctx, "SELECT count(*) FROM "+schema+".job WHERE id = $1", first).Scan(&n)
		if err == nil && n == 1 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the standby never replayed job %d: %v", first, err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// A primary named as the replica: a clear error at open.
	if _, err := postgres.OpenReplica(ctx, primary.URL("postgres")+"&schema="+schema, ps, postgres.ReplicaOptions{}); !errors.Is(err, store.ErrInvalidParams) || !strings.Contains(err.Error(), "not a standby") {
		t.Fatalf("OpenReplica on the primary: %v, want ErrInvalidParams saying it is not a standby", err)
	}

	r, err := postgres.OpenReplica(ctx, standby.URL("postgres"), ps, postgres.ReplicaOptions{Schema: schema, MaxLag: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	admin, err := backwave.NewAdmin(ps, "ops:replica-test", backwave.WithReplica(r))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Job(ctx, first); err != nil {
		t.Fatalf("Job(%d) through the replica: %v", first, err)
	}
	st := r.Status(ctx)
	if !st.Serving || !st.InRecovery || st.ReplicaReads != 1 || st.PrimaryReads != 0 {
		t.Fatalf("after one read: %+v, want it served by a standby in recovery", st)
	}

	// The dashboard over the replica shows its replay lag.
	h, err := dashboard.New(ps, dashboard.Options{Replica: r})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, dashboard.DefaultPrefix+"/", nil)
	req.RemoteAddr, req.Host = "127.0.0.1:50000", "127.0.0.1"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if body := rec.Body.String(); rec.Code != http.StatusOK || !strings.Contains(body, `data-replica-serving="true"`) || !strings.Contains(body, "replay lag") {
		t.Fatalf("dashboard overview over the replica: %d, want the replica's replay lag shown:\n%.2000s", rec.Code, body)
	}

	// Replay paused: a job enqueued now is on the primary only. The
	// Monitor does not see it (the standby served the read); the action
	// on it succeeds (the primary took it).
	if _, err := sc.Exec(ctx, "SELECT pg_wal_replay_pause()"); err != nil {
		t.Fatal(err)
	}
	second := insert()
	if _, err := admin.Job(ctx, second); !errors.Is(err, backwave.ErrNotFound) {
		t.Fatalf("Job(%d) on the paused standby: %v, want ErrNotFound (the standby has not replayed it)", second, err)
	}
	if _, err := admin.Cancel(ctx, second); err != nil {
		t.Fatalf("Cancel(%d): %v, want the action applied on the primary", second, err)
	}
	j, err := ps.JobGet(ctx, second)
	if err != nil || j.State != job.StateCancelled {
		t.Fatalf("the primary's job %d: %v %v, want cancelled", second, j.State, err)
	}
	if st := r.Status(ctx); st.ReplicaReads < 2 || st.PrimaryReads != 0 {
		t.Fatalf("reads %d on the replica, %d on the primary: want 2 or more (the dashboard's too) and 0", st.ReplicaReads, st.PrimaryReads)
	}

	// A bound the paused standby's lag passes: the reads go to the primary.
	tight, err := postgres.OpenReplica(ctx, standby.URL("postgres"), ps, postgres.ReplicaOptions{Schema: schema, MaxLag: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer tight.Close()
	time.Sleep(1100 * time.Millisecond)
	tadmin, err := backwave.NewAdmin(ps, "ops:replica-test", backwave.WithReplica(tight))
	if err != nil {
		t.Fatal(err)
	}
	if d, err := tadmin.Job(ctx, second); err != nil || d.Job.State != backwave.StateCancelled {
		t.Fatalf("Job(%d) past the lag bound: %v %v, want the primary's cancelled job", second, d.Job.State, err)
	}
	if st := tight.Status(ctx); st.Serving || st.PrimaryReads != 1 || st.Lag <= 50*time.Millisecond {
		t.Fatalf("past the lag bound: %+v, want the read served by the primary", st)
	}

	// The standby down: the reads go to the primary.
	if _, err := sc.Exec(ctx, "SELECT pg_wal_replay_resume()"); err != nil {
		t.Fatal(err)
	}
	if err := standby.Stop(ctx, privatedb.Fast); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	if d, err := admin.Job(ctx, second); err != nil || d.Job.State != backwave.StateCancelled {
		t.Fatalf("Job(%d) with the standby down: %v %v, want the primary's cancelled job", second, d.Job.State, err)
	}
	if st := r.Status(ctx); st.Serving || st.Err == nil || st.PrimaryReads != 1 {
		t.Fatalf("standby down: %+v, want the read served by the primary and the reason", st)
	}
}
