package bwotel_test

import (
	"context"
	"errors"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/bwotel"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store/memstore"
)

type flaky struct{}

func (flaky) WireName() string { return "test.flaky" }

// world is a Client on a memstore with the bridge installed, on the SDK's
// in-memory span recorder and a manual metric reader.
type world struct {
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	tp     *sdktrace.TracerProvider
	st     *memstore.Store
	client *backwave.Client
}

func newWorld(t *testing.T, h *backwave.Handlers) *world {
	t.Helper()
	w := &world{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	w.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(w.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(w.reader))
	b, err := bwotel.New(bwotel.Options{TracerProvider: w.tp, MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	w.st = memstore.New(memstore.Options{Clock: backwave.WallClock{}})
	g := backwave.DefaultWorkerGroup("g", backwave.Strict(backwave.DefaultQueue))
	g.PollInterval = 100 * time.Millisecond
	cfg := backwave.Config{
		Handlers:    h,
		Groups:      []backwave.WorkerGroupOptions{g},
		RetryPolicy: backwave.RetryPolicy{Initial: time.Second, Max: time.Second, Multiplier: 1},
	}
	b.Install(&cfg)
	if w.client, err = backwave.NewClient(w.st, cfg); err != nil {
		t.Fatal(err)
	}
	reg, err := b.ObserveStats(w.client)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.client.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = w.client.Stop(context.Background())
		_ = reg.Unregister()
		_ = mp.Shutdown(context.Background())
		_ = w.tp.Shutdown(context.Background())
	})
	return w
}

// waitState steps the bubble's time until job id is in state want.
func waitState(t *testing.T, st *memstore.Store, id job.ID, want job.State) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Minute)
	for {
		j, err := st.JobGet(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if j.State == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d is %s, want %s", id, j.State, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestAttemptSpansAreChildrenOfTheEnqueueSpan enqueues, inside a request's
// span, a job that fails its first Attempt and succeeds its second: the
// enqueue span is a producer span under the request, and each Attempt's
// consumer span has the enqueue span as its parent, though the Attempts
// ran on the Pump's goroutines, not the caller's.
func TestAttemptSpansAreChildrenOfTheEnqueueSpan(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := backwave.NewHandlers()
		if err := backwave.AddHandlerFunc(h, func(_ context.Context, j *backwave.Job[flaky]) error {
			if j.Attempt == 1 {
				return errors.New("first try fails")
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		w := newWorld(t, h)
		ctx, request := w.tp.Tracer("test").Start(context.Background(), "request")
		id, err := w.client.Enqueue(ctx, flaky{})
		request.End()
		if err != nil {
			t.Fatal(err)
		}
		waitState(t, w.st, id, job.StateSucceeded)
		_ = w.client.Stop(context.Background())

		var enqueue sdktrace.ReadOnlySpan
		var process []sdktrace.ReadOnlySpan
		for _, s := range w.spans.Ended() {
			switch s.Name() {
			case "enqueue default":
				enqueue = s
			case "process default":
				process = append(process, s)
			}
		}
		if enqueue == nil {
			t.Fatalf("no enqueue span among %v", names(w.spans.Ended()))
		}
		if enqueue.SpanKind() != trace.SpanKindProducer || enqueue.Parent().SpanID() != request.SpanContext().SpanID() {
			t.Errorf("enqueue span: kind %v, parent %v; want producer under the request %v",
				enqueue.SpanKind(), enqueue.Parent().SpanID(), request.SpanContext().SpanID())
		}
		wantAttrs(t, "enqueue span", enqueue.Attributes(), map[string]string{
			"messaging.system": "backwave", "messaging.destination.name": "default", "messaging.operation.name": "enqueue",
			"messaging.operation.type": "send", "backwave.wire_name": "test.flaky", "messaging.message.id": id.String(),
		})
		if len(process) != 2 {
			t.Fatalf("%d process spans, want 2 (one per Attempt); spans: %v", len(process), names(w.spans.Ended()))
		}
		slices.SortFunc(process, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
		for i, s := range process {
			if s.Parent().SpanID() != enqueue.SpanContext().SpanID() || s.SpanContext().TraceID() != enqueue.SpanContext().TraceID() {
				t.Errorf("Attempt %d span's parent is %v in trace %v, want the enqueue span %v in %v", i+1,
					s.Parent().SpanID(), s.SpanContext().TraceID(), enqueue.SpanContext().SpanID(), enqueue.SpanContext().TraceID())
			}
			if s.SpanKind() != trace.SpanKindConsumer {
				t.Errorf("Attempt %d span kind %v, want consumer", i+1, s.SpanKind())
			}
			wantAttrs(t, "process span", s.Attributes(), map[string]string{
				"messaging.system": "backwave", "messaging.destination.name": "default", "messaging.operation.name": "process",
				"messaging.operation.type": "process", "messaging.message.id": id.String(), "backwave.attempt": []string{"1", "2"}[i],
			})
		}
		if process[0].Status().Code != codes.Error || process[1].Status().Code == codes.Error {
			t.Errorf("statuses %v, %v; want an error on the first Attempt only", process[0].Status(), process[1].Status())
		}
	})
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.Name()
	}
	return out
}

func wantAttrs(t *testing.T, what string, got []attribute.KeyValue, want map[string]string) {
	t.Helper()
	have := map[string]string{}
	for _, kv := range got {
		have[string(kv.Key)] = kv.Value.String()
	}
	for k, v := range want {
		if have[k] != v {
			t.Errorf("%s: %s = %q, want %q (attributes %v)", what, k, have[k], v, have)
		}
	}
}

// TestMetricsFromTheObserverAndStats runs a job that retries once, one
// that fails permanently and one with no handler, then collects: the
// counters and histograms carry the Queue, Wire Name and result, the
// gauges of Stats are there, and every instrument and attribute collected
// is listed in docs/observability.md.
func TestMetricsFromTheObserverAndStats(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := backwave.NewHandlers()
		if err := backwave.AddHandlerFunc(h, func(_ context.Context, j *backwave.Job[flaky]) error {
			if j.Attempt == 1 {
				return errors.New("first try fails")
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := backwave.AddHandlerFunc(h, func(context.Context, *backwave.Job[permanent]) error {
			return backwave.FailPermanently(errors.New("no"))
		}); err != nil {
			t.Fatal(err)
		}
		w := newWorld(t, h)
		ctx := context.Background()
		ids, err := w.client.EnqueueMany(ctx, []backwave.EnqueueParams{{Args: flaky{}}, {Args: permanent{}}, {Args: nobody{}}})
		if err != nil {
			t.Fatal(err)
		}
		waitState(t, w.st, ids[0], job.StateSucceeded)
		waitState(t, w.st, ids[1], job.StateDeadLettered)
		waitState(t, w.st, ids[2], job.StateQuarantined)

		var rm metricdata.ResourceMetrics
		if err := w.reader.Collect(ctx, &rm); err != nil {
			t.Fatal(err)
		}
		got := map[string]metricdata.Metrics{}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				got[m.Name] = m
			}
		}
		sums := []struct {
			metric string
			attrs  map[string]string
			want   int64
		}{
			{bwotel.MetricSent, map[string]string{"messaging.destination.name": "default", "backwave.wire_name": "test.flaky"}, 1},
			{bwotel.MetricConsumed, map[string]string{"messaging.destination.name": "default", "backwave.wire_name": "test.flaky"}, 2},
			{bwotel.MetricRetries, map[string]string{"backwave.wire_name": "test.flaky", "backwave.worker_group": "g"}, 1},
			{bwotel.MetricDeadLettered, map[string]string{"backwave.wire_name": "test.permanent"}, 1},
			{bwotel.MetricQuarantined, map[string]string{"backwave.wire_name": "test.nobody"}, 1},
		}
		for _, s := range sums {
			if n := sumOf(t, got, s.metric, s.attrs); n != s.want {
				t.Errorf("%s%v = %d, want %d", s.metric, s.attrs, n, s.want)
			}
		}
		hists := []struct {
			attrs map[string]string
			want  uint64
		}{
			{map[string]string{"backwave.wire_name": "test.flaky", "backwave.attempt.result": "failed", "error.type": "failed"}, 1},
			{map[string]string{"backwave.wire_name": "test.flaky", "backwave.attempt.result": "succeeded"}, 1},
			{map[string]string{"backwave.wire_name": "test.permanent", "backwave.attempt.result": "failed_permanently"}, 1},
			{map[string]string{"backwave.wire_name": "test.nobody", "backwave.attempt.result": "unroutable"}, 1},
		}
		for _, hc := range hists {
			if n := countOf(t, got, bwotel.MetricProcessDuration, hc.attrs); n != hc.want {
				t.Errorf("%s%v count = %d, want %d", bwotel.MetricProcessDuration, hc.attrs, n, hc.want)
			}
		}
		if n := countOf(t, got, bwotel.MetricStoreDuration, map[string]string{"backwave.store.operation": "claim"}); n == 0 {
			t.Errorf("no claim in %s", bwotel.MetricStoreDuration)
		}
		if n := gaugeOf(t, got, bwotel.MetricPumpPoolSize, map[string]string{"backwave.worker_group": "g"}); n != backwave.DefaultPoolSize {
			t.Errorf("%s = %d, want %d", bwotel.MetricPumpPoolSize, n, backwave.DefaultPoolSize)
		}
		for _, g := range []string{bwotel.MetricPumpExecuting, bwotel.MetricPumpBuffered, bwotel.MetricPumpFree,
			bwotel.MetricQueueRunning, bwotel.MetricQueueLimit, bwotel.MetricQueuePaused} {
			if _, ok := got[g]; !ok {
				t.Errorf("gauge %s not collected", g)
			}
		}
		checkDocumented(t, got)
	})
}

type permanent struct{}

func (permanent) WireName() string { return "test.permanent" }

type nobody struct{}

func (nobody) WireName() string { return "test.nobody" }

// matches reports whether set has every attribute of want.
func matches(set attribute.Set, want map[string]string) bool {
	for k, v := range want {
		if got, ok := set.Value(attribute.Key(k)); !ok || got.String() != v {
			return false
		}
	}
	return true
}

func sumOf(t *testing.T, got map[string]metricdata.Metrics, name string, want map[string]string) int64 {
	t.Helper()
	s, ok := got[name].Data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("%s is %T, want an int64 sum", name, got[name].Data)
	}
	var n int64
	for _, dp := range s.DataPoints {
		if matches(dp.Attributes, want) {
			n += dp.Value
		}
	}
	return n
}

func countOf(t *testing.T, got map[string]metricdata.Metrics, name string, want map[string]string) uint64 {
	t.Helper()
	h, ok := got[name].Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%s is %T, want a float64 histogram", name, got[name].Data)
	}
	var n uint64
	for _, dp := range h.DataPoints {
		if matches(dp.Attributes, want) {
			n += dp.Count
		}
	}
	return n
}

func gaugeOf(t *testing.T, got map[string]metricdata.Metrics, name string, want map[string]string) int64 {
	t.Helper()
	g, ok := got[name].Data.(metricdata.Gauge[int64])
	if !ok {
		t.Fatalf("%s is %T, want an int64 gauge", name, got[name].Data)
	}
	for _, dp := range g.DataPoints {
		if matches(dp.Attributes, want) {
			return dp.Value
		}
	}
	t.Fatalf("%s has no point with %v", name, want)
	return 0
}

// checkDocumented requires every instrument and attribute key collected to
// appear in docs/observability.md, in backquotes.
func checkDocumented(t *testing.T, got map[string]metricdata.Metrics) {
	t.Helper()
	doc, err := os.ReadFile("../docs/observability.md")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile("`([a-z_.]+)`").FindAllStringSubmatch(string(doc), -1) {
		listed[m[1]] = true
	}
	keys := map[string]bool{}
	for name, m := range got {
		if !listed[name] {
			t.Errorf("instrument %s is not listed in docs/observability.md", name)
		}
		for _, set := range attrSets(m) {
			for _, kv := range set.ToSlice() {
				keys[string(kv.Key)] = true
			}
		}
	}
	for k := range keys {
		if !listed[k] {
			t.Errorf("attribute %s is not listed in docs/observability.md", k)
		}
	}
	if t.Failed() {
		t.Logf("documented: %s", strings.Join(slices.Sorted(maps.Keys(listed)), " "))
	}
}

func attrSets(m metricdata.Metrics) []attribute.Set {
	var out []attribute.Set
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, dp := range d.DataPoints {
			out = append(out, dp.Attributes)
		}
	case metricdata.Gauge[int64]:
		for _, dp := range d.DataPoints {
			out = append(out, dp.Attributes)
		}
	case metricdata.Histogram[float64]:
		for _, dp := range d.DataPoints {
			out = append(out, dp.Attributes)
		}
	}
	return out
}
