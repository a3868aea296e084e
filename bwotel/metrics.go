package bwotel

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/backwave/backwave"
)

// Instrument names. Where the messaging semantic conventions define one it
// is used; the rest are BackWave's own, under backwave.
const (
	// MetricSent counts jobs stored by enqueue calls.
	MetricSent = "messaging.client.sent.messages"
	// MetricConsumed counts Attempts started.
	MetricConsumed = "messaging.client.consumed.messages"
	// MetricProcessDuration records how long Attempts' handlers ran.
	MetricProcessDuration = "messaging.process.duration"
	// MetricRetries counts outcomes that scheduled another Attempt.
	MetricRetries = "backwave.job.retries"
	// MetricDeadLettered counts jobs Dead-Lettered.
	MetricDeadLettered = "backwave.job.dead_lettered"
	// MetricQuarantined counts jobs Quarantined.
	MetricQuarantined = "backwave.job.quarantined"
	// MetricLeaseLost counts Leases found lost while their Attempt ran.
	MetricLeaseLost = "backwave.lease.lost"
	// MetricRelinquished counts Leases relinquished on a clean stop.
	MetricRelinquished = "backwave.lease.relinquished"
	// MetricStoreDuration records how long the Pumps' store calls took.
	MetricStoreDuration = "backwave.store.operation.duration"

	// Gauges from Client.Stats (ObserveStats).
	MetricPumpExecuting = "backwave.pump.executing"
	MetricPumpBuffered  = "backwave.pump.buffered_outcomes"
	MetricPumpFree      = "backwave.pump.free"
	MetricPumpPoolSize  = "backwave.pump.pool_size"
	MetricQueueRunning  = "backwave.queue.running"
	MetricQueueLimit    = "backwave.queue.concurrency_limit"
	MetricQueuePaused   = "backwave.queue.paused"
)

// DurationBuckets are the explicit bucket boundaries, in seconds, of the
// duration histograms: the messaging conventions' recommendation, extended
// to ten minutes for long Attempts.
var DurationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 30, 60, 120, 300, 600}

type instruments struct {
	sent, consumed                     metric.Int64Counter
	process, store                     metric.Float64Histogram
	retries, deadLettered, quarantined metric.Int64Counter
	leaseLost, relinquished            metric.Int64Counter
}

func (in *instruments) create(m metric.Meter) error {
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
		return c
	}
	histogram := func(name, desc string) metric.Float64Histogram {
		h, err := m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(DurationBuckets...))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
		return h
	}
	in.sent = counter(MetricSent, "{message}", "Jobs stored by enqueue calls.")
	in.consumed = counter(MetricConsumed, "{message}", "Attempts started.")
	in.process = histogram(MetricProcessDuration, "How long Attempts' handlers ran.")
	in.store = histogram(MetricStoreDuration, "How long the Pumps' store calls took.")
	in.retries = counter(MetricRetries, "{job}", "Outcomes that scheduled another Attempt.")
	in.deadLettered = counter(MetricDeadLettered, "{job}", "Jobs Dead-Lettered.")
	in.quarantined = counter(MetricQuarantined, "{job}", "Jobs Quarantined.")
	in.leaseLost = counter(MetricLeaseLost, "{lease}", "Leases found lost while their Attempt ran.")
	in.relinquished = counter(MetricRelinquished, "{lease}", "Leases relinquished on a clean stop.")
	return errors.Join(errs...)
}

// Observer returns the Observer that feeds the bridge's counters and
// histograms. Add it to backwave.Config.Observers (Install does).
func (b *Bridge) Observer() backwave.Observer {
	in := &b.inst
	system := semconv.MessagingSystemKey.String(System)
	return backwave.Observer{
		JobsEnqueued: func(ctx context.Context, e backwave.EnqueueEvent) {
			for _, j := range e.Jobs {
				if j.Inserted {
					in.sent.Add(ctx, 1, metric.WithAttributes(system, semconv.MessagingOperationName(opEnqueue),
						semconv.MessagingDestinationName(j.Queue), WireNameKey.String(j.WireName)))
				}
			}
		},
		AttemptStarted: func(ctx context.Context, e backwave.AttemptEvent) {
			in.consumed.Add(ctx, 1, metric.WithAttributes(system, semconv.MessagingOperationName(opProcess),
				semconv.MessagingDestinationName(e.Queue), WireNameKey.String(e.WireName), WorkerGroupKey.String(e.Group)))
		},
		AttemptFinished: func(ctx context.Context, e backwave.AttemptEvent) {
			attrs := []attribute.KeyValue{system, semconv.MessagingOperationName(opProcess),
				semconv.MessagingDestinationName(e.Queue), WireNameKey.String(e.WireName), WorkerGroupKey.String(e.Group),
				ResultKey.String(string(e.Result))}
			if e.Result != backwave.AttemptSucceeded {
				attrs = append(attrs, semconv.ErrorTypeKey.String(string(e.Result)))
			}
			in.process.Record(ctx, e.Duration.Seconds(), metric.WithAttributes(attrs...))
		},
		RetryScheduled: func(ctx context.Context, e backwave.OutcomeEvent) { in.retries.Add(ctx, 1, outcomeAttrs(system, e)) },
		DeadLettered: func(ctx context.Context, e backwave.OutcomeEvent) {
			in.deadLettered.Add(ctx, 1, outcomeAttrs(system, e))
		},
		Quarantined: func(ctx context.Context, e backwave.OutcomeEvent) {
			in.quarantined.Add(ctx, 1, outcomeAttrs(system, e))
		},
		LeaseLost:    func(ctx context.Context, e backwave.LeaseEvent) { in.leaseLost.Add(ctx, 1, leaseAttrs(system, e)) },
		Relinquished: func(ctx context.Context, e backwave.LeaseEvent) { in.relinquished.Add(ctx, 1, leaseAttrs(system, e)) },
		StoreCall: func(ctx context.Context, e backwave.StoreCallEvent) {
			attrs := []attribute.KeyValue{system, OperationKey.String(e.Operation), WorkerGroupKey.String(e.Group)}
			if e.Err != nil {
				attrs = append(attrs, semconv.ErrorTypeKey.String(errorType(e.Err)))
			}
			in.store.Record(ctx, e.Duration.Seconds(), metric.WithAttributes(attrs...))
		},
	}
}

func outcomeAttrs(system attribute.KeyValue, e backwave.OutcomeEvent) metric.AddOption {
	return metric.WithAttributes(system, semconv.MessagingDestinationName(e.Queue), WireNameKey.String(e.WireName),
		WorkerGroupKey.String(e.Group))
}

func leaseAttrs(system attribute.KeyValue, e backwave.LeaseEvent) metric.AddOption {
	return metric.WithAttributes(system, semconv.MessagingDestinationName(e.Queue), WireNameKey.String(e.WireName),
		WorkerGroupKey.String(e.Group))
}

// ObserveStats reports c.Stats as gauges on every collection: per Pump
// (attributes backwave.worker_group, backwave.worker) its executing,
// buffered and free Workers and its pool size; per Queue
// (messaging.destination.name) its Running count, Concurrency Limit (0 for
// none) and whether it is paused (1 or 0). Each collection costs one store
// call (the Queue list); when it fails, the Pump gauges are still reported
// and the error goes back to the meter's error handler. Unregister the
// returned registration when c is stopped.
func (b *Bridge) ObserveStats(c *backwave.Client) (metric.Registration, error) {
	if c == nil {
		return nil, errors.New("bwotel: observe stats: no Client")
	}
	g := func(name, unit, desc string) (metric.Int64ObservableGauge, error) {
		return b.meter.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
	}
	var errs []error
	must := func(o metric.Int64ObservableGauge, err error) metric.Int64ObservableGauge {
		errs = append(errs, err)
		return o
	}
	executing := must(g(MetricPumpExecuting, "{attempt}", "Attempts a Pump is running."))
	buffered := must(g(MetricPumpBuffered, "{outcome}", "Finished Attempts whose outcome is not yet applied."))
	free := must(g(MetricPumpFree, "{worker}", "Workers a Pump could claim for now; 0 is Backpressure."))
	pool := must(g(MetricPumpPoolSize, "{worker}", "A Pump's Worker count."))
	running := must(g(MetricQueueRunning, "{job}", "Running jobs of a Queue, across the cluster."))
	limit := must(g(MetricQueueLimit, "{job}", "A Queue's Concurrency Limit; 0 is none."))
	paused := must(g(MetricQueuePaused, "", "1 if a Queue is paused, else 0."))
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("bwotel: observe stats: %w", err)
	}
	system := semconv.MessagingSystemKey.String(System)
	reg, err := b.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		s, err := c.Stats(ctx)
		for _, grp := range s.Groups {
			for _, p := range grp.Pumps {
				at := metric.WithAttributes(system, WorkerGroupKey.String(grp.Name), WorkerKey.String(p.Worker))
				o.ObserveInt64(executing, int64(p.Executing), at)
				o.ObserveInt64(buffered, int64(p.BufferedOutcomes), at)
				o.ObserveInt64(free, int64(p.Free), at)
				o.ObserveInt64(pool, int64(p.PoolSize), at)
			}
		}
		for _, q := range s.Queues {
			at := metric.WithAttributes(system, semconv.MessagingDestinationName(q.Name))
			o.ObserveInt64(running, int64(q.Running), at)
			o.ObserveInt64(limit, int64(q.Limit), at)
			var p int64
			if q.Paused {
				p = 1
			}
			o.ObserveInt64(paused, p, at)
		}
		return err
	}, executing, buffered, free, pool, running, limit, paused)
	if err != nil {
		return nil, fmt.Errorf("bwotel: observe stats: %w", err)
	}
	return reg, nil
}
