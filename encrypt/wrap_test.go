package encrypt_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/backwave/backwave/encrypt"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/memstore"
	"github.com/backwave/backwave/vtime"
)

// provider is a KeyProvider answering as told.
type provider struct {
	current string
	key     []byte
	err     error
}

func (p provider) CurrentKeyID(context.Context) (string, error) { return p.current, p.err }
func (p provider) Key(_ context.Context, id string) ([]byte, error) {
	if id != p.current || p.key == nil {
		return nil, encrypt.ErrKeyNotFound
	}
	return p.key, nil
}

// TestWrapFailsClosed: enabling Encryption at Rest without a usable key
// provider stops startup with a clear error and no store (acceptance 2).
func TestWrapFailsClosed(t *testing.T) {
	t.Parallel()
	raw := memstore.New(memstore.Options{Clock: vtime.NewManual(vtime.Epoch)})
	for _, tc := range []struct {
		name string
		keys encrypt.KeyProvider
		want error
	}{
		{"no key provider", nil, encrypt.ErrNoKeyProvider},
		{"a nil key ring", (*encrypt.KeyRing)(nil), encrypt.ErrNoKeyProvider},
		{"current key missing", provider{current: "k1"}, encrypt.ErrKeyNotFound},
		{"current key too short", provider{current: "k1", key: make([]byte, 16)}, encrypt.ErrInvalidKey},
		{"bad current key id", provider{current: "k 1", key: make([]byte, 32)}, encrypt.ErrInvalidKey},
		{"provider fails", provider{err: errors.New("kms unreachable")}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := encrypt.Wrap(t.Context(), raw, tc.keys)
			if err == nil || s != nil {
				t.Fatalf("Wrap = %v, %v; want an error and no store", s, err)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("Wrap error %v, want one wrapping %v", err, tc.want)
			}
		})
	}
}

// TestWrapTwiceRefused: wrapping an encrypted store again would seal the
// placeholder, not the payload; it is refused.
func TestWrapTwiceRefused(t *testing.T) {
	t.Parallel()
	once := wrap(t, memstore.New(memstore.Options{}), ring(t, "k1"))
	if s, err := encrypt.Wrap(t.Context(), once, ring(t, "k2")); err == nil || s != nil {
		t.Fatalf("Wrap of a wrapped store = %v, %v; want an error", s, err)
	}
}

// ignoring is a store that drops InsertManyParams.PayloadFor, as an
// adapter unaware of it would.
type ignoring struct{ store.Store }

func (s ignoring) JobInsertManyResults(ctx context.Context, p store.InsertManyParams) ([]store.InsertResult, error) {
	p.PayloadFor = nil
	return s.Store.JobInsertManyResults(ctx, p)
}

// TestStoreIgnoringPayloadFor: a store that does not honour PayloadFor
// never receives the plaintext; the insert says so, and the job it kept is
// Quarantined, not run on a placeholder.
func TestStoreIgnoringPayloadFor(t *testing.T) {
	t.Parallel()
	raw := memstore.New(memstore.Options{Clock: vtime.NewManual(vtime.Epoch)})
	s := wrap(t, ignoring{raw}, ring(t, "k1"))
	_, err := s.JobInsertMany(t.Context(), store.InsertManyParams{Jobs: []store.NewJob{newJob("q", "SECRET")}})
	if err == nil {
		t.Fatal("an insert through a store ignoring PayloadFor succeeded")
	}
	for _, v := range rawValues(t, raw)[store.ChannelPayload] {
		if string(v.Value) == "SECRET" {
			t.Fatal("the plaintext reached the store")
		}
	}
	if got := claim(t, s, "q", 10); len(got) != 0 {
		t.Fatalf("the job holding the placeholder was handed on: %+v", got)
	}
	if j, _ := raw.JobGet(t.Context(), 1); j.State != job.StateQuarantined {
		t.Fatalf("the job holding the placeholder is %s, want Quarantined", j.State)
	}
}

// TestCapabilitiesForwarded: the wrapped store has exactly the optional
// capabilities its store has.
func TestCapabilitiesForwarded(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			raw := b.open(t).raw
			s := wrap(t, raw, ring(t, "k1"))
			for _, c := range []struct {
				name string
				has  func(store.Store) bool
			}{
				{"HintSource", func(s store.Store) bool { _, ok := s.(store.HintSource); return ok }},
				{"ClockSource", func(s store.Store) bool { _, ok := s.(store.ClockSource); return ok }},
				{"TxInserter", func(s store.Store) bool { _, ok := s.(store.TxInserter); return ok }},
			} {
				if c.has(raw) != c.has(s) {
					t.Errorf("%s: store has it %v, wrapped store %v", c.name, c.has(raw), c.has(s))
				}
			}
			if _, ok := s.(store.Rewriter); ok {
				t.Error("the wrapped store offers the raw bytes (store.Rewriter)")
			}
		})
	}
}

// TestEveryMethodSorted fails when the Storage Contract grows a method
// nobody has sorted into "seals or opens user data" or "moves none": the
// wrapper forwards unknown methods as they are, so a new method carrying a
// payload would otherwise store plaintext.
func TestEveryMethodSorted(t *testing.T) {
	t.Parallel()
	sealsOrOpens := []string{
		"JobInsertMany", "JobInsertManyResults", "JobClaim", "OutcomeReport", "JobGet", "JobList",
		"JobRequeue", "JobCancel", "JobReschedule", "JobDelete", "JobTransitions", "JobOutput", "JobAncestorOutput",
		"ScheduleUpsert", "ScheduleList", "WorkflowInsert", "WorkflowMembers",
	}
	movesNone := []string{
		"LeaseRenew", "LeaseExpire", "LeaseRelinquish", "QueuePause", "QueueResume", "QueueSetLimit", "QueueSetRate", "QueueSetKeyLimit", "QueueSetKeyRate", "QueueSetFairClaim", "QueueRemove", "QueueKeys", "QueueList", "QueueBacklog", "Throughput",
		"JobCountByState", "JobCountByQueue", "TagFacet", "TagSuggest", "AuditList", "JobDependencies",
		"ScheduleRemove", "SchedulePause", "ScheduleResume", "ScheduleTrigger", "ScheduleMint", "ScheduleOccurrences",
		"JobPurge", "FleetStamp", "Close", "WorkflowGet", "WorkflowList", "WorkflowCancel", "WorkflowRetry",
		// The node registry holds host names, versions and Queue names,
		// no user data.
		"NodeStamp", "NodeRemove", "NodeList",
		// The Transition Observer walk reads states, ids, Wire Names and
		// Queues only (no payload, no Failure Detail); History is a setting.
		"ObserverClaim", "ObserverAdvance", "ObserverRemove", "History",
	}
	contract := reflect.TypeFor[store.Store]()
	for i := range contract.NumMethod() {
		switch name := contract.Method(i).Name; {
		case slices.Contains(sealsOrOpens, name), slices.Contains(movesNone, name):
		default:
			t.Errorf("store.Store.%s is new: sort it into sealsOrOpens (and implement it in package encrypt) or movesNone", name)
		}
	}
}
