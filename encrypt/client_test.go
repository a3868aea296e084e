package encrypt_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/encrypt"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

type card struct {
	Number string `json:"number"`
}

func (card) WireName() string { return "crypt.card" }

// TestClientOverEncryptedStore runs the real Client — Shell Pump and Node
// Driver unchanged — over the wrapped store: handlers get plaintext
// arguments, their Job Output and Failure Detail are stored sealed, and a
// job whose key was purged is Quarantined at claim while the Pump carries
// on with the rest (the Driver leases only the jobs a claim returns).
func TestClientOverEncryptedStore(t *testing.T) {
	t.Parallel()
	for _, b := range backends()[:2] {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			o := b.open(t)
			old := ring(t, "k0")
			lost := insert(t, wrap(t, o.raw, old), store.NewJob{WireName: "crypt.card", Queue: backwave.DefaultQueue,
				Payload: []byte(`{"number":"4111-lost"}`), MaxAttempts: 3})[0]
			s := wrap(t, o.raw, ring(t, "k1"))

			var mu sync.Mutex
			seen := map[string]int{}
			done := make(chan struct{})
			h := backwave.NewHandlers()
			err := backwave.AddHandlerFunc(h, func(_ context.Context, j *backwave.Job[card]) error {
				mu.Lock()
				defer mu.Unlock()
				seen[j.Args.Number]++
				if j.Args.Number == "4111-flaky" && seen[j.Args.Number] == 1 {
					return errors.New("declined card 4111-flaky")
				}
				j.SetOutput([]byte("receipt for " + j.Args.Number))
				if seen["4111-a"] == 1 && seen["4111-flaky"] == 2 {
					close(done)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			retry := backwave.RetryPolicy{Initial: time.Millisecond, Max: time.Millisecond, Multiplier: 1}
			c, err := backwave.NewClient(s, backwave.Config{
				Handlers:    h,
				Groups:      []backwave.WorkerGroupOptions{backwave.DefaultWorkerGroup("g", backwave.Strict(backwave.DefaultQueue))},
				RetryPolicy: retry,
				Logger:      slog.New(slog.DiscardHandler),
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Start(ctx); err != nil {
				t.Fatal(err)
			}
			ids, err := c.EnqueueMany(ctx, []backwave.EnqueueParams{{Args: card{"4111-a"}}, {Args: card{"4111-flaky"}}})
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-done:
			case <-ctx.Done():
				t.Fatal("the jobs did not run")
			}
			if err := c.Stop(ctx); err != nil {
				t.Fatal(err)
			}
			if j, _ := o.raw.JobGet(ctx, lost); j.State != job.StateQuarantined || seen["4111-lost"] != 0 {
				t.Fatalf("the job sealed under a purged key is %s and ran %d times, want Quarantined and never run", j.State, seen["4111-lost"])
			}
			for _, id := range ids {
				out, err := s.JobOutput(ctx, id)
				if err != nil || !strings.HasPrefix(string(out), "receipt for 4111-") {
					t.Fatalf("JobOutput(%d) = %q, %v", id, out, err)
				}
			}
			log, err := s.JobTransitions(ctx, ids[1])
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, e := range log {
				found = found || strings.Contains(e.FailureDetail, "declined card 4111-flaky")
			}
			if !found {
				t.Fatalf("the flaky job's Failure Detail does not read back: %+v", log)
			}
			for ch, vals := range rawValues(t, o.raw) {
				for _, v := range vals {
					if strings.Contains(string(v.Value), "4111") {
						t.Fatalf("%s %+v holds plaintext: %q", ch, v.Key, v.Value)
					}
				}
			}
			if o.columns != nil {
				if s, found := containsAny(o.columns(t), "4111"); found {
					t.Fatalf("a column holds the plaintext %q", s)
				}
			}
			checkAdminUnopened(t, wrap(t, o.raw, ring(t, "k2")), ids[0])
		})
	}
}

// checkAdminUnopened: Admin.Job on a job whose payload and Job Output no
// longer open (read under a key ring that lacks their key) still answers
// its state and Transition Log, with the payload and the output as stored:
// envelopes, never plaintext, never an error that hides the job.
func checkAdminUnopened(t *testing.T, s backwave.Store, id job.ID) {
	t.Helper()
	a, err := backwave.NewAdmin(s, "test:operator")
	if err != nil {
		t.Fatal(err)
	}
	d, err := a.Job(t.Context(), id)
	if err != nil {
		t.Fatalf("Admin.Job(%d) under a ring without its key: %v", id, err)
	}
	if d.Job.State != backwave.StateSucceeded || len(d.Transitions) == 0 {
		t.Fatalf("Admin.Job(%d) = state %s, %d Transition Log entries; want Succeeded with its log", id, d.Job.State, len(d.Transitions))
	}
	if !encrypt.Sealed(d.Job.Payload) || !encrypt.Sealed(d.Output) {
		t.Fatalf("Admin.Job(%d): payload %q, output %q; want both as stored envelopes", id, d.Job.Payload, d.Output)
	}
}
