package memstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/vtime"
)

// Scheme is the URI scheme the package registers with store.Register.
const Scheme = "mem"

// ErrNoRealClock is wrapped by OpenURI for a "mem://" without
// "?clock=manual" when it was given no real clock: this package, below the
// determinism boundary, cannot read one itself.
var ErrNoRealClock = errors.New("no real clock to run on")

// init registers "mem" with no real clock: on its own the package serves
// only "mem://?clock=manual". The root package backwave, which every
// Client program imports, registers it again with the wall clock.
func init() {
	store.Register(Scheme, func(_ context.Context, u *url.URL) (store.Store, error) { return OpenURI(u, nil) })
}

// OpenURI opens a "mem://" URI: a fresh, empty Store. Its clock is real,
// unless the URI asks for a vtime.Manual standing at vtime.Epoch with
// "?clock=manual" (for tests that step time themselves): a Client over a
// store whose clock never moves would never see a retry, delay or schedule
// come due. real is that real clock; when it is nil a URI without
// clock=manual is refused with ErrNoRealClock.
//
// The URI must carry nothing after "mem://" but the optional clock and
// history (the Job History Policy) parameters, so that a URI that looks
// like it names a shared store is refused rather than silently given a
// private one.
func OpenURI(u *url.URL, real vtime.Clock) (*Store, error) {
	q := u.Query()
	history, _, err := store.HistoryFromQuery(q)
	if err != nil {
		return nil, fmt.Errorf("memstore: URI %q: %w", u.Redacted(), err)
	}
	q.Del("history")
	clock := real
	if vs, ok := q["clock"]; ok {
		switch {
		case len(vs) == 1 && vs[0] == "manual":
			clock = vtime.NewManual(vtime.Epoch)
		case len(vs) == 1 && vs[0] == "real":
		default:
			return nil, fmt.Errorf("memstore: %w: URI %q: clock=%q (want manual or real)", store.ErrInvalidParams, u.Redacted(), vs)
		}
		q.Del("clock")
	}
	if u.Host != "" || (u.Path != "" && u.Path != "/") || len(q) != 0 || u.Opaque != "" || u.User != nil {
		return nil, fmt.Errorf("memstore: %w: URI %q: want \"mem://\", optionally with ?clock=manual and ?history=POLICY", store.ErrInvalidParams, u.Redacted())
	}
	if clock == nil {
		return nil, fmt.Errorf("memstore: URI %q: %w: import github.com/backwave/backwave (it registers mem:// on the wall clock) or ask for mem://?clock=manual", u.Redacted(), ErrNoRealClock)
	}
	return New(Options{Clock: clock, History: history}), nil
}
