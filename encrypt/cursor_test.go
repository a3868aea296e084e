package encrypt_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/encrypt"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// TestCursorSealed: a Cursor saved through the wrapper, by a renewal and by
// an outcome, is stored as an envelope bound to its job and reads back in
// plaintext through the claim and the Monitor; the raw store never holds
// the plaintext, and a store without the key reads only the envelope.
func TestCursorSealed(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			o := b.open(t)
			s := wrap(t, o.raw, ring(t, "k1"))
			insert(t, s, newJob("q", "SECRET-payload"))
			j := claim(t, s, "q", 1)[0]
			renewed := []byte(`{"row":"SECRET-renewed"}`)
			if _, err := s.LeaseRenew(ctx, store.RenewParams{Worker: worker, Leases: []job.Lease{j.Lease()}, LeaseDuration: lease,
				Cursors: []store.CursorSave{{Lease: j.Lease(), Value: renewed}}}); err != nil {
				t.Fatal(err)
			}
			raw, err := o.raw.JobGet(ctx, j.ID)
			if err != nil {
				t.Fatal(err)
			}
			if raw.Cursor == nil || !encrypt.Sealed(raw.Cursor.Value) || bytes.Contains(raw.Cursor.Value, []byte("SECRET")) {
				t.Fatalf("the raw store holds the Cursor %+v, want an envelope", raw.Cursor)
			}
			if got, err := s.JobGet(ctx, j.ID); err != nil || got.Cursor == nil || !bytes.Equal(got.Cursor.Value, renewed) {
				t.Fatalf("the wrapper reads the Cursor %+v (%v), want %s", got.Cursor, err, renewed)
			}

			last := []byte(`{"row":"SECRET-last"}`)
			out := outcome(j, core.ResultFailed)
			out.Cursor = last
			report(t, s, out)
			time.Sleep(5 * time.Millisecond) // the retry's delay: 1ms
			again := claim(t, s, "q", 1)
			if len(again) != 1 || again[0].Cursor == nil || !bytes.Equal(again[0].Cursor.Value, last) || again[0].Cursor.Attempt != j.Attempt {
				t.Fatalf("the next Attempt's claim: %+v, want the outcome's Cursor in plaintext", again)
			}
			if raw, err = o.raw.JobGet(ctx, j.ID); err != nil || bytes.Contains(raw.Cursor.Value, []byte("SECRET")) {
				t.Fatalf("the raw store holds the outcome's Cursor %q (%v) in plaintext", raw.Cursor.Value, err)
			}
		})
	}
}
