package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// Workflows in SQL (migrations/0010_workflow.sql). A member's first state is
// counted by the insert below; every later state change by the count
// trigger, whichever node writes it.
const (
	sqlWorkflowCreate = `INSERT INTO backwave_workflow (name, created_at, restart_of) VALUES (?, ?, ?) RETURNING id`
	sqlWorkflowRow    = `SELECT id, name, created_at, restart_of FROM backwave_workflow WHERE id = ?`
	sqlWorkflowCounts = `SELECT state, n FROM backwave_workflow_count WHERE workflow_id = ? AND n <> 0`
	sqlWorkflowPage   = `SELECT id, name, created_at, restart_of FROM backwave_workflow
	WHERE (?1 = 0 OR id < ?1) AND (?2 = '' OR name = ?2) ORDER BY id DESC LIMIT ?3`
	sqlWorkflowMembersOf = `SELECT id FROM backwave_job WHERE id IN (SELECT value FROM json_each(?1)) AND workflow_id = ?2`
	sqlWorkflowJoin      = `UPDATE backwave_job SET workflow_id = ?1 WHERE id IN (SELECT value FROM json_each(?2))`
	sqlWorkflowCountNew  = `INSERT INTO backwave_workflow_count (workflow_id, state, n)
	SELECT ?1, state, COUNT(*) FROM backwave_job WHERE id IN (SELECT value FROM json_each(?2)) GROUP BY state
	ON CONFLICT (workflow_id, state) DO UPDATE SET n = n + excluded.n`
	sqlWorkflowMembers = `SELECT ` + jobColumns + ` FROM backwave_job WHERE workflow_id = ? ORDER BY id`
	sqlWorkflowEdges   = `SELECT e.job_id, e.parent_id, e.mode FROM backwave_job_dependency e
	WHERE e.job_id IN (SELECT id FROM backwave_job WHERE workflow_id = ?) ORDER BY e.job_id, e.parent_id`
	sqlWorkflowHeads = `SELECT id, state, cancel_cause, attempt FROM backwave_job WHERE workflow_id = ? ORDER BY id`

	// sqlWorkflowCancelNow cancels the waiting members (Scheduled 1,
	// Awaiting Parent 2) with cause operator (1), recording each one's
	// Transition Log entry after.
	sqlWorkflowCancelNow = `UPDATE backwave_job SET state = 6, cancel_cause = 1, finalized_at = ?1
	WHERE workflow_id = ?2 AND state IN (1, 2) RETURNING id`
	sqlWorkflowCancelRequest = `UPDATE backwave_job SET cancel_requested = 1 WHERE workflow_id = ? AND state = 3`

	// sqlWorkflowReanimate applies the reanimations of a RetryPlan, from
	// the JSON rows ?1 [id, state code, pending]: core.Reanimate's reset,
	// due at ?2.
	sqlWorkflowReanimate = `UPDATE backwave_job AS j
	SET state = r.value ->> 1, pending_parents = r.value ->> 2, attempt_base = j.attempt, retry_cause = 0,
		cancel_cause = 0, cancel_requested = 0, worker = NULL, lease_expires_at = NULL, finalized_at = NULL,
		terminal_cause = NULL, scheduled_at = ?2
	FROM json_each(?1) AS r WHERE j.id = r.value ->> 0`
	// sqlWorkflowRecount sets the pending count of the recounted waiting
	// members, from the JSON rows ?1 [id, pending].
	sqlWorkflowRecount = `UPDATE backwave_job AS j SET pending_parents = r.value ->> 1
	FROM json_each(?1) AS r WHERE j.id = r.value ->> 0 AND j.state = 2`
	// sqlWorkflowEdgesCounted sets the counted flags of the JSON rows ?1
	// [job, parent, counted].
	sqlWorkflowEdgesCounted = `UPDATE backwave_job_dependency AS e SET counted = r.value ->> 2
	FROM json_each(?1) AS r WHERE e.job_id = r.value ->> 0 AND e.parent_id = r.value ->> 1`
	sqlWorkflowDropOutput = `DELETE FROM backwave_job_output WHERE job_id IN (SELECT value FROM json_each(?1))`
	// sqlWorkflowMoves records the Transition Log entries of the JSON rows
	// ?1 [id, from, to, attempt] at ?2 by ?3.
	sqlWorkflowMoves = `INSERT INTO backwave_job_transition (job_id, at, from_state, state, via, attempt)
	SELECT r.value ->> 0, ?2, r.value ->> 1, r.value ->> 2, ?3, r.value ->> 3 FROM json_each(?1) AS r ORDER BY r.key`
	sqlWorkflowDueQueues = `SELECT DISTINCT queue FROM backwave_job WHERE id IN (SELECT value FROM json_each(?1)) AND state = 1 ORDER BY queue`
)

// WorkflowInsert inserts p.Jobs as members of a new or stored Workflow in
// one write transaction; see store.Workflows.
func (s *Store) WorkflowInsert(ctx context.Context, p store.WorkflowInsertParams) (store.WorkflowInsertResult, error) {
	if err := p.Validate(); err != nil {
		return store.WorkflowInsertResult{}, err
	}
	var res store.WorkflowInsertResult
	var due []string
	err := s.write(ctx, "insert workflow members", func(tx *sql.Tx) error {
		var err error
		res, due, err = s.workflowInsert(ctx, tx, true, p)
		return err
	})
	if err != nil {
		return store.WorkflowInsertResult{}, err
	}
	s.hints.Announce(due)
	return res, nil
}

// WorkflowInsertInTx implements store.TxWorkflowInserter: WorkflowInsert
// inside the caller's *sql.Tx on the store's file (see JobInsertManyTx).
func (s *Store) WorkflowInsertInTx(ctx context.Context, tx any, p store.WorkflowInsertParams) (store.WorkflowInsertResult, error) {
	t, ok := tx.(*sql.Tx)
	if !ok || t == nil {
		return store.WorkflowInsertResult{}, fmt.Errorf("sqlite: insert workflow members: %w: a transaction of type %T; the Embedded Adapter takes a *sql.Tx on its file %s",
			store.ErrTxUnsupported, tx, s.path)
	}
	if err := p.Validate(); err != nil {
		return store.WorkflowInsertResult{}, err
	}
	if err := s.ready(ctx); err != nil {
		return store.WorkflowInsertResult{}, err
	}
	if err := s.checkTx(ctx, t); err != nil {
		return store.WorkflowInsertResult{}, fmt.Errorf("sqlite: insert workflow members in the caller's transaction: %w", err)
	}
	res, _, err := s.workflowInsert(ctx, t, false, p)
	if err != nil {
		return store.WorkflowInsertResult{}, fmt.Errorf("sqlite: insert workflow members in the caller's transaction: %w", err)
	}
	return res, nil
}

func (s *Store) workflowInsert(ctx context.Context, tx *sql.Tx, own bool, p store.WorkflowInsertParams) (store.WorkflowInsertResult, []string, error) {
	r := s.schema.Rename
	id := p.Workflow
	switch {
	case id != 0:
		if _, err := s.workflowRow(ctx, tx, id); err != nil {
			return store.WorkflowInsertResult{}, nil, err
		}
	case p.RestartOf != 0:
		if _, err := s.workflowRow(ctx, tx, p.RestartOf); err != nil {
			return store.WorkflowInsertResult{}, nil, fmt.Errorf("restart: %w", err)
		}
	}
	if err := s.checkMembers(ctx, tx, id, p.Jobs); err != nil {
		return store.WorkflowInsertResult{}, nil, err
	}
	now := s.clock.Now()
	if id == 0 {
		var restart any
		if p.RestartOf != 0 {
			restart = int64(p.RestartOf)
		}
		if err := tx.QueryRowContext(ctx, r(sqlWorkflowCreate), p.Name, micros(now), restart).Scan(&id); err != nil {
			return store.WorkflowInsertResult{}, nil, fmt.Errorf("create workflow: %w", err)
		}
	}
	res, due, err := s.insertResults(ctx, tx, own, p.InsertManyParams)
	if err != nil {
		return store.WorkflowInsertResult{}, nil, err
	}
	ids := store.ResultIDs(res)
	arg := jsonArray(int64s(ids))
	if _, err := tx.ExecContext(ctx, r(sqlWorkflowJoin), int64(id), arg); err != nil {
		return store.WorkflowInsertResult{}, nil, fmt.Errorf("workflow %d: join members: %w", id, err)
	}
	if _, err := tx.ExecContext(ctx, r(sqlWorkflowCountNew), int64(id), arg); err != nil {
		return store.WorkflowInsertResult{}, nil, fmt.Errorf("workflow %d: count members: %w", id, err)
	}
	if p.RestartOf != 0 {
		if err := s.audit(ctx, tx, now, p.Actor, store.AuditWorkflowRestart, 0, "", store.WorkflowDetail(p.RestartOf, "new "+id.String())); err != nil {
			return store.WorkflowInsertResult{}, nil, err
		}
	}
	return store.WorkflowInsertResult{Workflow: id, Jobs: ids}, due, nil
}

// checkMembers fails with store.ErrParentOutsideWorkflow unless every
// Existing parent jobs name is a member of Workflow id (none is, for a new
// Workflow: id 0).
func (s *Store) checkMembers(ctx context.Context, tx *sql.Tx, id job.WorkflowID, jobs []store.NewJob) error {
	want := store.ExistingParents(jobs)
	if len(want) == 0 {
		return nil
	}
	found := map[job.ID]bool{}
	if id != 0 {
		got, err := queryIDs(ctx, tx, s.schema.Rename(sqlWorkflowMembersOf), jsonArray(int64s(want)), int64(id))
		if err != nil {
			return fmt.Errorf("read parents: %w", err)
		}
		for _, g := range got {
			found[job.ID(g)] = true
		}
	}
	for _, w := range want {
		if !found[w] {
			return fmt.Errorf("%w: %w: job %d is not a member of the workflow", store.ErrInvalidParams, store.ErrParentOutsideWorkflow, w)
		}
	}
	return nil
}

func int64s(ids []job.ID) []int64 {
	out := make([]int64, len(ids))
	for i, id := range ids {
		out[i] = int64(id)
	}
	return out
}

// workflowRow reads a Workflow's row and counts, or fails with
// store.ErrNotFound.
func (s *Store) workflowRow(ctx context.Context, tx *sql.Tx, id job.WorkflowID) (store.WorkflowInfo, error) {
	var w store.WorkflowInfo
	var created int64
	var restart sql.NullInt64
	err := tx.QueryRowContext(ctx, s.schema.Rename(sqlWorkflowRow), int64(id)).Scan(&w.ID, &w.Name, &created, &restart)
	if errors.Is(err, sql.ErrNoRows) {
		return w, fmt.Errorf("workflow %d: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return w, fmt.Errorf("workflow %d: %w", id, err)
	}
	w.CreatedAt, w.RestartOf = fromMicros(created), job.WorkflowID(restart.Int64)
	w.Counts, err = s.workflowCounts(ctx, tx, id)
	return w, err
}

func (s *Store) workflowCounts(ctx context.Context, tx *sql.Tx, id job.WorkflowID) (map[job.State]int, error) {
	rows, err := tx.QueryContext(ctx, s.schema.Rename(sqlWorkflowCounts), int64(id))
	if err != nil {
		return nil, fmt.Errorf("workflow %d: counts: %w", id, err)
	}
	counts := map[job.State]int{}
	for rows.Next() {
		var code, n int64
		if err := rows.Scan(&code, &n); err != nil {
			_ = rows.Close()
			return nil, err
		}
		st, err := decode(stateCodes, "state", code)
		if err != nil {
			_ = rows.Close()
			return nil, err
		}
		counts[st] = int(n)
	}
	return counts, errors.Join(rows.Err(), rows.Close())
}

// WorkflowGet reads a Workflow's row and member counts.
func (s *Store) WorkflowGet(ctx context.Context, id job.WorkflowID) (store.WorkflowInfo, error) {
	var out store.WorkflowInfo
	err := s.read(ctx, "get workflow", func(tx *sql.Tx) error {
		var err error
		out, err = s.workflowRow(ctx, tx, id)
		return err
	})
	return out, err
}

// WorkflowList lists Workflows newest first, filtered and paged by p. A
// status filter is applied to each Workflow's counts as pages of rows are
// read.
func (s *Store) WorkflowList(ctx context.Context, p store.WorkflowListParams) ([]store.WorkflowInfo, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var out []store.WorkflowInfo
	err := s.read(ctx, "list workflows", func(tx *sql.Tx) error {
		out = nil
		before := int64(p.BeforeID)
		for len(out) < p.PageLimit() {
			rows, err := tx.QueryContext(ctx, s.schema.Rename(sqlWorkflowPage), before, p.Name, p.PageLimit())
			if err != nil {
				return err
			}
			var page []store.WorkflowInfo
			for rows.Next() {
				var w store.WorkflowInfo
				var created int64
				var restart sql.NullInt64
				if err := rows.Scan(&w.ID, &w.Name, &created, &restart); err != nil {
					_ = rows.Close()
					return err
				}
				w.CreatedAt, w.RestartOf = fromMicros(created), job.WorkflowID(restart.Int64)
				page = append(page, w)
			}
			if err := errors.Join(rows.Err(), rows.Close()); err != nil {
				return err
			}
			for _, w := range page {
				if w.Counts, err = s.workflowCounts(ctx, tx, w.ID); err != nil {
					return err
				}
				if (p.Status == 0 || w.Status() == p.Status) && len(out) < p.PageLimit() {
					out = append(out, w)
				}
				before = int64(w.ID)
			}
			if len(page) < p.PageLimit() {
				break
			}
		}
		return nil
	})
	return out, err
}

// WorkflowMembers returns every member with its Dependency edges, ascending.
func (s *Store) WorkflowMembers(ctx context.Context, id job.WorkflowID) ([]store.WorkflowMember, error) {
	var out []store.WorkflowMember
	err := s.read(ctx, "workflow members", func(tx *sql.Tx) error {
		if _, err := s.workflowRow(ctx, tx, id); err != nil {
			return err
		}
		jobs, err := s.scanJobs(ctx, tx, s.schema.Rename(sqlWorkflowMembers), int64(id))
		if err != nil {
			return err
		}
		out = make([]store.WorkflowMember, len(jobs))
		at := make(map[job.ID]int, len(jobs))
		for i, j := range jobs {
			out[i].Job = j
			at[j.ID] = i
		}
		return s.workflowEdges(ctx, tx, id, func(dep, parent job.ID, mode job.DependencyMode) {
			m := &out[at[dep]]
			m.Parents, m.Mode = append(m.Parents, parent), mode
		})
	})
	return out, err
}

// workflowEdges calls fn with every Dependency edge into a member of
// Workflow id, by dependent then parent.
func (s *Store) workflowEdges(ctx context.Context, tx *sql.Tx, id job.WorkflowID, fn func(dep, parent job.ID, mode job.DependencyMode)) error {
	rows, err := tx.QueryContext(ctx, s.schema.Rename(sqlWorkflowEdges), int64(id))
	if err != nil {
		return fmt.Errorf("read edges: %w", err)
	}
	for rows.Next() {
		var dep, parent, code int64
		if err := rows.Scan(&dep, &parent, &code); err != nil {
			_ = rows.Close()
			return err
		}
		mode, err := decode(modeCodes, "dependency mode", code)
		if err != nil {
			_ = rows.Close()
			return err
		}
		fn(job.ID(dep), job.ID(parent), mode)
	}
	return errors.Join(rows.Err(), rows.Close())
}

// WorkflowCancel cancels every live member in one write transaction with
// one audit record; see store.Workflows.
func (s *Store) WorkflowCancel(ctx context.Context, p store.WorkflowActionParams) (store.WorkflowInfo, error) {
	if err := p.Validate(); err != nil {
		return store.WorkflowInfo{}, err
	}
	var out store.WorkflowInfo
	var released []string
	err := s.write(ctx, "cancel workflow", func(tx *sql.Tx) error {
		r := s.schema.Rename
		if _, err := s.workflowRow(ctx, tx, p.ID); err != nil {
			return err
		}
		now := s.clock.Now()
		heads, err := s.workflowHeads(ctx, tx, p.ID)
		if err != nil {
			return err
		}
		cancelled, err := queryIDs(ctx, tx, r(sqlWorkflowCancelNow), micros(now), int64(p.ID))
		if err != nil {
			return fmt.Errorf("cancel members: %w", err)
		}
		if s.opts.History.Records() && len(cancelled) > 0 {
			var moves [][4]int64
			for _, id := range cancelled {
				h := heads[job.ID(id)]
				moves = append(moves, [4]int64{id, stateCode(h.State), stateCode(job.StateCancelled), int64(h.attempt)})
			}
			if err := s.recordMoves(ctx, tx, moves, now, core.ViaCancel); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, r(sqlWorkflowCancelRequest), int64(p.ID)); err != nil {
			return fmt.Errorf("request cancel of running members: %w", err)
		}
		if released, err = s.settle(ctx, tx, cancelled, now); err != nil {
			return err
		}
		if err := s.audit(ctx, tx, now, p.Actor, store.AuditWorkflowCancel, 0, "", store.WorkflowDetail(p.ID, "")); err != nil {
			return err
		}
		out, err = s.workflowRow(ctx, tx, p.ID)
		return err
	})
	if err != nil {
		return store.WorkflowInfo{}, err
	}
	s.hints.Announce(released)
	return out, nil
}

// memberHead is what a Workflow action reads of each member.
type memberHead struct {
	store.RetryMember
	attempt job.Attempt
}

func (s *Store) workflowHeads(ctx context.Context, tx *sql.Tx, id job.WorkflowID) (map[job.ID]*memberHead, error) {
	rows, err := tx.QueryContext(ctx, s.schema.Rename(sqlWorkflowHeads), int64(id))
	if err != nil {
		return nil, fmt.Errorf("read members: %w", err)
	}
	out := map[job.ID]*memberHead{}
	for rows.Next() {
		var mid, state, cc, attempt int64
		if err := rows.Scan(&mid, &state, &cc, &attempt); err != nil {
			_ = rows.Close()
			return nil, err
		}
		h := &memberHead{RetryMember: store.RetryMember{ID: job.ID(mid)}, attempt: job.Attempt(attempt)}
		if h.State, err = decode(stateCodes, "state", state); err == nil {
			h.CancelCause, err = decode(cancelCauseCodes, "cancel cause", cc)
		}
		if err != nil {
			_ = rows.Close()
			return nil, err
		}
		out[h.ID] = h
	}
	return out, errors.Join(rows.Err(), rows.Close())
}

func (s *Store) recordMoves(ctx context.Context, tx *sql.Tx, moves [][4]int64, now time.Time, via core.Via) error {
	b, err := json.Marshal(moves)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, s.schema.Rename(sqlWorkflowMoves), string(b), micros(now), viaCode(via)); err != nil {
		return fmt.Errorf("record transitions: %w", err)
	}
	return nil
}

// WorkflowRetry reanimates the members p.Scope names in one write
// transaction: the plan is worked out from the members read in it
// (store.PlanWorkflowRetry) and applied set-based, a handful of statements
// whatever the Workflow's size.
func (s *Store) WorkflowRetry(ctx context.Context, p store.WorkflowRetryParams) (store.WorkflowRetryResult, error) {
	if err := p.Validate(); err != nil {
		return store.WorkflowRetryResult{}, err
	}
	var out store.WorkflowRetryResult
	var due []string
	err := s.write(ctx, "retry workflow", func(tx *sql.Tx) error {
		r := s.schema.Rename
		if _, err := s.workflowRow(ctx, tx, p.ID); err != nil {
			return err
		}
		heads, err := s.workflowHeads(ctx, tx, p.ID)
		if err != nil {
			return err
		}
		err = s.workflowEdges(ctx, tx, p.ID, func(dep, parent job.ID, mode job.DependencyMode) {
			h := heads[dep]
			h.Parents, h.Mode = append(h.Parents, parent), mode
		})
		if err != nil {
			return err
		}
		members := make([]store.RetryMember, 0, len(heads))
		for _, h := range heads {
			members = append(members, h.RetryMember)
		}
		plan := store.PlanWorkflowRetry(members, p.Scope)
		now := s.clock.Now()
		if len(plan.Reanimated) > 0 {
			var re [][3]int64
			var moves [][4]int64
			for _, m := range plan.Reanimated {
				re = append(re, [3]int64{int64(m.ID), stateCode(m.To), int64(m.Pending)})
				moves = append(moves, [4]int64{int64(m.ID), stateCode(m.From), stateCode(m.To), int64(heads[m.ID].attempt)})
			}
			var rc [][2]int64
			for _, m := range plan.Recounted {
				rc = append(rc, [2]int64{int64(m.ID), int64(m.Pending)})
			}
			var edges [][3]int64
			for _, e := range plan.Edges {
				c := int64(0)
				if e.Counted {
					c = 1
				}
				edges = append(edges, [3]int64{int64(e.Job), int64(e.Parent), c})
			}
			ids := jsonArray(int64s(plan.IDs()))
			for _, st := range []struct {
				q    string
				args []any
			}{
				{sqlWorkflowReanimate, []any{mustJSON(re), micros(now)}},
				{sqlWorkflowRecount, []any{mustJSON(rc)}},
				{sqlWorkflowEdgesCounted, []any{mustJSON(edges)}},
				{sqlWorkflowDropOutput, []any{ids}},
			} {
				if _, err := tx.ExecContext(ctx, r(st.q), st.args...); err != nil {
					return fmt.Errorf("%.40s…: %w", st.q, err)
				}
			}
			if s.opts.History.Records() {
				if err := s.recordMoves(ctx, tx, moves, now, core.ViaWorkflowRetry); err != nil {
					return err
				}
			}
			if due, err = queryStrings(ctx, tx, r(sqlWorkflowDueQueues), ids); err != nil {
				return err
			}
		}
		if err := s.audit(ctx, tx, now, p.Actor, store.AuditWorkflowRetry, 0, "", store.WorkflowDetail(p.ID, "scope "+p.Scope.String())); err != nil {
			return err
		}
		out.Retried = plan.IDs()
		out.Workflow, err = s.workflowRow(ctx, tx, p.ID)
		return err
	})
	if err != nil {
		return store.WorkflowRetryResult{}, err
	}
	s.hints.Announce(due)
	return out, nil
}

// mustJSON encodes rows of integers, which cannot fail.
func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("sqlite: encode %T: %v", v, err))
	}
	if string(b) == "null" {
		return "[]"
	}
	return string(b)
}

func queryStrings(ctx context.Context, tx *sql.Tx, query string, args ...any) ([]string, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			_ = rows.Close()
			return nil, err
		}
		out = append(out, v)
	}
	return out, errors.Join(rows.Err(), rows.Close())
}
