package store

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/backwave/backwave/job"
)

// Backlog is the read an operator alerts on: how far behind each Queue is,
// and what finished lately. Both reads go through an index or the
// maintained counts, never a scan of the whole job table, so they stay
// cheap as the table grows (docs/dashboard.md has the timings).
type Backlog interface {
	// QueueBacklog returns, for every Queue holding Scheduled jobs, how
	// many are ready (Scheduled and due at the store's now) and how many
	// are later (Scheduled, due after now), how many of those Scheduled
	// jobs are Retrying, and the due time of the oldest ready job. Ready
	// and later split the one Scheduled state; they are not states. The
	// ready count and the oldest due time read the due-time index (the
	// cost grows with the ready jobs, not with the table); later is the
	// maintained Scheduled count less ready. Ordered by Queue (byte order).
	QueueBacklog(ctx context.Context) ([]QueueBacklog, error)
	// Throughput counts the jobs that reached a settled state (Succeeded,
	// Dead-Lettered, Cancelled, Quarantined) at or after p.Since, per
	// minute of their finish time and per state, ordered by minute then
	// state. It reads the finish-time index, so its cost grows with the
	// jobs finished in the window. A job purged by retention, or requeued,
	// since it finished is no longer counted.
	Throughput(ctx context.Context, p ThroughputParams) ([]ThroughputBucket, error)
}

// QueueBacklog is one Queue's Scheduled jobs split by due time.
type QueueBacklog struct {
	Queue string
	// Ready is the number of Scheduled jobs due at the store's now.
	Ready int
	// Later is the number of Scheduled jobs due after the store's now.
	Later int
	// Retrying is the number of Scheduled jobs carrying a Retry Cause,
	// ready or later (glossary, Retrying).
	Retrying int
	// OldestReady is the due time of the oldest ready job; zero when
	// Ready is 0. The store's now less it is the Queue's latency.
	OldestReady time.Time
}

// ThroughputParams are the params of Backlog.Throughput.
type ThroughputParams struct {
	// Since is the start of the window; required.
	Since time.Time
}

// Validate reports params outside the contract.
func (p ThroughputParams) Validate() error {
	if p.Since.IsZero() {
		return fmt.Errorf("%w: throughput needs Since", ErrInvalidParams)
	}
	return nil
}

// ThroughputBucket is how many jobs reached one settled state in one
// minute.
type ThroughputBucket struct {
	// Minute is the start of the minute (UTC, truncated to the minute).
	Minute time.Time
	State  job.State
	Count  int
}

// Settled reports whether s is a state Throughput counts.
func Settled(s job.State) bool {
	switch s {
	case job.StateSucceeded, job.StateDeadLettered, job.StateCancelled, job.StateQuarantined:
		return true
	}
	return false
}

// CompareThroughput orders Throughput buckets by minute, then state.
func CompareThroughput(a, b ThroughputBucket) int {
	if c := a.Minute.Compare(b.Minute); c != 0 {
		return c
	}
	return cmp.Compare(a.State, b.State)
}
