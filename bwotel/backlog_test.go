package bwotel_test

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/bwotel"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/memstore"
	"github.com/backwave/backwave/vtime"
)

// TestBacklogGauges reads ready, later and the oldest ready job's age per
// Queue from the store, on the store's clock, and lists every gauge in
// docs/observability.md.
func TestBacklogGauges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := vtime.NewManual(vtime.Epoch)
	st := memstore.New(memstore.Options{Clock: clock})
	now := clock.Now()
	_, err := st.JobInsertMany(ctx, store.InsertManyParams{Jobs: []store.NewJob{
		{WireName: "w", Queue: "mail", MaxAttempts: 1, ScheduledAt: now.Add(-90 * time.Second)},
		{WireName: "w", Queue: "mail", MaxAttempts: 1, ScheduledAt: now},
		{WireName: "w", Queue: "mail", MaxAttempts: 1, ScheduledAt: now.Add(time.Hour)},
		{WireName: "w", Queue: "reports", MaxAttempts: 1, ScheduledAt: now.Add(time.Minute)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	b, a, collect := gaugeBridge(t, st)
	if _, err := b.ObserveBacklog(nil, nil); err == nil {
		t.Fatal("ObserveBacklog(nil) = nil error")
	}
	reg, err := b.ObserveBacklog(a, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Unregister() })
	got := collect()
	mail := map[string]string{"messaging.destination.name": "mail"}
	reports := map[string]string{"messaging.destination.name": "reports"}
	for _, c := range []struct {
		metric string
		attrs  map[string]string
		want   int64
	}{
		{bwotel.MetricQueueReady, mail, 2},
		{bwotel.MetricQueueLater, mail, 1},
		{bwotel.MetricQueueRetrying, mail, 0},
		{bwotel.MetricQueueDeadLettered, mail, 0},
		{bwotel.MetricQueueQuarantined, mail, 0},
		{bwotel.MetricQueueReady, reports, 0},
		{bwotel.MetricQueueLater, reports, 1},
	} {
		if n := gaugeOf(t, got, c.metric, c.attrs); n != c.want {
			t.Errorf("%s %v = %d, want %d", c.metric, c.attrs, n, c.want)
		}
	}
	for q, want := range map[string]float64{"mail": 90, "reports": 0} {
		g := got[bwotel.MetricQueueOldestReadyAge].Data.(metricdata.Gauge[float64])
		found := false
		for _, dp := range g.DataPoints {
			if v, ok := dp.Attributes.Value("messaging.destination.name"); ok && v.AsString() == q {
				found = true
				if dp.Value != want {
					t.Errorf("%s %s = %v, want %v", bwotel.MetricQueueOldestReadyAge, q, dp.Value, want)
				}
			}
		}
		if !found {
			t.Errorf("%s has no point for %s", bwotel.MetricQueueOldestReadyAge, q)
		}
	}
	checkDocumented(t, got)
}

// TestNodeGauges reads the live nodes per Queue from the node registry on
// the store's clock: a node serving mail counts until it expires, and a
// Queue no node serves reads 0.
func TestNodeGauges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := vtime.NewManual(vtime.Epoch)
	st := memstore.New(memstore.Options{Clock: clock})
	if _, err := st.JobInsertMany(ctx, store.InsertManyParams{Jobs: []store.NewJob{{WireName: "w", Queue: "reports", MaxAttempts: 1}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.NodeStamp(ctx, store.NodeStampParams{ID: "n.1", Beat: time.Second, Forget: time.Hour,
		Groups: []store.NodeGroup{{Name: "g", Queues: []string{"mail"}}}}); err != nil {
		t.Fatal(err)
	}
	b, a, collect := gaugeBridge(t, st)
	if _, err := b.ObserveNodes(nil); err == nil {
		t.Fatal("ObserveNodes(nil) = nil error")
	}
	reg, err := b.ObserveNodes(a)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Unregister() })
	mail := map[string]string{"messaging.destination.name": "mail"}
	reports := map[string]string{"messaging.destination.name": "reports"}
	got := collect()
	if n := gaugeOf(t, got, bwotel.MetricQueueLiveNodes, mail); n != 1 {
		t.Errorf("live nodes of mail = %d, want 1", n)
	}
	if n := gaugeOf(t, got, bwotel.MetricQueueLiveNodes, reports); n != 0 {
		t.Errorf("live nodes of reports = %d, want 0", n)
	}
	checkDocumented(t, got)
	clock.Advance(3*time.Second + time.Millisecond)
	if n := gaugeOf(t, collect(), bwotel.MetricQueueLiveNodes, mail); n != 0 {
		t.Errorf("live nodes of mail after its node expired = %d, want 0", n)
	}
}

// gaugeBridge is a Bridge on a manual reader, an Admin over st, and a
// collect that reads every metric by name.
func gaugeBridge(t *testing.T, st backwave.Store) (*bwotel.Bridge, *backwave.Admin, func() map[string]metricdata.Metrics) {
	t.Helper()
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(ctx) })
	b, err := bwotel.New(bwotel.Options{MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	a, err := backwave.NewAdmin(st, "metrics")
	if err != nil {
		t.Fatal(err)
	}
	return b, a, func() map[string]metricdata.Metrics {
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(ctx, &rm); err != nil {
			t.Fatal(err)
		}
		got := map[string]metricdata.Metrics{}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				got[m.Name] = m
			}
		}
		return got
	}
}
