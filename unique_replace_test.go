package backwave_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/memstore"
	"github.com/backwave/backwave/vtime"
)

// virtualClient returns a Client over an In-Memory Store, both on one
// Manual clock.
func virtualClient(t *testing.T) (*vtime.Manual, *memstore.Store, *backwave.Client) {
	t.Helper()
	clock := vtime.NewManual(vtime.Epoch)
	st := memstore.New(memstore.Options{Clock: clock})
	c, err := backwave.NewClient(st, backwave.Config{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	return clock, st, c
}

// UniqueScope.Replace: "an enqueue that finds the key held by a Scheduled
// job … rewrites that job in place of storing its own"; "A holder that is
// Running … is not rewritten: the enqueue fails with ErrHolderNotPending
// and stores nothing".
func TestUniqueReplace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock, st, c := virtualClient(t)
	admin, err := backwave.NewAdmin(st, "test")
	if err != nil {
		t.Fatal(err)
	}
	key := backwave.WithUnique("greet:latest", backwave.UniqueWhileLive().Replace())
	first, err := c.EnqueueUnique(ctx, greet{Name: "Ada"}, key, backwave.WithDelay(time.Hour), backwave.WithTags(backwave.Label("old")))
	if err != nil || !first.Inserted {
		t.Fatalf("EnqueueUnique = %+v, %v; want a stored job", first, err)
	}
	second, err := c.EnqueueUnique(ctx, greet{Name: "Grace"}, key, backwave.WithTags(backwave.Label("new")))
	if err != nil || second != (backwave.EnqueueResult{ID: first.ID, Replaced: true}) {
		t.Fatalf("EnqueueUnique of a held key in Replace mode = %+v, %v; want %d replaced", second, err, first.ID)
	}
	j, err := st.JobGet(ctx, first.ID)
	switch {
	case err != nil:
		t.Fatal(err)
	case string(j.Payload) != `{"Name":"Grace"}`:
		t.Fatalf("payload = %s, want the second enqueue's args", j.Payload)
	case !j.ScheduledAt.Equal(clock.Now()):
		t.Fatalf("due at %v, want now (%v): the second enqueue named no due time", j.ScheduledAt, clock.Now())
	case len(j.Tags) != 1 || j.Tags[0] != job.Label("new"):
		t.Fatalf("Tags = %v, want [new]", j.Tags)
	}
	audit, err := admin.Audit(ctx, backwave.AuditListParams{JobID: first.ID})
	if err != nil || len(audit.Items) != 1 || audit.Items[0].Action != backwave.AuditUniqueReplace || audit.Items[0].Actor != backwave.ActorSystem {
		t.Fatalf("Admin.Audit(job) = %+v, %v; want one unique_replace entry by the system", audit.Items, err)
	}

	// Running: refused, nothing stored, the holder keeps what it runs with.
	if _, err := st.JobClaim(ctx, store.ClaimParams{Worker: "w", Queues: []string{"default"}, Limit: 1, LeaseDuration: time.Minute}); err != nil {
		t.Fatal(err)
	}
	_, err = c.EnqueueMany(ctx, []backwave.EnqueueParams{{Args: greet{Name: "other"}}, {Args: greet{Name: "Hopper"}, Options: []backwave.EnqueueOption{key}}})
	if !errors.Is(err, backwave.ErrHolderNotPending) {
		t.Fatalf("EnqueueMany with a Replace of a Running holder: %v, want ErrHolderNotPending", err)
	}
	if j, _ := st.JobGet(ctx, first.ID); string(j.Payload) != `{"Name":"Grace"}` {
		t.Fatalf("Running holder's payload = %s after a refused Replace", j.Payload)
	}
	if n, err := st.JobCountByState(ctx, store.CountParams{}); err != nil || n[job.StateScheduled] != 0 || n[job.StateRunning] != 1 {
		t.Fatalf("counts %v, %v: the refused batch stored something", n, err)
	}
	// Without the mode the held key answers the holder, as ever.
	if r, err := c.EnqueueUnique(ctx, greet{}, backwave.WithUnique("greet:latest", backwave.UniqueWhileLive())); err != nil || r != (backwave.EnqueueResult{ID: first.ID}) {
		t.Fatalf("plain enqueue of the key held by a Running job = %+v, %v", r, err)
	}
}

// UniqueScope.Debounce: "a burst runs once, wait after its last enqueue,
// and a burst that never pauses still runs maxWait after it began".
func TestUniqueDebounce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock, st, c := virtualClient(t)
	key := backwave.WithUnique("reindex:42", backwave.UniqueWhileLive().Debounce(time.Minute, 5*time.Minute))
	start := clock.Now()
	var id backwave.JobID
	for i := range 10 {
		r, err := c.EnqueueUnique(ctx, greet{Name: string(rune('a' + i))}, key)
		if err != nil || r.Inserted != (i == 0) || r.Replaced != (i > 0) {
			t.Fatalf("enqueue %d of the burst = %+v, %v", i, r, err)
		}
		id = r.ID
		j, _ := st.JobGet(ctx, id)
		want := clock.Now().Add(time.Minute)
		if bound := start.Add(5 * time.Minute); want.After(bound) {
			want = bound // the max wait caps the push …
		}
		if want.Before(clock.Now()) {
			want = clock.Now() // … and a job past it is due now
		}
		if !j.ScheduledAt.Equal(want) {
			t.Fatalf("after enqueue %d the job is due at %v, want %v", i, j.ScheduledAt.Sub(start), want.Sub(start))
		}
		clock.Advance(40 * time.Second)
	}
	if j, _ := st.JobGet(ctx, id); string(j.Payload) != `{"Name":"j"}` {
		t.Fatalf("payload = %s, want the burst's last", j.Payload)
	}
}

// Bad input: "wait must be positive and maxWait at least wait; WithRunAt
// and WithDelay are refused beside it"; a rewriting job names no parents.
// Each is ErrInvalidJob, and nothing is stored.
func TestUniqueReplaceInvalid(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStore()
	c, err := backwave.NewClient(st, backwave.Config{})
	if err != nil {
		t.Fatal(err)
	}
	opt := func(opts ...backwave.EnqueueOption) []backwave.EnqueueParams {
		return []backwave.EnqueueParams{{Args: greet{}}, {Args: greet{}, Options: opts}}
	}
	bad := map[string][]backwave.EnqueueParams{
		"negative wait":      opt(backwave.WithUnique("k", backwave.UniqueWhileLive().Debounce(-time.Second, time.Minute))),
		"zero wait":          opt(backwave.WithUnique("k", backwave.UniqueWhileLive().Debounce(0, time.Minute))),
		"max below wait":     opt(backwave.WithUnique("k", backwave.UniqueFor(time.Hour).Debounce(time.Minute, time.Second))),
		"debounce and delay": opt(backwave.WithUnique("k", backwave.UniqueWhileLive().Debounce(time.Minute, time.Hour)), backwave.WithDelay(time.Second)),
		"debounce and runAt": opt(backwave.WithUnique("k", backwave.UniqueWhileLive().Debounce(time.Minute, time.Hour)), backwave.WithRunAt(time.Now())),
		"replace with parents": opt(backwave.WithUnique("k", backwave.UniqueWhileLive().Replace()),
			backwave.WithParentsInBatch(backwave.OnSuccess, 0)),
		"mode without scope": opt(backwave.WithUnique("k", backwave.UniqueScope{}.Replace())),
	}
	for name, params := range bad {
		if _, err := c.EnqueueManyUnique(ctx, params); !errors.Is(err, backwave.ErrInvalidJob) {
			t.Errorf("%s: %v, want ErrInvalidJob", name, err)
		}
	}
	if n, err := st.JobCountByState(ctx, store.CountParams{}); err != nil || n[job.StateScheduled] != 0 {
		t.Fatalf("counts after refused enqueues: %v, %v; want none", n, err)
	}
}

// UniqueScope.String names the mode.
func TestUniqueScopeString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s    backwave.UniqueScope
		want string
	}{
		{backwave.UniqueWhileLive(), "while live"},
		{backwave.UniqueWhileLive().Replace(), "while live, replace"},
		{backwave.UniqueFor(time.Hour).Debounce(time.Minute, 10*time.Minute), "for 1h0m0s, debounce 1m0s up to 10m0s"},
		{backwave.UniqueScope{}.Replace(), "none"},
	} {
		if got := tc.s.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}

// Transactional Enqueue in Replace mode: the rewrite commits or rolls back
// with the application's transaction, on every adapter that has it.
func TestUniqueReplaceTx(t *testing.T) {
	t.Parallel()
	eachTxEnv(t, func(t *testing.T, e *txEnv) {
		ctx := t.Context()
		c, err := backwave.NewClient(e.store, backwave.Config{})
		if err != nil {
			t.Fatal(err)
		}
		key := backwave.WithUnique("ship:latest", backwave.UniqueWhileLive().Replace())
		id, err := c.Enqueue(ctx, shipOrder{Order: 1}, key, backwave.WithDelay(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		payload := func() string {
			t.Helper()
			j, err := e.store.JobGet(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			return string(j.Payload)
		}
		before := payload()
		for _, commit := range []bool{false, true} {
			tx := e.begin(t)
			got, err := c.EnqueueTx(ctx, tx.tx, shipOrder{Order: 2}, key)
			if err != nil || got != id {
				t.Fatalf("EnqueueTx in Replace mode = %d, %v; want the holder %d", got, err, id)
			}
			end := tx.rollback
			if commit {
				end = tx.commit
			}
			if err := end(); err != nil {
				t.Fatal(err)
			}
			if p := payload(); (p == before) == commit {
				t.Fatalf("after the transaction (commit %v) the holder's payload is %s (it was %s)", commit, p, before)
			}
		}
	})
}
