// Package metricsserve builds what a command needs to serve a Client's
// metrics at /metrics for Prometheus: an OpenTelemetry SDK MeterProvider
// whose reader is the OpenTelemetry Prometheus exporter, a bwotel.Bridge on
// it, and the HTTP handler of its registry. It is for cmd/ only: the
// library packages use the OpenTelemetry API alone and never an SDK.
//
// A command uses it in three steps:
//
//	m, err := metricsserve.New(metricsserve.Options{})
//	m.Install(&cfg)                  // before backwave.NewClient
//	client, err := backwave.NewClient(st, cfg)
//	err = m.Watch(client)            // the gauges of Client.Stats
//	mux.Handle("/metrics", m.Handler)
//	defer m.Shutdown(ctx)
//
// The handler checks no Host itself: a command serves its mux through the
// process's one Host policy (internal/hostpolicy), so /metrics refuses a
// foreign Host exactly as the dashboard does.
package metricsserve

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/bwotel"
)

// Metrics is a Prometheus endpoint for BackWave's metrics.
type Metrics struct {
	// Handler serves the registry in the Prometheus text format; mount it
	// at /metrics.
	Handler http.Handler
	// Provider is the MeterProvider the exporter reads; more instruments
	// of the command's own may use it.
	Provider *sdkmetric.MeterProvider
	// Bridge is the bwotel.Bridge on Provider.
	Bridge *bwotel.Bridge

	regs []metric.Registration
}

// Options configure New.
type Options struct {
	// TracerProvider is handed to the bridge for its spans; nil means the
	// global provider, a no-op unless the command set one.
	TracerProvider trace.TracerProvider
}

// New builds the registry, the exporter, the MeterProvider and the bridge.
func New(opts Options) (*Metrics, error) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, fmt.Errorf("metricsserve: prometheus exporter: %w", err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	b, err := bwotel.New(bwotel.Options{MeterProvider: mp, TracerProvider: opts.TracerProvider})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("metricsserve: %w", err), mp.Shutdown(context.Background()))
	}
	return &Metrics{
		Handler:  promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}),
		Provider: mp,
		Bridge:   b,
	}, nil
}

// Install adds the bridge's middleware and Observer to cfg (see
// bwotel.Bridge.Install).
func (m *Metrics) Install(cfg *backwave.Config) { m.Bridge.Install(cfg) }

// Watch reports c's Stats, its store's Backlog (ready, later, Retrying,
// Dead-Lettered, Quarantined and the oldest ready job's age per Queue) and
// the live nodes per Queue of the node registry as gauges until Shutdown.
func (m *Metrics) Watch(c *backwave.Client) error {
	r, err := m.Bridge.ObserveStats(c)
	if err != nil {
		return fmt.Errorf("metricsserve: %w", err)
	}
	m.regs = append(m.regs, r)
	a, err := c.Admin("metrics")
	if err != nil {
		return fmt.Errorf("metricsserve: %w", err)
	}
	r, err = m.Bridge.ObserveBacklog(a, nil)
	if err != nil {
		return fmt.Errorf("metricsserve: %w", err)
	}
	m.regs = append(m.regs, r)
	r, err = m.Bridge.ObserveNodes(a)
	if err != nil {
		return fmt.Errorf("metricsserve: %w", err)
	}
	m.regs = append(m.regs, r)
	return nil
}

// Shutdown stops the gauges and the MeterProvider.
func (m *Metrics) Shutdown(ctx context.Context) error {
	var errs []error
	for _, r := range m.regs {
		errs = append(errs, r.Unregister())
	}
	m.regs = nil
	errs = append(errs, m.Provider.Shutdown(ctx))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("metricsserve: shutdown: %w", err)
	}
	return nil
}
