package backwave_test

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// A Wire Name only one node of a Mixed-Version Fleet handles (glossary,
// Quarantined; Mixed-Version Fleet): the node that lacks its handler leaves
// its jobs alone while the handler's node is live, and Quarantines them, as
// before, once no live node has handled it for the grace period.

type fleetNew struct{ N int }

func (fleetNew) WireName() string { return "fleet.new" }
func (fleetNew) JobOptions() backwave.JobOptions {
	return backwave.JobOptions{Queue: "newer"}
}

type fleetOld struct{ N int }

func (fleetOld) WireName() string { return "fleet.old" }
func (fleetOld) JobOptions() backwave.JobOptions {
	return backwave.JobOptions{Queue: "shared"}
}

// fleetGroup is a Worker Group with a fast maintenance beat, so the
// registry is stamped and read every 50 ms.
func fleetGroup(name, queue string) backwave.WorkerGroupOptions {
	g := backwave.DefaultWorkerGroup(name, backwave.Strict(queue))
	g.PollInterval = 20 * time.Millisecond
	g.MaintenanceInterval = 50 * time.Millisecond
	return g
}

func TestFleetLeavesJobsToTheLiveHandler(t *testing.T) {
	t.Parallel()
	const grace = 800 * time.Millisecond
	onEveryStore(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		// Node A handles fleet.new but serves only Queue "newer"; node B
		// serves "shared" and handles only fleet.old. A fleet.new job in
		// "shared" is one B alone could claim.
		newer := backwave.NewHandlers()
		must(t, backwave.AddHandlerFunc(newer, func(context.Context, *backwave.Job[fleetNew]) error { return nil }))
		a, err := backwave.NewClient(st, backwave.Config{Handlers: newer, Groups: []backwave.WorkerGroupOptions{fleetGroup("a", "newer")},
			NodeID: "node-a", HandlerGrace: grace, Logger: testLogger(t, slog.LevelWarn)})
		must(t, err)
		must(t, a.Start(ctx))
		stopped := false
		t.Cleanup(func() {
			if !stopped {
				_ = a.Stop(ctx)
			}
		})
		waitStamped(t, st, "fleet.new")

		older := backwave.NewHandlers()
		must(t, backwave.AddHandlerFunc(older, func(context.Context, *backwave.Job[fleetOld]) error { return nil }))
		b := startClient(t, st, backwave.Config{Handlers: older, Groups: []backwave.WorkerGroupOptions{fleetGroup("b", "shared")},
			NodeID: "node-b", HandlerGrace: grace})

		var news []job.ID
		for i := range 3 {
			id, err := b.Enqueue(ctx, fleetNew{i}, backwave.WithQueue("shared"))
			must(t, err)
			news = append(news, id)
		}
		old, err := b.Enqueue(ctx, fleetOld{0})
		must(t, err)
		waitReal(t, st, old, job.StateSucceeded)

		// Two grace periods with A live: B claims none of them.
		deadline := time.Now().Add(2 * grace)
		for time.Now().Before(deadline) {
			for _, id := range news {
				if j := getJob(t, st, id); j.State != job.StateScheduled || j.Attempt != 0 {
					t.Fatalf("job %d of fleet.new is %s at Attempt %d while node A, its handler, is live; want Scheduled, unclaimed", id, j.State, j.Attempt)
				}
			}
			time.Sleep(20 * time.Millisecond)
		}

		must(t, a.Stop(ctx))
		stopped = true
		stoppedAt := time.Now()
		for _, id := range news {
			j := waitReal(t, st, id, job.StateQuarantined)
			if j.Attempt != 1 {
				t.Errorf("job %d Quarantined at Attempt %d, want 1", id, j.Attempt)
			}
		}
		if took := time.Since(stoppedAt); took < grace/2 {
			t.Errorf("fleet.new Quarantined %v after its last handler stopped, before the grace %v could pass", took, grace)
		}
	})
}

// waitStamped waits until some Pump has stamped wire in the fleet
// registry, reading it with a stamp of no Wire Name by a worker of its own.
func waitStamped(t *testing.T, st store.Fleet, wire string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, err := st.FleetStamp(context.Background(), store.FleetStampParams{Worker: "fleet-test-reader", Forget: time.Hour})
		if err != nil {
			t.Fatalf("FleetStamp: %v", err)
		}
		if slices.ContainsFunc(v.Handlers, func(h core.HandlerStamp) bool { return h.WireName == wire }) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no Pump stamped %s within 30s", wire)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
