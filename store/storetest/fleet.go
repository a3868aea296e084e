package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// stamp stamps worker as handling names, forgetting rows older than forget.
func (e *env) stamp(worker job.WorkerID, forget time.Duration, names ...string) store.FleetView {
	e.t.Helper()
	before := e.now()
	v, err := e.s.FleetStamp(e.ctx, store.FleetStampParams{Worker: worker, WireNames: names, Forget: forget})
	if err != nil {
		e.t.Fatalf("FleetStamp(%s, %q): %v", worker, names, err)
	}
	if after := e.now(); v.Now.Before(before.Truncate(time.Microsecond)) || v.Now.After(after) {
		e.t.Fatalf("FleetStamp answered now %v, outside the call's [%v, %v]", v.Now, before, after)
	}
	return v
}

// rows renders a view's rows as "wire/worker" in their order, for
// comparison, and checks each stamp is no later than the view's now.
func (e *env) rows(v store.FleetView) []string {
	e.t.Helper()
	out := make([]string, len(v.Handlers))
	for i, h := range v.Handlers {
		if h.StampedAt.After(v.Now) {
			e.t.Fatalf("row %s/%s stamped at %v, after the view's now %v", h.WireName, h.Worker, h.StampedAt, v.Now)
		}
		out[i] = h.WireName + "/" + string(h.Worker)
	}
	return out
}

// claimSkip claims like claim, passing over the Wire Names skip.
func (e *env) claimSkip(worker job.WorkerID, limit int, skip []string, queues ...string) []job.Job {
	e.t.Helper()
	jobs, err := e.s.JobClaim(e.ctx, store.ClaimParams{Worker: worker, Queues: queues, Limit: limit, LeaseDuration: lease, Skip: skip})
	if err != nil {
		e.t.Fatalf("JobClaim(%s, %d, skip %q, %q): %v", worker, limit, skip, queues, err)
	}
	return jobs
}

// wired returns newJob(queue) under Wire Name wire.
func wired(queue, wire string) store.NewJob {
	j := newJob(queue)
	j.WireName = wire
	return j
}

func testFleet(t *testing.T, s *suite) {
	// Fleet.FleetStamp: "records that p.Worker handles exactly
	// p.WireNames, each stamped with the store's now … returns the
	// registry as it then stands … ordered by Wire Name, then Worker".
	s.run(t, "StampAndRead", func(t *testing.T, e *env) {
		v := e.stamp(w2, time.Hour, "b.job", "a.job")
		if got, want := e.rows(v), []string{"a.job/" + string(w2), "b.job/" + string(w2)}; !slices.Equal(got, want) {
			t.Fatalf("registry after one stamp: %q, want %q", got, want)
		}
		for _, h := range v.Handlers {
			if !h.StampedAt.Equal(v.Now) {
				t.Fatalf("row %s/%s stamped at %v, want the stamp's now %v", h.WireName, h.Worker, h.StampedAt, v.Now)
			}
		}
		v = e.stamp(w1, time.Hour, "b.job")
		if got, want := e.rows(v), []string{"a.job/" + string(w2), "b.job/" + string(w1), "b.job/" + string(w2)}; !slices.Equal(got, want) {
			t.Fatalf("registry after two Pumps stamped: %q, want %q", got, want)
		}
	})

	// "a Wire Name the Worker stamped before and no longer lists loses its
	// row"; a stamp refreshes the Worker's rows to the new now.
	s.run(t, "Restamp", func(t *testing.T, e *env) {
		e.needAdvance()
		e.stamp(w1, time.Hour, "a.job", "b.job")
		e.stamp(w2, time.Hour, "a.job")
		e.advance(time.Second)
		v := e.stamp(w1, time.Hour, "b.job", "c.job")
		if got, want := e.rows(v), []string{"a.job/" + string(w2), "b.job/" + string(w1), "c.job/" + string(w1)}; !slices.Equal(got, want) {
			t.Fatalf("registry after a restamp: %q, want %q", got, want)
		}
		for _, h := range v.Handlers {
			fresh := h.StampedAt.Equal(v.Now)
			if fresh != (h.Worker == w1) {
				t.Fatalf("row %s/%s stamped at %v (now %v): only %s's rows are restamped", h.WireName, h.Worker, h.StampedAt, v.Now, w1)
			}
		}
		if v := e.stamp(w1, time.Hour); !slices.Equal(e.rows(v), []string{"a.job/" + string(w2)}) {
			t.Fatalf("registry after %s stamped no Wire Name: %q, want only %s's row", w1, e.rows(v), w2)
		}
	})

	// "removes every row, of any Worker, stamped before now − p.Forget".
	s.run(t, "Forget", func(t *testing.T, e *env) {
		e.needAdvance()
		e.stamp(w2, time.Hour, "a.job")
		e.advance(time.Minute)
		if v := e.stamp(w1, time.Hour, "b.job"); len(v.Handlers) != 2 {
			t.Fatalf("a row a minute old went under a one-hour horizon: %q", e.rows(v))
		}
		e.advance(time.Minute)
		v := e.stamp(w1, 90*time.Second, "b.job")
		if got, want := e.rows(v), []string{"b.job/" + string(w1)}; !slices.Equal(got, want) {
			t.Fatalf("registry after a stamp with a 90 s horizon, the other row 2 min old: %q, want %q", got, want)
		}
	})

	// FleetStampParams: a worker id, a positive Forget, valid distinct
	// Wire Names; a refused stamp writes nothing.
	s.run(t, "Validation", func(t *testing.T, e *env) {
		for name, p := range map[string]store.FleetStampParams{
			"no worker":      {WireNames: []string{"a"}, Forget: time.Hour},
			"no forget":      {Worker: w1, WireNames: []string{"a"}},
			"negative":       {Worker: w1, WireNames: []string{"a"}, Forget: -time.Second},
			"empty name":     {Worker: w1, WireNames: []string{""}, Forget: time.Hour},
			"duplicate name": {Worker: w1, WireNames: []string{"a", "a"}, Forget: time.Hour},
		} {
			if _, err := e.s.FleetStamp(e.ctx, p); !errors.Is(err, store.ErrInvalidParams) {
				t.Errorf("%s: FleetStamp(%+v) = %v, want ErrInvalidParams", name, p, err)
			}
		}
		if v := e.stamp(w2, time.Hour); len(v.Handlers) != 0 {
			t.Fatalf("refused stamps wrote rows: %q", e.rows(v))
		}
		if _, err := e.s.JobClaim(e.ctx, store.ClaimParams{Worker: w1, Queues: []string{"q"}, Limit: 1, LeaseDuration: lease, Skip: []string{""}}); !errors.Is(err, store.ErrInvalidParams) {
			t.Errorf("JobClaim with an empty skipped Wire Name = %v, want ErrInvalidParams", err)
		}
	})

	// ClaimParams.Skip / JobClaim: "A job whose Wire Name is in p.Skip is
	// passed over as if it were not due: it is neither leased nor counted
	// against the batch".
	s.run(t, "ClaimSkips", func(t *testing.T, e *env) {
		ids := e.insert(wired("q", "new.job"), wired("q", "old.job"), wired("q", "new.job"), wired("r", "old.job"), wired("q", "old.job"))
		got := e.claimSkip(w1, 3, []string{"new.job", "absent.job"}, "q", "r")
		if want := []job.ID{ids[1], ids[4], ids[3]}; !slices.Equal(idsOf(got), want) {
			t.Fatalf("claim skipping new.job leased %v, want %v (the old.job jobs in Queue order)", idsOf(got), want)
		}
		for _, id := range []job.ID{ids[0], ids[2]} {
			if j := e.get(id); j.State != job.StateScheduled || j.Attempt != 0 {
				t.Fatalf("skipped job %d is %s at Attempt %d, want Scheduled and uncharged", id, j.State, j.Attempt)
			}
		}
		if got := e.claim(w1, 10, "q", "r"); !slices.Equal(idsOf(got), []job.ID{ids[0], ids[2]}) {
			t.Fatalf("a claim without Skip leased %v, want the two new.job jobs %v", idsOf(got), []job.ID{ids[0], ids[2]})
		}
	})

	// Skipped jobs take no Concurrency-Limit slot nor Rate Limit start.
	s.run(t, "SkipCountsNothing", func(t *testing.T, e *env) {
		e.setLimit("q", 1)
		e.setRate("q", store.QueueRate{Limit: 1, Period: time.Hour})
		ids := e.insert(wired("q", "new.job"), wired("q", "old.job"))
		if got := e.claimSkip(w1, 2, []string{"new.job"}, "q"); !slices.Equal(idsOf(got), []job.ID{ids[1]}) {
			t.Fatalf("claim skipping new.job under limit 1 and rate 1/h leased %v, want %v", idsOf(got), []job.ID{ids[1]})
		}
	})

	// The registry and core.FleetSkip together: a Wire Name some other
	// live Pump stamped and this one lacks is skipped; one whose last
	// stamp is older than the grace is not.
	s.run(t, "Judgment", func(t *testing.T, e *env) {
		e.needAdvance()
		const grace = 30 * time.Second
		e.stamp(w2, time.Hour, "new.job", "old.job")
		e.advance(10 * time.Second)
		v := e.stamp(w1, time.Hour, "old.job")
		if got := core.FleetSkip(v.Handlers, []string{"old.job"}, v.Now, grace); !slices.Equal(got, []string{"new.job"}) {
			t.Fatalf("FleetSkip with new.job's handler stamped 10 s ago = %q, want [new.job]", got)
		}
		e.advance(grace)
		v = e.stamp(w1, time.Hour, "old.job")
		if got := core.FleetSkip(v.Handlers, []string{"old.job"}, v.Now, grace); got != nil {
			t.Fatalf("FleetSkip with new.job's handler stamped %v ago (grace %v) = %q, want nothing", grace+10*time.Second, grace, got)
		}
	})
}
