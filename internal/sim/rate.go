package sim

import (
	"fmt"
	"time"

	"github.com/backwave/backwave/store"
)

// Rate Limits in the Simulator: some Queues start with one (QueueSpec), and
// the workload's rate actions set, change and remove Rates as an operator
// would, each undone before the chaos window ends. The Rate oracle holds
// every claim to the window rule of the Storage Contract (store package
// doc, Rate Limit): counted as the store counts — per fixed window of the
// Period on the store's clock, a new Limit under the same Period keeping
// the count, a new Period or a removed Rate forgetting it — no claim makes
// a window's count exceed the Limit in effect at the claim. With a Rate
// left unchanged, that is: never more than Limit starts of the Queue in
// any window of its Period.

// rateAction is one set-rate Operator Action and its undo (back to the
// Queue's initial Rate, which may be none).
type rateAction struct {
	queue int
	rate  store.QueueRate
	at    time.Duration
	undo  time.Duration
}

// rateTrack is the oracle's count of one Queue's starts: the Rate in effect
// and the window it counts in.
type rateTrack struct {
	rate   store.QueueRate
	window time.Time
	count  int
}

// drawRate draws a Rate for a Queue: a Period of 20ms to 1s, and a Limit
// of floor to floor+5 per Period. floor keeps a Queue's share of the
// workload drainable within about the chaos window (rateFloor), so a Rate
// binds in bursts without stretching a run's Virtual Time, and its polls,
// many times over.
func drawRate(d *draw, sc *Scenario) store.QueueRate {
	period := d.logDur(20*time.Millisecond, time.Second).Round(time.Millisecond)
	return store.QueueRate{Limit: rateFloor(sc, period) + d.intn(6), Period: period}
}

// rateFloor is the smallest Limit per period that starts twice a Queue's
// share of the Scenario's jobs (each retried once, say) within the chaos
// window.
func rateFloor(sc *Scenario, period time.Duration) int {
	share := 2 * max(1, sc.Work.Jobs/len(sc.Queues))
	return max(1, int((int64(share)*int64(period)+int64(sc.Chaos.D())-1)/int64(sc.Chaos.D())))
}

// drawRates gives some of the Scenario's Queues an initial Rate Limit and
// the workload its rate actions. The draws are their own (tagRate), so a
// Scenario drawn before Rate Limits existed keeps every other draw.
func drawRates(sc *Scenario) {
	for i := range sc.Queues {
		d := newDraw(sc.Seed, tagRate, uint64(i))
		if d.chance(0.3) {
			r := drawRate(d, sc)
			sc.Queues[i].RateLimit, sc.Queues[i].RatePeriod = r.Limit, Dur(r.Period)
		}
	}
	sc.Work.RateActions = newDraw(sc.Seed, tagRate, 1<<32).intn(3)
}

// rate returns the Queue's initial Rate (zero: none).
func (q QueueSpec) rate() store.QueueRate {
	return store.QueueRate{Limit: q.RateLimit, Period: q.RatePeriod.D()}
}

// validateRates reports the first invalid Rate of the Scenario.
func (sc *Scenario) validateRates() error {
	for _, q := range sc.Queues {
		if err := q.rate().Validate(); err != nil {
			return fmt.Errorf("%w: queue %s: %w", ErrInvalidPlan, q.Name, err)
		}
	}
	if sc.Work.RateActions < 0 {
		return fmt.Errorf("%w: %d rate actions", ErrInvalidPlan, sc.Work.RateActions)
	}
	return nil
}

// expandRateActions draws the workload's rate actions: one Queue each, a
// new Rate (under the Queue's own Period when it has one, so the count
// carries over, else a Period of its own) at some instant of the first six
// tenths of the chaos window, undone up to three tenths later.
func expandRateActions(sc *Scenario, wl *workload) {
	chaos := sc.Chaos.D()
	for k := range sc.Work.RateActions {
		d := newDraw(sc.Seed, tagRateAction, uint64(k))
		a := rateAction{queue: d.intn(len(sc.Queues)), rate: drawRate(d, sc)}
		if p := sc.Queues[a.queue].RatePeriod.D(); p > 0 && d.chance(0.7) {
			a.rate = store.QueueRate{Limit: rateFloor(sc, p) + d.intn(6), Period: p}
		}
		a.at = d.dur(0, chaos*6/10).Round(time.Millisecond)
		a.undo = a.at + d.dur(50*time.Millisecond, chaos*3/10).Round(time.Millisecond)
		wl.rateActions = append(wl.rateActions, a)
	}
}

// setupRates sets the initial Rates and queues the rate actions.
func (w *world) setupRates() {
	w.rates = make([]rateTrack, len(w.sc.Queues))
	for i, q := range w.sc.Queues {
		if r := q.rate(); !r.IsZero() {
			w.setRate(i, r)
		}
	}
	for k, a := range w.wl.rateActions {
		w.workload(event{at: w.at(a.at), kind: evRateAction, idx: k})
		w.workload(event{at: w.at(a.undo), kind: evRateUndo, idx: k})
	}
}

// rateAction applies or undoes one set-rate Operator Action.
func (w *world) rateAction(k int, undo bool) {
	a := &w.wl.rateActions[k]
	r := a.rate
	if undo {
		r = w.sc.Queues[a.queue].rate()
	}
	w.workloadCall()
	w.setRate(a.queue, r)
}

// setRate sets Queue q's Rate in the store and in the oracle's count, by
// the contract's rule for a changed Rate.
func (w *world) setRate(q int, r store.QueueRate) {
	t := &w.rates[q]
	if t.rate.Period != r.Period {
		*t = rateTrack{}
	}
	t.rate = r
	w.mustStore(w.st.QueueSetRate(w.ctx, store.QueueSetRateParams{Queue: w.sc.Queues[q].Name, Rate: r}))
}

// checkRate is the Rate oracle, called for each claim of a job of Queue q
// as the store applies it: the claim counts in the window of the store's
// now, and the window's count never exceeds the Rate's Limit.
func (w *world) checkRate(q int, what string) {
	t := &w.rates[q]
	if t.rate.IsZero() {
		return
	}
	now := w.storeNow()
	if ws := t.rate.WindowStart(now); !ws.Equal(t.window) {
		t.window, t.count = ws, 0
	}
	t.count++
	switch {
	case t.count > t.rate.Limit:
		w.failf(ClassSafety, InvRateLimit, "%s was start %d of queue %s in the window from %v, past its Rate Limit %s",
			what, t.count, w.sc.Queues[q].Name, t.window.Sub(w.start), t.rate)
	case t.count == t.rate.Limit:
		w.cov.hit(SitRateSpent)
	}
}

// rateBound is the Rate Limits' share of the Drain-Liveness bound (see
// drainBound): a Queue q with a Rate of r starts per Period R and W_q
// claims left needs at most ⌈W_q / r⌉ windows after the one in progress,
// and a node claims within P of each window's start (at once when its
// re-poll lands; by its next Poll if it lost the re-poll to a restart).
func (w *world) rateBound(work []int, poll time.Duration) time.Duration {
	var out time.Duration
	for q, wq := range work {
		r := w.rates[q].rate
		if wq == 0 || r.IsZero() {
			continue
		}
		windows := (wq+r.Limit-1)/r.Limit + 1
		out += time.Duration(windows) * (r.Period + poll)
	}
	return out
}
