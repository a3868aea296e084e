package node

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// TestWRRMatchesTwin checks the Weighted allocation against a deliberately
// simple twin: a single-slot smooth weighted round-robin run one pick at a
// time. Over many passes of random sizes, every Queue's share matches the
// twin's within one pass's worth of slots, and so the weights.
func TestWRRMatchesTwin(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 7))
	for trial := range 200 {
		n := 1 + r.IntN(5)
		var qs []QueueWeight
		for i := range n {
			qs = append(qs, QueueWeight{Queue: string(rune('a' + i)), Weight: 1 + r.IntN(9)})
		}
		w := newWRR(Weighted(qs...))
		got := make([]int, n)
		total := 0
		for range 500 {
			size := 1 + r.IntN(16)
			batches, idle := w.allocate(size)
			for _, b := range idle {
				w.commit(b)
			}
			for _, b := range batches {
				w.commit(b)
				got[b.queue] += b.limit
				total += b.limit
			}
		}
		sumW := 0
		for _, q := range qs {
			sumW += q.Weight
		}
		for i, q := range qs {
			want := float64(total) * float64(q.Weight) / float64(sumW)
			if d := float64(got[i]) - want; d > 16 || d < -16 {
				t.Fatalf("trial %d weights %v: queue %s got %d slots, want ≈%.0f", trial, qs, q.Queue, got[i], want)
			}
		}
		var sum int64
		for _, c := range w.credits {
			sum += c
		}
		if sum != 0 {
			t.Fatalf("trial %d: credits %v do not sum to 0 after fully issued passes", trial, w.credits)
		}
	}
}

// TestDriverInvariants drives a Driver with random events and checks, after
// every step: held Leases never exceed PoolSize (Backpressure), at most one
// claim is in flight, at most one renewal and one sweep are in flight, every
// executed Attempt is reported or abandoned exactly once, claims never ask
// for more than MaxClaimBatch, and with an attempt timeout an Attempt gets
// one LetLapse at most, only while it runs, and is never renewed after it.
func TestDriverInvariants(t *testing.T) {
	t.Parallel()
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 99))
		policy := Strict("a", "b")
		if r.IntN(2) == 0 {
			policy = Weighted(QueueWeight{"a", 1 + r.IntN(4)}, QueueWeight{"b", 1 + r.IntN(4)}, QueueWeight{"c", 1})
		}
		cfg := Config{
			Worker: "w", Policy: policy, PoolSize: 1 + r.IntN(8),
			MaxClaimBatch: 1 + r.IntN(6), MaxOutcomeBatch: 1 + r.IntN(6),
			MaintenanceInterval: time.Second, ExpireBatch: 2,
		}
		if r.IntN(2) == 0 {
			cfg.AttemptTimeout = time.Duration(1+r.IntN(3)) * time.Second
			cfg.AttemptTimeoutGrace = time.Duration(1+r.IntN(2000)) * time.Millisecond
		}
		d, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		checkDriver(t, seed, r, d)
	}
}

func checkDriver(t *testing.T, seed uint64, r *rand.Rand, d *Driver) {
	t.Helper()
	now := epoch
	nextID := job.ID(1)
	var (
		claims      []Claim
		renews      []Renew
		reports     []Report
		expires     []ExpireLeases
		running     []job.Lease
		executed    = map[job.Lease]bool{}
		settled     = map[job.Lease]string{}
		unknownFate = map[job.Lease]bool{} // reported, but the report failed
		lapsed      = map[job.Lease]bool{} // given a LetLapse
	)
	settle := func(l job.Lease, how string) {
		if prev, ok := settled[l]; ok {
			t.Fatalf("seed %d: %s settled twice (%s, then %s)", seed, l, prev, how)
		}
		settled[l] = how
	}
	for step := range 400 {
		var ev Event
		now = now.Add(time.Duration(r.IntN(700)) * time.Millisecond)
		switch k := r.IntN(10); {
		case k == 0 && len(claims) > 0:
			c := claims[0]
			claims = claims[1:]
			var jobs []job.Job
			for range r.IntN(c.Limit + 1) {
				jobs = append(jobs, job.Job{ID: nextID, Queue: c.Queues[0], Attempt: 1, MaxAttempts: 3})
				nextID++
			}
			ev = ClaimDone{Now: now, Op: c.Op, Jobs: jobs}
		case k == 1 && len(running) > 0:
			i := r.IntN(len(running))
			l := running[i]
			running = append(running[:i], running[i+1:]...)
			ev = JobDone{Now: now, Lease: l, Result: core.Result(1 + r.IntN(4))}
		case k == 2 && len(reports) > 0:
			rp := reports[0]
			reports = reports[1:]
			var res []store.ReportResult
			for _, o := range rp.Outcomes {
				res = append(res, store.ReportResult{Lease: o.Lease, Applied: r.IntN(4) > 0})
			}
			ev = ReportDone{Now: now, Op: rp.Op, Results: res}
			if r.IntN(8) == 0 {
				ev = ReportDone{Now: now, Op: rp.Op, Err: errTest}
				for _, o := range rp.Outcomes {
					unknownFate[o.Lease] = true
				}
			}
		case k == 3 && len(renews) > 0:
			rn := renews[0]
			renews = renews[1:]
			var res []store.RenewResult
			for _, l := range rn.Leases {
				res = append(res, store.RenewResult{Lease: l, Status: store.RenewStatus(1 + r.IntN(3))})
			}
			ev = RenewDone{Now: now, Op: rn.Op, Results: res}
		case k == 4 && len(expires) > 0:
			x := expires[0]
			expires = expires[1:]
			ev = ExpireDone{Now: now, Op: x.Op, Expired: r.IntN(3)}
		case k == 5:
			ev = Heartbeat{Now: now}
		default:
			ev = Poll{Now: now}
		}
		for _, c := range d.Step(ev, nil) {
			switch c := c.(type) {
			case Claim:
				claims = append(claims, c)
				if c.Limit > d.cfg.MaxClaimBatch {
					t.Fatalf("seed %d step %d: claim of %d exceeds MaxClaimBatch %d", seed, step, c.Limit, d.cfg.MaxClaimBatch)
				}
			case Execute:
				l := c.Job.Lease()
				if executed[l] {
					t.Fatalf("seed %d: %s executed twice", seed, l)
				}
				executed[l] = true
				running = append(running, l)
				if c.Timeout != d.cfg.AttemptTimeout {
					t.Fatalf("seed %d: %s executed with timeout %v, want %v", seed, l, c.Timeout, d.cfg.AttemptTimeout)
				}
			case LetLapse:
				if lapsed[c.Lease] || !slices.Contains(running, c.Lease) {
					t.Fatalf("seed %d step %d: let-lapse %s (lapsed before: %t, running: %t)",
						seed, step, c.Lease, lapsed[c.Lease], slices.Contains(running, c.Lease))
				}
				lapsed[c.Lease] = true
			case Report:
				reports = append(reports, c)
				for _, o := range c.Outcomes {
					if unknownFate[o.Lease] {
						delete(unknownFate, o.Lease) // a failed report is repeated once
						continue
					}
					settle(o.Lease, "reported")
				}
			case Abandon:
				settle(c.Lease, "abandoned")
				for i, l := range running {
					if l == c.Lease {
						running = append(running[:i], running[i+1:]...)
						break
					}
				}
			case Renew:
				renews = append(renews, c)
				for _, l := range c.Leases {
					if lapsed[l] {
						t.Fatalf("seed %d step %d: %s renewed after its let-lapse", seed, step, l)
					}
				}
			case ExpireLeases:
				expires = append(expires, c)
			}
		}
		if h := d.Held(); h > d.cfg.PoolSize || d.Free() < 0 {
			t.Fatalf("seed %d step %d: held %d free %d with PoolSize %d", seed, step, h, d.Free(), d.cfg.PoolSize)
		}
		if len(claims) > 1 || len(renews) > 1 || len(expires) > 1 {
			t.Fatalf("seed %d step %d: in flight: %d claims, %d renews, %d sweeps", seed, step, len(claims), len(renews), len(expires))
		}
	}
}

type testError string

func (e testError) Error() string { return string(e) }

const errTest = testError("store unavailable")
