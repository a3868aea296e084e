package bwotel

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/backwave/backwave"
)

// The backlog gauges (ObserveBacklog), per Queue.
const (
	// MetricQueueReady is the number of Scheduled jobs due now.
	MetricQueueReady = "backwave.queue.ready"
	// MetricQueueLater is the number of Scheduled jobs due in the future.
	MetricQueueLater = "backwave.queue.later"
	// MetricQueueRetrying is the number of jobs in the Retrying view.
	MetricQueueRetrying = "backwave.queue.retrying"
	// MetricQueueDeadLettered is the number of Dead-Lettered jobs stored.
	MetricQueueDeadLettered = "backwave.queue.dead_lettered"
	// MetricQueueQuarantined is the number of Quarantined jobs stored.
	MetricQueueQuarantined = "backwave.queue.quarantined"
	// MetricQueueOldestReadyAge is how long the oldest ready job has been
	// due, in seconds: the Queue's latency; 0 when none is ready.
	MetricQueueOldestReadyAge = "backwave.queue.oldest_ready_age"
)

// ObserveBacklog reports, on every collection, per Queue
// (messaging.destination.name): its ready, later and Retrying counts, its
// Dead-Lettered and Quarantined counts, and the age of its oldest ready
// job. Each collection costs two store reads (Admin.Backlog, which reads
// the due-time index, and Admin.CountByQueue, which reads maintained
// counts). now is the clock the age is measured against (nil is the host's
// clock). Unregister the returned registration when done.
func (b *Bridge) ObserveBacklog(a *backwave.Admin, now func() time.Time) (metric.Registration, error) {
	if a == nil {
		return nil, errors.New("bwotel: observe backlog: no Admin")
	}
	if now == nil {
		now = time.Now
	}
	var errs []error
	gauge := func(name, desc string) metric.Int64ObservableGauge {
		g, err := b.meter.Int64ObservableGauge(name, metric.WithUnit("{job}"), metric.WithDescription(desc))
		errs = append(errs, err)
		return g
	}
	ready := gauge(MetricQueueReady, "Scheduled jobs of a Queue due now: its backlog.")
	later := gauge(MetricQueueLater, "Scheduled jobs of a Queue due in the future.")
	retrying := gauge(MetricQueueRetrying, "Jobs of a Queue in the Retrying view.")
	dead := gauge(MetricQueueDeadLettered, "Dead-Lettered jobs of a Queue still stored.")
	quarantined := gauge(MetricQueueQuarantined, "Quarantined jobs of a Queue still stored.")
	age, err := b.meter.Float64ObservableGauge(MetricQueueOldestReadyAge, metric.WithUnit("s"),
		metric.WithDescription("How long a Queue's oldest ready job has been due; 0 when none is ready."))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("bwotel: observe backlog: %w", err)
	}
	system := semconv.MessagingSystemKey.String(System)
	reg, err := b.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		at := func(q string) metric.ObserveOption {
			return metric.WithAttributes(system, semconv.MessagingDestinationName(q))
		}
		bs, berr := a.Backlog(ctx)
		t := now()
		seen := make(map[string]bool, len(bs))
		for _, q := range bs {
			seen[q.Queue] = true
			o.ObserveInt64(ready, int64(q.Ready), at(q.Queue))
			o.ObserveInt64(later, int64(q.Later), at(q.Queue))
			o.ObserveInt64(retrying, int64(q.Retrying), at(q.Queue))
			o.ObserveFloat64(age, q.Age(t).Seconds(), at(q.Queue))
		}
		counts, cerr := a.CountByQueue(ctx)
		type settled struct{ dead, quarantined int }
		byQueue := make(map[string]settled)
		var order []string
		for _, c := range counts {
			n, ok := byQueue[c.Queue]
			if !ok {
				order = append(order, c.Queue)
			}
			switch c.State {
			case backwave.StateDeadLettered:
				n.dead = c.Count
			case backwave.StateQuarantined:
				n.quarantined = c.Count
			}
			byQueue[c.Queue] = n
		}
		for _, q := range order {
			o.ObserveInt64(dead, int64(byQueue[q].dead), at(q))
			o.ObserveInt64(quarantined, int64(byQueue[q].quarantined), at(q))
		}
		for _, q := range order {
			if berr == nil && !seen[q] {
				// A Queue with jobs but none Scheduled: no backlog, said as 0.
				o.ObserveInt64(ready, 0, at(q))
				o.ObserveInt64(later, 0, at(q))
				o.ObserveInt64(retrying, 0, at(q))
				o.ObserveFloat64(age, 0, at(q))
			}
		}
		return errors.Join(berr, cerr)
	}, ready, later, retrying, dead, quarantined, age)
	if err != nil {
		return nil, fmt.Errorf("bwotel: observe backlog: %w", err)
	}
	return reg, nil
}
