package shell_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/node"
	"github.com/backwave/backwave/shell"
	"github.com/backwave/backwave/store"
)

// syncBuffer is a log sink safe for the Pump's goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The Pump carries out the Driver's schedule and retention commands: it
// loads each schedule's zone (a zone that does not load leaves that
// schedule out, logged, and the others mint), applies the mint, and purges.
func TestPumpMintsAndPurges(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		ctx := context.Background()
		for _, d := range []store.ScheduleDef{
			{Name: "good", Spec: "@every 1m", Zone: "Europe/Paris"},
			{Name: "bad-zone", Spec: "@every 1m", Zone: "Nowhere/Land"}, // stored by hand: the API refuses it
		} {
			d.Template = store.JobTemplate{WireName: "w", Queue: queue, MaxAttempts: 1}
			if _, err := st.ScheduleUpsert(ctx, store.ScheduleUpsertParams{Schedule: d}); err != nil {
				t.Fatal(err)
			}
		}
		var logs syncBuffer
		p := newPump(t, st, shell.ExecutorFunc(succeed), func(c *shell.Config) {
			c.Driver.Schedules = true
			c.Driver.Retention = &node.RetentionPolicy{KeepSucceeded: time.Minute, Batch: 2}
			c.Schedules, c.Retention = st, st
			c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
		})
		start(t, p)
		time.Sleep(5*time.Minute + 30*time.Second)
		stop(t, p)
		good, err := st.ScheduleOccurrences(ctx, store.OccurrenceListParams{Schedule: "good"})
		if err != nil {
			t.Fatal(err)
		}
		bad, err := st.ScheduleOccurrences(ctx, store.OccurrenceListParams{Schedule: "bad-zone"})
		if err != nil {
			t.Fatal(err)
		}
		if len(bad) != 0 {
			t.Errorf("the schedule whose zone does not load minted %d", len(bad))
		}
		// Six minted (one per minute, the last ahead of time); those a
		// minute past Succeeded were purged with their records.
		n, err := st.JobCountByState(ctx, store.CountParams{})
		if err != nil {
			t.Fatal(err)
		}
		if len(good) == 0 || len(good) > 2 || n[job.StateSucceeded]+n[job.StateScheduled] != len(good) {
			t.Errorf("%d occurrence records kept, counts %v", len(good), n)
		}
		for _, want := range []string{"time zone does not load", "Nowhere/Land", "recurring schedule minted a job", "retention purged terminal jobs"} {
			if !strings.Contains(logs.String(), want) {
				t.Errorf("logs lack %q:\n%s", want, logs.String())
			}
		}
	})
}

func TestPumpMaintenanceNeedsStores(t *testing.T) {
	t.Parallel()
	for _, adjust := range []func(*shell.Config){
		func(c *shell.Config) { c.Driver.Schedules = true },
		func(c *shell.Config) { c.Driver.Retention = &node.RetentionPolicy{} },
	} {
		cfg := shell.Config{
			Driver:   node.Config{Worker: "w", Policy: node.Strict(queue)},
			Store:    newStore(),
			Executor: shell.ExecutorFunc(succeed),
		}
		adjust(&cfg)
		if _, err := shell.New(cfg); !errors.Is(err, shell.ErrInvalidConfig) {
			t.Errorf("shell.New without the store the Driver needs: %v", err)
		}
	}
}
