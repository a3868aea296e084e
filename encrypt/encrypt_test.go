package encrypt_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/encrypt"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

const (
	worker job.WorkerID = "crypt-worker"
	lease               = time.Minute
)

func ring(t *testing.T, current string, ids ...string) *encrypt.KeyRing {
	t.Helper()
	m := make(map[string][]byte)
	for _, id := range append([]string{current}, ids...) {
		k := make([]byte, encrypt.KeySize)
		if _, err := rand.Read(k); err != nil {
			t.Fatal(err)
		}
		m[id] = k
	}
	r, err := encrypt.NewKeyRing(current, m)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// merged returns a ring with a's current key and every key of a and b.
func merged(t *testing.T, current *encrypt.KeyRing, currentID string, old *encrypt.KeyRing, oldIDs ...string) *encrypt.KeyRing {
	t.Helper()
	ctx := context.Background()
	m := map[string][]byte{}
	k, err := current.Key(ctx, currentID)
	if err != nil {
		t.Fatal(err)
	}
	m[currentID] = k
	for _, id := range oldIDs {
		if m[id], err = old.Key(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	r, err := encrypt.NewKeyRing(currentID, m)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func wrap(t *testing.T, s store.Store, keys encrypt.KeyProvider) store.Store {
	t.Helper()
	w, err := encrypt.Wrap(t.Context(), s, keys)
	if err != nil {
		t.Fatalf("Wrap: %v", err)
	}
	return w
}

func newJob(queue, payload string) store.NewJob {
	return store.NewJob{WireName: "crypt.job", Queue: queue, Payload: []byte(payload), MaxAttempts: 3,
		Tags: []job.Tag{job.Keyed("tenant", "acme")}}
}

func insert(t *testing.T, s store.Store, jobs ...store.NewJob) []job.ID {
	t.Helper()
	ids, err := s.JobInsertMany(t.Context(), store.InsertManyParams{Jobs: jobs})
	if err != nil {
		t.Fatalf("JobInsertMany: %v", err)
	}
	return ids
}

func claim(t *testing.T, s store.Store, queue string, limit int) []job.Job {
	t.Helper()
	jobs, err := s.JobClaim(t.Context(), store.ClaimParams{Worker: worker, Queues: []string{queue}, Limit: limit, LeaseDuration: lease})
	if err != nil {
		t.Fatalf("JobClaim: %v", err)
	}
	return jobs
}

func outcome(j job.Job, r core.Result) store.Outcome {
	return store.Outcome{Outcome: core.Decide(core.AttemptInfo{Lease: j.Lease(), MaxAttempts: j.Ceiling()}, r,
		core.RetryPolicy{Initial: time.Millisecond, Max: time.Millisecond, Multiplier: 1})}
}

func report(t *testing.T, s store.Store, os ...store.Outcome) {
	t.Helper()
	res, err := s.OutcomeReport(t.Context(), store.ReportParams{Worker: worker, Outcomes: os})
	if err != nil {
		t.Fatalf("OutcomeReport: %v", err)
	}
	for _, r := range res {
		if !r.Applied {
			t.Fatalf("outcome for %s not applied", r.Lease)
		}
	}
}

func schedule(name, payload string) store.ScheduleDef {
	return store.ScheduleDef{Name: name, Spec: "0 * * * *", Template: store.JobTemplate{
		WireName: "crypt.scheduled", Queue: "sched-" + name, Payload: []byte(payload), MaxAttempts: 2}}
}

// rawValues reads every stored value of every channel through the raw
// rewrite capability.
func rawValues(t *testing.T, s store.Store) map[store.Channel][]store.RawValue {
	t.Helper()
	rw, ok := s.(store.Rewriter)
	if !ok {
		t.Fatalf("%T has no store.Rewriter", s)
	}
	out := map[store.Channel][]store.RawValue{}
	for _, ch := range []store.Channel{store.ChannelPayload, store.ChannelOutput, store.ChannelFailureDetail, store.ChannelTemplate} {
		vals, err := rw.RawScan(t.Context(), store.RawScanParams{Channel: ch, Limit: 10_000})
		if err != nil {
			t.Fatalf("RawScan(%s): %v", ch, err)
		}
		out[ch] = vals
	}
	return out
}

// TestNoPlaintextAtRest writes every encrypted channel through every
// insert path, then reads the bytes the database holds — the SELECTed
// columns and, for SQLite, the database files themselves — and finds no
// plaintext, while the wrapped store reads it all back (acceptance 1, 4).
func TestNoPlaintextAtRest(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			o := b.open(t)
			s := wrap(t, o.raw, ring(t, "k1"))

			want := map[job.ID]string{}
			for i, id := range insert(t, s, newJob("q", "SECRET-single")) {
				want[id] = []string{"SECRET-single"}[i]
			}
			bulk := make([]store.NewJob, 20)
			for i := range bulk {
				bulk[i] = newJob("q", fmt.Sprintf("SECRET-bulk-%02d", i))
			}
			for i, id := range insert(t, s, bulk...) {
				want[id] = fmt.Sprintf("SECRET-bulk-%02d", i)
			}
			u := newJob("q", "SECRET-unique")
			u.Unique = store.Unique{Key: "invoice:1", Scope: store.UniqueWhileLive}
			parent := newJob("q", "SECRET-parent")
			res, err := s.JobInsertManyResults(ctx, store.InsertManyParams{Jobs: []store.NewJob{parent, u}})
			if err != nil {
				t.Fatal(err)
			}
			want[res[0].ID], want[res[1].ID] = "SECRET-parent", "SECRET-unique"
			if again, err := s.JobInsertManyResults(ctx, store.InsertManyParams{Jobs: []store.NewJob{u}}); err != nil || again[0].Inserted {
				t.Fatalf("a held unique key inserted again: %+v, %v", again, err)
			}
			// A Replace rewrites the holder's payload: sealed like any
			// other, bound to the holder's id.
			r := newJob("q", "SECRET-replaced")
			r.Unique = store.Unique{Key: "invoice:1", Scope: store.UniqueWhileLive, Mode: store.UniqueReplace}
			if again, err := s.JobInsertManyResults(ctx, store.InsertManyParams{Jobs: []store.NewJob{r}}); err != nil ||
				again[0] != (store.InsertResult{ID: res[1].ID, Replaced: true}) {
				t.Fatalf("a Replace of the held key: %+v, %v; want job %d replaced", again, err, res[1].ID)
			}
			want[res[1].ID] = "SECRET-replaced"
			if o.beginTx != nil {
				tx, commit := o.beginTx(t)
				ids, err := s.(store.TxInserter).JobInsertManyInTx(ctx, tx, store.InsertManyParams{Jobs: []store.NewJob{newJob("q", "SECRET-tx")}})
				if err != nil {
					t.Fatalf("JobInsertManyInTx: %v", err)
				}
				if err := commit(); err != nil {
					t.Fatal(err)
				}
				want[ids[0]] = "SECRET-tx"
				r.Payload = []byte("SECRET-tx-replaced")
				tx, commit = o.beginTx(t)
				if ids, err := s.(store.TxInserter).JobInsertManyInTx(ctx, tx, store.InsertManyParams{Jobs: []store.NewJob{r}}); err != nil ||
					ids[0] != res[1].ID {
					t.Fatalf("JobInsertManyInTx of a Replace: %v, %v; want the holder %d", ids, err, res[1].ID)
				}
				if err := commit(); err != nil {
					t.Fatal(err)
				}
				want[res[1].ID] = "SECRET-tx-replaced"
			} else if _, ok := s.(store.TxInserter); ok {
				t.Fatal("the wrapped store offers Transactional Enqueue its store does not have")
			}
			if _, err := s.ScheduleUpsert(ctx, store.ScheduleUpsertParams{Schedule: schedule("nightly", "SECRET-template")}); err != nil {
				t.Fatal(err)
			}
			minted, err := s.ScheduleTrigger(ctx, store.ScheduleTriggerParams{Name: "nightly"})
			if err != nil {
				t.Fatal(err)
			}

			jobs := claim(t, s, "q", 100)
			if len(jobs) != len(want) {
				t.Fatalf("claimed %d jobs, want %d", len(jobs), len(want))
			}
			var outs []store.Outcome
			for i, j := range jobs {
				if string(j.Payload) != want[j.ID] {
					t.Fatalf("job %d claimed with payload %q, want %q", j.ID, j.Payload, want[j.ID])
				}
				if i%2 == 0 {
					o := outcome(j, core.ResultSucceeded)
					o.Output = []byte("SECRET-output-" + want[j.ID])
					outs = append(outs, o)
				} else {
					o := outcome(j, core.ResultFailed)
					o.FailureDetail = "SECRET-detail: card 4111 declined"
					outs = append(outs, o)
				}
			}
			report(t, s, outs...)
			mj := claim(t, s, "sched-nightly", 1)
			if len(mj) != 1 || mj[0].ID != minted || string(mj[0].Payload) != "SECRET-template" {
				t.Fatalf("minted job claimed as %+v, want job %d with the template's payload", mj, minted)
			}

			// The database holds no plaintext, in any column or file.
			for ch, vals := range rawValues(t, o.raw) {
				if len(vals) == 0 {
					t.Fatalf("no stored %s values: the test wrote none", ch)
				}
				for _, v := range vals {
					if !encrypt.Sealed(v.Value) && !encrypt.SealedText(string(v.Value)) {
						t.Fatalf("%s %+v is stored without an envelope: %q", ch, v.Key, v.Value)
					}
				}
			}
			if o.columns != nil {
				cols := o.columns(t)
				if len(cols) < len(want)+1 {
					t.Fatalf("SELECT read %d values, want at least %d", len(cols), len(want)+1)
				}
				if s, found := containsAny(cols, "SECRET", "4111"); found {
					t.Fatalf("a SELECTed column holds the plaintext %q", s)
				}
			}
			if o.files != nil {
				files := o.files(t)
				if _, found := containsAny(files, "acme"); !found {
					t.Fatal("the database files do not hold even the plaintext Tag: the grep reads the wrong bytes")
				}
				if s, found := containsAny(files, "SECRET", "4111"); found {
					t.Fatalf("a database file holds the plaintext %q", s)
				}
			}

			// Through the wrapped store everything reads back.
			for _, o := range outs {
				id := o.Lease.ID
				if j, err := s.JobGet(ctx, id); err != nil || string(j.Payload) != want[id] {
					t.Fatalf("JobGet(%d) = %q, %v; want %q", id, j.Payload, err, want[id])
				}
				if o.Output != nil {
					if got, err := s.JobOutput(ctx, id); err != nil || !bytes.Equal(got, o.Output) {
						t.Fatalf("JobOutput(%d) = %q, %v; want %q", id, got, err, o.Output)
					}
					continue
				}
				log, err := s.JobTransitions(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if d := log[len(log)-1].FailureDetail; d != o.FailureDetail {
					t.Fatalf("job %d's Failure Detail reads %q, want %q", id, d, o.FailureDetail)
				}
			}
			list, err := s.ScheduleList(ctx)
			if err != nil || len(list.Schedules) != 1 || string(list.Schedules[0].Template.Payload) != "SECRET-template" {
				t.Fatalf("ScheduleList = %+v, %v; want the template in plaintext", list, err)
			}
			again, err := s.ScheduleUpsert(ctx, store.ScheduleUpsertParams{Schedule: schedule("nightly", "SECRET-template")})
			if err != nil || again.Outcome != store.UpsertUnchanged {
				t.Fatalf("registering the same schedule again = %+v, %v; want unchanged", again, err)
			}
		})
	}
}

// TestUndecryptableIsQuarantined: a job whose payload cannot be decrypted —
// tampered with, swapped with another row's, its key purged, a template
// ciphertext moved to another schedule — becomes Quarantined at its claim
// with a Failure Detail saying so, and is never retried (acceptance 2, 4).
func TestUndecryptableIsQuarantined(t *testing.T) {
	t.Parallel()
	type spoil func(t *testing.T, raw store.Store, keys *encrypt.KeyRing, ids []job.ID) (encrypt.KeyProvider, []job.ID)
	rewrite := func(t *testing.T, raw store.Store, ch store.Channel, swaps ...store.RawSwap) {
		t.Helper()
		done, err := raw.(store.Rewriter).RawRewrite(t.Context(), store.RawRewriteParams{Channel: ch, Swaps: swaps})
		if err != nil || !done[0] {
			t.Fatalf("RawRewrite = %v, %v", done, err)
		}
	}
	payloadOf := func(t *testing.T, raw store.Store, id job.ID) []byte {
		t.Helper()
		j, err := raw.JobGet(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		return j.Payload
	}
	for _, tc := range []struct {
		name  string
		spoil spoil
		why   string
	}{
		{"tampered", func(t *testing.T, raw store.Store, keys *encrypt.KeyRing, ids []job.ID) (encrypt.KeyProvider, []job.ID) {
			old := payloadOf(t, raw, ids[0])
			bad := bytes.Clone(old)
			bad[len(bad)-5] ^= 0x20
			rewrite(t, raw, store.ChannelPayload, store.RawSwap{Key: store.RawKey{Job: ids[0]}, Old: old, New: bad})
			return keys, ids[:1]
		}, "authentication failed"},
		{"swapped", func(t *testing.T, raw store.Store, keys *encrypt.KeyRing, ids []job.ID) (encrypt.KeyProvider, []job.ID) {
			a, b := payloadOf(t, raw, ids[0]), payloadOf(t, raw, ids[1])
			rewrite(t, raw, store.ChannelPayload, store.RawSwap{Key: store.RawKey{Job: ids[0]}, Old: a, New: b})
			rewrite(t, raw, store.ChannelPayload, store.RawSwap{Key: store.RawKey{Job: ids[1]}, Old: b, New: a})
			return keys, ids[:2]
		}, "moved from another row"},
		{"key purged", func(t *testing.T, raw store.Store, keys *encrypt.KeyRing, ids []job.ID) (encrypt.KeyProvider, []job.ID) {
			return ring(t, "k2"), ids
		}, "key not found"},
	} {
		for _, b := range backends() {
			t.Run(tc.name+"/"+b.name, func(t *testing.T) {
				t.Parallel()
				ctx := t.Context()
				o := b.open(t)
				keys := ring(t, "k1")
				ids := insert(t, wrap(t, o.raw, keys), newJob("q", `{"a":1}`), newJob("q", `{"a":2}`), newJob("q", `{"a":3}`))
				provider, bad := tc.spoil(t, o.raw, keys, ids)
				s := wrap(t, o.raw, provider)
				got := claim(t, s, "q", 10)
				if len(got) != len(ids)-len(bad) {
					t.Fatalf("claimed %d jobs, want %d: an undecryptable job was handed on", len(got), len(ids)-len(bad))
				}
				for _, id := range bad {
					j, err := s.JobGet(ctx, id)
					if err != nil {
						t.Fatal(err)
					}
					if j.State != job.StateQuarantined || j.Attempt != 1 || j.TerminalCause != job.TerminalCauseUndecodablePayload {
						t.Fatalf("job %d is %s at Attempt %d with Terminal Cause %q, want Quarantined at 1 with undecodable_payload", id, j.State, j.Attempt, j.TerminalCause)
					}
					if encrypt.Sealed(j.Payload) == false {
						t.Fatalf("job %d reads payload %q: an unreadable payload must read as its envelope", id, j.Payload)
					}
					log, err := s.JobTransitions(ctx, id)
					if err != nil {
						t.Fatal(err)
					}
					last := log[len(log)-1]
					if last.State != job.StateQuarantined || !strings.Contains(last.FailureDetail, "payload cannot be decrypted") ||
						!strings.Contains(last.FailureDetail, tc.why) {
						t.Fatalf("job %d's last entry = %+v, want Quarantined with a Failure Detail saying %q", id, last, tc.why)
					}
				}
				if again := claim(t, s, "q", 10); len(again) != 0 {
					t.Fatalf("claimed %d jobs again: a quarantined job was retried", len(again))
				}
			})
		}
	}
	t.Run("template moved to another schedule", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		raw := backends()[0].open(t).raw
		s := wrap(t, raw, ring(t, "k1"))
		for _, d := range []store.ScheduleDef{schedule("a", "payload-a"), schedule("b", "payload-b")} {
			if _, err := s.ScheduleUpsert(ctx, store.ScheduleUpsertParams{Schedule: d}); err != nil {
				t.Fatal(err)
			}
		}
		vals := rawValues(t, raw)[store.ChannelTemplate]
		rewrite(t, raw, store.ChannelTemplate, store.RawSwap{Key: vals[1].Key, Old: vals[1].Value, New: vals[0].Value})
		id, err := s.ScheduleTrigger(ctx, store.ScheduleTriggerParams{Name: "b"})
		if err != nil {
			t.Fatal(err)
		}
		if got := claim(t, s, "sched-b", 1); len(got) != 0 {
			t.Fatalf("a job of schedule b ran with schedule a's payload %q", got[0].Payload)
		}
		if j, _ := s.JobGet(ctx, id); j.State != job.StateQuarantined {
			t.Fatalf("job %d is %s, want Quarantined", id, j.State)
		}
	})
}

// TestPlaintextRowsStillRead: turning encryption on for a live database
// needs no migration — rows written before still read (acceptance 2).
func TestPlaintextRowsStillRead(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			o := b.open(t)
			old := insert(t, o.raw, newJob("q", `{"before":true}`))[0]
			s := wrap(t, o.raw, ring(t, "k1"))
			now := insert(t, s, newJob("q", `{"after":true}`))[0]
			got := map[job.ID]string{}
			for _, j := range claim(t, s, "q", 10) {
				got[j.ID] = string(j.Payload)
			}
			if got[old] != `{"before":true}` || got[now] != `{"after":true}` {
				t.Fatalf("claimed %v, want the plaintext row and the sealed one both readable", got)
			}
		})
	}
}

// TestRejectPlaintext: with RejectPlaintext, a payload planted without an
// envelope is refused like one that does not decrypt.
func TestRejectPlaintext(t *testing.T) {
	t.Parallel()
	for _, reject := range []bool{false, true} {
		t.Run(fmt.Sprint(reject), func(t *testing.T) {
			t.Parallel()
			raw := backends()[0].open(t).raw
			planted := insert(t, raw, newJob("q", `{"planted":true}`))[0]
			s, err := encrypt.WrapWith(t.Context(), raw, ring(t, "k1"), encrypt.Options{RejectPlaintext: reject})
			if err != nil {
				t.Fatal(err)
			}
			got := claim(t, s, "q", 10)
			j, _ := raw.JobGet(t.Context(), planted)
			switch {
			case reject && (len(got) != 0 || j.State != job.StateQuarantined):
				t.Fatalf("claimed %d, job %s; want the planted job Quarantined", len(got), j.State)
			case !reject && (len(got) != 1 || string(got[0].Payload) != `{"planted":true}`):
				t.Fatalf("claimed %+v; want the plaintext row read", got)
			}
		})
	}
}
