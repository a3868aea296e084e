package bwotel

import (
	"context"
	"errors"
	"maps"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/backwave/backwave"
)

// Attribute keys of BackWave's own, beside the messaging conventions.
const (
	// WireNameKey is the Wire Name of a job.
	WireNameKey = attribute.Key("backwave.wire_name")
	// AttemptKey is an Attempt's number.
	AttemptKey = attribute.Key("backwave.attempt")
	// ResultKey is how an Attempt's handler returned (backwave.AttemptResult).
	ResultKey = attribute.Key("backwave.attempt.result")
	// InTxKey marks an enqueue in the caller's transaction.
	InTxKey = attribute.Key("backwave.enqueue.in_tx")
	// WorkerGroupKey is a Worker Group's name.
	WorkerGroupKey = attribute.Key("backwave.worker_group")
	// WorkerKey is a Pump's lease-holder identity.
	WorkerKey = attribute.Key("backwave.worker")
	// OperationKey names a store call (backwave.StoreCallEvent.Operation).
	OperationKey = attribute.Key("backwave.store.operation")
)

// Operation names, the messaging.operation.name of spans and metrics.
const (
	opEnqueue = "enqueue"
	opProcess = "process"
)

// EnqueueMiddleware returns the middleware that traces enqueue calls: a
// producer span "enqueue <queue>" (or "enqueue" when the call's jobs go to
// several Queues) around the store insert, whose context every job of the
// call stores as its trace context. A failed insert records the error on
// the span.
func (b *Bridge) EnqueueMiddleware() backwave.EnqueueMiddleware {
	return func(ctx context.Context, call *backwave.EnqueueCall, next func(context.Context) error) error {
		queue, wire := sameQueue(call.Jobs)
		name := opEnqueue
		if queue != "" {
			name += " " + queue
		}
		attrs := []attribute.KeyValue{
			semconv.MessagingSystemKey.String(System),
			semconv.MessagingOperationName(opEnqueue),
			semconv.MessagingOperationTypeSend,
			InTxKey.Bool(call.InTx),
		}
		if queue != "" {
			attrs = append(attrs, semconv.MessagingDestinationName(queue))
		}
		if wire != "" {
			attrs = append(attrs, WireNameKey.String(wire))
		}
		if len(call.Jobs) > 1 {
			attrs = append(attrs, semconv.MessagingBatchMessageCount(len(call.Jobs)))
		}
		ctx, span := b.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
		defer span.End()
		if span.SpanContext().IsValid() {
			carrier := propagation.MapCarrier{}
			b.prop.Inject(ctx, carrier)
			for i := range call.Jobs {
				if len(carrier) > 0 {
					call.Jobs[i].TraceContext = maps.Clone(carrier)
				}
			}
		}
		err := next(ctx)
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
			span.SetAttributes(semconv.ErrorTypeKey.String(errorType(err)))
			return err
		}
		if len(call.Jobs) == 1 {
			span.SetAttributes(semconv.MessagingMessageID(strconv.FormatInt(int64(call.Jobs[0].ID), 10)))
		}
		return nil
	}
}

// Middleware returns the middleware that traces Attempts: a consumer span
// "process <queue>" around each handler call whose parent is the span that
// enqueued the job, read from the job's stored trace context (a job stored
// without one starts a new trace). A handler error is recorded on the span.
func (b *Bridge) Middleware() backwave.Middleware {
	return func(ctx context.Context, a backwave.AttemptInfo, next func(context.Context) error) error {
		if len(a.TraceContext) > 0 {
			// The enqueue is the parent; the Client's own context carries
			// no span of its own worth keeping as parent.
			ctx = b.prop.Extract(ctx, propagation.MapCarrier(a.TraceContext))
		}
		ctx, span := b.tracer.Start(ctx, opProcess+" "+a.Queue,
			trace.WithSpanKind(trace.SpanKindConsumer),
			trace.WithAttributes(
				semconv.MessagingSystemKey.String(System),
				semconv.MessagingOperationName(opProcess),
				semconv.MessagingOperationTypeProcess,
				semconv.MessagingDestinationName(a.Queue),
				semconv.MessagingMessageID(strconv.FormatInt(int64(a.ID), 10)),
				WireNameKey.String(a.WireName),
				AttemptKey.Int(int(a.Attempt)),
			))
		defer span.End()
		err := next(ctx)
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
			span.SetAttributes(semconv.ErrorTypeKey.String(errorType(err)))
		}
		return err
	}
}

// sameQueue returns the Queue and Wire Name all jobs share, each "" when
// they differ.
func sameQueue(jobs []backwave.EnqueueJob) (queue, wire string) {
	if len(jobs) == 0 {
		return "", ""
	}
	queue, wire = jobs[0].Queue, jobs[0].WireName
	for _, j := range jobs[1:] {
		if j.Queue != queue {
			queue = ""
		}
		if j.WireName != wire {
			wire = ""
		}
	}
	return queue, wire
}

// errorType is the error.type attribute of err: a BackWave sentinel's
// kind where it is one, else "_OTHER" (semantic conventions: a low
// cardinality value).
func errorType(err error) string {
	switch {
	case backwave.IsPermanent(err):
		return string(backwave.AttemptFailedPermanently)
	case errors.Is(err, backwave.ErrInvalidJob):
		return "invalid_job"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return semconv.ErrorTypeOther.Value.AsString()
}
