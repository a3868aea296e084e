package faultstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/backwave/backwave/internal/sim/faultstore"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/node"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/memstore"
)

// TestFaultModel holds each Fault to the package's fault model: whether the
// call reaches the store, and what the caller is answered.
func TestFaultModel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		fault   faultstore.Fault
		applied bool
		err     error
	}{
		{faultstore.None, true, nil},
		{faultstore.Rejected, false, faultstore.ErrIsolated},
		{faultstore.Down, false, faultstore.ErrDown},
		{faultstore.Lost, false, faultstore.ErrUnknown},
		{faultstore.Applied, true, faultstore.ErrUnknown},
	} {
		t.Run(tc.fault.String(), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := memstore.New(memstore.Options{})
			if _, err := st.JobInsertMany(ctx, store.InsertManyParams{Jobs: []store.NewJob{{WireName: "w", Queue: "q", MaxAttempts: 1}}}); err != nil {
				t.Fatal(err)
			}
			cl := node.Caller{Worker: "w1", Store: st}
			c := node.Claim{Op: 1, Queues: []string{"q"}, Limit: 1, LeaseDuration: time.Second}
			r := faultstore.Call(tc.fault, c, func(c node.StoreCommand) node.Reply { return cl.Call(ctx, c) })
			if !errors.Is(r.Err, tc.err) || (tc.err != nil && r.Err != tc.err) {
				t.Fatalf("error %v, want %v", r.Err, tc.err)
			}
			if wantJobs := tc.err == nil; (len(r.Jobs) == 1) != wantJobs {
				t.Fatalf("answered %d jobs", len(r.Jobs))
			}
			j, err := st.JobGet(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			if got := j.State == job.StateRunning; got != tc.applied {
				t.Fatalf("job %s after the call: applied=%v, want %v", j.State, got, tc.applied)
			}
		})
	}
}

// TestAppliedKeepsTheStoresError: a store that fails an Applied call is not
// masked by ErrUnknown.
func TestAppliedKeepsTheStoresError(t *testing.T) {
	t.Parallel()
	st := memstore.New(memstore.Options{})
	cl := node.Caller{Worker: "w1", Store: st}
	r := faultstore.Call(faultstore.Applied, node.Claim{Op: 1}, func(c node.StoreCommand) node.Reply { return cl.Call(context.Background(), c) })
	if !errors.Is(r.Err, store.ErrInvalidParams) {
		t.Fatalf("error %v, want store.ErrInvalidParams", r.Err)
	}
}
