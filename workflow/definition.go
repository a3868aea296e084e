package workflow

import (
	"fmt"
	"slices"

	"github.com/backwave/backwave"
)

// Definition is a Workflow Definition: the reusable shape of a Workflow
// over a Workflow Input of type In, declared once as a type. Build wires its
// Steps on b — deriving each Step's data from in, and shaping the graph on
// in if it likes (never on a Step's result: the graph is fixed when it is
// enqueued). Name is the name of the Workflows it creates.
//
//	type Checkout struct{}
//
//	func (Checkout) Name() string { return "checkout" }
//
//	func (Checkout) Build(b *workflow.Builder[Order], in Order) error {
//		v := workflow.Add(b, Validate{OrderID: in.ID})
//		workflow.Then(b, v, Charge{OrderID: in.ID})
//		return nil
//	}
//
// Each Enqueue of a Definition runs Build with that run's input and creates
// a brand-new Workflow with fresh job identities.
type Definition[In any] interface {
	Name() string
	Build(b *Builder[In], in In) error
}

// Build runs def's Build on a fresh Builder with Workflow Input in: the
// named form of New.
func Build[In any](def Definition[In], in In) (*Builder[In], error) {
	if isNil(def) {
		return nil, fmt.Errorf("%w: a nil Definition", ErrInvalidWorkflow)
	}
	b := New(def.Name(), in)
	if b.g.err != nil {
		return nil, fmt.Errorf("workflow definition %T: %w", def, b.g.err)
	}
	if err := def.Build(b, in); err != nil {
		return nil, fmt.Errorf("workflow %q: build: %w", def.Name(), err)
	}
	if b.g.err != nil {
		return nil, fmt.Errorf("workflow %q: %w", def.Name(), b.g.err)
	}
	return b, nil
}

// Spliced is a child Definition spliced into a graph. As a Parent it stands
// for the child's leaf Steps (those no other Step of the child follows), so
// a Step added after it waits for the whole child.
type Spliced struct {
	g      *graph
	leaves []*member
}

func (s Spliced) members() []*member {
	if s.g == nil {
		return []*member{nil}
	}
	return s.leaves
}

// Splice builds child with its own Workflow Input in into b's graph, as
// Steps of the one flat graph — not a nested Workflow. The child's Steps are
// named "<prefix>.<name>" (just "<prefix>" for an unnamed one), the prefix
// being the child's Name or a Named option, so a child spliced twice needs a
// Named for the second. Its root Steps hang below the parents of an After
// option (in WithMode's mode); With options apply to all its Steps. Each of
// its Steps is baked with the child's input, which its handler reads with
// Input.
func Splice[C, In any](b *Builder[In], child Definition[C], in C, opts ...StepOption) Spliced {
	if b == nil || b.g == nil || b.g.err != nil {
		return Spliced{}
	}
	sp, err := b.splice(child, opts)
	if err != nil {
		b.g.fail(err)
		return Spliced{}
	}
	cb := &Builder[C]{g: b.g, in: in, sp: sp}
	cb.raw, err = encodeInput(in, nil)
	if err != nil {
		b.g.fail(fmt.Errorf("splice %q: %w", sp.prefix, err))
		return Spliced{}
	}
	if err := child.Build(cb, in); err != nil {
		b.g.fail(fmt.Errorf("%w: splice %q: build: %w", ErrInvalidWorkflow, sp.prefix, err))
		return Spliced{}
	}
	if b.g.err != nil {
		return Spliced{}
	}
	if len(sp.members) == 0 {
		b.g.fail(fmt.Errorf("%w: splice %q: Definition %T adds no Steps", ErrInvalidWorkflow, sp.prefix, child))
		return Spliced{}
	}
	followed := make(map[*member]bool)
	for _, n := range sp.members {
		for _, p := range n.parents {
			followed[p] = true
		}
	}
	out := Spliced{g: b.g}
	for _, n := range sp.members {
		if !followed[n] {
			out.leaves = append(out.leaves, n)
		}
	}
	return out
}

func (b *Builder[In]) splice(child any, opts []StepOption) (*splice, error) {
	d, ok := child.(interface{ Name() string })
	if isNil(child) || !ok {
		return nil, fmt.Errorf("%w: Splice of a nil Definition", ErrInvalidWorkflow)
	}
	s, err := settingsOf(opts)
	if err != nil {
		return nil, err
	}
	prefix := s.name
	if !s.named {
		prefix = d.Name()
		if err := validName(prefix); err != nil {
			return nil, fmt.Errorf("splice of Definition %T (its Name as the prefix): %w", child, err)
		}
	}
	sp := &splice{prefix: prefix, mode: s.mode, opts: s.opts, outer: b.sp}
	if b.sp != nil {
		sp.prefix = joinName(b.sp.prefix, prefix)
	}
	if sp.after, err = b.g.parentMembers(fmt.Sprintf("splice %q", sp.prefix), s.after); err != nil {
		return nil, err
	}
	if len(sp.after) == 0 && b.sp != nil {
		sp.after, sp.mode = b.sp.after, b.sp.mode
	}
	for o := b.sp; o != nil; o = o.outer {
		if o.prefix == sp.prefix {
			return nil, fmt.Errorf("%w: splice %q nests a splice of the same name", ErrInvalidWorkflow, sp.prefix)
		}
	}
	return sp, nil
}

// Prepared is a Workflow lowered to what the store inserts in one
// transaction: the Workflow's name and its members as EnqueueParams, in
// Step order, each one's edges given with backwave.WithParentsInBatch
// (parents always come before their dependents).
type Prepared struct {
	// Name is the Workflow's name.
	Name string
	// Params are the members' jobs, in the order their Steps were added.
	Params []backwave.EnqueueParams
	// Steps describes each member, parallel to Params.
	Steps []PreparedStep
}

// PreparedStep describes one member of a Prepared Workflow.
type PreparedStep struct {
	// WireName is the Step's Wire Name.
	WireName string
	// Name is its disambiguation name (empty for none).
	Name string
	// Parents are the indexes of its parents in Params, ascending.
	Parents []int
	// Mode is its Dependency mode (meaningful when it has parents).
	Mode backwave.DependencyMode
}

// Key returns the Step's identity in the graph: "<wire>" or "<wire>#<name>".
func (s PreparedStep) Key() string { return stepKey(s.WireName, s.Name) }

// Prepare lowers b's graph; the first error any call on b made, or an empty
// graph, is returned instead (wrapping ErrInvalidWorkflow).
func (b *Builder[In]) Prepare() (Prepared, error) {
	if b == nil || b.g == nil {
		return Prepared{}, fmt.Errorf("%w: a nil Builder", ErrInvalidWorkflow)
	}
	if b.sp != nil {
		return Prepared{}, fmt.Errorf("%w: the Builder of spliced Definition %q is not a Workflow of its own", ErrInvalidWorkflow, b.sp.prefix)
	}
	if b.g.err != nil {
		return Prepared{}, fmt.Errorf("workflow %q: %w", b.name, b.g.err)
	}
	if len(b.g.members) == 0 {
		return Prepared{}, fmt.Errorf("%w: workflow %q: a Workflow needs at least one Step", ErrInvalidWorkflow, b.name)
	}
	p := Prepared{Name: b.name, Params: make([]backwave.EnqueueParams, len(b.g.members)), Steps: make([]PreparedStep, len(b.g.members))}
	for i, n := range b.g.members {
		opts := append([]backwave.EnqueueOption(nil), n.opts...)
		st := PreparedStep{WireName: n.wire, Name: n.name, Mode: n.mode}
		for _, pn := range n.parents {
			st.Parents = append(st.Parents, pn.index)
		}
		slices.Sort(st.Parents)
		if len(st.Parents) > 0 {
			opts = append(opts, backwave.WithParentsInBatch(n.mode, st.Parents...))
		}
		p.Params[i] = backwave.EnqueueParams{Args: n.args, Options: opts}
		p.Steps[i] = st
	}
	return p, nil
}

// Prepare runs def's Build with in and lowers the graph; see Build.
func Prepare[In any](def Definition[In], in In) (Prepared, error) {
	b, err := Build(def, in)
	if err != nil {
		return Prepared{}, err
	}
	return b.Prepare()
}
