package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/postgres"
)

// Wake-Up Hints (glossary: "never correctness-bearing"; issue 4: "one
// notification per Queue per transaction at most, a listener that
// reconnects").

// listen opens a raw connection LISTENing on the store's hint channel.
func listen(t *testing.T, s *postgres.Store) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	if _, err := conn.Exec(t.Context(), fmt.Sprintf(`LISTEN "%s.hint"`, s.Schema())); err != nil {
		t.Fatal(err)
	}
	return conn
}

// drain sends a sentinel notification and returns every payload that
// arrived before it.
func drain(t *testing.T, conn *pgx.Conn, s *postgres.Store) []string {
	t.Helper()
	sender, err := pgx.Connect(t.Context(), testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer sender.Close(context.Background())
	if _, err := sender.Exec(t.Context(), `SELECT pg_notify($1, '--sentinel--')`, s.Schema()+".hint"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		n, err := conn.WaitForNotification(ctx)
		cancel()
		if err != nil {
			t.Fatalf("waiting for notifications: %v (got %q)", err, got)
		}
		if n.Payload == "--sentinel--" {
			return got
		}
		got = append(got, n.Payload)
	}
}

func TestHintNotifyOncePerQueue(t *testing.T) {
	t.Parallel()
	s := openStore(t, modePgx, postgres.Options{})
	conn := listen(t, s)
	ctx := t.Context()

	// One batch: many jobs due now in a and b, some later in c → one
	// notification each for a and b, none for c.
	var jobs []store.NewJob
	for i := range 50 {
		jobs = append(jobs, store.NewJob{WireName: "w", Queue: []string{"a", "b"}[i%2], MaxAttempts: 1})
	}
	jobs = append(jobs, store.NewJob{WireName: "w", Queue: "c", MaxAttempts: 1, ScheduledAt: time.Now().Add(time.Hour)})
	if _, err := s.JobInsertMany(ctx, store.InsertManyParams{Jobs: jobs}); err != nil {
		t.Fatal(err)
	}
	got := drain(t, conn, s)
	slices.Sort(got)
	if !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("notifications after one batch = %q, want one each for a and b", got)
	}

	// Two inserts into a inside one caller transaction: still one.
	tx, err := conn.Begin(ctx) // a listening conn may run transactions too
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := s.JobInsertManyTx(ctx, tx, store.InsertManyParams{Jobs: jobs[:1]}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := drain(t, conn, s); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("notifications after one transaction with two inserts into a = %q, want [a]", got)
	}

	// DisableNotify sends none.
	quiet := openStore(t, modePgx, postgres.Options{Schema: s.Schema(), DisableNotify: true, SkipMigrate: true})
	insert(t, quiet, "a", 3)
	if got := drain(t, conn, s); len(got) != 0 {
		t.Fatalf("notifications from a store with DisableNotify = %q, want none", got)
	}
}

// waitHint waits for a hint naming queue.
func waitHint(t *testing.T, heard <-chan string, queue string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case q := <-heard:
			if q == queue {
				return
			}
		case <-timeout:
			t.Fatalf("no hint for %q within 30s", queue)
		}
	}
}

// The listener hears other stores' writes, and after its connection is
// killed it reconnects and hints every known Queue (hints may have been
// missed meanwhile) before relaying notifications again.
func TestHintListenerReconnects(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			writer := openStore(t, modePgx, postgres.Options{})
			insert(t, writer, "known", 1)
			s := openStore(t, m, postgres.Options{Schema: writer.Schema(), SkipMigrate: true, ListenerReconnectDelay: 50 * time.Millisecond})
			heard := make(chan string, 1024)
			unsubscribe := s.SubscribeHints(func(q string) {
				select {
				case heard <- q:
				default:
				}
			})
			defer unsubscribe()
			waitHint(t, heard, "known") // the burst after connecting

			insert(t, writer, "fresh", 1)
			waitHint(t, heard, "fresh")

			conn, err := pgx.Connect(t.Context(), testURL(t))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(context.Background())
			var killed int
			err = conn.QueryRow(t.Context(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`,
				"backwave-hints:"+s.Schema()).Scan(&killed)
			if err != nil || killed != 1 {
				t.Fatalf("terminated %d listener connections (%v), want 1", killed, err)
			}
			waitHint(t, heard, "known") // the burst after reconnecting
			insert(t, writer, "after", 1)
			waitHint(t, heard, "after")

			unsubscribe()
			insert(t, writer, "unheard", 1)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			for len(heard) > 0 {
				if q := <-heard; q == "unheard" {
					t.Fatal("an unsubscribed func was called")
				}
			}
		})
	}
}

// With the listener disabled, subscribers are never called (workers fall
// back to polling; see TestClusterPollingOnly).
func TestHintListenerDisabled(t *testing.T) {
	t.Parallel()
	s := openStore(t, modePgx, postgres.Options{DisableListener: true})
	called := make(chan string, 1)
	defer s.SubscribeHints(func(q string) { called <- q })()
	insert(t, s, "q", 1)
	// The notification went out; a second store's listener hears it, so a
	// listener on s would have too.
	other := openStore(t, modePgx, postgres.Options{Schema: s.Schema(), SkipMigrate: true})
	heard := make(chan string, 16)
	defer other.SubscribeHints(func(q string) { heard <- q })()
	waitHint(t, heard, "q")
	select {
	case q := <-called:
		t.Fatalf("a store with DisableListener delivered a hint for %q", q)
	default:
	}
}
