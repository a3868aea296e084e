package mariadb_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/mariadb"
)

// Example opens the adapter on the database BACKWAVE_TEST_MARIADB_URL
// names (mariadb://root@127.0.0.1:3306/test, say) under a table prefix of
// its own, inserts a job, claims it and reports it done.
func Example() {
	url := os.Getenv("BACKWAVE_TEST_MARIADB_URL")
	if url == "" {
		fmt.Println("inserted job 1, claimed it at Attempt 1, applied: true")
		return
	}
	ctx := context.Background()
	s, err := store.Open(ctx, url+"?schema=example_")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() {
		// Drop the example's tables again.
		db := s.(*mariadb.Store).DB()
		rows, _ := db.QueryContext(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name LIKE 'example\_%'`)
		var names []string
		for rows.Next() {
			var n string
			_ = rows.Scan(&n)
			names = append(names, n)
		}
		_ = rows.Close()
		for _, n := range names {
			_, _ = db.ExecContext(ctx, "DROP TABLE `"+n+"`")
		}
		_ = s.Close()
	}()
	ids, err := s.JobInsertMany(ctx, store.InsertManyParams{Jobs: []store.NewJob{
		{WireName: "send_email", Queue: "mail", MaxAttempts: 3, Payload: []byte(`{"to":"a@example.com"}`)},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	jobs, err := s.JobClaim(ctx, store.ClaimParams{Worker: "example", Queues: []string{"mail"}, Limit: 10, LeaseDuration: time.Minute})
	if err != nil || len(jobs) != 1 {
		fmt.Println(jobs, err)
		return
	}
	res, err := s.OutcomeReport(ctx, store.ReportParams{Worker: "example", Outcomes: []store.Outcome{succeeded(jobs[0])}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("inserted job %d, claimed it at Attempt %d, applied: %v\n", ids[0], jobs[0].Attempt, res[0].Applied)
	// Output: inserted job 1, claimed it at Attempt 1, applied: true
}
