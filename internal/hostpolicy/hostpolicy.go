// Package hostpolicy is the one Host header policy of everything a
// BackWave process serves over HTTP: the dashboard, /metrics and the MCP
// Server's streamable-HTTP endpoint. A request whose Host (or, for an
// absolute-form request line, the URL's host, which net/http puts in
// Request.Host) is not allowed is refused with 403, which defeats DNS
// rebinding: a page of another site whose name resolves to this machine
// sends its own name as the Host.
//
// The loopback names (localhost, 127.0.0.1, [::1], on any port) are
// always allowed: a browser sends them only to a page it loaded from this
// machine. Further names come from the operator (the public name a
// reverse proxy forwards under); Any turns the check off for a proxy that
// checks the Host itself.
package hostpolicy

import (
	"fmt"
	"net/http"
	"strings"
)

// loopbackHosts are allowed on any port under every Policy.
var loopbackHosts = []string{"localhost", "127.0.0.1", "[::1]"}

// rule is one allowed host.
type rule struct {
	host string // lower case, brackets kept on IPv6
	port string // "" matches any port
}

// Policy is a Host allow-list. The zero Policy allows the loopback names
// only.
type Policy struct {
	rules []rule
	any   bool
}

// New returns the Policy allowing the loopback names and each entry of
// allowed: a host name or address, optionally with a port
// ("jobs.example.com", "jobs.example.com:8443", "[2001:db8::1]"); one
// without a port matches any port. any turns the check off, and allowed
// must then be empty. A malformed entry is an error.
func New(allowed []string, any bool) (*Policy, error) {
	if any && len(allowed) > 0 {
		return nil, fmt.Errorf("any host is allowed, so no allowed hosts may be listed (got %d)", len(allowed))
	}
	p := &Policy{any: any}
	for _, e := range append(append([]string(nil), loopbackHosts...), allowed...) {
		if e == "" || strings.ContainsAny(e, "/ \t\r\n@?#\\") {
			return nil, fmt.Errorf("allowed host %q is not a host name or address", e)
		}
		host, port := split(e)
		if host == "" {
			return nil, fmt.Errorf("allowed host %q names no host (an IPv6 address needs brackets)", e)
		}
		p.rules = append(p.rules, rule{host: strings.ToLower(host), port: port})
	}
	return p, nil
}

// Allows reports whether a request with this Host may be served. An empty
// Host (an HTTP/1.0 request without one) is refused.
func (p *Policy) Allows(hostHeader string) bool {
	if p.any {
		return true
	}
	host, port := split(hostHeader)
	if host == "" {
		return false
	}
	host = strings.ToLower(host)
	rules := p.rules
	if rules == nil {
		rules = defaultRules
	}
	for _, r := range rules {
		if r.host == host && (r.port == "" || r.port == port) {
			return true
		}
	}
	return false
}

var defaultRules = func() []rule {
	var out []rule
	for _, h := range loopbackHosts {
		out = append(out, rule{host: h})
	}
	return out
}()

// Handler wraps next: a request whose Host the Policy refuses is answered
// 403 and never reaches next.
func (p *Policy) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !p.Allows(r.Host) {
			http.Error(w, "forbidden: host not allowed", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// split splits a Host header value into host and port, keeping IPv6
// brackets on the host; port is "" when there is none, and host is ""
// when the value is malformed.
func split(v string) (host, port string) {
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
		if strings.Count(v, ":") > 1 || i == len(v)-1 {
			return "", "" // an IPv6 address without brackets is not a Host header
		}
		return v[:i], v[i+1:]
	}
	return v, ""
}
