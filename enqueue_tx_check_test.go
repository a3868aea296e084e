package backwave_test

import (
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/job"
)

// plainArgs declares no JobOptions: the Client's defaults apply.
type plainArgs struct{ N int }

func (plainArgs) WireName() string { return "test.plain" }

// noWire has no Wire Name.
type noWire struct{}

func (noWire) WireName() string { return "" }

// TestEnqueueTxDefaultsLikeEnqueue: a job enqueued in a transaction is built
// as Enqueue builds it — the Client's attempt ceiling when nothing else
// sets one, the args type's Queue, ceiling and Tags, and the options on
// top (WithTags, WithDelay against the Client's clock).
func TestEnqueueTxDefaultsLikeEnqueue(t *testing.T) {
	t.Parallel()
	eachTxEnv(t, func(t *testing.T, e *txEnv) {
		ctx := t.Context()
		c, err := backwave.NewClient(e.store, backwave.Config{MaxAttempts: 7})
		if err != nil {
			t.Fatal(err)
		}
		calls := []struct {
			args backwave.JobArgs
			opts []backwave.EnqueueOption
		}{
			{plainArgs{N: 1}, nil},
			{shipOrder{Order: 1}, []backwave.EnqueueOption{backwave.WithTags(backwave.Keyed("order", "1")), backwave.WithDelay(time.Hour)}},
			{shipOrder{Order: 2}, []backwave.EnqueueOption{backwave.WithQueue("express"), backwave.WithMaxAttempts(2)}},
		}
		var ids []backwave.JobID
		for _, call := range calls {
			plain, err := c.Enqueue(ctx, call.args, call.opts...)
			if err != nil {
				t.Fatal(err)
			}
			tx := e.begin(t)
			inTx, err := c.EnqueueTx(ctx, tx.tx, call.args, call.opts...)
			if err != nil {
				t.Fatalf("EnqueueTx(%T): %v", call.args, err)
			}
			if err := tx.commit(); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, inTx)
			a, b := getJob(t, e.store, plain), getJob(t, e.store, inTx)
			if a.WireName != b.WireName || a.Queue != b.Queue || a.MaxAttempts != b.MaxAttempts || a.State != b.State ||
				string(a.Payload) != string(b.Payload) || !equalTags(a.Tags, b.Tags) || b.ScheduledAt.Sub(a.ScheduledAt).Abs() > time.Minute {
				t.Errorf("%T: Enqueue stored %+v\nEnqueueTx stored %+v", call.args, a, b)
			}
		}
		if got := getJob(t, e.store, ids[0]); got.MaxAttempts != 7 {
			t.Errorf("plainArgs in a transaction has MaxAttempts %d, want the Client's 7", got.MaxAttempts)
		}
	})
}

func equalTags(a, b []job.Tag) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestEnqueueTxInvalidLikeEnqueue: every invalid call fails as EnqueueMany
// fails, wrapping ErrInvalidJob, and stores nothing. A job the Client
// refuses fails with EnqueueMany's very error before the transaction is
// touched, so the application's transaction goes on; a graph the store
// refuses (a cycle, an unknown parent) wraps the same sentinels.
func TestEnqueueTxInvalidLikeEnqueue(t *testing.T) {
	t.Parallel()
	one := func(args backwave.JobArgs, opts ...backwave.EnqueueOption) []backwave.EnqueueParams {
		return []backwave.EnqueueParams{{Args: args, Options: opts}}
	}
	cases := []struct {
		name   string
		params []backwave.EnqueueParams
		want   error
		client bool // refused by the Client, before the store
	}{
		{"no wire name", one(noWire{}), backwave.ErrInvalidJob, true},
		{"nil args", one(nil), backwave.ErrInvalidJob, true},
		{"args not JSON", one(unencodable{C: make(chan int)}), backwave.ErrInvalidJob, true},
		{"nil option", one(plainArgs{}, nil), backwave.ErrInvalidJob, true},
		{"negative max attempts", one(plainArgs{}, backwave.WithMaxAttempts(-1)), backwave.ErrInvalidJob, true},
		{"negative delay", one(plainArgs{}, backwave.WithDelay(-time.Second)), backwave.ErrInvalidJob, true},
		{"delay and run-at", one(plainArgs{}, backwave.WithDelay(time.Second), backwave.WithRunAt(time.Now())), backwave.ErrInvalidJob, true},
		{"queue with a control character", one(plainArgs{}, backwave.WithQueue("a\nb")), backwave.ErrInvalidJob, true},
		{"empty tag value", one(plainArgs{}, backwave.WithTags(backwave.Keyed("k", ""))), backwave.ErrInvalidJob, true},
		{"parent id below 1", one(plainArgs{}, backwave.WithParents(backwave.OnSuccess, 0)), backwave.ErrInvalidJob, true},
		{"batch index out of range", one(plainArgs{}, backwave.WithParentsInBatch(backwave.OnSuccess, 1)), backwave.ErrInvalidJob, true},
		{"two modes", []backwave.EnqueueParams{{Args: plainArgs{}}, {Args: plainArgs{}, Options: []backwave.EnqueueOption{
			backwave.WithParentsInBatch(backwave.OnSuccess, 0), backwave.WithParentsInBatch(backwave.OnAnyTerminal, 0)}}},
			backwave.ErrInvalidJob, true},
		{"second job invalid", []backwave.EnqueueParams{{Args: plainArgs{}}, {Args: noWire{}}}, backwave.ErrInvalidJob, true},
		{"self parent", one(plainArgs{}, backwave.WithParentsInBatch(backwave.OnSuccess, 0)), backwave.ErrDependencyCycle, false},
		{"cycle", []backwave.EnqueueParams{
			{Args: plainArgs{}, Options: []backwave.EnqueueOption{backwave.WithParentsInBatch(backwave.OnSuccess, 1)}},
			{Args: plainArgs{}, Options: []backwave.EnqueueOption{backwave.WithParentsInBatch(backwave.OnSuccess, 0)}},
		}, backwave.ErrDependencyCycle, false},
		{"unknown parent", one(plainArgs{}, backwave.WithParents(backwave.OnSuccess, 1<<40)), backwave.ErrUnknownParent, false},
	}
	eachTxEnv(t, func(t *testing.T, e *txEnv) {
		ctx := t.Context()
		c, err := backwave.NewClient(e.store, backwave.Config{})
		if err != nil {
			t.Fatal(err)
		}
		for i, tc := range cases {
			_, plainErr := c.EnqueueMany(ctx, tc.params)
			tx := e.begin(t)
			ids, txErr := c.EnqueueManyTx(ctx, tx.tx, tc.params)
			for _, err := range []error{plainErr, txErr} {
				if !errors.Is(err, backwave.ErrInvalidJob) || !errors.Is(err, tc.want) {
					t.Errorf("%s: %v; want an error wrapping ErrInvalidJob and %v", tc.name, err, tc.want)
				}
			}
			if ids != nil {
				t.Errorf("%s: ids %v with the error", tc.name, ids)
			}
			if tc.client {
				if plainErr == nil || txErr == nil || plainErr.Error() != txErr.Error() {
					t.Errorf("%s: EnqueueManyTx failed with\n\t%v\nEnqueueMany with\n\t%v", tc.name, txErr, plainErr)
				}
				if err := tx.exec(e.insertOrder(i)); err != nil {
					t.Errorf("%s: the application's transaction is broken: %v", tc.name, err)
				}
			}
			if err := tx.commit(); err != nil && tc.client {
				t.Fatal(err)
			}
		}
		assertGone(t, e.store, "")
	})
}

// TestEnqueueTxRefusesForeignTx: a transaction the Client's store cannot
// use is an error wrapping ErrTxUnsupported, never a panic, and nothing is
// written: any transaction for the In-Memory Store; for the adapters, nil,
// values of other types, nil pointers, and transactions on another
// database or engine.
func TestEnqueueTxRefusesForeignTx(t *testing.T) {
	t.Parallel()
	t.Run("memstore", func(t *testing.T) {
		t.Parallel()
		c, err := backwave.NewClient(newStore(), backwave.Config{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tx := range []backwave.Tx{nil, &sql.Tx{}, "tx"} {
			if _, err := c.EnqueueTx(t.Context(), tx, plainArgs{}); !errors.Is(err, backwave.ErrTxUnsupported) {
				t.Errorf("EnqueueTx(%T) on the In-Memory Store: %v, want ErrTxUnsupported", tx, err)
			}
		}
	})
	eachTxEnv(t, func(t *testing.T, e *txEnv) {
		ctx := t.Context()
		c, err := backwave.NewClient(e.store, backwave.Config{})
		if err != nil {
			t.Fatal(err)
		}
		txs := foreignTxs(t, e.name)
		txs["nil"] = nil
		txs["nil *sql.Tx"] = (*sql.Tx)(nil)
		txs["nil *pgxpool.Tx"] = (*pgxpool.Tx)(nil)
		txs["a *sql.DB"] = &sql.DB{}
		txs["a string"] = "BEGIN"
		for name, tx := range txs {
			_, err := c.EnqueueTx(ctx, tx, shipOrder{Order: 1})
			if !errors.Is(err, backwave.ErrTxUnsupported) || errors.Is(err, backwave.ErrInvalidJob) {
				t.Errorf("EnqueueTx(%s): %v; want an error wrapping ErrTxUnsupported alone", name, err)
			} else if !strings.Contains(err.Error(), "transaction") {
				t.Errorf("EnqueueTx(%s): %q does not say what is wrong", name, err)
			}
		}
		assertGone(t, e.store, "")
	})
}
