// Package storetest is the Conformance Suite: the tests that hold a store to
// the Storage Contract written in package store's doc comments. Every
// adapter runs the same suite from its own tests, the In-Memory Store
// included:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) storetest.Harness {
//			clock := vtime.NewManual(vtime.Epoch)
//			s := memstore.New(memstore.Options{Clock: clock})
//			return storetest.Harness{
//				Store:   s,
//				Now:     clock.Now,
//				Advance: func(d time.Duration) { clock.Advance(d) },
//				WithHistory: func(p store.HistoryPolicy) store.Store {
//					return memstore.New(memstore.Options{Clock: clock, History: p})
//				},
//			}
//		})
//	}
//
// The suite is split by noun — insert, claim, renew, report, expire,
// Relinquish, queues, the Concurrency Limit, the Rate Limit, Concurrency Keys, the Monitor reads, validation,
// unique keys, Recurring Schedules, retention, close — and each test names
// the contract clause or glossary entry it checks.
//
// # Isolation and parallelism
//
// Every test calls newStore once and runs in parallel with the others, so
// each call must return a fresh store that shares no jobs and no Queue
// settings with any other (a new database, a schema per test, …). newStore
// registers its own cleanup with t.Cleanup.
//
// # Clocks
//
// Harness.Now reads the store's clock, the one its Lease and due comparisons
// use. Tests bracket a call between two readings and accept a stored time
// between them (to the microsecond, the coarsest precision of the SQL
// adapters), so a store on a real clock passes as well as one on Virtual
// Time. Tests that need time to pass — a Lease lapsing, a retry delay
// running out — move the clock with Harness.Advance and are skipped when it
// is nil; an adapter provides Advance by pinning its clock (its own "now"
// override) rather than by sleeping.
//
// # Job History Policy
//
// Harness.WithHistory opens a second fresh store on the same clock with
// another Job History Policy, so the suite can hold each policy to its
// clause.
//
// # Two nodes
//
// Harness.Peer opens a second store over the same data, as a second node
// would; the races between nodes (two mints of one occurrence) run one side
// on each. An adapter without a second opener leaves it nil and both sides
// share Store.
//
// # Differential run
//
// RunDifferential, called beside Run from each adapter's tests, replays
// random sequences of contract calls on the adapter and on the In-Memory
// Store and requires the same answers and final state. It takes the same
// newStore and needs Harness.Advance; where Peer is set, the calls move
// between both sides.
package storetest

import (
	"testing"
	"time"

	"github.com/backwave/backwave/store"
)

// Harness is one isolated store under test and the means to steer it.
type Harness struct {
	// Store is a fresh store: no jobs, no Queue settings, shared with no
	// other Harness. Required.
	Store store.Store

	// Now reads the store's clock. Required.
	Now func() time.Time

	// Advance moves the store's clock forward by d, d ≥ 0. Nil if the
	// adapter cannot move its clock: the tests that need time to pass are
	// then skipped.
	Advance func(d time.Duration)

	// WithHistory returns another fresh, isolated store on the same clock
	// (Now and Advance steer it too) whose Job History Policy is p. The
	// adapter closes it at the end of the test. Required.
	WithHistory func(p store.HistoryPolicy) store.Store

	// Peer opens a second store over the same data, as another node would
	// (on the same clock), closed by the test's cleanup. The races between
	// two nodes run against it. Nil means the store has no second opener
	// (the In-Memory Store): both sides of a race then use Store.
	Peer func(t *testing.T) store.Store

	// RolledBack runs fn inside a transaction of the kind the store's
	// store.TxInserter takes, begun on the store's database, and rolls it
	// back when fn returns. Nil if the store has no Transactional Enqueue:
	// the clauses about a rolled-back insert are then skipped.
	RolledBack func(t *testing.T, fn func(tx any))
}

// Run runs the Conformance Suite, calling newStore once per test for a fresh
// isolated store. Tests run in parallel.
func Run(t *testing.T, newStore func(t *testing.T) Harness) {
	t.Helper()
	s := &suite{newStore: newStore}
	for _, group := range []struct {
		name  string
		tests func(*testing.T, *suite)
	}{
		{"Insert", testInsert},
		{"TxIDs", testTxIDs},
		{"TxResults", testTxResults},
		{"EnqueueAudit", testEnqueueAudit},
		{"Claim", testClaim},
		{"Renew", testRenew},
		{"Report", testReport},
		{"TerminalCause", testTerminalCause},
		{"Snooze", testSnooze},
		{"Expire", testExpire},
		{"Relinquish", testRelinquish},
		{"Cancel", testCancel},
		{"Operator", testOperator},
		{"Delete", testDelete},
		{"History", testHistory},
		{"Tags", testTags},
		{"Queue", testQueue},
		{"QueueRemove", testQueueRemove},
		{"Limit", testLimit},
		{"Rate", testRate},
		{"Keys", testKeys},
		{"Fleet", testFleet},
		{"Nodes", testNodes},
		{"Monitor", testMonitor},
		{"Backlog", testBacklog},
		{"Dependency", testDependency},
		{"Output", testOutput},
		{"TraceContext", testTraceContext},
		{"Progress", testProgress},
		{"Cursor", testCursor},
		{"Graph", testGraph},
		{"Validation", testValidation},
		{"Unique", testUnique},
		{"Replace", testReplace},
		{"TimeRange", testTimeRange},
		{"Schedule", testSchedule},
		{"ScheduleDef", testScheduleDef},
		{"Retention", testRetention},
		{"SuggestPrune", testSuggestPrune},
		{"Close", testClose},
		{"PayloadFor", testPayloadFor},
		{"Rewrite", testRewrite},
		{"Observer", testObserver},
		{"Workflow", testWorkflow},
	} {
		t.Run(group.name, func(t *testing.T) { group.tests(t, s) })
	}
	t.Run("Scale", func(t *testing.T) { testTagsAtScale(t, s) })
	runEdges(t, newStore)
	runRoundTrip(t, newStore)
}

type suite struct {
	newStore func(t *testing.T) Harness
}

// run runs one parallel test on a fresh store.
func (s *suite) run(t *testing.T, name string, fn func(t *testing.T, e *env)) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		t.Parallel()
		h := s.newStore(t)
		if h.Store == nil || h.Now == nil || h.WithHistory == nil {
			t.Fatal("storetest: newStore returned a Harness without Store, Now or WithHistory")
		}
		fn(t, &env{t: t, h: h, s: h.Store, ctx: t.Context()})
	})
}
