package encrypt

import (
	"context"
	"fmt"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// WorkflowInsert inserts Workflow members with their payloads sealed, each
// bound to its own id, as JobInsertManyResults does.
func (b *base) WorkflowInsert(ctx context.Context, p store.WorkflowInsertParams) (store.WorkflowInsertResult, error) {
	q, asked, err := b.sealInsert(ctx, p.InsertManyParams)
	if err != nil {
		return store.WorkflowInsertResult{}, fmt.Errorf("encrypt: workflow insert: %w", err)
	}
	p.InsertManyParams = q
	res, err := b.Store.WorkflowInsert(ctx, p)
	if err != nil {
		return store.WorkflowInsertResult{}, err
	}
	if err := checkSealed(insertedAll(res.Jobs), asked); err != nil {
		return store.WorkflowInsertResult{}, err
	}
	return res, nil
}

// WorkflowInsertInTx inserts Workflow members inside the caller's
// transaction with their payloads sealed.
func (m txInsert) WorkflowInsertInTx(ctx context.Context, tx any, p store.WorkflowInsertParams) (store.WorkflowInsertResult, error) {
	ins, ok := m.b.Store.(store.TxWorkflowInserter)
	if !ok {
		return store.WorkflowInsertResult{}, fmt.Errorf("encrypt: workflow insert: %w", store.ErrTxUnsupported)
	}
	q, asked, err := m.b.sealInsert(ctx, p.InsertManyParams)
	if err != nil {
		return store.WorkflowInsertResult{}, fmt.Errorf("encrypt: workflow insert: %w", err)
	}
	p.InsertManyParams = q
	res, err := ins.WorkflowInsertInTx(ctx, tx, p)
	if err != nil {
		return store.WorkflowInsertResult{}, err
	}
	if err := checkSealed(insertedAll(res.Jobs), asked); err != nil {
		return store.WorkflowInsertResult{}, err
	}
	return res, nil
}

// insertedAll answers an insert that stores every job (a Workflow's members
// carry no unique key).
func insertedAll(ids []job.ID) []store.InsertResult {
	out := make([]store.InsertResult, len(ids))
	for i, id := range ids {
		out[i] = store.InsertResult{ID: id, Inserted: true}
	}
	return out
}

// WorkflowMembers reads a Workflow's members with their payloads opened
// where they open (a Workflow Restart re-seals them under the new ids).
func (b *base) WorkflowMembers(ctx context.Context, id job.WorkflowID) ([]store.WorkflowMember, error) {
	ms, err := b.Store.WorkflowMembers(ctx, id)
	for i := range ms {
		b.readable(ctx, &ms[i].Job)
	}
	return ms, err
}
