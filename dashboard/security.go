package dashboard

import (
	"net"
	"net/http"
	"net/netip"

	"github.com/backwave/backwave/permission"
)

// contentSecurityPolicy allows scripts, styles and fetches from the
// dashboard's own origin only: no inline script, no inline style, no
// frames, no plugins, and forms post back to the dashboard alone.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

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
// without Policy.Allow, View for loopback clients and authenticated users
// only.
func (s *server) allowed(r *http.Request, p permission.Permission) bool {
	if s.policy.Allow == nil && !isLoopback(r) && User(r.Context()) == "" {
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
	// Requeue, Cancel, Trigger (TriggerSchedule), Pause (PauseQueue) and
	// Enqueue are the write Permissions.
	Requeue bool
	Cancel  bool
	Trigger bool
	Pause   bool
	Enqueue bool
	// Delete is the Delete Permission: removing terminal jobs.
	Delete bool
}

func (s *server) canFor(r *http.Request) Capabilities {
	return Capabilities{
		Sensitive: s.allowed(r, permission.ViewSensitiveData),
		Requeue:   s.allowed(r, permission.Requeue),
		Cancel:    s.allowed(r, permission.Cancel),
		Trigger:   s.allowed(r, permission.TriggerSchedule),
		Pause:     s.allowed(r, permission.PauseQueue),
		Enqueue:   s.allowed(r, permission.Enqueue),
		Delete:    s.allowed(r, permission.Delete),
	}
}

// guard is the outermost layer: the security headers every response
// carries, the Host allow-list, authentication when configured, then the
// cross-origin check on every unsafe method.
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
		if !s.hosts.Allows(r.Host) {
			http.Error(w, "forbidden: host not allowed", http.StatusForbidden)
			return
		}
		r, ok := s.authenticate(w, r)
		if !ok {
			return
		}
		checked.ServeHTTP(w, r)
	})
}
