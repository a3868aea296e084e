package backwave_test

import (
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/encrypt"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/memstore"
	"github.com/backwave/backwave/vtime"
)

// keyRing is a one-key provider for Encryption at Rest in tests.
func keyRing(t *testing.T) *encrypt.KeyRing {
	t.Helper()
	k := make([]byte, encrypt.KeySize)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	r, err := encrypt.NewKeyRing("k1", map[string][]byte{"k1": k})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRescheduleTx (glossary, Reschedule: "It can join the caller's
// transaction, the same as Transactional Enqueue"): Admin.RescheduleTx
// through encrypt.Wrap, on every adapter that takes a transaction. A
// rollback leaves the due time and the audit trail as they were; a commit
// moves the job with the application's own row.
func TestRescheduleTx(t *testing.T) {
	t.Parallel()
	for name, open := range txEnvs() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			env := open(t)
			ctx := t.Context()
			st, err := encrypt.Wrap(ctx, env.store, keyRing(t))
			if err != nil {
				t.Fatal(err)
			}
			ids, err := st.JobInsertMany(ctx, store.InsertManyParams{Jobs: []store.NewJob{
				{WireName: "w", Queue: "q", Payload: []byte(`{"secret":1}`), MaxAttempts: 1, ScheduledAt: time.Now().Add(time.Hour)},
			}})
			if err != nil {
				t.Fatal(err)
			}
			admin, err := backwave.NewAdmin(st, "ops")
			if err != nil {
				t.Fatal(err)
			}
			before, err := admin.Job(ctx, ids[0])
			if err != nil {
				t.Fatal(err)
			}
			at := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Millisecond)
			for _, commit := range []bool{false, true} {
				tx := env.begin(t)
				if err := tx.exec("INSERT INTO " + env.orders + " (id, item) VALUES (1, 'moved')"); err != nil {
					t.Fatal(err)
				}
				got, err := admin.RescheduleTx(ctx, tx.tx, ids[0], at)
				if err != nil {
					_ = tx.rollback()
					t.Fatalf("RescheduleTx: %v", err)
				}
				if !got.ScheduledAt.Equal(at) || string(got.Payload) != `{"secret":1}` {
					t.Errorf("RescheduleTx returned due %v payload %s, want %v and the opened payload", got.ScheduledAt, got.Payload, at)
				}
				end := tx.rollback
				if commit {
					end = tx.commit
				}
				if err := end(); err != nil {
					t.Fatal(err)
				}
				now, err := admin.Job(ctx, ids[0])
				if err != nil {
					t.Fatal(err)
				}
				want := before.Job.ScheduledAt
				if commit {
					want = at
				}
				if !now.Job.ScheduledAt.Equal(want) {
					t.Fatalf("commit=%v: the job is due %v, want %v", commit, now.Job.ScheduledAt, want)
				}
				if rows := env.rows(t); rows != map[bool]int{false: 0, true: 1}[commit] {
					t.Fatalf("commit=%v: %d business rows", commit, rows)
				}
			}
		})
	}
}

// TestRescheduleTxUnsupported: a store without Transactional Enqueue
// refuses, wrapping ErrTxUnsupported, and leaves the job alone.
func TestRescheduleTxUnsupported(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := memstore.New(memstore.Options{})
	ids, err := st.JobInsertMany(ctx, store.InsertManyParams{Jobs: []store.NewJob{{WireName: "w", Queue: "q", MaxAttempts: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := backwave.NewAdmin(st, "ops")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RescheduleTx(ctx, nil, ids[0], vtime.Epoch.Add(time.Hour)); !errors.Is(err, backwave.ErrTxUnsupported) {
		t.Fatalf("RescheduleTx on the In-Memory Store: %v, want ErrTxUnsupported", err)
	}
}

// TestRescheduleInStoreClock: Admin.RescheduleIn (and so "backwave jobs
// reschedule --in") measures from the store's clock, not the host's: over a
// store whose clock stands years from the wall clock the job is due d after
// the store's now.
func TestRescheduleInStoreClock(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	clock := vtime.NewManual(vtime.Epoch)
	st := memstore.New(memstore.Options{Clock: clock})
	ids, err := st.JobInsertMany(ctx, store.InsertManyParams{Jobs: []store.NewJob{{WireName: "w", Queue: "q", MaxAttempts: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := backwave.NewAdmin(st, "ops")
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	got, err := admin.RescheduleIn(ctx, ids[0], time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if want := vtime.Epoch.Add(time.Minute + time.Hour); !got.ScheduledAt.Equal(want) {
		t.Fatalf("RescheduleIn(1h) made the job due %v, want %v (the store's now plus an hour)", got.ScheduledAt, want)
	}
	for _, d := range []time.Duration{0, -time.Second} {
		if _, err := admin.RescheduleIn(ctx, ids[0], d); !errors.Is(err, backwave.ErrInvalidParams) && !errors.Is(err, store.ErrInvalidParams) {
			t.Errorf("RescheduleIn(%v): %v, want ErrInvalidParams", d, err)
		}
	}
}
