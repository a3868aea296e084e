package backwave

import (
	"context"
	"net/url"

	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/memstore"
)

// init registers "mem://" on the wall clock, replacing the In-Memory
// Store's own registration (which, below the determinism boundary, has no
// real clock and serves only "mem://?clock=manual"). memstore's init runs
// first, since this package imports it.
func init() {
	store.Register(memstore.Scheme, func(_ context.Context, u *url.URL) (store.Store, error) {
		return memstore.OpenURI(u, WallClock{})
	})
}
