// Package bwotel is BackWave's OpenTelemetry bridge: traces and metrics for
// a Client through the OpenTelemetry API only. It never installs an SDK,
// sets a global provider or starts an exporter: the application (or a
// command of cmd/) brings those and hands their providers in Options.
//
// # Traces
//
// EnqueueMiddleware starts a producer span around every enqueue call and
// stores its trace context with each job, in the job's own trace-context
// field (backwave.EnqueueJob.TraceContext), never as a Tag. Middleware
// starts a consumer span around every Attempt whose parent is that enqueue
// span, wherever and whenever the Attempt runs: retries of one job are
// sibling spans under the one enqueue.
//
// # Metrics
//
// Observer counts jobs enqueued, Attempts started, retries, Dead-Lettered
// and Quarantined jobs, lost and relinquished Leases, and records Attempt
// and store-call durations, by Queue, Wire Name and result. ObserveStats
// reports Client.Stats as gauges: each Pump's executing, buffered and free
// Workers, each Queue's Running count, Concurrency Limit and pause. Names
// follow the OpenTelemetry messaging semantic conventions where they have
// one (messaging.client.sent.messages, messaging.client.consumed.messages,
// messaging.process.duration, messaging.system, messaging.destination.name,
// messaging.operation.name and .type); docs/observability.md lists every
// instrument and attribute.
//
// # Name
//
// The package is bwotel, not otel, so that a file importing it beside
// go.opentelemetry.io/otel needs no import alias, and its path names what
// its package is called.
package bwotel
