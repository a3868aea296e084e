package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/postgres"
)

func TestKeyScratch(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, modePgx, postgres.Options{})
	var jobs []store.NewJob
	for i := 0; i < 20; i++ {
		jobs = append(jobs, store.NewJob{WireName: "w", Queue: "q", MaxAttempts: 3})
	}
	for i := 0; i < 3; i++ {
		jobs = append(jobs, store.NewJob{WireName: "w", Queue: "q", MaxAttempts: 3})
	}
	ids, err := s.JobInsertMany(ctx, store.InsertManyParams{Jobs: jobs})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	sc := s.Schema()
	for i, id := range ids {
		key := "a"
		if i >= 20 {
			key = fmt.Sprintf("k%d", i)
		}
		if i == 22 {
			continue
		}
		if _, err := conn.Exec(ctx, "UPDATE "+sc+".job SET concurrency_key = $1 WHERE id = $2", key, int64(id)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, "UPDATE "+sc+".queue SET fair_claim = true, key_limit = 3, key_rate_limit = 2, key_rate_period = 60000000 WHERE name = 'q'"); err != nil {
		t.Fatal(err)
	}
	got, err := s.JobClaim(ctx, store.ClaimParams{Worker: "w1", Queues: []string{"q"}, Limit: 5, LeaseDuration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range got {
		t.Logf("claimed %d", j.ID)
	}
	got, err = s.JobClaim(ctx, store.ClaimParams{Worker: "w1", Queues: []string{"q"}, Limit: 5, LeaseDuration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range got {
		t.Logf("claimed 2nd %d", j.ID)
	}
	rows, _ := conn.Query(ctx, "SELECT queue, concurrency_key, rate_window, rate_count FROM "+sc+".queue_key")
	for rows.Next() {
		var q, k string
		var w int64
		var c int
		_ = rows.Scan(&q, &k, &w, &c)
		t.Logf("window %s %q %d %d", q, k, w, c)
	}
	rows.Close()
	var plan string
	rows, err = conn.Query(ctx, "SELECT queue, concurrency_key, state, sum(n) FROM (SELECT queue, concurrency_key, state, n FROM "+sc+".job_key_count UNION ALL SELECT queue, concurrency_key, state, n FROM "+sc+".job_key_count_delta) c GROUP BY 1,2,3 ORDER BY 1,2,3")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var q, k, st string
		var n int64
		_ = rows.Scan(&q, &k, &st, &n)
		t.Logf("count %s %s %s %d", q, k, st, n)
	}
	rows.Close()
	_ = plan
}
