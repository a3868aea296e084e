package node

import (
	"errors"
	"fmt"
	"time"

	"github.com/backwave/backwave/internal/plant"
	"github.com/backwave/backwave/job"
)

// DefaultBatchLinger is the linger of a Gather whose Linger is 0: how long
// the first executing Attempt of a batch Wire Name waits for others to
// join its handler call.
const DefaultBatchLinger = 50 * time.Millisecond

// ErrBatchResults is the error Deal returns when a batch handler answered
// with a number of results other than the number of jobs it was given.
var ErrBatchResults = errors.New("batch handler returned the wrong number of results")

// Gather collects the executing Attempts of one batch Wire Name into
// handler calls (glossary, Batch Handler): a call holds up to Size
// Attempts and forms as soon as Size are waiting, or once the first of
// them has waited Linger. A batch is a delivery shape only: every Attempt
// in a call keeps its own Lease, fence, outcome, Failure Detail and Job
// Output, each holds a Worker of its own, and nothing of the call is
// stored. Claims, Concurrency Limits, Rate Limits and Key Limits count
// the jobs, never the calls, because each Attempt was claimed on its own.
//
// Gather is pure, like the Driver: time arrives as values and it arms no
// timer. Its host (the root package's batch executor, the Simulator's
// handler model) arms one for Deadline and calls Due when it fires. It is
// not safe for concurrent use; the host serializes its calls.
type Gather struct {
	size    int
	linger  time.Duration
	waiting []job.Lease
	first   time.Time // when waiting[0] joined
	plant   plant.Bug
}

// NewGather returns a Gather of calls of up to size Attempts that wait at
// most linger for company (DefaultBatchLinger if 0). A size below 1 or a
// negative linger is an error wrapping ErrInvalidConfig.
func NewGather(size int, linger time.Duration) (*Gather, error) {
	if size < 1 {
		return nil, fmt.Errorf("%w: batch size %d: a batch holds at least 1 job", ErrInvalidConfig, size)
	}
	if linger < 0 {
		return nil, fmt.Errorf("%w: batch linger %v is negative", ErrInvalidConfig, linger)
	}
	if linger == 0 {
		linger = DefaultBatchLinger
	}
	return &Gather{size: size, linger: linger}, nil
}

// Size is the most Attempts one call holds.
func (g *Gather) Size() int { return g.size }

// Linger is how long the first waiting Attempt waits for company.
func (g *Gather) Linger() time.Duration { return g.linger }

// Waiting is how many Attempts wait for their call.
func (g *Gather) Waiting() int { return len(g.waiting) }

// Add puts the Attempt of l in the next call at now. When it fills the
// call, Add returns the call's Leases in the order they joined (the order
// the handler gets its jobs); otherwise nil, and the host arms a timer for
// Deadline if this Attempt is the first to wait.
func (g *Gather) Add(now time.Time, l job.Lease) []job.Lease {
	if len(g.waiting) == 0 {
		g.first = now
	}
	g.waiting = append(g.waiting, l)
	if len(g.waiting) < g.size {
		return nil
	}
	return g.take()
}

// Deadline is when the waiting Attempts' call forms if no more join; false
// when none waits.
func (g *Gather) Deadline() (time.Time, bool) {
	if len(g.waiting) == 0 {
		return time.Time{}, false
	}
	return g.first.Add(g.linger), true
}

// Due returns the waiting Attempts' call once now has reached Deadline, and
// nil before it or when none waits.
func (g *Gather) Due(now time.Time) []job.Lease {
	at, ok := g.Deadline()
	if !ok || now.Before(at) {
		return nil
	}
	return g.take()
}

// Remove takes the Attempt of l out of the next call, before the call
// forms: its context ended (a lost Lease, shutdown) while it waited. It
// reports whether l was waiting; false means l is already in a formed call
// and gets its result from it.
func (g *Gather) Remove(l job.Lease) bool {
	for i, w := range g.waiting {
		if w == l {
			// The call's wait stays the one its first Attempt began: a
			// leaving Attempt never makes the others wait longer.
			g.waiting = append(g.waiting[:i], g.waiting[i+1:]...)
			return true
		}
	}
	return false
}

func (g *Gather) take() []job.Lease {
	call := g.waiting
	g.waiting = nil
	return call
}

// Deal pairs a call's n results with its Attempts: the result at index
// Deal(call, n)[i] is the result of call[i], the job the handler got at
// index i, and of no other. A
// handler that answered with another number of results gets none paired:
// the error wraps ErrBatchResults and names both counts, and the host fails
// every Attempt of the call with it, so no job takes another's result.
func (g *Gather) Deal(call []job.Lease, n int) ([]int, error) {
	if n != len(call) {
		return nil, fmt.Errorf("%w: %d results for %d jobs", ErrBatchResults, n, len(call))
	}
	idx := make([]int, len(call))
	for i := range idx {
		idx[i] = i
		if plant.Enabled && g.plant == plant.BatchDealsShifted && len(call) > 1 {
			idx[i] = (i + 1) % len(call)
		}
	}
	return idx, nil
}
