package workflow

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/backwave/backwave"
)

// ErrInvalidWorkflow is wrapped by every error of building a Workflow: a
// Step added twice, a reference from another Builder, an empty graph, an
// input that does not encode. It wraps backwave.ErrInvalidJob, since
// nothing is enqueued.
var ErrInvalidWorkflow = fmt.Errorf("invalid workflow: %w", backwave.ErrInvalidJob)

// maxStepName bounds a Step's name (after splice prefixes).
const maxStepName = 200

// graph is the flat graph one Workflow lowers to, shared by a Builder and
// the Builders of the Definitions spliced into it.
type graph struct {
	members []*member
	byKey   map[string]*member
	err     error
}

// member is one Step of a graph.
type member struct {
	g       *graph
	index   int
	wire    string
	name    string
	args    backwave.JobArgs // the baked copy
	parents []*member
	mode    backwave.DependencyMode
	opts    []backwave.EnqueueOption
	// splice is the splice the Step was added by; nil at the top level.
	splice *splice
}

func (g *graph) fail(err error) {
	if g.err == nil {
		g.err = err
	}
}

// stepKey is a Step's identity within a graph: its Wire Name and name.
func stepKey(wire, name string) string {
	if name == "" {
		return wire
	}
	return wire + "#" + name
}

// Builder wires the Steps of one Workflow (or of one Definition spliced
// into it) over a Workflow Input of type In. Its functions are package
// functions (Add, Then, FanOut, FanIn, Splice) because a Go method cannot
// take a type parameter. A Builder records the first error a call makes —
// every later call is a no-op — and Prepare returns it: a mistake is never a
// panic.
type Builder[In any] struct {
	g    *graph
	in   In
	raw  json.RawMessage // the baked input; nil for none
	name string          // the Workflow's name (top level only)
	sp   *splice         // nil at the top level
}

// splice is one Definition spliced into a graph.
type splice struct {
	prefix string
	// after are the parents the splice's roots get.
	after   []*member
	mode    backwave.DependencyMode
	opts    []backwave.EnqueueOption
	members []*member
	// outer is the splice this one was spliced into; nil at the top level.
	outer *splice
}

// None is the Workflow Input of a Workflow that has none: New[None] bakes
// nothing into its Steps, and Input in their handlers reports no input.
type None struct{}

// New starts the inline form of a Workflow named name, with Workflow Input
// in: wire its Steps with Add, Then, FanOut, FanIn and Splice, then Prepare
// or Enqueue it. A Workflow Definition's Build gets a Builder made the same
// way, so both forms lower to the same prepared graph.
func New[In any](name string, in In) *Builder[In] {
	b := &Builder[In]{g: &graph{byKey: make(map[string]*member)}, in: in, name: name}
	if name == "" {
		b.g.fail(fmt.Errorf("%w: a Workflow needs a name", ErrInvalidWorkflow))
	}
	b.raw, b.g.err = encodeInput(in, b.g.err)
	return b
}

// encodeInput encodes the Workflow Input in; nil for None or an input
// encoding as JSON null. prior is kept if set.
func encodeInput[In any](in In, prior error) (json.RawMessage, error) {
	if _, none := any(in).(None); none {
		return nil, prior
	}
	raw, err := marshal(in)
	if err != nil {
		if prior == nil {
			prior = fmt.Errorf("%w: the Workflow Input %T does not encode as JSON: %w", ErrInvalidWorkflow, in, err)
		}
		return nil, prior
	}
	if string(raw) == "null" {
		return nil, prior
	}
	return raw, prior
}

// marshal encodes v, catching a panicking MarshalJSON as an error.
func marshal(v any) (b []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("encoding panicked: %v", r)
		}
	}()
	return json.Marshal(v)
}

// Input returns the Workflow Input the Builder was made with: a Definition
// may shape its graph on it at build time.
func (b *Builder[In]) Input() In { return b.in }

// Err returns the first error a call on the Builder (or on a Builder of a
// Definition spliced into it) made, nil if none.
func (b *Builder[In]) Err() error { return b.g.err }

// Parent is what a Step can be added after: a Ref to one Step, or a
// Spliced Definition (its leaf Steps).
type Parent interface {
	members() []*member
}

// Ref is a typed reference to a Step of a Builder's graph, returned by
// Add, Then and FanOut and given to Then and FanIn (and the After option) to
// make edges. The zero Ref names no Step and is refused.
type Ref[S Stepper] struct {
	n *member
}

func (r Ref[S]) members() []*member {
	if r.n == nil {
		return []*member{nil}
	}
	return []*member{r.n}
}

// Name returns the Step's name within the graph (after splice prefixes);
// empty for an unnamed Step.
func (r Ref[S]) Name() string {
	if r.n == nil {
		return ""
	}
	return r.n.name
}

// Index returns the Step's index in the prepared graph: its place in
// Prepared.Params and in the member ids Enqueue returns; -1 for the zero
// Ref.
func (r Ref[S]) Index() int {
	if r.n == nil {
		return -1
	}
	return r.n.index
}

// StepOption sets one property of a Step being added.
type StepOption func(*stepSettings)

type stepSettings struct {
	name    string
	named   bool
	after   []Parent
	mode    backwave.DependencyMode
	hasMode bool
	opts    []backwave.EnqueueOption
}

// Named gives the Step a disambiguation name: needed when the same Step type
// is added twice to one graph, and what a handler names in Ancestor to read
// that one's output. Names are at most 200 bytes of printable text without
// '#'.
func Named(name string) StepOption {
	return func(s *stepSettings) { s.name, s.named = name, true }
}

// After adds parents to the Step (beside Then's or FanIn's).
func After(parents ...Parent) StepOption {
	return func(s *stepSettings) { s.after = append(s.after, parents...) }
}

// WithMode sets the Step's Dependency mode: backwave.OnSuccess (the
// default: a parent that does not succeed cancels it) or
// backwave.OnAnyTerminal (it runs once every parent is terminal). For a
// Splice, it is the mode of the spliced roots' edges to the splice's
// parents.
func WithMode(m backwave.DependencyMode) StepOption {
	return func(s *stepSettings) { s.mode, s.hasMode = m, true }
}

// With passes enqueue options to the Step's job: a Queue, an attempt
// budget, Tags, a delay, a Concurrency Key (backwave.WithConcurrencyKey,
// which a Workflow Restart keeps). Its Dependency edges come from the Builder; do not
// pass WithParents or WithParentsInBatch here.
func With(opts ...backwave.EnqueueOption) StepOption {
	return func(s *stepSettings) { s.opts = append(s.opts, opts...) }
}

func settingsOf(opts []StepOption) (stepSettings, error) {
	s := stepSettings{mode: backwave.OnSuccess}
	for _, o := range opts {
		if o == nil {
			return s, fmt.Errorf("%w: nil StepOption", ErrInvalidWorkflow)
		}
		o(&s)
	}
	if s.hasMode && s.mode != backwave.OnSuccess && s.mode != backwave.OnAnyTerminal {
		return s, fmt.Errorf("%w: unknown Dependency mode %s", ErrInvalidWorkflow, s.mode)
	}
	if s.named {
		if err := validName(s.name); err != nil {
			return s, err
		}
	}
	return s, nil
}

func validName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: Named(\"\"): a name cannot be empty", ErrInvalidWorkflow)
	case len(name) > maxStepName:
		return fmt.Errorf("%w: Step name %.20q… is over %d bytes", ErrInvalidWorkflow, name, maxStepName)
	case strings.ContainsRune(name, '#'):
		return fmt.Errorf("%w: Step name %q contains '#'", ErrInvalidWorkflow, name)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%w: Step name %q contains a control character", ErrInvalidWorkflow, name)
		}
	}
	return nil
}

// Add adds step to b's graph, after the parents of any After option (a
// root Step without one), and returns a Ref to it.
func Add[S Stepper, In any](b *Builder[In], step S, opts ...StepOption) Ref[S] {
	return add(b, step, nil, opts)
}

// Then adds step after parent: the chain of a Workflow.
func Then[S Stepper, In any](b *Builder[In], parent Parent, step S, opts ...StepOption) Ref[S] {
	return add(b, step, []Parent{parent}, opts)
}

// FanOut adds each of steps after parent, the i-th named i (or
// "<Named>.<i>" with a Named option), and returns their Refs in order.
func FanOut[S Stepper, In any](b *Builder[In], parent Parent, steps []S, opts ...StepOption) []Ref[S] {
	if b == nil {
		return nil
	}
	if len(steps) == 0 && b.g.err == nil {
		b.g.fail(fmt.Errorf("%w: FanOut of no Steps", ErrInvalidWorkflow))
	}
	base, err := settingsOf(opts)
	if err != nil {
		b.g.fail(err)
	}
	refs := make([]Ref[S], len(steps))
	for i, s := range steps {
		name := fmt.Sprint(i)
		if base.named {
			name = base.name + "." + name
		}
		refs[i] = add(b, s, []Parent{parent}, append(append([]StepOption(nil), opts...), Named(name)))
	}
	return refs
}

// FanIn adds step after every one of parents: it waits for them all.
func FanIn[S Stepper, In any](b *Builder[In], step S, parents []Parent, opts ...StepOption) Ref[S] {
	if len(parents) == 0 && b != nil {
		b.g.fail(fmt.Errorf("%w: FanIn of %T after no parents", ErrInvalidWorkflow, step))
	}
	return add(b, step, parents, opts)
}

func add[S Stepper, In any](b *Builder[In], step S, parents []Parent, opts []StepOption) Ref[S] {
	if b == nil || b.g == nil {
		return Ref[S]{}
	}
	g := b.g
	if g.err != nil {
		return Ref[S]{}
	}
	n, err := b.newMember(step, parents, opts)
	if err != nil {
		g.fail(err)
		return Ref[S]{}
	}
	return Ref[S]{n: n}
}

func (b *Builder[In]) newMember(step Stepper, parents []Parent, opts []StepOption) (*member, error) {
	s, err := settingsOf(opts)
	if err != nil {
		return nil, err
	}
	wire, err := wireName(step)
	if err != nil {
		return nil, err
	}
	name := s.name
	if b.sp != nil {
		name = joinName(b.sp.prefix, name)
	}
	if len(name) > maxStepName {
		return nil, fmt.Errorf("%w: Step name %.20q… is over %d bytes", ErrInvalidWorkflow, name, maxStepName)
	}
	key := stepKey(wire, name)
	if _, dup := b.g.byKey[key]; dup {
		if name == "" {
			return nil, fmt.Errorf("%w: Step %s (%T) is added twice: name one of them with Named", ErrInvalidWorkflow, wire, step)
		}
		return nil, fmt.Errorf("%w: Step %s named %q (%T) is added twice", ErrInvalidWorkflow, wire, name, step)
	}
	n := &member{g: b.g, index: len(b.g.members), wire: wire, name: name, mode: s.mode, opts: s.opts, splice: b.sp}
	for sp := b.sp; sp != nil; sp = sp.outer {
		// Options given to a Splice apply to every Step it adds, before the
		// Step's own.
		n.opts = append(append([]backwave.EnqueueOption(nil), sp.opts...), n.opts...)
	}
	if n.parents, err = b.g.parentMembers("Step "+key, append(parents, s.after...)); err != nil {
		return nil, err
	}
	if len(n.parents) == 0 && b.sp != nil {
		// A root of a spliced Definition hangs below the splice's parents.
		n.parents, n.mode = b.sp.after, b.sp.mode
	}
	m := &Membership{Input: b.raw, Name: name}
	if b.sp != nil {
		m.Scope = b.sp.prefix
	}
	if n.args, err = bake(step, m); err != nil {
		return nil, fmt.Errorf("%w: Step %s: %w", ErrInvalidWorkflow, key, err)
	}
	b.g.members = append(b.g.members, n)
	b.g.byKey[key] = n
	for sp := b.sp; sp != nil; sp = sp.outer {
		sp.members = append(sp.members, n)
	}
	return n, nil
}

// parentMembers resolves parents to their Steps, each once, refusing a nil
// parent, the zero Ref and a Step of another graph; what names the Step or
// splice the parents are for.
func (g *graph) parentMembers(what string, parents []Parent) ([]*member, error) {
	var out []*member
	seen := make(map[*member]bool)
	for _, p := range parents {
		if p == nil {
			return nil, fmt.Errorf("%w: %s: a nil parent", ErrInvalidWorkflow, what)
		}
		for _, pn := range p.members() {
			switch {
			case pn == nil:
				return nil, fmt.Errorf("%w: %s: a parent is the zero Ref (a Step never added)", ErrInvalidWorkflow, what)
			case pn.g != g:
				return nil, fmt.Errorf("%w: %s: parent %s is a Step of another Builder", ErrInvalidWorkflow, what, stepKey(pn.wire, pn.name))
			case seen[pn]:
				continue
			}
			seen[pn] = true
			out = append(out, pn)
		}
	}
	return out, nil
}

func joinName(prefix, name string) string {
	if name == "" {
		return prefix
	}
	return prefix + "." + name
}

// wireName calls step's WireName, catching a nil step or a panic.
func wireName(step Stepper) (wire string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: Step %T: WireName panicked: %v", ErrInvalidWorkflow, step, r)
		}
	}()
	if isNil(step) {
		return "", fmt.Errorf("%w: a nil Step", ErrInvalidWorkflow)
	}
	wire = step.WireName()
	if wire == "" {
		return "", fmt.Errorf("%w: Step %T has an empty Wire Name", ErrInvalidWorkflow, step)
	}
	return wire, nil
}

func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface, reflect.Func, reflect.Chan:
		return rv.IsNil()
	}
	return false
}

// bake returns a copy of step carrying m, and checks that the copy's JSON
// carries it back: the Step's handler must find it in the payload.
func bake(step Stepper, m *Membership) (backwave.JobArgs, error) {
	rv := reflect.ValueOf(step)
	var cp reflect.Value
	if rv.Kind() == reflect.Pointer {
		// A pointer Step: bake into a shallow copy, never the caller's value.
		cp = reflect.New(rv.Type().Elem())
		cp.Elem().Set(rv.Elem())
	} else {
		cp = reflect.New(rv.Type())
		cp.Elem().Set(rv)
	}
	setter, ok := cp.Interface().(membershipSetter)
	if !ok {
		return nil, fmt.Errorf("%T cannot carry its Workflow membership", step)
	}
	setter.setMembership(m)
	out := cp.Interface().(backwave.JobArgs)
	if rv.Kind() != reflect.Pointer {
		out = cp.Elem().Interface().(backwave.JobArgs)
	}
	raw, err := marshal(out)
	if err != nil {
		return nil, fmt.Errorf("args %T do not encode as JSON: %w", step, err)
	}
	var probe struct {
		M *Membership `json:"backwave_workflow"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil || probe.M == nil || probe.M.Name != m.Name || probe.M.Scope != m.Scope || string(probe.M.Input) != string(m.Input) {
		return nil, fmt.Errorf("args %T do not carry the reserved JSON field %q: embed workflow.Step or workflow.StepNoOutput without a JSON tag, and keep the field in any MarshalJSON", step, membershipField)
	}
	return out, nil
}
