package memstore

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// FleetStamp records that p.Worker handles exactly p.WireNames, stamped with
// the store's now, removes every row stamped before now − p.Forget, and
// returns the registry, ordered by Wire Name then Worker, with that now.
func (s *Store) FleetStamp(ctx context.Context, p store.FleetStampParams) (store.FleetView, error) {
	if err := p.Validate(); err != nil {
		return store.FleetView{}, err
	}
	if err := s.lock(ctx); err != nil {
		return store.FleetView{}, err
	}
	defer s.mu.Unlock()
	now := s.clock.Now()
	if s.fleet == nil {
		s.fleet = make(map[job.WorkerID]map[string]time.Time)
	}
	delete(s.fleet, p.Worker)
	if len(p.WireNames) > 0 {
		names := make(map[string]time.Time, len(p.WireNames))
		for _, name := range p.WireNames {
			names[name] = now
		}
		s.fleet[p.Worker] = names
	}
	horizon := now.Add(-p.Forget)
	var out []core.HandlerStamp
	for w, names := range s.fleet {
		for name, at := range names {
			if at.Before(horizon) {
				delete(names, name)
				continue
			}
			out = append(out, core.HandlerStamp{Worker: w, WireName: name, StampedAt: at})
		}
		if len(names) == 0 {
			delete(s.fleet, w)
		}
	}
	slices.SortFunc(out, func(a, b core.HandlerStamp) int {
		return cmp.Or(cmp.Compare(a.WireName, b.WireName), cmp.Compare(a.Worker, b.Worker))
	})
	return store.FleetView{Now: now, Handlers: out}, nil
}

// cloneFleet copies the fleet registry for a crash-clone.
func cloneFleet(f map[job.WorkerID]map[string]time.Time) map[job.WorkerID]map[string]time.Time {
	if f == nil {
		return nil
	}
	c := make(map[job.WorkerID]map[string]time.Time, len(f))
	for w, names := range f {
		c[w] = maps.Clone(names)
	}
	return c
}
