package memstore

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/internal/plant"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// workflowRow is one stored Workflow: its row, its per-state member counts
// (kept by Store.move as members change state) and its members' ids.
type workflowRow struct {
	info    store.WorkflowInfo // Counts kept current
	members []job.ID           // ascending
}

func (w *workflowRow) clone() *workflowRow {
	if w == nil {
		return nil
	}
	c := *w
	c.info.Counts = maps.Clone(w.info.Counts)
	c.members = slices.Clone(w.members)
	return &c
}

// countMember moves one member of Workflow id from state from to state to
// in its counts (StateUnknown: an insert). The caller holds s.mu.
func (s *Store) countMember(id job.WorkflowID, from, to job.State) {
	w := s.workflow(id)
	if from != job.StateUnknown {
		if w.info.Counts[from]--; w.info.Counts[from] == 0 {
			delete(w.info.Counts, from)
		}
	}
	if to != job.StateUnknown {
		w.info.Counts[to]++
	}
}

// workflow returns the stored Workflow id, or nil. The caller holds s.mu.
func (s *Store) workflow(id job.WorkflowID) *workflowRow {
	if id < 1 || int64(id) > int64(len(s.workflows)) {
		return nil
	}
	return s.workflows[id-1]
}

func (s *Store) findWorkflow(id job.WorkflowID) (*workflowRow, error) {
	w := s.workflow(id)
	if w == nil {
		return nil, fmt.Errorf("memstore: workflow %d: %w", id, store.ErrNotFound)
	}
	return w, nil
}

func (w *workflowRow) snapshot() store.WorkflowInfo {
	info := w.info
	info.Counts = maps.Clone(w.info.Counts)
	return info
}

// WorkflowInsert inserts p.Jobs as members of a new Workflow or of the
// stored p.Workflow, in one atomic step; see store.Workflows.
func (s *Store) WorkflowInsert(ctx context.Context, p store.WorkflowInsertParams) (store.WorkflowInsertResult, error) {
	if err := p.Validate(); err != nil {
		return store.WorkflowInsertResult{}, err
	}
	var hints []string
	defer func() { s.hints.Announce(hints) }() // after the unlock below
	if err := s.lock(ctx); err != nil {
		return store.WorkflowInsertResult{}, err
	}
	defer s.mu.Unlock()
	var w *workflowRow
	if p.Workflow != 0 {
		var err error
		if w, err = s.findWorkflow(p.Workflow); err != nil {
			return store.WorkflowInsertResult{}, err
		}
	} else if p.RestartOf != 0 {
		if _, err := s.findWorkflow(p.RestartOf); err != nil {
			return store.WorkflowInsertResult{}, fmt.Errorf("memstore: restart: %w", err)
		}
	}
	for _, id := range store.ExistingParents(p.Jobs) {
		if r := s.row(id); w == nil || r == nil || r.workflow != w.info.ID {
			return store.WorkflowInsertResult{}, fmt.Errorf("memstore: %w: %w: job %d is not a member of the workflow",
				store.ErrInvalidParams, store.ErrParentOutsideWorkflow, id)
		}
	}
	now := s.clock.Now()
	res, hs, err := s.insertMany(p.InsertManyParams, now, func() *workflowRow {
		if w == nil {
			w = &workflowRow{info: store.WorkflowInfo{ID: job.WorkflowID(len(s.workflows) + 1), Name: p.Name,
				CreatedAt: now, RestartOf: p.RestartOf, Counts: map[job.State]int{}}}
			s.workflows = append(s.workflows, w)
		}
		return w
	})
	if err != nil {
		return store.WorkflowInsertResult{}, err
	}
	if p.RestartOf != 0 {
		s.record(now, p.Actor, store.AuditWorkflowRestart, 0, "", store.WorkflowDetail(p.RestartOf, "new "+w.info.ID.String()))
	}
	hints = s.hintable(&hs, now)
	return store.WorkflowInsertResult{Workflow: w.info.ID, Jobs: store.ResultIDs(res)}, nil
}

// WorkflowGet reads a Workflow's row and its member counts.
func (s *Store) WorkflowGet(ctx context.Context, id job.WorkflowID) (store.WorkflowInfo, error) {
	if err := s.lock(ctx); err != nil {
		return store.WorkflowInfo{}, err
	}
	defer s.mu.Unlock()
	w, err := s.findWorkflow(id)
	if err != nil {
		return store.WorkflowInfo{}, err
	}
	return w.snapshot(), nil
}

// WorkflowList lists Workflows newest first, filtered and paged by p.
func (s *Store) WorkflowList(ctx context.Context, p store.WorkflowListParams) ([]store.WorkflowInfo, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []store.WorkflowInfo
	for i := len(s.workflows) - 1; i >= 0 && len(out) < p.PageLimit(); i-- {
		w := s.workflows[i]
		switch {
		case w == nil, p.BeforeID != 0 && w.info.ID >= p.BeforeID,
			p.Name != "" && w.info.Name != p.Name, p.Status != 0 && w.info.Status() != p.Status:
			continue
		}
		out = append(out, w.snapshot())
	}
	return out, nil
}

// WorkflowMembers returns every member with its Dependency edges, ascending.
func (s *Store) WorkflowMembers(ctx context.Context, id job.WorkflowID) ([]store.WorkflowMember, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	w, err := s.findWorkflow(id)
	if err != nil {
		return nil, err
	}
	out := make([]store.WorkflowMember, 0, len(w.members))
	for _, mid := range w.members {
		r := s.row(mid)
		if r == nil {
			continue // purged
		}
		m := store.WorkflowMember{Job: copyJob(&r.job)}
		if r.dep != nil {
			m.Mode = r.dep.mode
			for _, e := range r.dep.parents {
				m.Parents = append(m.Parents, e.id)
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// WorkflowCancel cancels every live member at once, audited once.
func (s *Store) WorkflowCancel(ctx context.Context, p store.WorkflowActionParams) (store.WorkflowInfo, error) {
	if err := p.Validate(); err != nil {
		return store.WorkflowInfo{}, err
	}
	var hints []string
	defer func() { s.hints.Announce(hints) }() // after the unlock below
	if err := s.lock(ctx); err != nil {
		return store.WorkflowInfo{}, err
	}
	defer s.mu.Unlock()
	w, err := s.findWorkflow(p.ID)
	if err != nil {
		return store.WorkflowInfo{}, err
	}
	now := s.clock.Now()
	for _, mid := range w.members {
		r := s.row(mid)
		if r == nil {
			continue
		}
		switch core.OperatorCancel(r.job.State) {
		case core.CancelAtOnce:
			r.job.CancelCause = job.CancelCauseOperator
			s.move(r, job.StateCancelled, core.ViaCancel, now, "")
		case core.CancelRequest:
			r.job.CancelRequested = true
		case core.CancelRefused:
			// Terminal already: a member cancelled by an earlier member's
			// cascade in this loop included.
		}
	}
	s.record(now, p.Actor, store.AuditWorkflowCancel, 0, "", store.WorkflowDetail(p.ID, ""))
	hints = s.hintable(&hintSet{}, now)
	return w.snapshot(), nil
}

// WorkflowRetry reanimates the terminal members p.Scope names, in place,
// recounting latches exactly; see store.Workflows.
func (s *Store) WorkflowRetry(ctx context.Context, p store.WorkflowRetryParams) (store.WorkflowRetryResult, error) {
	if err := p.Validate(); err != nil {
		return store.WorkflowRetryResult{}, err
	}
	var hints []string
	defer func() { s.hints.Announce(hints) }() // after the unlock below
	if err := s.lock(ctx); err != nil {
		return store.WorkflowRetryResult{}, err
	}
	defer s.mu.Unlock()
	w, err := s.findWorkflow(p.ID)
	if err != nil {
		return store.WorkflowRetryResult{}, err
	}
	now := s.clock.Now()
	nodes := make([]core.RetryNode, 0, len(w.members))
	for _, mid := range w.members {
		if r := s.row(mid); r != nil {
			nodes = append(nodes, retryNode(r))
		}
	}
	retried := core.RetrySet(nodes, p.Scope)
	inSet := make(map[job.ID]bool, len(retried))
	for _, id := range retried {
		inSet[id] = true
	}
	liveAfter := func(id job.ID) bool {
		if s.planted(plant.RetryReleasesEarly) {
			return !inSet[id] && s.row(id).job.State.Live()
		}
		return inSet[id] || s.row(id).job.State.Live()
	}
	var hs hintSet
	// Ascending ids put every parent before its dependents.
	for _, id := range retried {
		r := s.row(id)
		core.Reanimate(&r.job, now)
		r.output = nil
		s.move(r, core.ReanimatedState(s.recount(r, liveAfter)), core.ViaWorkflowRetry, now, "")
		if core.Claimable(&r.job, now) {
			hs.add(r.job.Queue)
		}
	}
	// A waiting member with a reanimated parent waits for that parent again.
	for _, mid := range w.members {
		if r := s.row(mid); r != nil && !inSet[mid] && r.job.State == job.StateAwaitingParent && r.dep != nil &&
			slices.ContainsFunc(r.dep.parents, func(e parentEdge) bool { return inSet[e.id] }) {
			s.recount(r, liveAfter)
		}
	}
	s.record(now, p.Actor, store.AuditWorkflowRetry, 0, "", store.WorkflowDetail(p.ID, "scope "+p.Scope.String()))
	hints = s.hintable(&hs, now)
	return store.WorkflowRetryResult{Workflow: w.snapshot(), Retried: retried}, nil
}

// recount recounts r's latch (core.Recount) with live saying which parents
// are live after the retry, and returns how many are pending. The caller
// holds s.mu.
func (s *Store) recount(r *row, live func(job.ID) bool) int {
	if r.dep == nil {
		return 0
	}
	parentLive := make([]bool, len(r.dep.parents))
	for i, e := range r.dep.parents {
		parentLive[i] = live(e.id)
	}
	counted, pending := core.Recount(parentLive)
	for i := range r.dep.parents {
		r.dep.parents[i].counted = counted[i]
	}
	r.dep.pending = pending
	return pending
}

func retryNode(r *row) core.RetryNode {
	n := core.RetryNode{ID: r.job.ID, State: r.job.State, CancelCause: r.job.CancelCause}
	if r.dep != nil {
		n.Mode = r.dep.mode
		for _, e := range r.dep.parents {
			n.Parents = append(n.Parents, e.id)
		}
	}
	return n
}

// workflowPurgeable reports whether retention may purge member r: a job of
// no Workflow, or a member of a Workflow none of whose members is live.
// The caller holds s.mu.
func (s *Store) workflowPurgeable(r *row) bool {
	if r.workflow == 0 {
		return true
	}
	return s.workflow(r.workflow).info.Status() != job.WorkflowRunning
}

// forgetMember takes a purged member out of its Workflow, and the Workflow's
// row with its last member. The caller holds s.mu.
func (s *Store) forgetMember(r *row) {
	if r.workflow == 0 {
		return
	}
	w := s.workflow(r.workflow)
	s.countMember(r.workflow, r.job.State, job.StateUnknown)
	w.members = slices.DeleteFunc(w.members, func(id job.ID) bool { return id == r.job.ID })
	if len(w.members) == 0 {
		s.workflows[w.info.ID-1] = nil
	}
}
