package backwave

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// DependencyMode is how a dependent reacts to its parents' terminal states:
// OnSuccess (the default) or OnAnyTerminal.
type DependencyMode uint8

// The two Dependency modes.
const (
	// OnSuccess runs the dependent only if every parent Succeeded; a parent
	// that ends Dead-Lettered, Cancelled or Quarantined cancels it (cancel
	// cause parent failure), and its own on-success dependents after it.
	OnSuccess DependencyMode = DependencyMode(job.DependencyOnSuccess)
	// OnAnyTerminal runs the dependent once every parent is terminal,
	// whatever state each ended in.
	OnAnyTerminal DependencyMode = DependencyMode(job.DependencyOnAnyTerminal)
)

// String returns the stored name of the mode: "on_success" or
// "on_any_terminal".
func (m DependencyMode) String() string { return job.DependencyMode(m).String() }

// Errors of Dependencies and Job Output.
var (
	// ErrDependencyCycle: the jobs of one EnqueueMany call name each other
	// as parents in a cycle, or a job names itself. Nothing is stored.
	ErrDependencyCycle = store.ErrDependencyCycle
	// ErrUnknownParent: WithParents names a job the store does not hold.
	// Nothing is stored.
	ErrUnknownParent = store.ErrUnknownParent
	// ErrNotAncestor: Job.AncestorOutput named a job that is not one of the
	// job's transitive Dependency parents.
	ErrNotAncestor = store.ErrNotAncestor
)

// WithParents makes the job a dependent of the stored jobs ids (glossary:
// Dependency): it waits, Awaiting Parent, until every one of them is
// terminal, then becomes due — or, in mode OnSuccess, is cancelled if one
// of them did not succeed. A parent that is terminal already counts at
// once. Edges are fixed at enqueue. Combine it with WithParentsInBatch to
// name parents of the same EnqueueMany call too; both must give the same
// mode.
func WithParents(mode DependencyMode, ids ...JobID) EnqueueOption {
	return func(s *enqueueSettings) {
		s.setMode(mode)
		for _, id := range ids {
			s.parents = append(s.parents, store.Existing(id))
		}
		s.badParent = s.badParent || hasNonPositive(ids)
	}
}

// WithParentsInBatch makes the job a dependent of other jobs of the same
// EnqueueMany call, named by their indexes in its params — the way to
// enqueue a whole graph of new jobs in one atomic call. Indexes may point
// forward or backward; a cycle fails the call with ErrDependencyCycle. See
// WithParents.
func WithParentsInBatch(mode DependencyMode, indexes ...int) EnqueueOption {
	return func(s *enqueueSettings) {
		s.setMode(mode)
		for _, i := range indexes {
			s.parents = append(s.parents, store.InBatch(i))
		}
	}
}

func (s *enqueueSettings) setMode(m DependencyMode) {
	if s.hasMode && s.mode != m {
		s.modeConflict = true
	}
	s.mode, s.hasMode = m, true
}

func hasNonPositive(ids []JobID) bool {
	for _, id := range ids {
		if id < 1 {
			return true
		}
	}
	return false
}

// dependency checks the Dependency options of one job of a call of n jobs.
func (s *enqueueSettings) dependency(n int) (store.Dependency, error) {
	switch {
	case s.modeConflict:
		return store.Dependency{}, fmt.Errorf("%w: WithParents and WithParentsInBatch give different Dependency modes", ErrInvalidJob)
	case s.hasMode && !job.DependencyMode(s.mode).Valid():
		return store.Dependency{}, fmt.Errorf("%w: unknown Dependency mode %s", ErrInvalidJob, s.mode)
	case s.badParent:
		return store.Dependency{}, fmt.Errorf("%w: WithParents names a job id below 1", ErrInvalidJob)
	}
	for _, r := range s.parents {
		if r.ID == 0 && (r.Index < 0 || r.Index >= n) {
			return store.Dependency{}, fmt.Errorf("%w: WithParentsInBatch names index %d; the call has %d jobs", ErrInvalidJob, r.Index, n)
		}
	}
	return store.Dependency{Mode: job.DependencyMode(s.mode), Parents: s.parents}, nil
}

// AncestorOutput reads the Job Output of ancestor, which must be one of this
// job's transitive Dependency parents — a parent, a parent's parent, and so
// on (glossary, Job Output). Their latches fired before this job was
// released, so their outputs are already written when it runs. Any other
// job is refused with an error wrapping ErrNotAncestor. The read goes to the
// store each time; nothing is cached.
func (j *Job[T]) AncestorOutput(ctx context.Context, ancestor JobID) (AncestorOutput, error) {
	if j.deps == nil {
		return AncestorOutput{}, errors.New("backwave: AncestorOutput: the Job was not handed to a handler by a Client")
	}
	out, err := j.deps.JobAncestorOutput(ctx, store.AncestorOutputParams{Job: j.ID, Ancestor: ancestor})
	if err != nil {
		return AncestorOutput{}, fmt.Errorf("backwave: job %d reads the output of job %d: %w", j.ID, ancestor, err)
	}
	return ancestorOutputOf(out), nil
}

// AncestorOutputJSON reads ancestor's Job Output as Job.AncestorOutput does
// and decodes it from JSON into an O. ok is false, with no error, when the
// output is absent.
func AncestorOutputJSON[O any, T JobArgs](ctx context.Context, j *Job[T], ancestor JobID) (v O, ok bool, err error) {
	out, err := j.AncestorOutput(ctx, ancestor)
	if err != nil || !out.Present {
		return v, false, err
	}
	if err := json.Unmarshal(out.Output, &v); err != nil {
		return v, false, fmt.Errorf("backwave: decode the output of job %d into %T: %w", ancestor, v, err)
	}
	return v, true, nil
}

// SetOutputJSON records v, encoded as JSON, as this Attempt's Job Output;
// see SetOutput. An encoding error is returned and the output left as it
// was.
func (j *Job[T]) SetOutputJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("backwave: encode job output %T: %w", v, err)
	}
	j.SetOutput(b)
	return nil
}
