package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// The Transition Observer walk (store.Observers; glossary: Transition
// Observer, Transition Log).

const obsName = "storetest-observer"

func obsClaim(holder job.WorkerID, limit int, states ...job.State) store.ObserverClaimParams {
	return store.ObserverClaimParams{Observer: obsName, Holder: holder, LeaseDuration: lease, States: states, Limit: limit}
}

func (e *env) obsClaim(s store.Store, p store.ObserverClaimParams) store.ObserverClaimResult {
	e.t.Helper()
	res, err := s.ObserverClaim(e.ctx, p)
	if err != nil {
		e.t.Fatalf("ObserverClaim(%s by %s): %v", p.Observer, p.Holder, err)
	}
	return res
}

func (e *env) obsAdvance(s store.Store, p store.ObserverAdvanceParams) {
	e.t.Helper()
	if err := s.ObserverAdvance(e.ctx, p); err != nil {
		e.t.Fatalf("ObserverAdvance(%s by %s to %s): %v", p.Observer, p.Holder, p.To, err)
	}
}

// walkAll walks the log as holder, Limit entries a claim, advancing after
// each, until it was delivered at least want entries and reached the end,
// and returns what it was delivered. A store may hold recent entries back
// for a while (the PostgreSQL adapter's horizon, while other transactions
// of the cluster run): the walk waits for them.
func (e *env) walkAll(s store.Store, holder job.WorkerID, limit, want int, states ...job.State) []store.ObservedTransition {
	e.t.Helper()
	return e.walkAllOf(s, obsClaim(holder, limit, states...), want)
}

// walkAllOf is walkAll with the claim's params p.
func (e *env) walkAllOf(s store.Store, p store.ObserverClaimParams, want int) []store.ObservedTransition {
	e.t.Helper()
	var out []store.ObservedTransition
	deadline := time.Now().Add(settleFor)
	for {
		res := e.obsClaim(s, p)
		if !res.Held {
			e.t.Fatalf("%s was refused the walk", p.Holder)
		}
		out = append(out, res.Transitions...)
		if res.Through == res.Cursor {
			if len(out) >= want {
				return out
			}
			if time.Now().After(deadline) {
				e.t.Fatalf("the walk delivered %d entries in %v, want %d", len(out), settleFor, want)
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		e.obsAdvance(s, store.ObserverAdvanceParams{Observer: p.Observer, Holder: p.Holder, Token: res.Token, To: res.Through, LeaseDuration: lease})
	}
}

// settleFor bounds how long a test waits for entries a store holds back.
const settleFor = 10 * time.Second

// claimUntil repeats the claim (a holder renewing its own walk) until it
// returns at least n entries.
func (e *env) claimUntil(s store.Store, p store.ObserverClaimParams, n int) store.ObserverClaimResult {
	e.t.Helper()
	deadline := time.Now().Add(settleFor)
	for {
		res := e.obsClaim(s, p)
		if !res.Held {
			e.t.Fatalf("%s was refused the walk: %+v", p.Holder, res)
		}
		if len(res.Transitions) >= n {
			return res
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("the claim returned %d entries in %v, want %d", len(res.Transitions), settleFor, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var allStates = []job.State{
	job.StateScheduled, job.StateAwaitingParent, job.StateRunning, job.StateSucceeded,
	job.StateDeadLettered, job.StateCancelled, job.StateQuarantined,
}

func testObserver(t *testing.T, s *suite) {
	// ObserverClaim: "reads up to p.Limit entries past it, in the walk's
	// order, answering those whose state is declared".
	s.run(t, "WalkDeliversEveryEntryInOrder", func(t *testing.T, e *env) {
		before := e.now()
		ids := e.finish("q", job.StateSucceeded, job.StateDeadLettered, job.StateCancelled)
		after := e.now()
		var want []store.Transition
		for _, id := range ids {
			want = append(want, e.transitions(id)...)
		}
		got := e.walkAll(e.s, w1, 2, len(want), allStates...)
		if len(got) != len(want) {
			t.Fatalf("the walk delivered %d entries, the logs hold %d", len(got), len(want))
		}
		perJob := map[job.ID][]store.Transition{}
		for i, o := range got {
			if i > 0 && !got[i-1].Position.Before(o.Position) {
				t.Fatalf("entry %d at %s does not follow %s", i, o.Position, got[i-1].Position)
			}
			if o.WireName != "storetest.job" || o.Queue != "q" {
				t.Fatalf("entry %d: wire %q queue %q, want storetest.job in q", i, o.WireName, o.Queue)
			}
			if o.FailureDetail != "" {
				t.Fatalf("entry %d carries Failure Detail %q; the walk reads none", i, o.FailureDetail)
			}
			e.within("observed At", o.At, before, after)
			perJob[o.Job] = append(perJob[o.Job], o.Transition)
		}
		for _, id := range ids {
			log := e.transitions(id)
			for i := range log {
				log[i].FailureDetail = ""
				log[i].At = log[i].At.UTC()
			}
			seen := perJob[id]
			for i := range seen {
				seen[i].At = seen[i].At.UTC()
			}
			if !slices.EqualFunc(seen, log, func(a, b store.Transition) bool {
				return a.From == b.From && a.State == b.State && a.Via == b.Via && a.Attempt == b.Attempt && a.At.Equal(b.At)
			}) {
				t.Fatalf("job %d: the walk delivered %v, its log is %v", id, seen, log)
			}
		}
	})

	// ObserverClaimResult.More: "true when the claim read Limit entries".
	// ObserverClaimParams.StartAtEnd: a new registration that starts at the
	// end of the log is delivered only what is written after its first
	// claim; a registered name carries on from its cursor.
	s.run(t, "StartAtEnd", func(t *testing.T, e *env) {
		old := e.finish("q", job.StateDeadLettered, job.StateSucceeded)
		var want int
		for _, id := range old {
			want += len(e.transitions(id))
		}
		// Walk the old entries once under another name, so that they lie
		// below any horizon the store keeps, and register obsName at the
		// beginning with one claim.
		probe := obsClaim(w2, 100, allStates...)
		probe.Observer = "storetest-probe"
		e.walkAllOf(e.s, probe, want)
		e.obsClaim(e.s, obsClaim(w1, 1, allStates...))

		fresh := obsClaim(w1, 2, allStates...)
		fresh.Observer, fresh.StartAtEnd = "storetest-from-now", true
		first := e.obsClaim(e.s, fresh)
		for _, o := range first.Transitions {
			if slices.Contains(old, o.Job) {
				t.Fatalf("a registration started at the end was delivered job %d's old entry %s", o.Job, o.Position)
			}
		}
		e.obsAdvance(e.s, store.ObserverAdvanceParams{Observer: fresh.Observer, Holder: w1, Token: first.Token, To: first.Through, LeaseDuration: lease})
		recent := e.finish("q", job.StateDeadLettered)
		got := e.walkAllOf(e.s, fresh, len(e.transitions(recent[0])))
		for _, o := range got {
			if o.Job != recent[0] {
				t.Fatalf("a registration started at the end was delivered job %d (%s), want only job %d written after", o.Job, o.Position, recent[0])
			}
		}
		// The name registered at the beginning is not moved by StartAtEnd.
		again := obsClaim(w1, 100, allStates...)
		again.StartAtEnd = true
		res := e.obsClaim(e.s, again)
		if !slices.ContainsFunc(res.Transitions, func(o store.ObservedTransition) bool { return o.Job == old[0] }) {
			t.Fatalf("StartAtEnd moved a registered name's cursor: its claim holds %d entries, none of job %d", len(res.Transitions), old[0])
		}
	})

	s.run(t, "MoreWhenFull", func(t *testing.T, e *env) {
		e.insertN("q", 3)
		a := e.claimUntil(e.s, obsClaim(w1, 2, allStates...), 2)
		if !a.More || a.Through != a.Transitions[1].Position {
			t.Fatalf("a claim of limit 2 over 3 entries: %+v, want More through the second", a)
		}
		e.obsAdvance(e.s, store.ObserverAdvanceParams{Observer: obsName, Holder: w1, Token: a.Token, To: a.Through, LeaseDuration: lease})
		b := e.claimUntil(e.s, obsClaim(w1, 2, allStates...), 1)
		if b.More || len(b.Transitions) != 1 {
			t.Fatalf("the claim after it: %+v, want the last entry and no More", b)
		}
	})

	s.run(t, "DeclaredStatesOnly", func(t *testing.T, e *env) {
		ids := e.finish("q", job.StateSucceeded, job.StateDeadLettered, job.StateSucceeded)
		got := e.walkAll(e.s, w1, 100, 1, job.StateDeadLettered)
		if len(got) != 1 || got[0].Job != ids[1] || got[0].State != job.StateDeadLettered || got[0].From != job.StateRunning || got[0].Attempt != 1 {
			t.Fatalf("walk for dead_lettered delivered %+v, want job %d's one Running→Dead-Lettered at Attempt 1", got, ids[1])
		}
		// Walked past, the cursor stands at the end: new entries only.
		e.finish("q", job.StateDeadLettered)
		if again := e.walkAll(e.s, w1, 100, 1, job.StateDeadLettered); len(again) != 1 || again[0].Job == ids[1] {
			t.Fatalf("second walk delivered %+v, want only the new dead-letter", again)
		}
	})

	// ObserverAdvance: "fenced: if p.Holder does not hold a live Lease on
	// the walk under p.Token, it changes nothing and fails with
	// ErrStaleLease"; ObserverClaim: "if another holder's Lease is live ...
	// it answers Held false".
	s.run(t, "LeaseAndFence", func(t *testing.T, e *env) {
		e.needAdvance()
		peer := e.peer()
		e.finish("q", job.StateDeadLettered, job.StateDeadLettered)
		a := e.claimUntil(e.s, obsClaim(w1, 100, job.StateDeadLettered), 2)
		if !a.Held || a.Token == 0 {
			t.Fatalf("first claim: %+v, want held with a token", a)
		}
		if b := e.obsClaim(peer, obsClaim(w2, 100, job.StateDeadLettered)); b.Held {
			t.Fatalf("a second holder took a live walk: %+v", b)
		}
		if again := e.obsClaim(e.s, obsClaim(w1, 100, job.StateDeadLettered)); !again.Held || again.Token != a.Token {
			t.Fatalf("the holder's renewal: %+v, want held under token %d", again, a.Token)
		}
		// The holder stops without releasing: only expiry frees the walk.
		e.advance(lease + time.Second)
		b := e.obsClaim(peer, obsClaim(w2, 100, job.StateDeadLettered))
		if !b.Held || b.Token == a.Token {
			t.Fatalf("after the Lease lapsed: %+v, want held under a new token", b)
		}
		if b.Cursor != a.Cursor || len(b.Transitions) != len(a.Transitions) || b.Transitions[0].Position != a.Transitions[0].Position {
			t.Fatalf("the new holder reads %+v, want the first holder's undelivered batch again %+v", b, a)
		}
		err := e.s.ObserverAdvance(e.ctx, store.ObserverAdvanceParams{Observer: obsName, Holder: w1, Token: a.Token, To: a.Through, LeaseDuration: lease})
		e.wantErr("stale holder's advance", err, store.ErrStaleLease)
		err = peer.ObserverAdvance(e.ctx, store.ObserverAdvanceParams{Observer: obsName, Holder: w2, Token: a.Token, To: a.Through, LeaseDuration: lease})
		e.wantErr("advance under a stale token", err, store.ErrStaleLease)
		if c := e.obsClaim(peer, obsClaim(w2, 100, job.StateDeadLettered)); c.Cursor != b.Cursor {
			t.Fatalf("fenced advances moved the cursor from %s to %s", b.Cursor, c.Cursor)
		}
		// Release hands the walk over at once.
		e.obsAdvance(peer, store.ObserverAdvanceParams{Observer: obsName, Holder: w2, Token: b.Token, To: b.Through, Release: true})
		if c := e.obsClaim(e.s, obsClaim(w1, 100, job.StateDeadLettered)); !c.Held || c.Cursor != b.Through {
			t.Fatalf("after a release: %+v, want held at cursor %s", c, b.Through)
		}
	})

	// "durable cursor": an advance is never undone, never moves back.
	s.run(t, "CursorNeverMovesBack", func(t *testing.T, e *env) {
		e.finish("q", job.StateSucceeded, job.StateSucceeded)
		a := e.claimUntil(e.s, obsClaim(w1, 100, job.StateSucceeded), 2)
		if len(a.Transitions) != 2 {
			t.Fatalf("claim returned %d succeeded entries, want 2", len(a.Transitions))
		}
		e.obsAdvance(e.s, store.ObserverAdvanceParams{Observer: obsName, Holder: w1, Token: a.Token, To: a.Through, LeaseDuration: lease})
		e.obsAdvance(e.s, store.ObserverAdvanceParams{Observer: obsName, Holder: w1, Token: a.Token, To: a.Transitions[0].Position, LeaseDuration: lease})
		if b := e.obsClaim(e.s, obsClaim(w1, 100, job.StateSucceeded)); b.Cursor != a.Through || len(b.Transitions) != 0 {
			t.Fatalf("after advancing to %s and back: %+v", a.Through, b)
		}
	})

	// Retention: "JobPurge never purges a job holding a Transition Log
	// entry a live registration has not been walked past".
	s.run(t, "RetentionHoldsUndelivered", func(t *testing.T, e *env) {
		e.needAdvance()
		a := e.obsClaim(e.s, obsClaim(w1, 100, job.StateDeadLettered)) // registers at the start
		ids := e.finish("q", job.StateSucceeded, job.StateDeadLettered)
		e.advance(2 * time.Hour)
		if n := e.purge(100, time.Hour, job.StateSucceeded, job.StateDeadLettered); n != 0 {
			t.Fatalf("purged %d jobs the observer was not yet walked past", n)
		}
		b := e.claimUntil(e.s, obsClaim(w1, 4, allStates...), 4)
		if !b.Held || b.Cursor != a.Cursor {
			t.Fatalf("the registration's second claim: %+v, want held at its first cursor %s", b, a.Cursor)
		}
		// Walk past the first job (its three entries) onto the second's insert.
		e.obsAdvance(e.s, store.ObserverAdvanceParams{Observer: obsName, Holder: w1, Token: b.Token, To: b.Through, LeaseDuration: lease})
		if n := e.purge(100, time.Hour, job.StateSucceeded, job.StateDeadLettered); n != 1 {
			t.Fatalf("purged %d jobs, want the one walked past", n)
		}
		e.wantGone(ids[0])
		e.get(ids[1])
		if err := e.s.ObserverRemove(e.ctx, obsName); err != nil {
			t.Fatal(err)
		}
		if n := e.purge(100, time.Hour, job.StateDeadLettered); n != 1 {
			t.Fatalf("after ObserverRemove purged %d, want 1", n)
		}
	})

	// store.TransitionLogCap yields to the walk: "retention never purges a
	// transition before it was delivered" — the per-job cap included. A job
	// whose log outgrows the cap while a registration waits keeps every
	// entry until the walk passes it.
	s.run(t, "CapHoldsUndelivered", func(t *testing.T, e *env) {
		e.obsClaim(e.s, obsClaim(w1, 1, job.StateDeadLettered)) // registers at the start
		attempts := store.TransitionLogCap/2 + 10
		id := e.insert(withMax("q", attempts))[0]
		for range attempts {
			e.reportApplied(w1, failed(e.claimOne(w1, "q"), 0))
		}
		e.wantState(id, job.StateDeadLettered)
		want := 1 + 2*attempts // the insert, then a claim and a failure per Attempt
		n := 0
		for _, o := range e.walkAll(e.s, w1, 1000, want, allStates...) {
			if o.Job == id {
				n++
			}
		}
		if n != want {
			t.Fatalf("the walk delivered %d of the job's %d entries; the cap dropped undelivered ones", n, want)
		}
	})

	// store.ObserverRemoveAfter: an unseen registration is considered
	// removed.
	s.run(t, "UnseenRegistrationHoldsNothing", func(t *testing.T, e *env) {
		e.needAdvance()
		e.obsClaim(e.s, obsClaim(w1, 1, job.StateSucceeded))
		e.finish("q", job.StateSucceeded)
		e.advance(store.ObserverRemoveAfter + time.Hour)
		if n := e.purge(100, time.Hour, job.StateSucceeded); n != 1 {
			t.Fatalf("purged %d behind a registration unseen for %v, want 1", n, store.ObserverRemoveAfter)
		}
	})

	s.run(t, "Errors", func(t *testing.T, e *env) {
		bad := []store.ObserverClaimParams{
			{Holder: w1, LeaseDuration: lease, States: []job.State{job.StateSucceeded}, Limit: 1},
			{Observer: obsName, LeaseDuration: lease, States: []job.State{job.StateSucceeded}, Limit: 1},
			{Observer: obsName, Holder: w1, States: []job.State{job.StateSucceeded}, Limit: 1},
			{Observer: obsName, Holder: w1, LeaseDuration: lease, Limit: 1},
			{Observer: obsName, Holder: w1, LeaseDuration: lease, States: []job.State{job.StateUnknown}, Limit: 1},
			{Observer: obsName, Holder: w1, LeaseDuration: lease, States: []job.State{job.StateSucceeded}},
		}
		for i, p := range bad {
			_, err := e.s.ObserverClaim(e.ctx, p)
			e.wantErr("invalid claim "+string(rune('a'+i)), err, store.ErrInvalidParams)
		}
		err := e.s.ObserverAdvance(e.ctx, store.ObserverAdvanceParams{Observer: "nobody", Holder: w1, Token: 1, LeaseDuration: lease})
		e.wantErr("advance of an unknown observer", err, store.ErrNotFound)
		e.wantErr("remove of an unknown observer", e.s.ObserverRemove(e.ctx, "nobody"), store.ErrNotFound)
		e.wantErr("remove of no name", e.s.ObserverRemove(e.ctx, ""), store.ErrInvalidParams)
		if errors.Is(err, store.ErrInvalidParams) {
			t.Fatal("an unknown observer is not invalid params")
		}
	})
}
