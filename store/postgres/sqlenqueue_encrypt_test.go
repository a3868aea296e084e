package postgres_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/encrypt"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/postgres"
)

// TestSQLEnqueueEncrypted: a payload enqueued through SQL is stored as
// given, in plaintext, beside the sealed payload of a job enqueued from Go
// (docs/other-languages.md, "Encryption at Rest"). With RejectPlaintext
// the SQL job is Quarantined at its claim and never runs; without it, it
// runs.
func TestSQLEnqueueEncrypted(t *testing.T) {
	t.Parallel()
	for _, reject := range []bool{true, false} {
		name := map[bool]string{true: "reject-plaintext", false: "accept-plaintext"}[reject]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool := sqlPool(t)
			raw := openStore(t, modePgx, postgres.Options{})
			s := encryptedStore(t, raw, reject)
			var sqlID int64
			if err := pool.QueryRow(ctx, inSchema(raw.Schema(), `SELECT job_id FROM backwave.enqueue('sqlenqueue.greet', '{"to":"sql"}')`)).Scan(&sqlID); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			ran := map[string]bool{}
			done := make(chan struct{})
			h := backwave.NewHandlers()
			if err := backwave.AddHandlerFunc(h, func(_ context.Context, j *backwave.Job[greetArgs]) error {
				mu.Lock()
				defer mu.Unlock()
				ran[j.Args.To] = true
				if ran["go"] && (reject || ran["sql"]) {
					select {
					case <-done:
					default:
						close(done)
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			c, err := backwave.NewClient(s, backwave.Config{Handlers: h, Logger: slog.New(slog.DiscardHandler),
				Groups: []backwave.WorkerGroupOptions{backwave.DefaultWorkerGroup("g", backwave.Strict(backwave.DefaultQueue))}})
			if err != nil {
				t.Fatal(err)
			}
			goID, err := c.Enqueue(ctx, greetArgs{To: "go"})
			if err != nil {
				t.Fatal(err)
			}
			var sqlPayload, goPayload []byte
			if err := pool.QueryRow(ctx, inSchema(raw.Schema(), `SELECT (SELECT payload FROM backwave.job_payload WHERE job_id = $1),
			    (SELECT payload FROM backwave.job_payload WHERE job_id = $2)`), sqlID, int64(goID)).Scan(&sqlPayload, &goPayload); err != nil {
				t.Fatal(err)
			}
			if string(sqlPayload) != `{"to":"sql"}` || !encrypt.Sealed(goPayload) {
				t.Fatalf("stored payloads: SQL %q, Go %q; want the SQL one as given and the Go one sealed", sqlPayload, goPayload)
			}
			if err := c.Start(ctx); err != nil {
				t.Fatal(err)
			}
			select {
			case <-done:
			case <-time.After(time.Minute):
				t.Error("the jobs did not run in a minute")
			}
			if err := c.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			j, err := raw.JobGet(ctx, job.ID(sqlID))
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if reject && (j.State != job.StateQuarantined || ran["sql"]) {
				t.Fatalf("with RejectPlaintext the SQL job is %s and ran %v, want Quarantined and never run", j.State, ran["sql"])
			}
			if !reject && (j.State != job.StateSucceeded || !ran["sql"]) {
				t.Fatalf("without RejectPlaintext the SQL job is %s and ran %v, want it run and Succeeded", j.State, ran["sql"])
			}
		})
	}
}

// TestSQLEnqueueReplaceEncrypted: a replace through SQL of a holder
// enqueued from Go on an encrypted store stores the new payload as given,
// in plaintext, over the sealed one (docs/other-languages.md, "Encryption
// at Rest"): the database cannot seal it, so the holder's payload goes the
// way of any SQL-enqueued one (TestSQLEnqueueEncrypted).
func TestSQLEnqueueReplaceEncrypted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := sqlPool(t)
	raw := openStore(t, modePgx, postgres.Options{})
	id, err := quietClient(t, encryptedStore(t, raw, true)).Enqueue(ctx, greetArgs{To: "go"}, backwave.WithUnique("k", backwave.UniqueWhileLive()), backwave.WithRunAt(time.Now().Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	got := sqlResults(t, pool, raw.Schema(), `[{"wire_name": "sqlenqueue.greet", "payload": {"to":"sql"}, "unique_key": "k", "unique_mode": "replace"}]`,
		"transitions+detail")
	if want := fmt.Sprintf("1:%d:false:true", id); got != want {
		t.Fatalf("enqueue_many_results answered %s, want %s", got, want)
	}
	var payload []byte
	if err := pool.QueryRow(ctx, inSchema(raw.Schema(), `SELECT payload FROM backwave.job_payload WHERE job_id = $1`), int64(id)).Scan(&payload); err != nil {
		t.Fatal(err)
	}
	if string(payload) != `{"to":"sql"}` {
		t.Fatalf("the rewritten holder's payload is %q, want the SQL one as given", payload)
	}
}

// encryptedStore wraps raw in Encryption at Rest under a test key, with
// RejectPlaintext set as reject says.
func encryptedStore(t *testing.T, raw *postgres.Store, reject bool) store.Store {
	t.Helper()
	ring, err := encrypt.NewKeyRing("k1", map[string][]byte{"k1": bytes.Repeat([]byte{7}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	s, err := encrypt.WrapWith(context.Background(), raw, ring, encrypt.Options{RejectPlaintext: reject, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
