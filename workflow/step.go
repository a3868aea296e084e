package workflow

import (
	"encoding/json"

	"github.com/backwave/backwave"
)

// membershipField is the JSON name under which a Step's payload carries
// what the builder baked into it at enqueue.
const membershipField = "backwave_workflow"

// Membership is what the builder bakes into a Step's payload when its
// Workflow is enqueued: the Workflow Input the Step's Definition was built
// with, and the Step's name within the graph. It rides in the payload under
// the reserved JSON field "backwave_workflow", kept apart from the Step's
// own args. Leave it zero: the builder sets it on its own copy of the args,
// and a handler reads it through Input.
type Membership struct {
	// Input is the Workflow Input, as JSON; nil when the Workflow has none.
	Input json.RawMessage `json:"input,omitempty"`
	// Name is the Step's disambiguation name (Named), after any splice
	// prefix; empty for an unnamed Step.
	Name string `json:"name,omitempty"`
	// Scope is the prefix of the Splice that added the Step (dotted when
	// nested); empty at the top level. Output looks for ancestors in it
	// first, so a Definition's handlers name its Steps as the Definition
	// does, wherever it is spliced.
	Scope string `json:"scope,omitempty"`
}

// Step is embedded (without a JSON tag of its own) in a job args struct to
// opt it into Workflows as a Step whose Job Output is an O:
//
//	type Resize struct {
//		workflow.Step[Thumb]
//		Width int `json:"width"`
//	}
//
// Output and SetOutput are checked at compile time against O. A Step is
// still an ordinary job: its handler is an ordinary backwave.Handler, and it
// keeps its Wire Name.
type Step[O any] struct {
	// Workflow is set by the builder at enqueue; see Membership.
	Workflow *Membership `json:"backwave_workflow,omitempty"`
}

// StepNoOutput is embedded, like Step, in the args of a Step that emits no
// Job Output: Output of it does not compile, nor does SetOutput in its
// handler.
type StepNoOutput struct {
	// Workflow is set by the builder at enqueue; see Membership.
	Workflow *Membership `json:"backwave_workflow,omitempty"`
}

func (s Step[O]) membership() *Membership      { return s.Workflow }
func (s *Step[O]) setMembership(m *Membership) { s.Workflow = m }
func (Step[O]) stepOutput(*O)                  {}

func (s StepNoOutput) membership() *Membership      { return s.Workflow }
func (s *StepNoOutput) setMembership(m *Membership) { s.Workflow = m }

// Stepper is satisfied by job args that embed Step or StepNoOutput: the
// explicit opt-in that lets a job be added to a Builder.
type Stepper interface {
	backwave.JobArgs
	membership() *Membership
}

// StepOf is satisfied by job args that embed Step[O]: a Step declaring a
// Job Output of type O. It extends Stepper.
type StepOf[O any] interface {
	Stepper
	stepOutput(*O)
}

// membershipSetter is the pointer method set of a type embedding a marker.
type membershipSetter interface {
	setMembership(*Membership)
}

// stepOutput is what StepOf constrains on: Step[O] has it for its own O
// only, so a Step's output type is checked at compile time.
var _ interface{ stepOutput(*int) } = Step[int]{}
