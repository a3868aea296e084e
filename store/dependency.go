package store

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
)

// Sentinel errors of Dependencies. ErrDependencyCycle and ErrUnknownParent
// are always wrapped after ErrInvalidParams ("store: invalid params:
// dependency cycle: …"), so callers may test for either and the message
// names the package once.
var (
	// ErrDependencyCycle: the jobs of one insert name each other as parents
	// in a cycle, or a job names itself. Nothing was inserted.
	ErrDependencyCycle = errors.New("dependency cycle")
	// ErrUnknownParent: a job names, by id, a parent the store does not
	// hold. Nothing was inserted.
	ErrUnknownParent = errors.New("unknown dependency parent")
	// ErrNotAncestor: a job asked for the Job Output of a job that is not
	// one of its transitive Dependency ancestors. Only an ancestor's latch
	// fired before the job was released, so only an ancestor's output is
	// known to be written when the job runs.
	ErrNotAncestor = errors.New("store: not a dependency ancestor")
)

// Dependency is the parent set and mode a new job declares at its insert
// (glossary: Dependency). Edges are static: no later call adds or removes
// one. A job with parents is inserted Awaiting Parent and waits until its
// latch has counted every parent; see Inserter.JobInsertMany.
type Dependency struct {
	// Mode says what a parent that ends without succeeding does to the job;
	// the zero value is job.DependencyOnSuccess.
	Mode job.DependencyMode
	// Parents are the parent set. A parent named twice counts once.
	Parents []ParentRef
}

// ParentRef names one parent of a new job: a job the store already holds
// (Existing) or another job of the same insert (InBatch).
type ParentRef struct {
	// ID is the stored job's id; zero for an in-batch parent.
	ID job.ID
	// Index is the in-batch parent's index in InsertManyParams.Jobs; used
	// when ID is zero.
	Index int
}

// Existing names the stored job id as a parent.
func Existing(id job.ID) ParentRef { return ParentRef{ID: id} }

// InBatch names the job at index i of the same insert as a parent.
func InBatch(i int) ParentRef { return ParentRef{Index: i} }

// String renders the reference as "job 17" or "batch index 2".
func (r ParentRef) String() string {
	if r.ID != 0 {
		return fmt.Sprintf("job %d", r.ID)
	}
	return fmt.Sprintf("batch index %d", r.Index)
}

// Dependencies reads the Dependency graph and the Job Output that flows
// along it.
type Dependencies interface {
	// JobDependencies returns the job's Dependency edges: its mode and
	// parents (with whether its latch has counted each) and the jobs that
	// name it as a parent. ErrNotFound for an unknown job.
	JobDependencies(ctx context.Context, id job.ID) (DependencyInfo, error)

	// JobAncestorOutput reads, for the job p.Job, the Job Output and state
	// of p.Ancestor, which must be one of p.Job's transitive Dependency
	// ancestors (a parent, a parent's parent, …); any other job — a
	// sibling, a dependent, the job itself, an id the store does not hold —
	// is refused with an error wrapping ErrNotAncestor. Absence is a normal
	// result, not an error: an ancestor that failed, was cancelled, is not
	// terminal (an operator requeued it) or succeeded without output reads
	// Present=false. ErrNotFound if p.Job is unknown. The ancestry is the
	// stored graph, read in the same step as the output.
	JobAncestorOutput(ctx context.Context, p AncestorOutputParams) (AncestorOutput, error)
}

// DependencyInfo is a job's place in the Dependency graph.
type DependencyInfo struct {
	// Mode is the job's Dependency mode; meaningful when it has parents.
	Mode job.DependencyMode
	// Parents lists the job's parents in ascending id order.
	Parents []ParentEdge
	// Dependents lists the jobs that name this one as a parent, ascending.
	Dependents []job.ID
}

// Pending is how many parents the latch has not counted yet: zero once the
// job was released or cancelled by its parents. A job cancelled by an
// operator while it waited keeps the count it had.
func (d DependencyInfo) Pending() int {
	n := 0
	for _, p := range d.Parents {
		if !p.Counted {
			n++
		}
	}
	return n
}

// ParentEdge is one parent of a job.
type ParentEdge struct {
	ID job.ID
	// State is the parent's state now.
	State job.State
	// Counted says the dependent's latch has counted this parent: it
	// reached a terminal state (possibly before the dependent was
	// inserted). It stays true if an operator later requeues the parent.
	Counted bool
}

// AncestorOutputParams are the params of Dependencies.JobAncestorOutput.
type AncestorOutputParams struct {
	// Job is the job that reads; usually the one whose Attempt is running.
	Job job.ID
	// Ancestor is the job whose output is read.
	Ancestor job.ID
}

// AncestorOutput is what JobAncestorOutput reads of an ancestor.
type AncestorOutput struct {
	// State is the ancestor's state now.
	State job.State
	// Output is the ancestor's Job Output; nil when absent.
	Output []byte
	// Present is true when the ancestor's success stored an output (an
	// empty one included).
	Present bool
}

// validateDependencies checks the Dependencies of an insert's jobs as far
// as the params alone can tell: a valid mode, parent references that name a
// positive id or an index inside the batch, and no cycle among the batch's
// jobs (a self-edge included). Whether an Existing parent is held is the
// store's check (ErrUnknownParent).
func validateDependencies(jobs []NewJob) error {
	inBatch := false
	for i, nj := range jobs {
		d := nj.Dependency
		if !d.Mode.Valid() {
			return fmt.Errorf("job %d: %w: %s", i, ErrInvalidParams, d.Mode)
		}
		for _, r := range d.Parents {
			switch {
			case r.ID < 0:
				return fmt.Errorf("job %d: %w: parent id %d is not positive", i, ErrInvalidParams, r.ID)
			case r.ID == 0 && (r.Index < 0 || r.Index >= len(jobs)):
				return fmt.Errorf("job %d: %w: parent batch index %d is outside the batch of %d jobs", i, ErrInvalidParams, r.Index, len(jobs))
			case r.ID == 0 && r.Index == i:
				return fmt.Errorf("jobs[%d]: %w: %w: it names itself as a parent", i, ErrInvalidParams, ErrDependencyCycle)
			}
			inBatch = inBatch || r.ID == 0
		}
	}
	if !inBatch {
		return nil
	}
	if _, err := core.DependencyOrder(BatchParents(jobs)); err != nil {
		return fmt.Errorf("%w: %w: %w", ErrInvalidParams, ErrDependencyCycle, err)
	}
	return nil
}

// BatchParents returns, per job of an insert, the batch indexes of its
// in-batch parents, each once: the input of core.DependencyOrder.
func BatchParents(jobs []NewJob) [][]int {
	out := make([][]int, len(jobs))
	for i, nj := range jobs {
		for _, r := range nj.Dependency.Parents {
			if r.ID == 0 && !slices.Contains(out[i], r.Index) {
				out[i] = append(out[i], r.Index)
			}
		}
	}
	return out
}

// ExistingParents returns the distinct ids of the stored jobs an insert names
// as parents, ascending.
func ExistingParents(jobs []NewJob) []job.ID {
	var out []job.ID
	for _, nj := range jobs {
		for _, r := range nj.Dependency.Parents {
			if r.ID != 0 {
				out = append(out, r.ID)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// InsertOrder returns the order in which a store inserts the batch, and so
// assigns its ids: every in-batch parent before its dependents, input order
// otherwise (core.DependencyOrder). A parent's id is therefore always below
// its dependents'. The params must have passed Validate.
func (p InsertManyParams) InsertOrder() []int {
	order, err := core.DependencyOrder(BatchParents(p.Jobs))
	if err != nil {
		// Validate rejected every batch this could fail on.
		panic(fmt.Sprintf("store: insert order of validated params: %v", err))
	}
	return order
}

// ParentIDs resolves a new job's parents to ids, given the ids assigned to
// the batch (by input index), each parent once, ascending.
func (d Dependency) ParentIDs(batch []job.ID) []job.ID {
	out := make([]job.ID, 0, len(d.Parents))
	for _, r := range d.Parents {
		if r.ID != 0 {
			out = append(out, r.ID)
		} else {
			out = append(out, batch[r.Index])
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
