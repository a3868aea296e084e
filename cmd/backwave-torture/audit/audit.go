// Package audit checks a Torture Suite run: the invariants BackWave promises
// under faults, evaluated over the processes' journals (package journal),
// the store's final state and the Transition Logs read after the run.
//
// Each audit is a function of (Input) → violations. A violation names the
// audit, the job it concerns (if any) and what was seen; the coordinator
// prints the offending job's journal excerpt next to it.
package audit

import (
	"fmt"
	"sort"
	"time"

	"github.com/backwave/backwave/cmd/backwave-torture/journal"
)

// The audits, by name.
const (
	Lost          = "lost"           // an acknowledged enqueue whose job is not in the store
	Unexpected    = "unexpected"     // a stored job no producer tried to enqueue
	DoubleApply   = "double_apply"   // two outcomes applied for one Attempt
	Fence         = "fence"          // an outcome applied for a (worker, Attempt) that never held the Lease
	DoubleClaim   = "double_claim"   // one Attempt leased twice
	StuckRunning  = "stuck_running"  // Running past Lease + poll + maintenance with no live holder
	LimitExceeded = "limit_exceeded" // more Running jobs in a Queue than its Concurrency Limit allows
	RunningCounts = "running_counts" // the Running counters disagree with the rows
	Latch         = "latch"          // a Dependency latch not settled exactly once
	WALBound      = "wal_bound"      // the SQLite write-ahead log grew past its bound
	Liveness      = "liveness"       // a job still live after the healing bound
)

// Names lists every audit in report order.
var Names = []string{Lost, Unexpected, DoubleApply, Fence, DoubleClaim, StuckRunning, LimitExceeded, RunningCounts, Latch, WALBound, Liveness}

// Violation is one failed check.
type Violation struct {
	Audit string
	// Job is the job concerned, 0 if none.
	Job  int64
	What string
}

func (v Violation) String() string {
	if v.Job != 0 {
		return fmt.Sprintf("%s: job %d: %s", v.Audit, v.Job, v.What)
	}
	return fmt.Sprintf("%s: %s", v.Audit, v.What)
}

// Transition is one Transition Log entry as the audits read it.
type Transition struct {
	At      time.Time
	From    string
	State   string
	Via     string
	Attempt int64
}

// Job is one stored job in the final state.
type Job struct {
	ID       int64
	Queue    string
	State    string
	Terminal bool
	Attempt  int64
	Worker   string
	Lease    time.Time
	// Batch is the producer batch named in the job's payload, "" if the
	// payload does not name one.
	Batch string
	// Log is the Transition Log when it was read (HasLog), oldest first.
	Log    []Transition
	HasLog bool
}

// Queue is one Queue's Running count three ways, read after the run.
type Queue struct {
	Name string
	// Info is QueueInfo.Running (the Queues read).
	Info int
	// Counted is the Running count of CountByState (the counters).
	Counted int
	// Rows is the number of Running jobs listed by Jobs.
	Rows int
}

// Window is a span of time.
type Window struct{ From, To time.Time }

// Params are the bounds the audits hold the run to.
type Params struct {
	// Lease, Poll and Maintenance are the workers' LeaseDuration,
	// PollInterval and MaintenanceInterval.
	Lease, Poll, Maintenance time.Duration
	// Slack is added to every time bound for scheduling noise on a shared
	// host.
	Slack time.Duration
	// Outages are spans when the store could not serve (a restart, pool
	// exhaustion): a bound that spans one is extended by its length.
	Outages []Window
	// LimitGrace is how long after a Concurrency Limit is lowered the jobs
	// claimed under the old limit may still run: the longest handler plus
	// Lease + Maintenance (a killed worker's job holds its slot until its
	// Lease is expired).
	LimitGrace time.Duration
	// WALBound is the largest write-ahead log allowed, in bytes, outside
	// ReaderHolds; 0 skips the audit (PostgreSQL).
	WALBound int64
	// ReaderHolds are the spans a reader held one SQLite snapshot open.
	// No checkpoint can pass such a reader, so the log grows by what is
	// written meanwhile, whatever the store does: within a hold, and for
	// WALSettle after it (until a checkpoint resets the log and the
	// adapter's journal_size_limit truncates it), the log is bounded by the
	// writes of the hold, not by WALBound.
	ReaderHolds []Window
	WALSettle   time.Duration
	// HealedAt is when the faults stopped; LivenessBound is how long after
	// it every job must be terminal.
	HealedAt      time.Time
	LivenessBound time.Duration
	// FinalAt is when the final state was read.
	FinalAt time.Time
}

// Input is everything an audit reads.
type Input struct {
	Entries []journal.Entry
	Jobs    map[int64]Job
	Queues  []Queue
	Params  Params
}

// Run applies every audit and returns the violations, grouped by audit in
// the order of Names.
func Run(in Input) []Violation {
	var out []Violation
	for _, f := range []func(Input) []Violation{
		AuditLost, AuditUnexpected, AuditDoubleApply, AuditFence, AuditDoubleClaim,
		AuditStuckRunning, AuditLimit, AuditRunningCounts, AuditLatch, AuditWAL, AuditLiveness,
	} {
		out = append(out, f(in)...)
	}
	return out
}

// AuditLost: every id of every acknowledged enqueue is a stored job (the run
// purges nothing). Jepsen's total-queue "lost".
func AuditLost(in Input) []Violation {
	var out []Violation
	for _, e := range in.Entries {
		if e.Kind != journal.KindEnqueue {
			continue
		}
		for _, id := range e.IDs {
			if _, ok := in.Jobs[id]; !ok {
				out = append(out, Violation{Lost, id, fmt.Sprintf("enqueue of batch %s acknowledged to %s at %s, no such job in the store", e.Batch, e.Proc, e.Time().Format(time.RFC3339Nano))})
			}
		}
	}
	return out
}

// AuditUnexpected: every stored job is one a producer acknowledged, or one
// of a batch a producer tried to enqueue (an enqueue whose acknowledgement
// a kill cut off may still have committed), never one of a batch enqueued
// in a transaction that never committed. Jepsen's "unexpected".
func AuditUnexpected(in Input) []Violation {
	acked := map[int64]bool{}
	intents := map[string]bool{}
	doomed := map[string]bool{}
	for _, e := range in.Entries {
		switch e.Kind {
		case journal.KindEnqueue:
			for _, id := range e.IDs {
				acked[id] = true
			}
		case journal.KindIntent:
			if e.Note == "doomed" {
				doomed[e.Batch] = true
			} else {
				intents[e.Batch] = true
			}
		}
	}
	var out []Violation
	for _, id := range sortedIDs(in.Jobs) {
		j := in.Jobs[id]
		switch {
		case j.Batch != "" && doomed[j.Batch]:
			out = append(out, Violation{Unexpected, id, fmt.Sprintf("job of batch %s, enqueued in a transaction that was never committed", j.Batch)})
		case acked[id]:
		case j.Batch != "" && intents[j.Batch]:
		default:
			out = append(out, Violation{Unexpected, id, fmt.Sprintf("stored (batch %q, state %s) but no producer enqueued it", j.Batch, j.State)})
		}
	}
	return out
}

type lease struct {
	id int64
	a  int64
}

// AuditDoubleApply: at most one outcome is applied per (job, Attempt): in
// the journals (reports the store answered Applied) and in the Transition
// Log (transitions out of Running at one Attempt).
func AuditDoubleApply(in Input) []Violation {
	applied := map[lease][]journal.Entry{}
	for _, e := range in.Entries {
		if e.Kind == journal.KindReport && e.Applied {
			k := lease{e.ID, e.A}
			applied[k] = append(applied[k], e)
		}
	}
	var out []Violation
	for _, k := range sortedLeases(applied) {
		if es := applied[k]; len(es) > 1 {
			out = append(out, Violation{DoubleApply, k.id, fmt.Sprintf("attempt %d: %d outcomes applied (%s)", k.a, len(es), describe(es))})
		}
	}
	for _, id := range sortedIDs(in.Jobs) {
		j := in.Jobs[id]
		exits := map[int64]int{}
		for _, t := range j.Log {
			if t.From == "running" {
				exits[t.Attempt]++
			}
		}
		for a, n := range exits {
			if n > 1 {
				out = append(out, Violation{DoubleApply, id, fmt.Sprintf("attempt %d left Running %d times in the Transition Log", a, n)})
			}
		}
	}
	return out
}

// AuditFence: an outcome the store applied came from the worker that
// claimed that exact Attempt, and the Attempt was not already ended by a
// Lease expiry or a Relinquish in the Transition Log.
func AuditFence(in Input) []Violation {
	claimed := map[lease]string{}
	for _, e := range in.Entries {
		if e.Kind == journal.KindClaim {
			claimed[lease{e.ID, e.A}] = e.W
		}
	}
	var out []Violation
	for _, e := range in.Entries {
		if e.Kind != journal.KindReport || !e.Applied {
			continue
		}
		w, ok := claimed[lease{e.ID, e.A}]
		switch {
		case !ok:
			out = append(out, Violation{Fence, e.ID, fmt.Sprintf("attempt %d: outcome %s from %s applied, but no worker's claim of that Attempt was journaled", e.A, e.State, e.W)})
		case w != e.W:
			out = append(out, Violation{Fence, e.ID, fmt.Sprintf("attempt %d: outcome %s from %s applied, but %s held the Lease", e.A, e.State, e.W, w)})
		default:
			if j, ok := in.Jobs[e.ID]; ok {
				for _, t := range j.Log {
					if t.From == "running" && t.Attempt == e.A && (t.Via == "expire" || t.Via == "relinquish") {
						out = append(out, Violation{Fence, e.ID, fmt.Sprintf("attempt %d: outcome %s from %s applied, but the Transition Log ended that Attempt by %s", e.A, e.State, e.W, t.Via)})
					}
				}
			}
		}
	}
	return out
}

// AuditDoubleClaim: an Attempt is charged once and never reused, so no two
// claims (by any workers) return one (job, Attempt).
func AuditDoubleClaim(in Input) []Violation {
	claims := map[lease][]journal.Entry{}
	for _, e := range in.Entries {
		if e.Kind == journal.KindClaim {
			k := lease{e.ID, e.A}
			claims[k] = append(claims[k], e)
		}
	}
	var out []Violation
	for _, k := range sortedLeases(claims) {
		if es := claims[k]; len(es) > 1 {
			out = append(out, Violation{DoubleClaim, k.id, fmt.Sprintf("attempt %d claimed %d times (%s)", k.a, len(es), describe(es))})
		}
	}
	return out
}

// extended returns d lengthened by every outage overlapping [from, from+d].
func (p Params) extended(from time.Time, d time.Duration) time.Duration {
	for _, w := range p.Outages {
		if w.To.After(from) && w.From.Before(from.Add(d)) {
			d += w.To.Sub(w.From)
		}
	}
	return d
}

// AuditStuckRunning: no job is seen Running once its Lease has been over
// for longer than poll + maintenance (+ slack, + any outage), during the
// run (the readers' samples) or in the final state.
func AuditStuckRunning(in Input) []Violation {
	p := in.Params
	bound := p.Poll + p.Maintenance + p.Slack
	var out []Violation
	seen := map[int64]bool{}
	for _, e := range in.Entries {
		if e.Kind != journal.KindRunningSample || e.Lease == 0 || seen[e.ID] {
			continue
		}
		end := time.Unix(0, e.Lease)
		if late := e.Time().Sub(end); late > p.extended(end, bound) {
			seen[e.ID] = true
			out = append(out, Violation{StuckRunning, e.ID, fmt.Sprintf("attempt %d seen Running under %s at %s, %s after its Lease ended", e.A, e.W, e.Time().Format(time.RFC3339Nano), late.Round(time.Millisecond))})
		}
	}
	for _, id := range sortedIDs(in.Jobs) {
		j := in.Jobs[id]
		if j.State != "running" || seen[id] || j.Lease.IsZero() {
			continue
		}
		if late := p.FinalAt.Sub(j.Lease); late > p.extended(j.Lease, bound) {
			out = append(out, Violation{StuckRunning, id, fmt.Sprintf("attempt %d Running under %s in the final state, %s after its Lease ended", j.Attempt, j.Worker, late.Round(time.Millisecond))})
		}
	}
	return out
}

type limitSpan struct {
	limit    int64
	from, to time.Time // to zero: still in effect
}

// AuditLimit: a sampled Running count of a Queue never exceeds the largest
// Concurrency Limit in effect within LimitGrace before the sample (a
// lowered limit lets the jobs claimed under the old one finish). Limit 0
// is no limit.
func AuditLimit(in Input) []Violation {
	spans := map[string][]limitSpan{}
	for _, e := range in.Entries {
		if e.Kind != journal.KindLimit {
			continue
		}
		ss := spans[e.Q]
		switch e.Note {
		case "intent":
			// The new limit may apply from the moment it is sent.
			ss = append(ss, limitSpan{limit: e.N, from: e.Time()})
		default: // "ack": every older span ends here
			for i := range ss {
				if ss[i].limit != e.N && ss[i].to.IsZero() {
					ss[i].to = e.Time()
				}
			}
			if len(ss) == 0 || ss[len(ss)-1].limit != e.N {
				ss = append(ss, limitSpan{limit: e.N, from: e.Time()})
			}
		}
		spans[e.Q] = ss
	}
	var out []Violation
	for _, e := range in.Entries {
		if e.Kind != journal.KindQueueSample {
			continue
		}
		ss, ok := spans[e.Q]
		if !ok {
			continue
		}
		t := e.Time()
		lo := t.Add(-in.Params.extended(t.Add(-in.Params.LimitGrace), in.Params.LimitGrace))
		allowed, any := int64(0), false
		for _, s := range ss {
			if s.from.After(t) || (!s.to.IsZero() && s.to.Before(lo)) {
				continue
			}
			any = true
			if s.limit == 0 {
				allowed = -1
				break
			}
			allowed = max(allowed, s.limit)
		}
		if !any || allowed < 0 {
			continue
		}
		if e.N > allowed {
			out = append(out, Violation{LimitExceeded, 0, fmt.Sprintf("queue %s: %d Running at %s, limit at most %d since %s", e.Q, e.N, t.Format(time.RFC3339Nano), allowed, lo.Format(time.RFC3339Nano))})
		}
	}
	return out
}

// AuditRunningCounts: after the run, each Queue's Running count from the
// Queues read, from the state counters and from the rows agree.
func AuditRunningCounts(in Input) []Violation {
	var out []Violation
	for _, q := range in.Queues {
		if q.Info != q.Rows || q.Counted != q.Rows {
			out = append(out, Violation{RunningCounts, 0, fmt.Sprintf("queue %s: %d Running rows, Queues says %d, CountByState says %d", q.Name, q.Rows, q.Info, q.Counted)})
		}
	}
	return out
}

// AuditLatch: every Dependency latch settles exactly once. A dependent
// leaves Awaiting Parent at most once and never returns to it; it is still
// Awaiting Parent only while some parent is live; it leaves by a release
// only once every parent is terminal (on-success: Succeeded) — judged by
// the parents' Transition Logs against the dependent's first claim — and
// an on-success dependent of a parent that ended otherwise is not
// Succeeded.
func AuditLatch(in Input) []Violation {
	var out []Violation
	for _, e := range in.Entries {
		if e.Kind != journal.KindDependency {
			continue
		}
		c, ok := in.Jobs[e.ID]
		if !ok {
			continue // the lost audit reports it
		}
		parents := make([]Job, 0, len(e.Parents))
		for _, pid := range e.Parents {
			if p, ok := in.Jobs[pid]; ok {
				parents = append(parents, p)
			}
		}
		allTerminal, allSucceeded := true, true
		for _, p := range parents {
			allTerminal = allTerminal && p.Terminal
			allSucceeded = allSucceeded && p.State == "succeeded"
		}
		if c.State == "awaiting_parent" && allTerminal && len(parents) == len(e.Parents) {
			out = append(out, Violation{Latch, c.ID, fmt.Sprintf("still Awaiting Parent though every parent %v is terminal", e.Parents)})
		}
		if e.Mode == "on_success" && allTerminal && !allSucceeded && c.State == "succeeded" && !requeued(c) {
			out = append(out, Violation{Latch, c.ID, fmt.Sprintf("on-success dependent Succeeded though a parent of %v did not", e.Parents)})
		}
		if !c.HasLog {
			continue
		}
		leaves, enters := 0, 0
		var release *Transition
		for i, t := range c.Log {
			if t.From == "awaiting_parent" {
				leaves++
				if t.Via == "release" && release == nil {
					release = &c.Log[i]
				}
			}
			if t.State == "awaiting_parent" {
				enters++
			}
		}
		if leaves > 1 || enters > 1 {
			out = append(out, Violation{Latch, c.ID, fmt.Sprintf("entered Awaiting Parent %d times and left it %d times", enters, leaves)})
		}
		if release == nil {
			continue
		}
		// Judge by the dependent's first claim, not the release entry's
		// time: PostgreSQL stamps a transaction's entries with its start,
		// so a release by a transaction that began before the parent's own
		// (and saw the parent's commit in a later statement) carries an
		// earlier time than the parent's terminal entry.
		var claim *Transition
		for i, t := range c.Log {
			if t.Via == "claim" && !t.At.Before(release.At) {
				claim = &c.Log[i]
				break
			}
		}
		for _, p := range parents {
			if !p.HasLog {
				continue
			}
			var done *Transition
			for i, t := range p.Log {
				if isTerminal(t.State) && (e.Mode != "on_success" || t.State == "succeeded") {
					done = &p.Log[i]
					break
				}
			}
			switch {
			case done == nil:
				out = append(out, Violation{Latch, c.ID, fmt.Sprintf("released at %s but parent %d never reached a state that counts (mode %s)", release.At.Format(time.RFC3339Nano), p.ID, e.Mode)})
			case claim != nil && done.At.After(claim.At):
				out = append(out, Violation{Latch, c.ID, fmt.Sprintf("released at %s and claimed at %s before parent %d ended %s at %s", release.At.Format(time.RFC3339Nano), claim.At.Format(time.RFC3339Nano), p.ID, done.State, done.At.Format(time.RFC3339Nano))})
			}
		}
	}
	return out
}

func requeued(j Job) bool {
	for _, t := range j.Log {
		if t.Via == "requeue" {
			return true
		}
	}
	return false
}

func isTerminal(s string) bool {
	switch s {
	case "succeeded", "dead_lettered", "cancelled", "quarantined":
		return true
	}
	return false
}

// AuditWAL: the SQLite write-ahead log never exceeded WALBound outside a
// reader's held snapshot and the settle time after it, so a log that grew
// behind a reader shrank back once the reader let go.
func AuditWAL(in Input) []Violation {
	if in.Params.WALBound <= 0 {
		return nil
	}
	held := func(t time.Time) bool {
		for _, w := range in.Params.ReaderHolds {
			if !t.Before(w.From) && !t.After(w.To.Add(in.Params.WALSettle)) {
				return true
			}
		}
		return false
	}
	var worst journal.Entry
	for _, e := range in.Entries {
		if e.Kind == journal.KindWAL && e.N > worst.N && !held(e.Time()) {
			worst = e
		}
	}
	if worst.N > in.Params.WALBound {
		return []Violation{{WALBound, 0, fmt.Sprintf("write-ahead log reached %d bytes at %s, bound %d", worst.N, worst.Time().Format(time.RFC3339Nano), in.Params.WALBound)}}
	}
	return nil
}

// AuditLiveness: once the faults stopped, every job reached a terminal
// state within LivenessBound (the final state is read when every job is
// terminal or the bound has passed).
func AuditLiveness(in Input) []Violation {
	p := in.Params
	var out []Violation
	for _, id := range sortedIDs(in.Jobs) {
		j := in.Jobs[id]
		if j.Terminal {
			continue
		}
		out = append(out, Violation{Liveness, id, fmt.Sprintf("still %s in queue %s at attempt %d, %s after the faults stopped (bound %s)", j.State, j.Queue, j.Attempt, p.FinalAt.Sub(p.HealedAt).Round(time.Millisecond), p.LivenessBound)})
	}
	return out
}

func describe(es []journal.Entry) string {
	s := ""
	for i, e := range es {
		if i > 0 {
			s += "; "
		}
		s += fmt.Sprintf("%s by %s at %s", e.Kind, e.W, e.Time().Format("15:04:05.000"))
	}
	return s
}

func sortedIDs(m map[int64]Job) []int64 {
	ids := make([]int64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

func sortedLeases[V any](m map[lease]V) []lease {
	ks := make([]lease, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		if ks[i].id != ks[j].id {
			return ks[i].id < ks[j].id
		}
		return ks[i].a < ks[j].a
	})
	return ks
}

// Excerpt returns the journal entries that concern job id, in time order.
func Excerpt(entries []journal.Entry, id int64, limit int) []journal.Entry {
	var out []journal.Entry
	for _, e := range entries {
		hit := e.ID == id
		for _, x := range e.IDs {
			hit = hit || x == id
		}
		if hit {
			out = append(out, e)
			if len(out) >= limit {
				break
			}
		}
	}
	return out
}
