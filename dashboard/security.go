package dashboard

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/backwave/backwave/permission"
)

// contentSecurityPolicy allows scripts, styles and fetches from the
// dashboard's own origin only: no inline script, no inline style, no
// frames, no plugins, and forms post back to the dashboard alone.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// defaultHosts is the Host allow-list when Options.AllowedHosts is nil.
var defaultHosts = []string{"localhost", "127.0.0.1", "[::1]"}

// hostRule is one entry of the Host allow-list.
type hostRule struct {
	host string // lower case, brackets kept on IPv6
	port string // "" matches any port
}

// parseHosts checks and parses the allow-list.
func parseHosts(entries []string) ([]hostRule, error) {
	out := make([]hostRule, 0, len(entries))
	for _, e := range entries {
		if e == "" || strings.ContainsAny(e, "/ \t@") {
			return nil, fmt.Errorf("dashboard: allowed host %q is not a host name or address", e)
		}
		host, port := splitHost(e)
		if host == "" {
			return nil, fmt.Errorf("dashboard: allowed host %q names no host", e)
		}
		out = append(out, hostRule{host: strings.ToLower(host), port: port})
	}
	return out, nil
}

// splitHost splits a Host header value into host and port, keeping IPv6
// brackets on the host; port is "" when there is none.
func splitHost(v string) (host, port string) {
	if strings.HasPrefix(v, "[") {
		end := strings.IndexByte(v, ']')
		if end < 0 {
			return "", ""
		}
		host, rest := v[:end+1], v[end+1:]
		if rest == "" {
			return host, ""
		}
		if !strings.HasPrefix(rest, ":") || len(rest) == 1 {
			return "", ""
		}
		return host, rest[1:]
	}
	if i := strings.LastIndexByte(v, ':'); i >= 0 {
		if strings.Count(v, ":") > 1 {
			return "", "" // an IPv6 address without brackets is not a Host header
		}
		if i == len(v)-1 {
			return "", ""
		}
		return v[:i], v[i+1:]
	}
	return v, ""
}

// hostAllowed reports whether the request's Host header is on the list.
func hostAllowed(rules []hostRule, hostHeader string) bool {
	host, port := splitHost(hostHeader)
	if host == "" {
		return false
	}
	host = strings.ToLower(host)
	for _, r := range rules {
		if r.host == host && (r.port == "" || r.port == port) {
			return true
		}
	}
	return false
}

// isLoopback reports whether the request came from a loopback address.
func isLoopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	addr, err := netip.ParseAddr(host)
	return err == nil && addr.Unmap().IsLoopback()
}

// allowed reports whether the caller of r holds p: the host's Policy, or,
// without Policy.Allow, View for loopback clients only.
func (s *server) allowed(r *http.Request, p permission.Permission) bool {
	if s.policy.Allow == nil && !isLoopback(r) {
		return false
	}
	return s.policy.Allowed(permission.WithRequest(r.Context(), r), p)
}

// Capabilities is what the caller of one request may do beyond View, for
// the templates (an extension page's PageData.Can among them): a control
// appears only when its action would be allowed.
type Capabilities struct {
	// Sensitive is ViewSensitiveData: payloads, Failure Detail, Job Output.
	Sensitive bool
	// Requeue, Cancel, Trigger (TriggerSchedule) and Pause (PauseQueue)
	// are the write Permissions.
	Requeue bool
	Cancel  bool
	Trigger bool
	Pause   bool
}

func (s *server) canFor(r *http.Request) Capabilities {
	return Capabilities{
		Sensitive: s.allowed(r, permission.ViewSensitiveData),
		Requeue:   s.allowed(r, permission.Requeue),
		Cancel:    s.allowed(r, permission.Cancel),
		Trigger:   s.allowed(r, permission.TriggerSchedule),
		Pause:     s.allowed(r, permission.PauseQueue),
	}
}

// guard is the outermost layer: the Host allow-list, the security headers
// every response carries, then the cross-origin check on every unsafe
// method.
func (s *server) guard(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "forbidden: cross-origin request refused", http.StatusForbidden)
	}))
	checked := cop.Handler(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		if !s.anyHost && !hostAllowed(s.hosts, r.Host) {
			http.Error(w, "forbidden: host not allowed", http.StatusForbidden)
			return
		}
		checked.ServeHTTP(w, r)
	})
}
