package mariadb_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/mariadb"
)

// TestServerClockAnySessionTimeZone: on the server's clock (no
// Options.Now), a store opened on an application's *sql.DB whose sessions
// run in another time zone stamps the true instant.
func TestServerClockAnySessionTimeZone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg, err := mariadb.ParseDSN(testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Params["time_zone"] = "'+05:30'"
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	schema := randomSchema(t)
	dropSchemaAtCleanup(t, schema)
	s, err := mariadb.OpenDB(ctx, db, mariadb.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	before := time.Now()
	ids, err := s.JobInsertMany(ctx, store.InsertManyParams{Jobs: []store.NewJob{{WireName: "clock", Queue: "q", MaxAttempts: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	j, err := s.JobGet(ctx, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if d := j.CreatedAt.Sub(before); d < -5*time.Second || d > 5*time.Second {
		t.Fatalf("created at %v, %v from the host's clock at the insert: the session's time zone leaked into the store's clock", j.CreatedAt, d)
	}
}
