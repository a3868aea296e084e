// Package dashboard is BackWave's web dashboard: the Monitor reads and every
// audited Operator Action in a browser, over any store, mounted under a path
// prefix of the host application's own HTTP server.
//
// # Mounting
//
//	h, err := dashboard.New(st, dashboard.Options{})
//	if err != nil { … }
//	mux.Handle("/backwave/", h)
//
// or, as a process of its own, dashboard.Serve(ctx, "127.0.0.1:8080", h).
// Pages are rendered on the server with html/template and read without
// JavaScript. A small embedded script adds live refresh over Server-Sent
// Events (with a visible pause control) and Tag Suggest as the operator
// types.
//
// # Security
//
// Every page needs the View Dashboard Permission; payloads, Failure Detail
// and Job Output need ViewSensitiveData and are shown as "hidden", never
// sent, without it. Every Operator Action is a POST gated by its own
// Permission (permission.Action.Permission), checked by
// http.CrossOriginProtection, and recorded in the audit trail under the
// Actor the host's ResolveActor names. GETs change nothing. Responses carry
// a Content-Security-Policy without 'unsafe-inline'. A request whose Host
// header is neither a loopback name (localhost, 127.0.0.1, [::1], any port)
// nor in Options.AllowedHosts is refused, which defeats DNS rebinding; the
// backwave command applies the same rule to /metrics and MCP over HTTP.
//
// With no Policy.Allow, the dashboard grants View to loopback clients only
// and denies every other Permission: a dashboard opened with the zero
// Options is a read-only view for the machine it runs on.
//
// # Authentication
//
// To serve it beyond loopback, configure one of two modes (or both):
// BasicAuth, HTTP basic credentials checked against bcrypt hashes from a
// password file, or TrustedProxy, the user named by a header that an
// authenticating reverse proxy sets, believed only from the proxy's
// addresses. An authenticated caller holds View from any address, the
// Policy decides the rest, and its writes are audited under its user name
// (User). Refusals are logged; each password guess costs a bcrypt
// comparison of at least MinBcryptCost.
//
// # Dashboard Extensions
//
// A separately installed package contributes navigation entries, a banner,
// GET pages and POST actions through Options.Extensions (see Extension).
// The dashboard keeps every security-critical concern for them: the View
// gate, the Permission and cross-origin checks, redirects and live refresh.
package dashboard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/permission"
	"github.com/backwave/backwave/store"
)

// DefaultPrefix is the path the dashboard is mounted under when
// Options.Prefix is empty.
const DefaultPrefix = "/backwave"

// DefaultRefreshInterval is how often a live page's event stream checks the
// store for changes when Options.RefreshInterval is 0.
const DefaultRefreshInterval = 2 * time.Second

// readerActor names the Admin the dashboard reads through. Reads record no
// Actor; every write gets an Admin of its own for the Actor ResolveActor
// names.
const readerActor backwave.Actor = "dashboard"

// Options configure a dashboard. The zero value is valid: mounted at
// DefaultPrefix, View for loopback clients only, no writes.
type Options struct {
	// Prefix is the path the dashboard is mounted under: it starts with a
	// slash and does not end with one (DefaultPrefix if empty).
	Prefix string

	// Replica, if set, serves the dashboard's Monitor reads (lists,
	// counts, facets, job detail) from a read replica of the store
	// (backwave.WithReplica; for PostgreSQL postgres.OpenReplica). Every
	// Operator Action, and the page it returns, still goes to the store.
	// When Replica also reports its lag (a ReplicaLag method, as
	// postgres.Replica has), the overview shows it.
	Replica store.Monitor

	// Policy is the host application's authorization: one callback per
	// Dashboard Permission and the Actor recorded on every write. With a
	// nil Policy.Allow the dashboard grants View to loopback clients only;
	// Policy.ReadOnly denies every write and hides their controls.
	Policy permission.Policy

	// AllowedHosts lists the Host header values the dashboard answers
	// besides the loopback names (localhost, 127.0.0.1 and [::1], always
	// allowed), as a host name or address, optionally with a port
	// ("jobs.example.com", "jobs.example.com:8443"); one without a port
	// matches any port. A request with any other Host is refused (DNS
	// rebinding). The same rule guards /metrics and the MCP Server's HTTP
	// endpoint in the backwave command.
	AllowedHosts []string

	// AnyHost turns the Host allow-list off, for a dashboard behind a
	// proxy that checks the Host itself. AllowedHosts must then be empty.
	AnyHost bool

	// BasicAuth, when set, admits only callers who sign in with HTTP basic
	// credentials matching its bcrypt hashes (see LoadPasswordFile); a
	// wrong or missing password is refused with 401 and logged. The user
	// name is User(ctx) and, unless Policy.ResolveActor is set, the Actor
	// of the caller's writes.
	BasicAuth *BasicAuth

	// TrustedProxy, when set, takes the caller's user name from the
	// header an authenticating proxy sets, believed only on connections
	// from the proxy's addresses; any other caller is refused (or, with
	// BasicAuth also set, must sign in), and one that sends the header
	// itself is refused and logged as a forgery.
	TrustedProxy *TrustedProxy

	// RefreshInterval is how often a live page's event stream looks for
	// changes (DefaultRefreshInterval if 0; at least 50ms otherwise). The
	// open pages share one reading of the store per half interval.
	RefreshInterval time.Duration

	// Extensions are the Dashboard Extensions to mount, in nav order.
	Extensions []Extension

	// Logger receives errors the dashboard could not show to the operator
	// (slog.Default() if nil).
	Logger *slog.Logger
}

// New returns the dashboard over st as an http.Handler serving the paths
// under Options.Prefix, and redirecting a GET of the site's root ("/"),
// when it is routed here, to the Overview under the prefix. Reads go through a backwave.Admin over st; each
// write goes through one that acts as the Actor Options.Policy.ResolveActor
// names for that request. Invalid Options (a malformed prefix, a bad host
// entry, an extension without a name, a route twice) are an error.
func New(st backwave.Store, opts Options) (http.Handler, error) {
	s, err := newServer(st, opts)
	if err != nil {
		return nil, err
	}
	return s.handler, nil
}

// Serve serves h on addr until ctx is done, then shuts the server down,
// giving open requests five seconds. Request contexts derive from ctx, so
// live-refresh streams end when it is cancelled.
func Serve(ctx context.Context, addr string, h http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("dashboard: listen on %s: %w", addr, err)
	}
	return serveListener(ctx, ln, h)
}

func serveListener(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("dashboard: serve: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("dashboard: shut down: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("dashboard: serve: %w", err)
	}
	return nil
}

// normalizePrefix checks Options.Prefix.
func normalizePrefix(p string) (string, error) {
	if p == "" {
		return DefaultPrefix, nil
	}
	switch {
	case !strings.HasPrefix(p, "/"):
		return "", fmt.Errorf("dashboard: prefix %q does not start with a slash", p)
	case len(p) > 1 && strings.HasSuffix(p, "/"):
		return "", fmt.Errorf("dashboard: prefix %q ends with a slash", p)
	case strings.ContainsAny(p, "{}?#%\\ ") || strings.Contains(p, "//"):
		return "", fmt.Errorf("dashboard: prefix %q has characters a path prefix cannot hold", p)
	}
	if p == "/" {
		return "", nil
	}
	return p, nil
}
