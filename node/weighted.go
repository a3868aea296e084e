package node

// batch is one Queue's share of a claim pass.
type batch struct {
	queue int // index into the policy's Queues
	limit int
	// credit is the change to the Queue's credit that issuing this batch
	// commits.
	credit int64
}

// wrr is the smooth weighted round-robin state of a Weighted policy: one
// credit per Queue. It is deterministic: ties go to the Queue listed first.
type wrr struct {
	weights []int64
	total   int64
	credits []int64
}

func newWRR(p DispatchPolicy) *wrr {
	w := &wrr{weights: make([]int64, len(p.Queues)), credits: make([]int64, len(p.Queues))}
	for i, q := range p.Queues {
		w.weights[i] = int64(q.Weight)
		w.total += int64(q.Weight)
	}
	return w
}

// allocate splits n slots across the Queues: n rounds of smooth weighted
// round-robin (every credit grows by its weight, the largest wins and pays the
// total) run on a copy of the credits. It returns one batch per Queue that won
// at least one slot, in the order of first win, each carrying the credit change
// its issue commits (n·weight − total·won), and the credit change of the
// Queues that won nothing, which is committed with the first issue. Nothing is
// committed here: credit advances at issue, so a batch left un-issued keeps
// its Queue's credit instead of running a deficit.
func (w *wrr) allocate(n int) (batches []batch, idle []batch) {
	c := append([]int64(nil), w.credits...)
	won := make([]int, len(c))
	var order []int
	for range n {
		best := 0
		for i := range c {
			c[i] += w.weights[i]
			if c[i] > c[best] {
				best = i
			}
		}
		c[best] -= w.total
		if won[best] == 0 {
			order = append(order, best)
		}
		won[best]++
	}
	for _, i := range order {
		batches = append(batches, batch{queue: i, limit: won[i], credit: int64(n)*w.weights[i] - w.total*int64(won[i])})
	}
	for i := range c {
		if won[i] == 0 {
			idle = append(idle, batch{queue: i, credit: int64(n) * w.weights[i]})
		}
	}
	return batches, idle
}

// commit applies an issued batch's credit change.
func (w *wrr) commit(b batch) { w.credits[b.queue] += b.credit }
