package memstore

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/internal/plant"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// latch is the Dependency of a job inserted with parents: its mode, its
// parent edges and how many of them the latch has not counted yet.
type latch struct {
	mode    job.DependencyMode
	parents []parentEdge // ascending id
	// pending is the number of parents with counted false.
	pending int
}

// parentEdge is one (parent, dependent) edge as the dependent holds it.
type parentEdge struct {
	id      job.ID
	counted bool
}

// edge returns the dependent's edge from parent, or nil.
func (l *latch) edge(parent job.ID) *parentEdge {
	i, ok := slices.BinarySearchFunc(l.parents, parent, func(e parentEdge, id job.ID) int {
		return cmpID(e.id, id)
	})
	if !ok {
		return nil
	}
	return &l.parents[i]
}

func cmpID(a, b job.ID) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (l *latch) clone() *latch {
	if l == nil {
		return nil
	}
	c := *l
	c.parents = slices.Clone(l.parents)
	return &c
}

// checkParents fails with store.ErrUnknownParent unless the store holds
// every Existing parent the insert names. The caller holds s.mu.
func (s *Store) checkParents(jobs []store.NewJob) error {
	var missing []job.ID
	for _, id := range store.ExistingParents(jobs) {
		if s.row(id) == nil {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("memstore: %w: %w: no job %v", store.ErrInvalidParams, store.ErrUnknownParent, missing)
	}
	return nil
}

// link gives the new row r the Dependency d, its parents resolved to ids
// with the batch's ids: r's latch waits for every parent, and each parent
// lists r among its dependents. The caller holds s.mu and moves r to
// core.InsertState afterwards.
func (s *Store) link(r *row, d store.Dependency, batch []job.ID) {
	ids := d.ParentIDs(batch)
	if len(ids) == 0 {
		return
	}
	l := &latch{mode: d.Mode, parents: make([]parentEdge, len(ids)), pending: len(ids)}
	for i, id := range ids {
		l.parents[i] = parentEdge{id: id}
		p := s.row(id)
		// r's id is the largest in the store, so the list stays ascending.
		p.dependents = append(p.dependents, r.job.ID)
	}
	r.dep = l
}

// settle counts parent, which has just reached a terminal state, against
// the latch of each of its dependents whose edge from it is not counted yet,
// and moves each waiting dependent as core.AfterParent says: released to
// Scheduled and due (core.ReleasedDueAt), or Cancelled with cause parent
// failure — which makes that dependent a terminal parent in turn, settled
// in the same loop. A dependent that no longer waits (an operator cancelled
// it) has its edge counted and nothing else. Edges already counted — a
// parent requeued by an operator and terminal again — are left alone. The
// caller holds s.mu; Store.move calls settle for every terminal move.
func (s *Store) settle(parent *row, now time.Time) {
	s.settleQueue = append(s.settleQueue, parent)
	if s.settling {
		return // the loop below, further up the stack, takes it
	}
	s.settling = true
	defer func() { s.settling = false }()
	for len(s.settleQueue) > 0 {
		p := s.settleQueue[0]
		s.settleQueue = s.settleQueue[1:]
		for _, id := range p.dependents {
			d := s.row(id)
			e := d.dep.edge(p.job.ID)
			if e.counted && !s.planted(plant.LatchRecountsEdges) {
				continue
			}
			e.counted = true
			d.dep.pending--
			if d.job.State != job.StateAwaitingParent {
				continue
			}
			to, via, moved := core.AfterParent(d.dep.mode, p.job.State, d.dep.pending)
			if !moved {
				continue
			}
			switch to {
			case job.StateScheduled:
				d.job.ScheduledAt = core.ReleasedDueAt(d.job.ScheduledAt, now)
				s.released.add(d.job.Queue)
			case job.StateCancelled:
				if s.planted(plant.CascadeStopsEarly) && p.dep != nil && p.job.CancelCause == job.CancelCauseParentFailure {
					continue
				}
				d.job.CancelCause = job.CancelCauseParentFailure
			}
			s.move(d, to, via, now, "")
		}
	}
}

// JobDependencies returns the job's mode, its parents (ascending, each with
// its state now and whether the latch counted it) and its dependents
// (ascending). It fails with store.ErrNotFound for an unknown job.
func (s *Store) JobDependencies(ctx context.Context, id job.ID) (store.DependencyInfo, error) {
	if err := s.lock(ctx); err != nil {
		return store.DependencyInfo{}, err
	}
	defer s.mu.Unlock()
	r, err := s.find(id)
	if err != nil {
		return store.DependencyInfo{}, err
	}
	info := store.DependencyInfo{Dependents: slices.Clone(r.dependents)}
	if r.dep != nil {
		info.Mode = r.dep.mode
		info.Parents = make([]store.ParentEdge, len(r.dep.parents))
		for i, e := range r.dep.parents {
			info.Parents[i] = store.ParentEdge{ID: e.id, State: s.row(e.id).job.State, Counted: e.counted}
		}
	}
	return info, nil
}

// JobAncestorOutput reads the Job Output and state of p.Ancestor for the job
// p.Job, walking p.Job's parents, their parents and so on; a job that is not
// among them is refused with store.ErrNotAncestor. An ancestor without a
// stored output reads Present=false. It fails with store.ErrNotFound for an
// unknown p.Job.
func (s *Store) JobAncestorOutput(ctx context.Context, p store.AncestorOutputParams) (store.AncestorOutput, error) {
	if err := s.lock(ctx); err != nil {
		return store.AncestorOutput{}, err
	}
	defer s.mu.Unlock()
	r, err := s.find(p.Job)
	if err != nil {
		return store.AncestorOutput{}, err
	}
	if !s.isAncestor(r, p.Ancestor) {
		return store.AncestorOutput{}, fmt.Errorf("memstore: job %d reads the output of job %d: %w", p.Job, p.Ancestor, store.ErrNotAncestor)
	}
	a := s.row(p.Ancestor)
	return store.AncestorOutput{State: a.job.State, Output: bytes.Clone(a.output), Present: a.output != nil}, nil
}

// isAncestor reports whether ancestor is reachable from r through parent
// edges. Every parent's id is below its dependent's, so the walk skips
// anything below the ancestor. The caller holds s.mu.
func (s *Store) isAncestor(r *row, ancestor job.ID) bool {
	if ancestor < 1 || ancestor >= r.job.ID {
		return false
	}
	seen := map[job.ID]bool{}
	stack := []*row{r}
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if d.dep == nil {
			continue
		}
		for _, e := range d.dep.parents {
			switch {
			case e.id == ancestor:
				return true
			case e.id < ancestor || seen[e.id]:
				continue
			}
			seen[e.id] = true
			stack = append(stack, s.row(e.id))
		}
	}
	return false
}
