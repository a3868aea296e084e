package memstore

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/backwave/backwave/store"
)

// NodeStamp writes p.ID's row with a heartbeat of the store's now (its
// StartedAt on the first stamp), removes every row whose heartbeat is
// before now − p.Forget, and returns that now.
func (s *Store) NodeStamp(ctx context.Context, p store.NodeStampParams) (time.Time, error) {
	if err := p.Validate(); err != nil {
		return time.Time{}, err
	}
	if err := s.lock(ctx); err != nil {
		return time.Time{}, err
	}
	defer s.mu.Unlock()
	now := s.clock.Now()
	if s.nodes == nil {
		s.nodes = make(map[string]store.NodeRecord)
	}
	started := now
	if old, ok := s.nodes[p.ID]; ok {
		started = old.StartedAt
	}
	s.nodes[p.ID] = store.NodeRecord{
		ID: p.ID, Host: p.Host, PID: p.PID, Version: p.Version, Groups: cloneNodeGroups(p.Groups),
		Running: p.Running, Beat: p.Beat, StartedAt: started, HeartbeatAt: now,
	}
	horizon := now.Add(-p.Forget)
	maps.DeleteFunc(s.nodes, func(_ string, r store.NodeRecord) bool { return r.HeartbeatAt.Before(horizon) })
	return now, nil
}

// NodeRemove removes node id's row, if the registry holds it.
func (s *Store) NodeRemove(ctx context.Context, id string) error {
	if err := store.ValidateNodeID(id); err != nil {
		return err
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	delete(s.nodes, id)
	return nil
}

// NodeList returns every row of the node registry, ordered by ID, with the
// store's now.
func (s *Store) NodeList(ctx context.Context) (store.NodeView, error) {
	if err := s.lock(ctx); err != nil {
		return store.NodeView{}, err
	}
	defer s.mu.Unlock()
	v := store.NodeView{Now: s.clock.Now()}
	for _, r := range s.nodes {
		r.Groups = cloneNodeGroups(r.Groups)
		v.Nodes = append(v.Nodes, r)
	}
	slices.SortFunc(v.Nodes, func(a, b store.NodeRecord) int { return strings.Compare(a.ID, b.ID) })
	return v, nil
}

// cloneNodeGroups copies a row's Worker Groups, so no caller shares the
// store's slices.
func cloneNodeGroups(gs []store.NodeGroup) []store.NodeGroup {
	if gs == nil {
		return nil
	}
	out := make([]store.NodeGroup, len(gs))
	for i, g := range gs {
		out[i] = store.NodeGroup{Name: g.Name, Queues: slices.Clone(g.Queues)}
	}
	return out
}

// cloneNodes copies the node registry for a crash-clone.
func cloneNodes(n map[string]store.NodeRecord) map[string]store.NodeRecord {
	if n == nil {
		return nil
	}
	c := make(map[string]store.NodeRecord, len(n))
	for id, r := range n {
		r.Groups = cloneNodeGroups(r.Groups)
		c[id] = r
	}
	return c
}
