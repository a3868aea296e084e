package bwotel

import (
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/backwave/backwave"
)

// ScopeName is the instrumentation scope of the bridge's tracer and meter.
const ScopeName = "github.com/backwave/backwave/bwotel"

// System is the messaging.system attribute value of every span and metric.
const System = "backwave"

// Options configure a Bridge. Every field may be left zero.
type Options struct {
	// TracerProvider makes the bridge's tracer. Nil means the global
	// provider, otel.GetTracerProvider(), read once by New (it forwards
	// to a provider set globally later).
	TracerProvider trace.TracerProvider
	// MeterProvider makes the bridge's meter. Nil means the global
	// provider, otel.GetMeterProvider(), read once by New.
	MeterProvider metric.MeterProvider
	// Propagator writes and reads the trace context stored with each
	// job. Nil means W3C Trace Context (propagation.TraceContext{}) — not
	// the global propagator, which is a no-op until one is set and would
	// silently store nothing.
	Propagator propagation.TextMapPropagator
}

// Bridge holds the tracer, the meter and the instruments of one
// configuration. Its methods are safe for concurrent use; one Bridge may
// serve several Clients.
type Bridge struct {
	tracer trace.Tracer
	meter  metric.Meter
	prop   propagation.TextMapPropagator
	inst   instruments
}

// New returns a Bridge for opts, creating its instruments. An error means
// the meter refused an instrument.
func New(opts Options) (*Bridge, error) {
	tp, mp, prop := opts.TracerProvider, opts.MeterProvider, opts.Propagator
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	if prop == nil {
		prop = propagation.TraceContext{}
	}
	b := &Bridge{
		tracer: tp.Tracer(ScopeName, trace.WithInstrumentationVersion(version)),
		meter:  mp.Meter(ScopeName, metric.WithInstrumentationVersion(version)),
		prop:   prop,
	}
	if err := b.inst.create(b.meter); err != nil {
		return nil, fmt.Errorf("bwotel: create instruments: %w", err)
	}
	return b, nil
}

// version is the instrumentation version the tracer and meter report: the
// BackWave release.
const version = backwave.Version

// Install adds the bridge to cfg: EnqueueMiddleware and Middleware first in
// their lists (outermost, so the spans cover every other middleware) and
// Observer at the end of Observers. Call ObserveStats on the Client for
// the gauges.
func (b *Bridge) Install(cfg *backwave.Config) {
	cfg.EnqueueMiddleware = append([]backwave.EnqueueMiddleware{b.EnqueueMiddleware()}, cfg.EnqueueMiddleware...)
	cfg.Middleware = append([]backwave.Middleware{b.Middleware()}, cfg.Middleware...)
	cfg.Observers = append(cfg.Observers, b.Observer())
}
