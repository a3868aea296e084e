package storetest_test

import (
	"context"
	"testing"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store/memstore"
	"github.com/backwave/backwave/store/storetest"
	"github.com/backwave/backwave/vtime"
)

// The reference must pass the round trips it defines.
func TestRoundTripOnMemstore(t *testing.T) {
	storetest.RunRoundTrip(t, func(t *testing.T) storetest.Harness {
		clock := vtime.NewManual(vtime.Epoch)
		s := memstore.New(memstore.Options{Clock: clock})
		return storetest.Harness{
			Store:         s,
			Now:           clock.Now,
			Advance:       func(d time.Duration) { clock.Advance(d) },
			RequestCancel: s.RequestCancel,
			Transitions: func(ctx context.Context, id job.ID) ([]storetest.Transition, error) {
				log, err := s.JobTransitions(ctx, id)
				out := make([]storetest.Transition, len(log))
				for i, tr := range log {
					out[i] = storetest.Transition{At: tr.At, State: tr.State, Attempt: tr.Attempt, FailureDetail: tr.FailureDetail}
				}
				return out, err
			},
			JobOutput: s.JobOutput,
		}
	})
}
