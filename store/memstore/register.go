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
// clock at vtime.Epoch. The URI must carry nothing after "mem://", so that
// a URI that looks like it names a shared store is refused rather than
// silently given a private one.
func open(_ context.Context, u *url.URL) (store.Store, error) {
	if u.Host != "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Opaque != "" || u.User != nil {
		return nil, fmt.Errorf("memstore: %w: URI %q: want exactly \"mem://\"", store.ErrInvalidParams, u.Redacted())
	}
	return New(Options{}), nil
}
