package faultstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/backwave/backwave/internal/sim/faultstore"
	"github.com/backwave/backwave/job"
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
			fs := &faultstore.Store{Target: st, Fault: tc.fault}
			jobs, err := fs.JobClaim(ctx, store.ClaimParams{Worker: "w1", Queues: []string{"q"}, Limit: 1, LeaseDuration: time.Second})
			if !errors.Is(err, tc.err) || (tc.err != nil && err != tc.err) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			if wantJobs := tc.err == nil; (len(jobs) == 1) != wantJobs {
				t.Fatalf("answered %d jobs", len(jobs))
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
	fs := &faultstore.Store{Target: st, Fault: faultstore.Applied}
	_, err := fs.JobClaim(context.Background(), store.ClaimParams{})
	if !errors.Is(err, store.ErrInvalidParams) {
		t.Fatalf("error %v, want store.ErrInvalidParams", err)
	}
}
