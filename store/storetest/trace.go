package storetest

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// traced returns newJob(queue) with trace context tc.
func traced(queue string, tc map[string]string) store.NewJob {
	j := newJob(queue)
	j.TraceContext = tc
	return j
}

// wantTrace requires j to carry trace context want (nil: none).
func wantTrace(t *testing.T, where string, j job.Job, want map[string]string) {
	t.Helper()
	if !maps.Equal(j.TraceContext, want) || (want == nil) != (j.TraceContext == nil) {
		t.Fatalf("%s: job %d has trace context %v, want %v", where, j.ID, j.TraceContext, want)
	}
}

// testTraceContext checks the trace context clause of store.NewJob: "stored
// as given and returned on every read of the job; nil or empty stores none.
// It is bounded by MaxTraceContextBytes."
func testTraceContext(t *testing.T, s *suite) {
	a := map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	b := map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tracestate": "vendor=é"}

	// Each insert shape an adapter may take: a uniform batch, a mixed
	// one, and one with a unique key (row by row).
	s.run(t, "StoredAndReadBack", func(t *testing.T, e *env) {
		uniform := e.insert(traced("t", a), newJob("t"), traced("t", b))
		mixed := e.insert(traced("u", b), traced("t", map[string]string{}))
		key := traced("t", a)
		key.Unique = store.Unique{Key: "trace-key", Scope: store.UniqueWhileLive}
		keyed := e.insert(key, traced("t", b))
		cases := []struct {
			id   job.ID
			want map[string]string
		}{
			{uniform[0], a}, {uniform[1], nil}, {uniform[2], b},
			{mixed[0], b}, {mixed[1], nil},
			{keyed[0], a}, {keyed[1], b},
		}
		for _, c := range cases {
			wantTrace(t, "JobGet", e.get(c.id), c.want)
		}
		// A batch with Dependencies: the child waits, and keeps its own.
		kid := child("p", onSuccess, store.InBatch(0))
		kid.TraceContext = b
		graph := e.insert(traced("p", a), kid)
		wantTrace(t, "JobGet of a parent", e.get(graph[0]), a)
		wantTrace(t, "JobGet of a child", e.get(graph[1]), b)
		jobs := e.claim(w1, 100, "t", "u")
		if len(jobs) != len(cases) {
			t.Fatalf("claimed %d jobs, want %d", len(jobs), len(cases))
		}
		byID := make(map[job.ID]job.Job, len(jobs))
		for _, j := range jobs {
			byID[j.ID] = j
		}
		for _, c := range cases {
			wantTrace(t, "JobClaim", byID[c.id], c.want)
		}
		// A retry keeps it: it is the job's, not the Attempt's.
		e.reportApplied(w1, failed(byID[uniform[0]], 0))
		wantTrace(t, "JobClaim after a retry", e.claimOne(w2, "t"), a)
	})

	// A job whose unique key is held is not stored, nor is its trace
	// context: the holder keeps its own.
	s.run(t, "HeldKeyKeepsHolders", func(t *testing.T, e *env) {
		first := traced("t", a)
		first.Unique = store.Unique{Key: "k", Scope: store.UniqueWhileLive}
		second := traced("t", b)
		second.Unique = first.Unique
		ids := e.insert(first)
		again := e.insert(second)
		if again[0] != ids[0] {
			t.Fatalf("second insert answered %d, want the holder %d", again[0], ids[0])
		}
		wantTrace(t, "JobGet", e.get(ids[0]), a)
	})

	s.run(t, "InvalidRefused", func(t *testing.T, e *env) {
		bad := map[string]map[string]string{
			"over the limit": {"traceparent": strings.Repeat("x", store.MaxTraceContextBytes)},
			"empty key":      {"": "x"},
			"NUL":            {"traceparent": "a\x00b"},
			"invalid UTF-8":  {"traceparent": "\xff"},
		}
		for name, tc := range bad {
			_, err := e.s.JobInsertMany(e.ctx, store.InsertManyParams{Jobs: []store.NewJob{newJob("t"), traced("t", tc)}})
			if !errors.Is(err, store.ErrInvalidParams) {
				t.Errorf("%s: JobInsertMany error = %v, want ErrInvalidParams", name, err)
			}
		}
		e.claimNone(w1, "t")
	})
}
