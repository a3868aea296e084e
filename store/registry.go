package store

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"sync"
)

// OpenFunc opens a store from a URI whose scheme it registered for.
type OpenFunc func(ctx context.Context, uri *url.URL) (Store, error)

// Registry maps URI schemes to adapters. The zero value is empty and ready;
// Default is the one Open uses.
type Registry struct {
	mu      sync.RWMutex
	openers map[string]OpenFunc
}

// Default is the registry adapters add themselves to from an init function,
// the way database/sql drivers do; import an adapter package for its scheme.
var Default = &Registry{}

// Register adds an adapter for scheme. Registering a scheme twice replaces
// the first.
func (r *Registry) Register(scheme string, open OpenFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.openers == nil {
		r.openers = make(map[string]OpenFunc)
	}
	r.openers[scheme] = open
}

// Schemes lists the registered schemes, sorted.
func (r *Registry) Schemes() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.openers))
	for s := range r.openers {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Open parses uri and opens it with the adapter registered for its scheme.
// When it fails the Store is nil — a nil interface, never an adapter's nil
// pointer inside one — so a deferred Close is never called on it by mistake
// and a nil check means what it says.
func (r *Registry) Open(ctx context.Context, uri string) (Store, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return nil, fmt.Errorf("store: parse URI: %w", err)
	}
	if u.Scheme == "" {
		return nil, fmt.Errorf("%w: %q has no scheme (want one of %v)", ErrUnknownScheme, uri, r.Schemes())
	}
	r.mu.RLock()
	open := r.openers[u.Scheme]
	r.mu.RUnlock()
	if open == nil {
		return nil, fmt.Errorf("%w: %q (registered: %v)", ErrUnknownScheme, u.Scheme, r.Schemes())
	}
	s, err := open(ctx, u)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Register adds an adapter to Default.
func Register(scheme string, open OpenFunc) { Default.Register(scheme, open) }

// Open opens uri with Default, e.g. "mem://", "sqlite:///var/lib/app/jobs.db"
// or "postgres://user@host/db".
func Open(ctx context.Context, uri string) (Store, error) { return Default.Open(ctx, uri) }
