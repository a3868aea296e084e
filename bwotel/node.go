package bwotel

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/backwave/backwave"
)

// MetricQueueLiveNodes is the number of live nodes serving a Queue
// (ObserveNodes): 0 with backwave.queue.ready above 0 means ready jobs
// nothing will run.
const MetricQueueLiveNodes = "backwave.queue.live_nodes"

// ObserveNodes reports, on every collection, per Queue
// (messaging.destination.name) the live nodes of the node registry that
// serve it, every Queue the store knows included (0 when none does). Each
// collection costs two store reads (Admin.Nodes: the registry and the
// Queue list). Unregister the returned registration when done.
func (b *Bridge) ObserveNodes(a *backwave.Admin) (metric.Registration, error) {
	if a == nil {
		return nil, errors.New("bwotel: observe nodes: no Admin")
	}
	live, err := b.meter.Int64ObservableGauge(MetricQueueLiveNodes, metric.WithUnit("{node}"),
		metric.WithDescription("Live nodes (running Clients, on the store's clock) with a Worker Group serving a Queue."))
	if err != nil {
		return nil, fmt.Errorf("bwotel: observe nodes: %w", err)
	}
	system := semconv.MessagingSystemKey.String(System)
	reg, err := b.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		v, err := a.Nodes(ctx)
		if err != nil {
			return err
		}
		for _, q := range v.Queues {
			o.ObserveInt64(live, int64(q.LiveNodes), metric.WithAttributes(system, semconv.MessagingDestinationName(q.Queue)))
		}
		return nil
	}, live)
	if err != nil {
		return nil, fmt.Errorf("bwotel: observe nodes: %w", err)
	}
	return reg, nil
}
