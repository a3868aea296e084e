package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"os"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/cmd/backwave-torture/journal"
	"github.com/backwave/backwave/store"
)

// childEnv carries a child process's childConfig as JSON: its presence
// makes the binary run as that child instead of as the coordinator.
const childEnv = "BACKWAVE_TORTURE_CHILD"

// The roles a child process plays.
const (
	roleWorker   = "worker"   // runs a Client with the torture handler
	roleProducer = "producer" // enqueues the workload
	roleOperator = "operator" // requeues, cancels, reschedules, pauses, sets limits
	roleReader   = "reader"   // constant Monitor reads; samples Running jobs and Queues
	roleTxKill   = "txkill"   // enqueues inside a transaction and waits to be killed in it
	roleSnapshot = "snapshot" // SQLite: holds a read snapshot open
)

// The Queues of the workload.
const (
	queueFree = "free" // no Concurrency Limit
	queueLim  = "lim"  // a Concurrency Limit the operator keeps changing
	queueDep  = "dep"  // Dependency dependents
)

var queues = []string{queueDep, queueLim, queueFree}

// groupConfig is the Worker Group every worker process runs.
type groupConfig struct {
	Lease       time.Duration
	Heartbeat   time.Duration
	Poll        time.Duration
	Maintenance time.Duration
	Pool        int
}

// childConfig is what a child process is told.
type childConfig struct {
	Role   string
	Name   string
	URI    string
	Dir    string // journal directory
	Target string
	Seed   uint64
	Plant  string
	Group  groupConfig
	Cells  []cell
	// Rate is the calm enqueue rate in jobs per second; Burst the size of
	// the event_burst.
	Rate  float64
	Burst int
	// HandlerMax bounds a handler's sleep.
	HandlerMax time.Duration
	// Hold is how long a snapshot child holds its snapshot.
	Hold time.Duration
}

// workArgs are the torture job's args: which producer batch made it, how
// long its handler sleeps, how many of its first Attempts fail, and whether
// it fails permanently.
type workArgs struct {
	B  string `json:"b"`
	S  int    `json:"s"`
	Ms int    `json:"ms,omitempty"`
	F  int    `json:"f,omitempty"`
	P  bool   `json:"p,omitempty"`
}

// WireName is the torture job's Wire Name.
func (workArgs) WireName() string { return "torture.work" }

// JobOptions puts a job that names no Queue on the unlimited one.
func (workArgs) JobOptions() backwave.JobOptions {
	return backwave.JobOptions{Queue: queueFree, MaxAttempts: 4}
}

// childMain runs the child process described by the environment and
// returns its exit status.
func childMain(raw string) int {
	var cfg childConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "torture child: config: %v\n", err)
		return 2
	}
	ctx, stop := signalContext()
	defer stop()
	jw, err := journal.Create(cfg.Dir, cfg.Name)
	if err != nil {
		fmt.Fprintf(os.Stderr, "torture %s: %v\n", cfg.Name, err)
		return 2
	}
	defer jw.Close()
	var run func(context.Context, childConfig, *journal.Writer) error
	switch cfg.Role {
	case roleWorker:
		run = runWorker
	case roleProducer:
		run = runProducer
	case roleOperator:
		run = runOperator
	case roleReader:
		run = runReader
	case roleTxKill:
		run = runTxKill
	case roleSnapshot:
		run = runSnapshot
	default:
		fmt.Fprintf(os.Stderr, "torture %s: unknown role %q\n", cfg.Name, cfg.Role)
		return 2
	}
	if err := run(ctx, cfg, jw); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(os.Stderr, "torture %s: %v\n", cfg.Name, err)
		return 1
	}
	return 0
}

// childRand is the child's own random source, derived from the run's seed
// and the child's name.
func childRand(cfg childConfig) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(cfg.Name))
	return rand.New(rand.NewPCG(cfg.Seed, h.Sum64()))
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
}

// openStore opens the run's store, retrying while the database is down
// (a restart may be in progress when a child starts).
func openStore(ctx context.Context, uri string) (store.Store, error) {
	var last error
	for range 60 {
		s, err := store.Open(ctx, uri)
		if err == nil {
			return s, nil
		}
		last = err
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return nil, fmt.Errorf("open store: %w", last)
}

// sleepCtx sleeps for d or until ctx ends, reporting whether it slept.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// cellAt returns the name of the cell in effect at t, "" if none.
func cellAt(cells []cell, t time.Time) (cell, bool) {
	for _, c := range cells {
		if !t.Before(c.From) && t.Before(c.To) {
			return c, true
		}
	}
	return cell{}, false
}
