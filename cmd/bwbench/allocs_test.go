package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The bench process's heap allocations per job on BackWave's PostgreSQL
// drain, the number -cpu prints, pinned in testdata/allocs.txt with a
// tolerance (allocsTolerance): a change that allocates more per job fails
// TestDrainAllocsPerJob naming the line. The backlog here (allocsBacklog)
// is a fifth of the full run's, so the Client's fixed start-up cost weighs
// a little more per job than in the full-size row. Updating the pin is
// deliberate: go test -run TestDrainAllocsPerJob -update-ledger (or
// BACKWAVE_UPDATE_LEDGER=1), and say why in the commit.
var updateLedger = flag.Bool("update-ledger", false, "rewrite testdata/allocs.txt with the allocations measured now")

const (
	allocsFile      = "testdata/allocs.txt"
	allocsLine      = "drain.postgres.allocs_per_job"
	allocsBacklog   = 20_000
	allocsTolerance = 0.15
)

func TestDrainAllocsPerJob(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations per job are pinned without the race detector, which allocates shadow state of its own")
	}
	url := os.Getenv("BACKWAVE_TEST_POSTGRES_URL")
	if url == "" {
		t.Skip("BACKWAVE_TEST_POSTGRES_URL is unset: the drain's allocations are measured on PostgreSQL")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg := config{
		mode: "local", targets: []string{tgPostgres}, systems: []string{sysBackWave}, runs: 1,
		pgURL: url, sqliteSync: "normal", sizes: quickSizes, overrides: map[string]string{}, cpu: true,
	}
	b, err := newBench(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()
	inst, _, err := backwaveSystem{}.open(ctx, b, scDrain, tgPostgres)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := inst.close(context.WithoutCancel(ctx)); err != nil {
			t.Error(err)
		}
	}()
	meter := b.newCPUMeter("allocs", appName(sysBackWave))
	if _, err := drain(ctx, inst, allocsBacklog, meter); err != nil {
		t.Fatal(err)
	}
	got := meter.allocsPerJob
	if *updateLedger || os.Getenv("BACKWAVE_UPDATE_LEDGER") == "1" {
		text := fmt.Sprintf("# The bench process's heap allocations per job on BackWave's PostgreSQL drain of %d jobs\n"+
			"# (bwbench's -cpu number), within %.0f %%. Written by TestDrainAllocsPerJob -update-ledger:\n"+
			"# change it only on purpose, and say in the commit why the cost moved.\n%s %.1f\n",
			allocsBacklog, 100*allocsTolerance, allocsLine, got)
		if err := os.WriteFile(allocsFile, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s rewritten (-update-ledger): %.1f allocs/job; say in the commit why the cost moved", allocsFile, got)
		return
	}
	want := readPin(t, allocsFile, allocsLine)
	switch {
	case got > want*(1+allocsTolerance):
		t.Fatalf("ledger line %q (%s) rose: %.1f allocs per job, pinned %.1f (tolerance %.0f %%). If the change is meant, rerun with -update-ledger and say why in the commit.",
			allocsLine, allocsFile, got, want, 100*allocsTolerance)
	case got < want*(1-allocsTolerance):
		t.Fatalf("ledger line %q (%s) fell: %.1f allocs per job, pinned %.1f (tolerance %.0f %%): pin the gain with -update-ledger.",
			allocsLine, allocsFile, got, want, 100*allocsTolerance)
	}
	t.Logf("%.1f allocs per job (pinned %.1f)", got, want)
}

// readPin reads one named number from a pin file.
func readPin(t *testing.T, path, name string) float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("read the pin: %v (create it with -update-ledger)", err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		if ok && k == name {
			x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("%s: line %q: %v", path, sc.Text(), err)
			}
			return x
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Fatalf("%s has no line %q", path, name)
	return 0
}
