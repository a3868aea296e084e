package mariadb_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/mariadb"
	"github.com/backwave/backwave/vtime"
)

// countingConnector counts the statements its connections run (Exec and
// Query alike; BEGIN and COMMIT are not statements here).
type countingConnector struct {
	driver.Connector
	n *atomic.Int64
}

func (c countingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return countingConn{conn, c.n}, nil
}

// countingConn forwards to the driver's connection, counting statements.
type countingConn struct {
	driver.Conn
	n *atomic.Int64
}

func (c countingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c countingConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	c.n.Add(1)
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, q, args)
}

func (c countingConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	c.n.Add(1)
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, q, args)
}

func (c countingConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	c.n.Add(1)
	return c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, q)
}

func (c countingConn) ResetSession(ctx context.Context) error {
	return c.Conn.(driver.SessionResetter).ResetSession(ctx)
}

func (c countingConn) IsValid() bool { return c.Conn.(driver.Validator).IsValid() }

func (c countingConn) CheckNamedValue(nv *driver.NamedValue) error {
	return c.Conn.(driver.NamedValueChecker).CheckNamedValue(nv)
}

// TestStatementsPerBatch counts the statements the hot path sends the
// server for a batch of jobs — insert, claim, renewal, outcome report,
// Relinquish, lease expiry —
// and holds each to a bound that does not grow with the batch: the hot
// path is set-based, a few statements per call, not a few per job, so the
// writer row is held for a handful of round trips.
func TestStatementsPerBatch(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg, err := mariadb.ParseDSN(testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	db := sql.OpenDB(countingConnector{conn, &n})
	defer db.Close()
	schema := randomSchema(t)
	dropSchemaAtCleanup(t, schema)
	clock := vtime.NewManual(vtime.Epoch)
	s, err := mariadb.OpenDB(ctx, db, mariadb.Options{Schema: schema, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	const batch = 50
	count := func(what string, bound int, fn func() error) {
		t.Helper()
		before := n.Load()
		if err := fn(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		got := int(n.Load() - before)
		t.Logf("%s of %d jobs: %d statements (%.2f a job)", what, batch, got, float64(got)/batch)
		if got > bound {
			t.Errorf("%s of %d jobs: %d statements, want at most %d", what, batch, got, bound)
		}
	}
	jobs := make([]store.NewJob, batch)
	for i := range jobs {
		jobs[i] = store.NewJob{WireName: "w", Queue: "q", MaxAttempts: 3, Payload: []byte(fmt.Sprint(i)),
			Tags: []job.Tag{{Key: "k", Value: fmt.Sprint(i % 3)}}}
	}
	count("insert", 12, func() error {
		_, err := s.JobInsertMany(ctx, store.InsertManyParams{Jobs: jobs})
		return err
	})
	var claimed []job.Job
	count("claim", 14, func() error {
		claimed, err = s.JobClaim(ctx, store.ClaimParams{Worker: "w1", Queues: []string{"q"}, Limit: batch, LeaseDuration: time.Minute})
		return err
	})
	if len(claimed) != batch {
		t.Fatalf("claimed %d jobs, want %d", len(claimed), batch)
	}
	leases := make([]job.Lease, batch)
	for i, j := range claimed {
		leases[i] = j.Lease()
	}
	clock.Advance(time.Second) // so the renewal moves every Lease's end
	count("renew", 8, func() error {
		_, err := s.LeaseRenew(ctx, store.RenewParams{Worker: "w1", Leases: leases, LeaseDuration: time.Minute})
		return err
	})
	outcomes := make([]store.Outcome, batch)
	for i, l := range leases {
		outcomes[i] = store.Outcome{Outcome: core.Outcome{Lease: l, State: job.StateSucceeded, Via: core.ViaSucceed},
			Output: []byte(fmt.Sprint(i)), TagDelta: []job.Tag{{Key: "done", Value: "yes"}}}
	}
	count("report", 14, func() error {
		_, err := s.OutcomeReport(ctx, store.ReportParams{Worker: "w1", Outcomes: outcomes})
		return err
	})

	// The Lease's other two ends: handed back, then lapsed.
	if _, err := s.JobInsertMany(ctx, store.InsertManyParams{Jobs: jobs}); err != nil {
		t.Fatal(err)
	}
	claim := func() []job.Lease {
		t.Helper()
		claimed, err := s.JobClaim(ctx, store.ClaimParams{Worker: "w1", Queues: []string{"q"}, Limit: batch, LeaseDuration: time.Minute})
		if err != nil || len(claimed) != batch {
			t.Fatalf("claimed %d jobs (%v), want %d", len(claimed), err, batch)
		}
		leases := make([]job.Lease, batch)
		for i, j := range claimed {
			leases[i] = j.Lease()
		}
		return leases
	}
	leases = claim()
	count("relinquish", 12, func() error {
		res, err := s.LeaseRelinquish(ctx, store.RelinquishParams{Worker: "w1", Leases: leases})
		if err == nil && len(res.Relinquished) != batch {
			err = fmt.Errorf("relinquished %d, want %d", len(res.Relinquished), batch)
		}
		return err
	})
	claim()
	clock.Advance(2 * time.Minute)
	count("expire", 14, func() error {
		res, err := s.LeaseExpire(ctx, store.ExpireParams{Queues: []string{"q"}})
		if err == nil && len(res.Expired) != batch {
			err = fmt.Errorf("expired %d, want %d", len(res.Expired), batch)
		}
		return err
	})
}
