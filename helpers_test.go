package backwave_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/memstore"
)

// Most tests run inside testing/synctest bubbles with the memstore on the
// WallClock: the bubble's fake time drives Leases, retries and tickers, so
// they play out instantly and the same way every run.

type greet struct{ Name string }

func (greet) WireName() string { return "test.greet" }

func testLogger(t *testing.T, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: level}))
}

func newStore() *memstore.Store {
	return memstore.New(memstore.Options{Clock: backwave.WallClock{}})
}

// group is a small Worker Group serving queues with short intervals.
func group(name string, queues ...string) backwave.WorkerGroupOptions {
	g := backwave.DefaultWorkerGroup(name, backwave.Strict(queues...))
	g.PollInterval = 100 * time.Millisecond
	g.LeaseDuration = 30 * time.Second
	g.HeartbeatInterval = 10 * time.Second
	return g
}

// startClient builds and starts a Client; it is stopped at cleanup.
func startClient(t *testing.T, st store.Store, cfg backwave.Config) *backwave.Client {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t, slog.LevelWarn)
	}
	c, err := backwave.NewClient(st, cfg)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	return c
}

// waitFor steps the bubble's fake time until cond holds, failing after a
// fake ten minutes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func getJob(t *testing.T, st store.Monitor, id job.ID) job.Job {
	t.Helper()
	j, err := st.JobGet(context.Background(), id)
	if err != nil {
		t.Fatalf("JobGet(%d): %v", id, err)
	}
	return j
}

func waitState(t *testing.T, st store.Monitor, id job.ID, want job.State) job.Job {
	t.Helper()
	waitFor(t, "job "+id.String()+" "+want.String(), func() bool { return getJob(t, st, id).State == want })
	return getJob(t, st, id)
}

func transitions(t *testing.T, st *memstore.Store, id job.ID) []store.Transition {
	t.Helper()
	log, err := st.JobTransitions(context.Background(), id)
	if err != nil {
		t.Fatalf("JobTransitions(%d): %v", id, err)
	}
	return log
}

func lastDetail(t *testing.T, st *memstore.Store, id job.ID) string {
	t.Helper()
	log := transitions(t, st, id)
	return log[len(log)-1].FailureDetail
}
