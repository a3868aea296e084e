package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/signal"
	"strings"
	"syscall"

	"github.com/urfave/cli/v3"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/dashboard"
	"github.com/backwave/backwave/internal/metricsserve"
	"github.com/backwave/backwave/workflow/dashboardext"
)

// defaultDashboardAddr is where `backwave dashboard` listens by default:
// loopback only, as the dashboard's own defaults expect.
const defaultDashboardAddr = "127.0.0.1:8080"

// dashboardCommand is `backwave dashboard`: the Monitor and the Operator
// Actions in a browser, over an existing store.
func dashboardCommand() *cli.Command {
	return &cli.Command{
		Name:  "dashboard",
		Usage: "serve the web dashboard over a store (read-only from this machine unless granted)",
		Description: "Serves the dashboard on --addr (127.0.0.1:8080) until interrupted. With no --allow it is\n" +
			"read-only: View for clients on this machine, payloads, Failure Detail and Job Output hidden.\n" +
			"--allow grants Dashboard Permissions to every client that reaches it (e.g. --allow Requeue,Cancel);\n" +
			"writes are audited as --actor. Serve it to others only behind your own authentication.",
		Flags: []cli.Flag{
			dbFlag(),
			&cli.StringFlag{Name: "addr", Value: defaultDashboardAddr, Usage: "address to listen on"},
			&cli.StringSliceFlag{Name: "allow", Usage: "grant these Permissions beyond View (repeatable or comma-separated): " + strings.Join(grantable(), ", ")},
			actorFlag(),
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if _, _, err := net.SplitHostPort(cmd.String("addr")); err != nil {
				return usagef("--addr %q: want HOST:PORT, e.g. %s", cmd.String("addr"), defaultDashboardAddr)
			}
			pol, err := grantPolicy(cmd)
			if err != nil {
				return err
			}
			t, err := targetOf(cmd)
			if err != nil {
				return err
			}
			st, err := openExisting(ctx, t)
			if err != nil {
				return err
			}
			defer func() { _ = st.Close() }()
			h, err := dashboard.New(st, dashboard.Options{Policy: pol, Extensions: []dashboard.Extension{dashboardext.New()}})
			if err != nil {
				return err
			}
			// An insert-only Client over the store feeds the Queue gauges of
			// /metrics (Running against the limit, paused).
			m, err := metricsserve.New(metricsserve.Options{})
			if err != nil {
				return err
			}
			defer func() { _ = m.Shutdown(context.WithoutCancel(ctx)) }()
			var cfg backwave.Config
			m.Install(&cfg)
			c, err := backwave.NewClient(st, cfg)
			if err != nil {
				return err
			}
			if err := m.Watch(c); err != nil {
				return err
			}
			mux := http.NewServeMux()
			mux.Handle(dashboard.DefaultPrefix+"/", h)
			mux.Handle("/metrics", m.Handler)
			ln, err := net.Listen("tcp", cmd.String("addr"))
			if err != nil {
				return fmt.Errorf("dashboard: listen on %s: %w", cmd.String("addr"), err)
			}
			fmt.Fprintf(cmd.Root().Writer, "dashboard: http://%s%s/ (Prometheus metrics at /metrics; Ctrl-C stops it)\n", ln.Addr(), dashboard.DefaultPrefix)
			sigCtx, stop := signal.NotifyContext(ctx, syscall.SIGTERM)
			defer stop()
			return serveOn(sigCtx, ln, mux)
		},
	}
}

// serveOn serves h on ln until ctx ends, then shuts down gracefully: the
// one HTTP server loop of the dashboard and mcp commands.
func serveOn(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: readHeaderTimeout}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve http on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("stop serving http on %s: %w", ln.Addr(), err)
	}
	return nil
}

// demoDashboard serves the dashboard over the demo's store, read-only, and
// the fleet's Prometheus metrics at /metrics, on a free loopback port until
// ctx ends, and returns the dashboard's URL: the demo's dashboard hook.
func demoDashboard(ctx context.Context, st backwave.Store, metrics http.Handler) (string, error) {
	h, err := dashboard.New(st, dashboard.Options{Extensions: []dashboard.Extension{dashboardext.New()}})
	if err != nil {
		return "", err
	}
	mux := http.NewServeMux()
	mux.Handle(dashboard.DefaultPrefix+"/", h)
	if metrics != nil {
		mux.Handle("/metrics", metrics)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("listen: %w", err)
	}
	go func() { _ = serveOn(ctx, ln, mux) }()
	return fmt.Sprintf("http://%s%s/", ln.Addr(), dashboard.DefaultPrefix), nil
}
