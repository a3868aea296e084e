package memstore

import (
	"context"
	"fmt"
	"net/url"

	"github.com/backwave/backwave/store"
)

// Scheme is the URI scheme the package registers with store.Register.
const Scheme = "mem"

func init() { store.Register(Scheme, open) }

// open serves store.Open("mem://"): a fresh, empty Store on a vtime.Manual
// clock at vtime.Epoch. The URI must carry nothing after "mem://" but an
// optional history parameter (the Job History Policy), so that a URI that
// looks like it names a shared store is refused rather than silently given
// a private one.
func open(_ context.Context, u *url.URL) (store.Store, error) {
	q := u.Query()
	history, _, err := store.HistoryFromQuery(q)
	if err != nil {
		return nil, fmt.Errorf("memstore: URI %q: %w", u.Redacted(), err)
	}
	q.Del("history")
	if u.Host != "" || (u.Path != "" && u.Path != "/") || len(q) != 0 || u.Opaque != "" || u.User != nil {
		return nil, fmt.Errorf("memstore: %w: URI %q: want \"mem://\", optionally with ?history=POLICY", store.ErrInvalidParams, u.Redacted())
	}
	return New(Options{History: history}), nil
}
