package mcp

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/permission"
	"github.com/backwave/backwave/store/memstore"
)

// job_get shows a job's unique-key rewrites (docs/job-shapes.md, Replace
// and debounce: "a rewrite is audited"), as jobs show and the dashboard's
// job page do; a job never rewritten has none.
func TestJobGetShowsRewrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memstore.New(memstore.Options{Clock: backwave.WallClock{}})
	client, err := backwave.NewClient(st, backwave.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	key := backwave.WithUnique("report:7", backwave.UniqueWhileLive().Replace())
	first, err := client.EnqueueUnique(ctx, buildReport{Account: "acct-1"}, key, backwave.WithDelay(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := client.Enqueue(ctx, buildReport{Account: "acct-0"}, backwave.WithDelay(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	again, err := client.EnqueueUnique(ctx, buildReport{Account: "acct-2"}, key, backwave.WithDelay(2*time.Hour))
	if err != nil || !again.Replaced || again.ID != first.ID {
		t.Fatalf("second enqueue of the key = %+v, %v; want job %d replaced", again, err, first.ID)
	}
	s, err := NewServer(st, Options{Policy: grant("", permission.View)})
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, s)
	got := mustCall[jobGetResult](t, cs, "job_get", map[string]any{"id": first.ID})
	if len(got.Rewrites) != 1 || got.Rewrites[0].Action != "unique_replace" || got.Rewrites[0].JobID != jobID(first.ID) || got.Rewrites[0].Detail == "" {
		t.Fatalf("job_get rewrites = %+v, want the one unique_replace of job %d", got.Rewrites, first.ID)
	}
	if none := mustCall[jobGetResult](t, cs, "job_get", map[string]any{"id": plain}); none.Rewrites != nil {
		t.Fatalf("job_get of a job never rewritten: rewrites %+v, want none", none.Rewrites)
	}
}
