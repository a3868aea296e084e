package shell

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/node"
)

// RateWindow is the span over which Stats computes its per-second rates.
const RateWindow = 10 * time.Second

// Stats is a snapshot of one Pump, taken without stopping it: each field is
// current, but two fields may be a step apart.
type Stats struct {
	// Worker is the Pump's lease-holder identity.
	Worker job.WorkerID
	// PoolSize is the Pump's Worker count.
	PoolSize int
	// Executing is how many Attempts the Driver counts as executing,
	// those past their timeout and grace included.
	Executing int
	// BufferedOutcomes is how many finished Attempts still hold their
	// Worker because their outcome is buffered or in flight to the store.
	BufferedOutcomes int
	// Free is the free capacity the Driver would claim up to now: PoolSize
	// less the Workers held and the slots a claim pass in flight asked for.
	// Zero means Backpressure.
	Free int
	// Claimed and Reported count the jobs claimed and the outcomes the
	// store applied since the Pump started.
	Claimed, Reported uint64
	// ClaimsPerSecond and OutcomesPerSecond are the jobs claimed and the
	// outcomes applied per second over the last RateWindow (or since the
	// Pump started, if that is shorter), on the Pump's clock.
	ClaimsPerSecond, OutcomesPerSecond float64
	// LastStoreError is the most recent store call that failed, if any.
	LastStoreError *StoreError
	// Stopping is set once the Pump's stop began.
	Stopping bool
}

// StoreError is a failed store call of a Pump.
type StoreError struct {
	// Operation names the call (see Operation).
	Operation string
	// Err is the call's error.
	Err error
	// At is when it failed, on the Pump's clock.
	At time.Time
}

// stats is what a Pump publishes for Stats. The loop goroutine writes it;
// Stats reads it from any goroutine.
type stats struct {
	executing, buffered, free atomic.Int64
	claimed, reported         atomic.Uint64
	stopping                  atomic.Bool
	lastErr                   atomic.Pointer[StoreError]

	mu       sync.Mutex
	since    time.Time // when the Pump started, on its clock
	claims   rate
	outcomes rate
}

// rate counts events in one-second buckets over RateWindow.
type rate struct {
	sec [10]int64
	n   [10]uint64
}

func (r *rate) add(now time.Time, n int) {
	s := now.Unix()
	i := s % int64(len(r.sec))
	if i < 0 {
		i += int64(len(r.sec))
	}
	if r.sec[i] != s {
		r.sec[i], r.n[i] = s, 0
	}
	r.n[i] += uint64(n)
}

// perSecond is the rate over the full seconds of the window before now's
// second, or over the seconds since since when fewer have passed.
func (r *rate) perSecond(now, since time.Time) float64 {
	s := now.Unix()
	span := int64(len(r.sec))
	if elapsed := s - since.Unix(); elapsed < span {
		span = max(elapsed, 1)
	}
	var sum uint64
	for i, bs := range r.sec {
		if bs < s && bs >= s-span {
			sum += r.n[i]
		}
	}
	return float64(sum) / float64(span)
}

// publish records the Driver's counts after a step.
func (p *Pump) publish() {
	held := p.drv.Held()
	p.stats.executing.Store(int64(p.running))
	p.stats.buffered.Store(int64(held - p.running))
	p.stats.free.Store(int64(max(p.drv.Free(), 0)))
}

// countReply records what a store call did for Stats, at now: the jobs
// claimed, the outcomes applied and the last failure.
func (p *Pump) countReply(r node.Reply, now time.Time) {
	if r.Err != nil {
		p.stats.lastErr.Store(&StoreError{Operation: Operation(r.Command), Err: r.Err, At: now})
		return
	}
	claimed, applied := len(r.Jobs), 0
	for _, res := range r.Reported {
		if res.Applied {
			applied++
		}
	}
	if claimed == 0 && applied == 0 {
		return
	}
	p.stats.claimed.Add(uint64(claimed))
	p.stats.reported.Add(uint64(applied))
	p.stats.mu.Lock()
	p.stats.claims.add(now, claimed)
	p.stats.outcomes.add(now, applied)
	p.stats.mu.Unlock()
}

// Stats returns a snapshot of the Pump. It is safe to call at any time, from
// any goroutine, and never waits for the loop.
func (p *Pump) Stats() Stats {
	now := p.now()
	s := Stats{
		Worker:           p.cfg.Driver.Worker,
		PoolSize:         p.cfg.Driver.PoolSize,
		Executing:        int(p.stats.executing.Load()),
		BufferedOutcomes: int(p.stats.buffered.Load()),
		Free:             int(p.stats.free.Load()),
		Claimed:          p.stats.claimed.Load(),
		Reported:         p.stats.reported.Load(),
		LastStoreError:   p.stats.lastErr.Load(),
		Stopping:         p.stats.stopping.Load(),
	}
	p.stats.mu.Lock()
	since := p.stats.since
	if !since.IsZero() {
		s.ClaimsPerSecond = p.stats.claims.perSecond(now, since)
		s.OutcomesPerSecond = p.stats.outcomes.perSecond(now, since)
	}
	p.stats.mu.Unlock()
	return s
}
