package sqlite_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/sqlite"
)

// TestLargeBlobsInOneBatch inserts, claims and succeeds a batch whose
// payloads and outputs together run to many megabytes, more than one
// statement's share, and reads every byte back.
func TestLargeBlobsInOneBatch(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("writes megabytes")
	}
	s, _ := newStore(t, sqlite.Options{})
	ctx := t.Context()
	const n = 12
	blob := func(i int, kind byte) []byte {
		b := bytes.Repeat([]byte{kind, byte(i)}, store.MaxPayloadBytes/2)
		b[0] = 0 // a NUL and every other byte value survive
		return b
	}
	jobs := make([]store.NewJob, n)
	for i := range jobs {
		jobs[i] = store.NewJob{WireName: "w", Queue: "q", MaxAttempts: 1, Payload: blob(i, 'p')}
	}
	ids, err := s.JobInsertMany(ctx, store.InsertManyParams{Jobs: jobs})
	if err != nil {
		t.Fatal(err)
	}
	claimed, err := s.JobClaim(ctx, store.ClaimParams{Worker: "w", Queues: []string{"q"}, Limit: n, LeaseDuration: time.Minute})
	if err != nil || len(claimed) != n {
		t.Fatalf("claim: %d jobs, %v", len(claimed), err)
	}
	outs := make([]store.Outcome, n)
	for i, j := range claimed {
		if j.ID != ids[i] || !bytes.Equal(j.Payload, jobs[i].Payload) {
			t.Fatalf("claimed job %d (id %d): payload of %d bytes differs", i, j.ID, len(j.Payload))
		}
		outs[i] = store.Outcome{Outcome: core.Outcome{Lease: j.Lease(), State: job.StateSucceeded, Via: core.ViaSucceed}, Output: blob(i, 'o')}
	}
	res, err := s.OutcomeReport(ctx, store.ReportParams{Worker: "w", Outcomes: outs})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if !r.Applied {
			t.Fatalf("outcome %d not applied", i)
		}
		got, err := s.JobOutput(ctx, ids[i])
		if err != nil || !bytes.Equal(got, outs[i].Output) {
			t.Fatalf("job %d: output of %d bytes differs (%v)", ids[i], len(got), err)
		}
	}
}
