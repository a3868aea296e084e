package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store"
)

// Input decodes the Workflow Input baked into the payload of the Step j
// runs — kept apart from the Step's own args in j.Args. ok is false, with no
// error, for a Workflow made without one (None) and for a job not enqueued
// by a Builder. A spliced Definition's Steps read the input the Splice gave
// them.
func Input[In any, T Stepper](j *backwave.Job[T]) (in In, ok bool, err error) {
	if j == nil || isNil(j.Args) {
		return in, false, nil
	}
	m := j.Args.membership()
	if m == nil || len(m.Input) == 0 {
		return in, false, nil
	}
	if err := json.Unmarshal(m.Input, &in); err != nil {
		return in, false, fmt.Errorf("workflow: job %d: decode the Workflow Input into %T: %w", j.ID, in, err)
	}
	return in, true, nil
}

// StepName returns the name the Step j runs has in its Workflow's graph
// (after splice prefixes); empty for an unnamed Step.
func StepName[T Stepper](j *backwave.Job[T]) string {
	if j == nil || isNil(j.Args) {
		return ""
	}
	if m := j.Args.membership(); m != nil {
		return m.Name
	}
	return ""
}

// SetOutput records v as the Job Output of the Step j runs (as JSON; see
// backwave.Job.SetOutputJSON). v must be the output type the Step declares
// with Step[O]: a value of another type does not compile, nor does a call
// for a Step declared with StepNoOutput.
func SetOutput[O any, T StepOf[O]](j *backwave.Job[T], v O) error {
	if j == nil {
		return errors.New("workflow: SetOutput on a nil Job")
	}
	return j.SetOutputJSON(v)
}

// Key names an ancestor Step by its type S and its name, for Output: the
// typed handle a handler reads an ancestor's Job Output through.
type Key[S Stepper] struct {
	name string
	// names is how many names Ancestor was given; more than one is an
	// error Output reports.
	names int
}

// Ancestor returns the Key of the ancestor Step of type S named name (no
// name: the unnamed one). It takes at most one name; Output refuses a Key
// given more.
func Ancestor[S Stepper](name ...string) Key[S] {
	k := Key[S]{names: len(name)}
	if len(name) > 0 {
		k.name = name[0]
	}
	return k
}

// KeyOf returns the Key of the Step r names, for a handler built next to
// the Builder.
func KeyOf[S Stepper](r Ref[S]) Key[S] { return Key[S]{name: r.Name()} }

// Name returns the Step name the Key reads.
func (k Key[S]) Name() string { return k.name }

// Reader finds a job's ancestor Steps in the stored Dependency graph, for
// Output. Make one over the store the Client runs on; it is safe for
// concurrent use.
type Reader struct {
	st graphStore
}

// graphStore is what a Reader reads of a store.
type graphStore interface {
	JobGet(ctx context.Context, id backwave.JobID) (jobRow, error)
	Parents(ctx context.Context, id backwave.JobID) ([]backwave.JobID, error)
}

type jobRow struct {
	wire    string
	payload []byte
}

// storeGraph adapts a backwave.Store.
type storeGraph struct{ st backwave.Store }

func (s storeGraph) JobGet(ctx context.Context, id backwave.JobID) (jobRow, error) {
	j, err := s.st.JobGet(ctx, id)
	if err != nil {
		return jobRow{}, err
	}
	return jobRow{wire: j.WireName, payload: j.Payload}, nil
}

func (s storeGraph) Parents(ctx context.Context, id backwave.JobID) ([]backwave.JobID, error) {
	d, err := s.st.JobDependencies(ctx, id)
	if err != nil {
		return nil, err
	}
	return idsOf(d.Parents, func(p store.ParentEdge) backwave.JobID { return p.ID }), nil
}

// idsOf returns the id of each of items.
func idsOf[T any](items []T, id func(T) backwave.JobID) []backwave.JobID {
	ids := make([]backwave.JobID, len(items))
	for i, it := range items {
		ids[i] = id(it)
	}
	return ids
}

// NewReader returns a Reader over st, the store the Client runs on (a store
// wrapped for encryption included: the payloads it returns are read).
func NewReader(st backwave.Store) (*Reader, error) {
	if isNil(st) {
		return nil, errors.New("workflow: NewReader needs a store")
	}
	return &Reader{st: storeGraph{st: st}}, nil
}

// NewAdminReader returns a Reader through a, for where the store itself is
// out of reach (a jobtest Client's Admin, say). It reads a little more per
// ancestor than NewReader: each one's Transition Log and Job Output too.
func NewAdminReader(a *backwave.Admin) (*Reader, error) {
	if a == nil {
		return nil, errors.New("workflow: NewAdminReader needs an Admin")
	}
	return &Reader{st: adminGraph{a: a}}, nil
}

// adminGraph adapts a backwave.Admin.
type adminGraph struct{ a *backwave.Admin }

func (s adminGraph) JobGet(ctx context.Context, id backwave.JobID) (jobRow, error) {
	d, err := s.a.Job(ctx, id)
	if err != nil {
		return jobRow{}, err
	}
	return jobRow{wire: d.Job.WireName, payload: d.Job.Payload}, nil
}

func (s adminGraph) Parents(ctx context.Context, id backwave.JobID) ([]backwave.JobID, error) {
	d, err := s.a.Dependencies(ctx, id)
	if err != nil {
		return nil, err
	}
	return idsOf(d.Parents, func(p backwave.ParentEdge) backwave.JobID { return p.ID }), nil
}

// Output reads the Job Output of the ancestor Step k names, decoded from
// JSON into the output type the Step declares: reading it as any other type
// does not compile. It walks j's stored Dependency parents for an ancestor
// of k's Step type and name, looking first within the splice the reading
// Step belongs to and then outwards, so a Definition's handlers name its
// Steps as the Definition does wherever it is spliced. Absence is a normal
// result (ok false, no error): that ancestor failed, was Cancelled, emitted
// nothing — or is no ancestor of j at all, which the compiler cannot prove.
// The walk reads each ancestor's row and edges as it goes (two store reads
// per ancestor visited, nearest first); nothing is cached, the graph being
// in the store.
func Output[S StepOf[O], O any, T backwave.JobArgs](ctx context.Context, r *Reader, j *backwave.Job[T], k Key[S]) (v O, ok bool, err error) {
	if r == nil || j == nil {
		return v, false, errors.New("workflow: Output needs a Reader and a Job")
	}
	if k.names > 1 {
		return v, false, fmt.Errorf("workflow: Output: Ancestor takes at most one Step name, got %d", k.names)
	}
	var zero S
	wire, err := wireName(zeroStep(zero))
	if err != nil {
		return v, false, err
	}
	var scope string
	if m, ok := any(j.Args).(interface{ membership() *Membership }); ok && !isNil(j.Args) {
		if mm := m.membership(); mm != nil {
			scope = mm.Scope
		}
	}
	id, found, err := r.find(ctx, j.ID, wire, candidates(scope, k.name))
	if err != nil || !found {
		return v, false, err
	}
	return backwave.AncestorOutputJSON[O](ctx, j, id)
}

// zeroStep returns a usable zero S: for a pointer type, a pointer to a
// fresh zero value.
func zeroStep[S Stepper](zero S) Stepper {
	rt := reflect.TypeOf(&zero).Elem()
	if rt.Kind() == reflect.Pointer {
		return reflect.New(rt.Elem()).Interface().(Stepper)
	}
	return zero
}

// candidates are the Step names a Key's name may stand for, seen from a
// Step in scope: innermost scope first, the top level last.
func candidates(scope, name string) []string {
	var out []string
	for scope != "" {
		out = append(out, joinName(scope, name))
		i := strings.LastIndexByte(scope, '.')
		if i < 0 {
			break
		}
		scope = scope[:i]
	}
	if name != "" || len(out) == 0 {
		out = append(out, name)
	}
	return out
}

// find walks all the ancestors of job for one with Wire Name wire and a
// name among names, and returns the one whose name comes first.
func (r *Reader) find(ctx context.Context, job backwave.JobID, wire string, names []string) (backwave.JobID, bool, error) {
	rank := make(map[string]int, len(names))
	for i, n := range names {
		if _, dup := rank[n]; !dup {
			rank[n] = i
		}
	}
	best, bestRank := backwave.JobID(0), len(names)
	seen := map[backwave.JobID]bool{job: true}
	frontier := []backwave.JobID{job}
	for len(frontier) > 0 && bestRank > 0 {
		var next []backwave.JobID
		for _, id := range frontier {
			parents, err := r.st.Parents(ctx, id)
			if err != nil {
				return 0, false, fmt.Errorf("workflow: the parents of job %d: %w", id, err)
			}
			for _, p := range parents {
				if seen[p] {
					continue
				}
				seen[p] = true
				row, err := r.st.JobGet(ctx, p)
				if err != nil {
					return 0, false, fmt.Errorf("workflow: ancestor job %d of job %d: %w", p, job, err)
				}
				if row.wire == wire {
					if i, ok := rank[memberName(row.payload)]; ok && i < bestRank {
						best, bestRank = p, i
					}
				}
				next = append(next, p)
			}
		}
		frontier = next
	}
	return best, bestRank < len(names), nil
}

// memberName returns the Step name baked into a payload; empty for none.
func memberName(payload []byte) string {
	var probe struct {
		M *Membership `json:"backwave_workflow"`
	}
	if json.Unmarshal(payload, &probe) != nil || probe.M == nil {
		return ""
	}
	return probe.M.Name
}
