// Package workflow is the typed builder of Workflows: graphs of Steps —
// ordinary job args that opt in by embedding a marker — wired with Add,
// Then, FanOut and FanIn, named by reusable Workflow Definitions or built
// inline, spliced into one another as one flat graph, and enqueued as one
// Workflow in one atomic insert (backwave.Client.EnqueueWorkflow), inside
// the application's transaction if it likes (EnqueueTx).
//
// # Steps
//
// A Step embeds Step[O], declaring its Job Output type O, or StepNoOutput:
//
//	type Resize struct {
//		workflow.Step[Thumb]
//		Width int `json:"width"`
//	}
//
// Its handler is an ordinary backwave.Handler. In it, SetOutput records the
// Step's output and Output reads an ancestor Step's, both checked by the
// compiler against the declared type; Input reads the Workflow Input, the
// constant the Workflow was built with, which the builder bakes into every
// member's payload apart from the Step's own args.
//
// # Building
//
// A Definition is a type with a Name and a Build(b, input) method; New
// starts the inline form. Either way the graph lowers (Prepare) to the
// Workflow's name and one backwave.EnqueueParams per Step, edges given with
// backwave.WithParentsInBatch. A Builder records its first mistake — a Step
// added twice, a Ref of another Builder, an empty graph, an input that does
// not encode — and Prepare and Enqueue return it, wrapping
// ErrInvalidWorkflow; nothing panics and nothing is enqueued.
//
// # Reading ancestors
//
// A handler holds no references to the graph it runs in: Output finds the
// ancestor a Key names by walking the job's stored Dependency parents
// through a Reader (NewReader over the Client's store, or NewAdminReader).
// Whether the Step named is an ancestor at all is known only then, and a
// Step that is none reads as absent, as Job Output's absence always does.
//
// The graph is fixed when it is enqueued: output never reshapes it, and
// nothing here is durable execution — a Step's handler runs its whole body
// on every Attempt.
package workflow
