package mariadb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// countMember moves one member of Workflow id from state from to state to
// in its counts (StateUnknown: an insert or a purge).
func (w *wtx) countMember(id int64, from, to job.State) error {
	if from != job.StateUnknown {
		if _, err := w.exec(`UPDATE backwave_workflow_count SET n = n - 1 WHERE workflow_id = ? AND state = ?`, id, stateCode(from)); err != nil {
			return fmt.Errorf("workflow %d: count: %w", id, err)
		}
	}
	if to != job.StateUnknown {
		if _, err := w.exec(`INSERT INTO backwave_workflow_count (workflow_id, state, n) VALUES (?, ?, 1)
			ON DUPLICATE KEY UPDATE n = n + 1`, id, stateCode(to)); err != nil {
			return fmt.Errorf("workflow %d: count: %w", id, err)
		}
	}
	return nil
}

// forgetMember takes a purged member out of its Workflow's counts, and
// the Workflow's row with its last member.
func (w *wtx) forgetMember(r *jrow) error {
	if err := w.countMember(r.workflow, r.job.State, job.StateUnknown); err != nil {
		return err
	}
	var left int
	if err := w.row(`SELECT COUNT(*) FROM backwave_job WHERE workflow_id = ?`, r.workflow).Scan(&left); err != nil {
		return err
	}
	if left == 0 {
		if _, err := w.exec(`DELETE FROM backwave_workflow WHERE id = ?`, r.workflow); err != nil {
			return err
		}
		if _, err := w.exec(`DELETE FROM backwave_workflow_count WHERE workflow_id = ?`, r.workflow); err != nil {
			return err
		}
	}
	return nil
}

// workflowInfo reads one Workflow, or store.ErrNotFound.
func workflowInfo(ctx context.Context, q querier, id job.WorkflowID) (store.WorkflowInfo, error) {
	info := store.WorkflowInfo{ID: id, Counts: map[job.State]int{}}
	var created, restart int64
	err := q.QueryRowContext(ctx, `SELECT name, restart_of, created_at FROM backwave_workflow WHERE id = ?`, int64(id)).
		Scan(&info.Name, &restart, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return info, fmt.Errorf("workflow %d: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return info, err
	}
	info.CreatedAt, info.RestartOf = fromMicros(created), job.WorkflowID(restart)
	rows, err := q.QueryContext(ctx, `SELECT state, n FROM backwave_workflow_count WHERE workflow_id = ? AND n <> 0`, int64(id))
	if err != nil {
		return info, err
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var st int64
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return info, err
		}
		state, err := decode(stateCodes, "state", st)
		if err != nil {
			return info, err
		}
		info.Counts[state] = n
	}
	return info, rows.Err()
}

// WorkflowInsert inserts a Workflow's members, creating the Workflow or
// appending to a stored one (store.Workflows).
func (s *Store) WorkflowInsert(ctx context.Context, p store.WorkflowInsertParams) (store.WorkflowInsertResult, error) {
	if err := p.Validate(); err != nil {
		return store.WorkflowInsertResult{}, err
	}
	var res store.WorkflowInsertResult
	err := s.write(ctx, "insert workflow", func(w *wtx) error {
		var err error
		res, err = w.workflowInsert(p)
		return err
	})
	return res, err
}

func (w *wtx) workflowInsert(p store.WorkflowInsertParams) (store.WorkflowInsertResult, error) {
	id := p.Workflow
	if id != 0 {
		if _, err := workflowInfo(w.ctx, w.tx, id); err != nil {
			return store.WorkflowInsertResult{}, err
		}
	} else if p.RestartOf != 0 {
		if _, err := workflowInfo(w.ctx, w.tx, p.RestartOf); err != nil {
			return store.WorkflowInsertResult{}, fmt.Errorf("restart: %w", err)
		}
	}
	for _, pid := range store.ExistingParents(p.Jobs) {
		var wf int64
		err := w.row(`SELECT workflow_id FROM backwave_job WHERE id = ? LOCK IN SHARE MODE`, int64(pid)).Scan(&wf)
		if errors.Is(err, sql.ErrNoRows) || err == nil && (id == 0 || wf != int64(id)) {
			return store.WorkflowInsertResult{}, fmt.Errorf("%w: %w: job %d is not a member of the workflow",
				store.ErrInvalidParams, store.ErrParentOutsideWorkflow, pid)
		}
		if err != nil {
			return store.WorkflowInsertResult{}, err
		}
	}
	if id == 0 {
		w.wfSeq++
		id = job.WorkflowID(w.wfSeq)
		if _, err := w.exec(`INSERT INTO backwave_workflow (id, name, restart_of, created_at) VALUES (?, ?, ?, ?)`,
			int64(id), p.Name, int64(p.RestartOf), micros(w.now)); err != nil {
			return store.WorkflowInsertResult{}, fmt.Errorf("workflow: %w", err)
		}
	}
	res, err := w.insertMany(p.InsertManyParams, int64(id))
	if err != nil {
		return store.WorkflowInsertResult{}, err
	}
	if p.RestartOf != 0 {
		if err := w.record(p.Actor, store.AuditWorkflowRestart, 0, "", store.WorkflowDetail(p.RestartOf, "new "+id.String())); err != nil {
			return store.WorkflowInsertResult{}, err
		}
	}
	return store.WorkflowInsertResult{Workflow: id, Jobs: store.ResultIDs(res)}, nil
}

// WorkflowGet returns one Workflow with its member counts
// (store.Workflows).
func (s *Store) WorkflowGet(ctx context.Context, id job.WorkflowID) (store.WorkflowInfo, error) {
	var info store.WorkflowInfo
	err := s.read(ctx, "get workflow", func(q querier, _ time.Time) error {
		var err error
		info, err = workflowInfo(ctx, q, id)
		return err
	})
	return info, err
}

// WorkflowList returns Workflows newest first, filtered and paged
// (store.Workflows).
func (s *Store) WorkflowList(ctx context.Context, p store.WorkflowListParams) ([]store.WorkflowInfo, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var out []store.WorkflowInfo
	err := s.read(ctx, "list workflows", func(q querier, _ time.Time) error {
		out = nil
		before := int64(p.BeforeID)
		for len(out) < p.PageLimit() {
			var b strings.Builder
			var args []any
			b.WriteString(`SELECT id FROM backwave_workflow WHERE 1 = 1`)
			if before != 0 {
				b.WriteString(` AND id < ?`)
				args = append(args, before)
			}
			if p.Name != "" {
				b.WriteString(` AND name = ?`)
				args = append(args, p.Name)
			}
			b.WriteString(` ORDER BY id DESC LIMIT 500`)
			rows, err := q.QueryContext(ctx, b.String(), args...)
			if err != nil {
				return err
			}
			var ids []int64
			for rows.Next() {
				var id int64
				if err := rows.Scan(&id); err != nil {
					_ = rows.Close()
					return err
				}
				ids = append(ids, id)
			}
			_ = rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			if len(ids) == 0 {
				return nil
			}
			for _, id := range ids {
				info, err := workflowInfo(ctx, q, job.WorkflowID(id))
				if err != nil {
					return err
				}
				if (p.Status == 0 || info.Status() == p.Status) && len(out) < p.PageLimit() {
					out = append(out, info)
				}
				before = id
			}
		}
		return nil
	})
	return out, err
}

// WorkflowMembers returns a Workflow's members with their edges, ascending
// (store.Workflows).
func (s *Store) WorkflowMembers(ctx context.Context, id job.WorkflowID) ([]store.WorkflowMember, error) {
	var out []store.WorkflowMember
	err := s.read(ctx, "workflow members", func(q querier, _ time.Time) error {
		out = nil
		if _, err := workflowInfo(ctx, q, id); err != nil {
			return err
		}
		rows, err := q.QueryContext(ctx, `SELECT `+jobCols+` FROM backwave_job j WHERE j.workflow_id = ? ORDER BY j.id`, int64(id))
		if err != nil {
			return err
		}
		var jobs []job.Job
		for rows.Next() {
			r, err := scanJob(rows)
			if err != nil {
				_ = rows.Close()
				return err
			}
			jobs = append(jobs, r.job)
			m := store.WorkflowMember{Job: r.job}
			if r.depMode > 0 {
				m.Mode = job.DependencyMode(r.depMode - 1)
			}
			out = append(out, m)
		}
		_ = rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if err := loadTags(q, ctx, jobs); err != nil {
			return err
		}
		for i := range out {
			out[i].Job.Tags = jobs[i].Tags
			ps, err := parentsOf(ctx, q, int64(out[i].Job.ID))
			if err != nil {
				return err
			}
			for _, e := range ps {
				out[i].Parents = append(out[i].Parents, job.ID(e.parent))
			}
		}
		return nil
	})
	if out == nil && err == nil {
		out = []store.WorkflowMember{}
	}
	return out, err
}

type edgeRow struct {
	parent  int64
	counted bool
}

// parentsOf reads a job's parent edges, ascending.
func parentsOf(ctx context.Context, q querier, child int64) ([]edgeRow, error) {
	rows, err := q.QueryContext(ctx, `SELECT parent, counted FROM backwave_job_edge WHERE child = ? ORDER BY parent`, child)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	var out []edgeRow
	for rows.Next() {
		var e edgeRow
		if err := rows.Scan(&e.parent, &e.counted); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// memberIDs lists a Workflow's members, ascending.
func (w *wtx) memberIDs(id job.WorkflowID) ([]int64, error) {
	return w.ids(`SELECT id FROM backwave_job WHERE workflow_id = ? ORDER BY id`, int64(id))
}

// WorkflowCancel cancels every live member: at once, or by a cancel
// request for a Running one (store.Workflows).
func (s *Store) WorkflowCancel(ctx context.Context, p store.WorkflowActionParams) (store.WorkflowInfo, error) {
	if err := p.Validate(); err != nil {
		return store.WorkflowInfo{}, err
	}
	var info store.WorkflowInfo
	err := s.write(ctx, "cancel workflow", func(w *wtx) error {
		if _, err := workflowInfo(w.ctx, w.tx, p.ID); err != nil {
			return err
		}
		ids, err := w.memberIDs(p.ID)
		if err != nil {
			return err
		}
		for _, mid := range ids {
			r, err := w.load(job.ID(mid))
			if err != nil {
				return err
			}
			switch core.OperatorCancel(r.job.State) {
			case core.CancelAtOnce:
				r.job.CancelCause = job.CancelCauseOperator
				if err := w.move(r, job.StateCancelled, core.ViaCancel, ""); err != nil {
					return err
				}
			case core.CancelRequest:
				r.job.CancelRequested = true
				if err := w.save(r); err != nil {
					return err
				}
			}
		}
		if err := w.record(p.Actor, store.AuditWorkflowCancel, 0, "", store.WorkflowDetail(p.ID, "")); err != nil {
			return err
		}
		info, err = workflowInfo(w.ctx, w.tx, p.ID)
		return err
	})
	return info, err
}

// WorkflowRetry reanimates the terminal members the scope names and
// recounts the latches they feed (store.Workflows).
func (s *Store) WorkflowRetry(ctx context.Context, p store.WorkflowRetryParams) (store.WorkflowRetryResult, error) {
	if err := p.Validate(); err != nil {
		return store.WorkflowRetryResult{}, err
	}
	var res store.WorkflowRetryResult
	err := s.write(ctx, "retry workflow", func(w *wtx) error {
		if _, err := workflowInfo(w.ctx, w.tx, p.ID); err != nil {
			return err
		}
		ids, err := w.memberIDs(p.ID)
		if err != nil {
			return err
		}
		rows := map[job.ID]*jrow{}
		edges := map[job.ID][]edgeRow{}
		nodes := make([]core.RetryNode, 0, len(ids))
		for _, mid := range ids {
			r, err := w.load(job.ID(mid))
			if err != nil {
				return err
			}
			es, err := parentsOf(w.ctx, w.tx, mid)
			if err != nil {
				return err
			}
			rows[r.job.ID], edges[r.job.ID] = r, es
			n := core.RetryNode{ID: r.job.ID, State: r.job.State, CancelCause: r.job.CancelCause}
			if r.depMode > 0 {
				n.Mode = job.DependencyMode(r.depMode - 1)
			}
			for _, e := range es {
				n.Parents = append(n.Parents, job.ID(e.parent))
			}
			nodes = append(nodes, n)
		}
		retried := core.RetrySet(nodes, p.Scope)
		inSet := map[job.ID]bool{}
		for _, id := range retried {
			inSet[id] = true
		}
		// Live-after is judged on the states before the retry applies.
		liveBefore := map[job.ID]bool{}
		for id, r := range rows {
			liveBefore[id] = r.job.State.Live()
		}
		liveAfter := func(id job.ID) bool { return inSet[id] || liveBefore[id] }
		for _, id := range retried {
			r := rows[id]
			core.Reanimate(&r.job, w.now)
			if _, err := w.exec(`UPDATE backwave_job SET output = NULL WHERE id = ?`, int64(id)); err != nil {
				return err
			}
			pending, err := w.recount(r, edges[id], liveAfter)
			if err != nil {
				return err
			}
			if err := w.move(r, core.ReanimatedState(pending), core.ViaWorkflowRetry, ""); err != nil {
				return err
			}
		}
		for _, mid := range ids {
			r := rows[job.ID(mid)]
			if inSet[r.job.ID] || r.job.State != job.StateAwaitingParent || r.depMode == 0 {
				continue
			}
			if slices.ContainsFunc(edges[r.job.ID], func(e edgeRow) bool { return inSet[job.ID(e.parent)] }) {
				fresh, err := w.load(r.job.ID)
				if err != nil {
					return err
				}
				if _, err := w.recount(fresh, edges[r.job.ID], liveAfter); err != nil {
					return err
				}
				if err := w.save(fresh); err != nil {
					return err
				}
			}
		}
		if err := w.record(p.Actor, store.AuditWorkflowRetry, 0, "", store.WorkflowDetail(p.ID, "scope "+p.Scope.String())); err != nil {
			return err
		}
		info, err := workflowInfo(w.ctx, w.tx, p.ID)
		res = store.WorkflowRetryResult{Workflow: info, Retried: retried}
		return err
	})
	return res, err
}

// recount sets r's latch exactly after a retry (core.Recount) and returns
// its pending count; the caller saves r.
func (w *wtx) recount(r *jrow, es []edgeRow, live func(job.ID) bool) (int, error) {
	if r.depMode == 0 {
		return 0, nil
	}
	parentLive := make([]bool, len(es))
	for i, e := range es {
		parentLive[i] = live(job.ID(e.parent))
	}
	counted, pending := core.Recount(parentLive)
	for i, e := range es {
		if _, err := w.exec(`UPDATE backwave_job_edge SET counted = ? WHERE child = ? AND parent = ?`, counted[i], int64(r.job.ID), e.parent); err != nil {
			return 0, err
		}
	}
	r.depPending = int64(pending)
	return pending, nil
}
