package dashboard

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"

	"golang.org/x/crypto/bcrypt"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/internal/filecheck"
	"github.com/backwave/backwave/store"
)

// MinBcryptCost is the lowest bcrypt cost a password hash may have: each
// guess then costs the guesser tens of milliseconds of the server's CPU,
// which is what slows a brute-force attempt (bcrypt.DefaultCost).
const MinBcryptCost = bcrypt.DefaultCost

// maxConcurrentChecks bounds the bcrypt comparisons running at once, so a
// flood of guesses queues instead of taking every core.
const maxConcurrentChecks = 4

// BasicAuth is the dashboard's built-in authentication: HTTP basic
// credentials checked against bcrypt hashes. A caller it admits is known
// by its user name, the Actor its writes record. Build one with
// NewBasicAuth or LoadPasswordFile.
type BasicAuth struct {
	users map[string][]byte
	// dummy is compared against when the user is unknown, so an unknown
	// name costs as much as a wrong password and timing tells nothing.
	dummy []byte
	slots chan struct{}
}

// NewBasicAuth returns the BasicAuth over users, user name to bcrypt hash
// (as htpasswd -B or bcrypt.GenerateFromPassword writes it). A user name
// must be a valid Actor without a colon; a hash must be bcrypt of at least
// MinBcryptCost. An empty map is an error: no one could sign in.
func NewBasicAuth(users map[string]string) (*BasicAuth, error) {
	if len(users) == 0 {
		return nil, errors.New("dashboard: basic authentication with no users: no one could sign in")
	}
	a := &BasicAuth{users: make(map[string][]byte, len(users)), slots: make(chan struct{}, maxConcurrentChecks)}
	for name, hash := range users {
		if err := checkUserName(name); err != nil {
			return nil, err
		}
		cost, err := bcrypt.Cost([]byte(hash))
		if err != nil {
			return nil, fmt.Errorf("dashboard: user %s: the password hash is not bcrypt: %w", store.Echo(name), err)
		}
		if cost < MinBcryptCost {
			return nil, fmt.Errorf("dashboard: user %s: bcrypt cost %d is below %d: a guess would be too cheap", store.Echo(name), cost, MinBcryptCost)
		}
		a.users[name] = []byte(hash)
		if a.dummy == nil || cost > mustCost(a.dummy) {
			a.dummy = []byte(hash)
		}
	}
	return a, nil
}

func mustCost(hash []byte) int {
	c, _ := bcrypt.Cost(hash)
	return c
}

// checkUserName checks a user name of a password file or a trusted
// proxy's header: a valid Actor, without a colon (HTTP basic splits on it).
func checkUserName(name string) error {
	if strings.Contains(name, ":") {
		return fmt.Errorf("dashboard: user name %s holds a colon", store.Echo(name))
	}
	if err := backwave.Actor(name).Validate(); err != nil {
		return fmt.Errorf("dashboard: user name: %w", err)
	}
	return nil
}

// LoadPasswordFile reads a password file: one "user:bcrypt-hash" a line,
// as `htpasswd -nB user` prints it; blank lines and lines starting with #
// are skipped. Every entry is checked as NewBasicAuth checks it, and an
// error names the line.
func LoadPasswordFile(path string) (*BasicAuth, error) {
	// Look before opening: opening a FIFO would block until a writer came.
	if _, err := filecheck.Regular(path, false); err != nil {
		return nil, fmt.Errorf("dashboard: password file: %w", err)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dashboard: password file: %w", err)
	}
	defer func() { _ = f.Close() }()
	users, err := parsePasswordFile(io.LimitReader(f, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("dashboard: password file %s: %w", path, err)
	}
	return NewBasicAuth(users)
}

func parsePasswordFile(r io.Reader) (map[string]string, error) {
	users := make(map[string]string)
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, hash, ok := strings.Cut(line, ":")
		if !ok || name == "" || hash == "" {
			return nil, fmt.Errorf("line %d is not user:bcrypt-hash", n)
		}
		if _, dup := users[name]; dup {
			return nil, fmt.Errorf("line %d: user %s is named twice", n, store.Echo(name))
		}
		users[name] = hash
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return users, nil
}

// check reports whether the password is the user's. An unknown user costs
// one bcrypt comparison too.
func (a *BasicAuth) check(ctx context.Context, user, password string) bool {
	select {
	case a.slots <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	defer func() { <-a.slots }()
	hash, known := a.users[user]
	if !known {
		hash = a.dummy
	}
	ok := bcrypt.CompareHashAndPassword(hash, []byte(password)) == nil
	return ok && known
}

// TrustedProxy is the dashboard's trusted-proxy mode: an authenticating
// reverse proxy (an SSO gateway) in front of it names the user in a
// header, and the dashboard believes that header only on a connection
// from one of the proxy's addresses. Any other caller is refused, and one
// that sends the header itself is logged as a forgery.
type TrustedProxy struct {
	// Header names the user, e.g. "X-Forwarded-User"; its value must be a
	// valid Actor without a colon.
	Header string
	// Proxies are the addresses the proxy connects from; a bare address
	// is a one-address prefix.
	Proxies []netip.Prefix
}

// check validates the mode.
func (tp *TrustedProxy) check() error {
	if tp.Header == "" || strings.ContainsAny(tp.Header, " \t\r\n:") {
		return fmt.Errorf("dashboard: TrustedProxy.Header %s is not a header name", store.Echo(tp.Header))
	}
	if len(tp.Proxies) == 0 {
		return errors.New("dashboard: TrustedProxy.Proxies is empty: no request could be believed")
	}
	for _, p := range tp.Proxies {
		if !p.IsValid() {
			return errors.New("dashboard: TrustedProxy.Proxies holds an invalid prefix")
		}
	}
	return nil
}

// from reports whether addr is one of the proxy's.
func (tp *TrustedProxy) from(addr netip.Addr) bool {
	for _, p := range tp.Proxies {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// userKey is the context key of the authenticated user name.
type userKey struct{}

// User returns the name the dashboard's authentication (BasicAuth or
// TrustedProxy) gave the caller behind ctx, or "" when neither is
// configured: a Policy's callbacks use it to decide and to name the Actor.
func User(ctx context.Context) string {
	u, _ := ctx.Value(userKey{}).(string)
	return u
}

// authenticating reports whether either mode is configured.
func (s *server) authenticating() bool { return s.basic != nil || s.proxy != nil }

// authenticate identifies the caller of r, or refuses it (and says so in
// the log) and reports false. With neither mode configured every caller
// passes, unnamed.
func (s *server) authenticate(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	if !s.authenticating() {
		return r, true
	}
	remote := remoteAddr(r)
	if s.proxy != nil {
		value, sent := r.Header[http.CanonicalHeaderKey(s.proxy.Header)]
		if remote.IsValid() && s.proxy.from(remote) {
			if sent {
				name := strings.TrimSpace(value[0])
				if len(value) != 1 || checkUserName(name) != nil {
					s.log.WarnContext(r.Context(), "dashboard: refused a trusted proxy's request: its user header is not one valid name",
						"remote", r.RemoteAddr, "header", s.proxy.Header, "value", clipValue(value))
					http.Error(w, "forbidden: the proxy's user header does not name one valid user", http.StatusForbidden)
					return nil, false
				}
				return r.WithContext(context.WithValue(r.Context(), userKey{}, name)), true
			}
			if s.basic == nil {
				s.log.WarnContext(r.Context(), "dashboard: refused a trusted proxy's request without its user header",
					"remote", r.RemoteAddr, "header", s.proxy.Header)
				http.Error(w, "forbidden: the proxy named no user", http.StatusForbidden)
				return nil, false
			}
		} else if sent {
			s.log.WarnContext(r.Context(), "dashboard: refused a forged user header from an address that is not a trusted proxy",
				"remote", r.RemoteAddr, "header", s.proxy.Header, "value", clipValue(value))
			http.Error(w, "forbidden: "+s.proxy.Header+" is believed only from the trusted proxy", http.StatusForbidden)
			return nil, false
		} else if s.basic == nil {
			s.log.WarnContext(r.Context(), "dashboard: refused a request that did not come through the trusted proxy", "remote", r.RemoteAddr)
			http.Error(w, "forbidden: this dashboard is served through its authenticating proxy only", http.StatusForbidden)
			return nil, false
		}
	}
	user, password, ok := r.BasicAuth()
	if !ok {
		w.Header().Set("WWW-Authenticate", `Basic realm="BackWave dashboard", charset="UTF-8"`)
		http.Error(w, "unauthorized: sign in", http.StatusUnauthorized)
		return nil, false
	}
	if !s.basic.check(r.Context(), user, password) {
		s.log.WarnContext(r.Context(), "dashboard: refused a sign-in: wrong user name or password",
			"remote", r.RemoteAddr, "user", store.Echo(user))
		w.Header().Set("WWW-Authenticate", `Basic realm="BackWave dashboard", charset="UTF-8"`)
		http.Error(w, "unauthorized: wrong user name or password", http.StatusUnauthorized)
		return nil, false
	}
	return r.WithContext(context.WithValue(r.Context(), userKey{}, user)), true
}

// clipValue renders a header's values for the log, clipped.
func clipValue(v []string) string {
	return store.Echo(strings.Join(v, ", "))
}

// remoteAddr is the address r's connection came from (the zero Addr when
// it cannot be read).
func remoteAddr(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return addr.Unmap()
}

// actorFor names the Actor of a write: Policy.ResolveActor when the host
// set one, else the authenticated user.
func (s *server) actorFor(ctx context.Context) (string, error) {
	if s.policy.ResolveActor == nil && s.authenticating() {
		if u := User(ctx); u != "" {
			return u, nil
		}
	}
	return s.policy.Actor(ctx)
}
