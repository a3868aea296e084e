package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os/signal"
	"strings"
	"syscall"

	"github.com/urfave/cli/v3"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/dashboard"
	"github.com/backwave/backwave/internal/hostpolicy"
	"github.com/backwave/backwave/internal/metricsserve"
	"github.com/backwave/backwave/permission"
	"github.com/backwave/backwave/store"
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
			"writes are audited as --actor. A non-loopback --addr is refused unless callers are authenticated:\n" +
			"--password-file FILE (HTTP basic against bcrypt hashes, one user:hash a line, as htpasswd -nB prints)\n" +
			"or --trusted-proxy ADDR (the user named by --proxy-header, believed only from those addresses);\n" +
			"writes are then audited as the signed-in user. --allowed-host names the public Host the dashboard\n" +
			"is reached under; every path served, /metrics too, refuses any other Host.",
		Flags: []cli.Flag{
			dbFlag(),
			replicaFlag(),
			&cli.StringFlag{Name: "addr", Value: defaultDashboardAddr, Usage: "address to listen on"},
			&cli.StringSliceFlag{Name: "allow", Usage: "grant these Permissions beyond View (repeatable or comma-separated): " + strings.Join(grantable(), ", ")},
			actorFlag(),
			&cli.StringFlag{Name: "password-file", Usage: "require HTTP basic sign-in against this file of user:bcrypt-hash lines (htpasswd -nB USER)"},
			&cli.StringSliceFlag{Name: "trusted-proxy", Usage: "believe --proxy-header only on connections from these addresses or prefixes (10.0.0.5, 10.0.0.0/24; repeatable)"},
			&cli.StringFlag{Name: "proxy-header", Value: "X-Forwarded-User", Usage: "the header a --trusted-proxy names the user in"},
			&cli.StringSliceFlag{Name: "allowed-host", Usage: "a Host the dashboard is reached under besides the loopback names (jobs.example.com; repeatable)"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			addr := cmd.String("addr")
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return usagef("--addr %q: want HOST:PORT, e.g. %s", addr, defaultDashboardAddr)
			}
			auth, err := dashboardAuth(cmd)
			if err != nil {
				return err
			}
			if !isLoopbackHost(host) && auth.basic == nil && auth.proxy == nil {
				return usagef("--addr %s is not a loopback address, and nothing authenticates its callers: every client that reaches it "+
					"would hold the granted Permissions. Give --password-file FILE (built-in sign-in) or --trusted-proxy ADDR "+
					"(behind your authenticating proxy), or listen on 127.0.0.1", addr)
			}
			pol, err := grantPolicy(cmd)
			if err != nil {
				return err
			}
			allowed, err := allowedOf(cmd)
			if err != nil {
				return err
			}
			if auth.basic != nil || auth.proxy != nil {
				if cmd.IsSet("actor") {
					return usagef("--actor: with --password-file or --trusted-proxy every write is audited as the signed-in user")
				}
				pol.ResolveActor = nil // the dashboard then names the user
			}
			hosts, err := hostpolicy.New(cmd.StringSlice("allowed-host"), false)
			if err != nil {
				return usagef("--allowed-host: %v", err)
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
			replica, err := openReplica(ctx, cmd, t, st)
			if err != nil {
				return err
			}
			var monitor store.Monitor
			if replica != nil {
				defer func() { _ = replica.Close() }()
				monitor = replica
			}
			h, err := dashboard.New(st, dashboard.Options{
				Replica: monitor,
				Policy:  pol, Extensions: []dashboard.Extension{dashboardext.New()},
				AllowedHosts: cmd.StringSlice("allowed-host"), BasicAuth: auth.basic, TrustedProxy: auth.proxy,
			})
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
			mux.Handle("GET /{$}", h) // the handler sends / on to the prefix
			mux.Handle("/metrics", m.Handler)
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("dashboard: listen on %s: %w", addr, err)
			}
			fmt.Fprintf(cmd.Root().Writer, "dashboard: http://%s%s/ (%s; Prometheus metrics at /metrics; Ctrl-C stops it)\n", ln.Addr(), dashboard.DefaultPrefix, grantsText(allowed))
			sigCtx, stop := signal.NotifyContext(ctx, syscall.SIGTERM)
			defer stop()
			// One Host policy for every path the process serves.
			return serveOn(sigCtx, ln, hosts.Handler(mux))
		},
	}
}

// dashboardAuthOf is what authenticates the dashboard's callers, from the
// flags: neither, either or both.
type dashboardAuthOf struct {
	basic *dashboard.BasicAuth
	proxy *dashboard.TrustedProxy
}

// dashboardAuth reads --password-file and --trusted-proxy.
func dashboardAuth(cmd *cli.Command) (dashboardAuthOf, error) {
	var a dashboardAuthOf
	if path := cmd.String("password-file"); path != "" {
		b, err := dashboard.LoadPasswordFile(path)
		if err != nil {
			return a, usageError{err}
		}
		a.basic = b
	}
	if proxies := cmd.StringSlice("trusted-proxy"); len(proxies) > 0 {
		tp := &dashboard.TrustedProxy{Header: cmd.String("proxy-header")}
		for _, p := range proxies {
			prefix, err := parseProxy(strings.TrimSpace(p))
			if err != nil {
				return a, usagef("--trusted-proxy %q: %v", p, err)
			}
			tp.Proxies = append(tp.Proxies, prefix)
		}
		a.proxy = tp
	} else if cmd.IsSet("proxy-header") {
		return a, usagef("--proxy-header needs --trusted-proxy: the header is believed only from the proxy's addresses")
	}
	return a, nil
}

// parseProxy reads an address (one-address prefix) or a CIDR prefix.
func parseProxy(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		return p.Masked(), nil
	}
	addr, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("want an IP address or prefix: %w", err)
	}
	addr = addr.Unmap()
	return netip.PrefixFrom(addr, addr.BitLen()), nil
}

// isLoopbackHost reports whether a listen address's host is this machine
// alone: localhost or a loopback IP. The empty host (":8080") and the
// unspecified addresses (0.0.0.0, [::]) are every interface.
func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	addr, err := netip.ParseAddr(host)
	return err == nil && addr.Unmap().IsLoopback()
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
	// A demo on its own file, served on loopback only: every Permission is
	// granted, so each page's actions can be tried; writes are audited as
	// demo:dashboard.
	h, err := dashboard.New(st, dashboard.Options{
		Policy: permission.Policy{
			Allow:        func(context.Context, permission.Permission) bool { return true },
			ResolveActor: func(context.Context) (string, error) { return "demo:dashboard", nil },
		},
		Extensions: []dashboard.Extension{dashboardext.New()},
	})
	if err != nil {
		return "", err
	}
	mux := http.NewServeMux()
	mux.Handle(dashboard.DefaultPrefix+"/", h)
	mux.Handle("GET /{$}", h) // the handler sends / on to the prefix
	if metrics != nil {
		mux.Handle("/metrics", metrics)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("listen: %w", err)
	}
	var loopbackOnly hostpolicy.Policy
	go func() { _ = serveOn(ctx, ln, loopbackOnly.Handler(mux)) }()
	return fmt.Sprintf("http://%s%s/", ln.Addr(), dashboard.DefaultPrefix), nil
}
