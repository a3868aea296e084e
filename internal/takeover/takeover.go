// Package takeover carries package jobtest's request to drive a Client's
// Pumps by hand: jobtest passes Client.Start a context holding a Request,
// and Start, instead of starting the Pumps' goroutines, registers the
// schedules and hands the Pumps over as shell.Manual values. Code outside
// this module cannot import the package, so it cannot make such a context,
// and the Client's public API names none of this.
package takeover

import (
	"context"

	"github.com/backwave/backwave/shell"
)

// Request is filled by Client.Start with the Client's Pumps, in order, each
// taken over for driving by hand.
type Request struct {
	Pumps []*shell.Manual
	// Walks are the Client's Transition Observers' walks, in Config
	// order, each taken over for driving by hand.
	Walks []*shell.WalkManual
}

type key struct{}

// With returns a context carrying r.
func With(ctx context.Context, r *Request) context.Context {
	return context.WithValue(ctx, key{}, r)
}

// From returns the Request ctx carries, or nil.
func From(ctx context.Context) *Request {
	r, _ := ctx.Value(key{}).(*Request)
	return r
}
