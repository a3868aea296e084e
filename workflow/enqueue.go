package workflow

import (
	"context"
	"errors"

	"github.com/backwave/backwave"
)

// Enqueued is a Workflow Instance just created: the Workflow's id and its
// members' job ids, parallel to the prepared graph's Steps.
type Enqueued struct {
	// ID identifies the new Workflow.
	ID backwave.WorkflowID
	// Jobs are the members' ids, in Step order (Ref.Index).
	Jobs []backwave.JobID
	// Steps describes each member, parallel to Jobs.
	Steps []PreparedStep
}

// Job returns the id of the member r names.
func (e Enqueued) Job(r interface{ Index() int }) (backwave.JobID, bool) {
	i := r.Index()
	if i < 0 || i >= len(e.Jobs) {
		return 0, false
	}
	return e.Jobs[i], true
}

// Enqueue creates the Workflow p describes and all its members in one
// atomic insert (backwave.Client.EnqueueWorkflow).
func (p Prepared) Enqueue(ctx context.Context, c *backwave.Client) (Enqueued, error) {
	if c == nil {
		return Enqueued{}, errors.New("workflow: Enqueue needs a Client")
	}
	id, jobs, err := c.EnqueueWorkflow(ctx, backwave.NewWorkflow{Name: p.Name}, p.Params)
	if err != nil {
		return Enqueued{}, err
	}
	return Enqueued{ID: id, Jobs: jobs, Steps: p.Steps}, nil
}

// EnqueueTx is Enqueue inside tx, a transaction the application began on
// its store's database (Transactional Enqueue): the Workflow and its
// members commit or roll back with the application's own writes
// (backwave.Client.EnqueueWorkflowTx).
func (p Prepared) EnqueueTx(ctx context.Context, c *backwave.Client, tx backwave.Tx) (Enqueued, error) {
	if c == nil {
		return Enqueued{}, errors.New("workflow: EnqueueTx needs a Client")
	}
	id, jobs, err := c.EnqueueWorkflowTx(ctx, tx, backwave.NewWorkflow{Name: p.Name}, p.Params)
	if err != nil {
		return Enqueued{}, err
	}
	return Enqueued{ID: id, Jobs: jobs, Steps: p.Steps}, nil
}

// Enqueue runs def's Build with the Workflow Input in and creates the
// resulting Workflow in one atomic insert: a brand-new Workflow with fresh
// job ids each time.
func Enqueue[In any](ctx context.Context, c *backwave.Client, def Definition[In], in In) (Enqueued, error) {
	p, err := Prepare(def, in)
	if err != nil {
		return Enqueued{}, err
	}
	return p.Enqueue(ctx, c)
}

// EnqueueTx is Enqueue inside tx (Transactional Enqueue); see
// Prepared.EnqueueTx.
func EnqueueTx[In any](ctx context.Context, c *backwave.Client, tx backwave.Tx, def Definition[In], in In) (Enqueued, error) {
	p, err := Prepare(def, in)
	if err != nil {
		return Enqueued{}, err
	}
	return p.EnqueueTx(ctx, c, tx)
}

// Enqueue prepares b's graph and creates it (the inline form); see
// Prepared.Enqueue.
func (b *Builder[In]) Enqueue(ctx context.Context, c *backwave.Client) (Enqueued, error) {
	p, err := b.Prepare()
	if err != nil {
		return Enqueued{}, err
	}
	return p.Enqueue(ctx, c)
}

// EnqueueTx prepares b's graph and creates it inside tx; see
// Prepared.EnqueueTx.
func (b *Builder[In]) EnqueueTx(ctx context.Context, c *backwave.Client, tx backwave.Tx) (Enqueued, error) {
	p, err := b.Prepare()
	if err != nil {
		return Enqueued{}, err
	}
	return p.EnqueueTx(ctx, c, tx)
}
