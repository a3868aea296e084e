package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// Workflows in SQL (migration/010_workflow.sql). A member's first state is
// counted into workflow_count by its inserting transaction; every later
// state change, whichever node writes it, by the row triggers into
// workflow_count_delta, which foldWorkflowCounts moves into workflow_count.
const (
	workflowRowSQL = `SELECT w.id, w.name, w.created_at, w.restart_of FROM backwave.workflow w WHERE w.id = $1`
	// workflowCountsSQL sums the folded counts and the deltas not yet
	// folded of one Workflow, in one snapshot.
	workflowCountsSQL = `SELECT c.state, sum(c.n)::bigint FROM (
    SELECT state, n FROM backwave.workflow_count WHERE workflow_id = $1
    UNION ALL
    SELECT state, n FROM backwave.workflow_count_delta WHERE workflow_id = $1
) c GROUP BY c.state HAVING sum(c.n) <> 0`
	workflowCreateSQL = `INSERT INTO backwave.workflow (name, created_at, restart_of)
VALUES ($1, coalesce($2::timestamptz, now()), $3) RETURNING id`
	workflowMembersOfSQL = `SELECT id FROM backwave.job WHERE id = ANY ($1::bigint[]) AND workflow_id = $2 FOR SHARE`
	workflowJoinSQL      = `UPDATE backwave.job SET workflow_id = $1 WHERE id = ANY ($2::bigint[])`
	workflowCountNewSQL  = `INSERT INTO backwave.workflow_count AS c (workflow_id, state, n)
SELECT $1, state, count(*) FROM backwave.job WHERE id = ANY ($2::bigint[]) GROUP BY state ORDER BY state
ON CONFLICT (workflow_id, state) DO UPDATE SET n = c.n + excluded.n`
	workflowPageSQL = `SELECT w.id, w.name, w.created_at, w.restart_of FROM backwave.workflow w
WHERE ($1::bigint = 0 OR w.id < $1) AND ($2::text = '' OR w.name = $2) ORDER BY w.id DESC LIMIT $3`
	workflowMembersSQL = `SELECT ` + jobColumns + ` FROM backwave.job j WHERE j.workflow_id = $1 ORDER BY j.id`
	workflowEdgesSQL   = `SELECT e.job_id, e.parent_id, e.mode FROM backwave.job_dependency e
JOIN backwave.job j ON j.id = e.job_id WHERE j.workflow_id = $1 ORDER BY e.job_id, e.parent_id`
	// workflowLockSQL locks every member of a Workflow, in id order, and
	// reads what an Operator Action needs, with the store's now.
	workflowLockSQL = `SELECT j.id, j.state, j.cancel_cause, j.attempt, coalesce($2::timestamptz, now())
FROM backwave.job j WHERE j.workflow_id = $1 ORDER BY j.id FOR UPDATE`
	workflowCancelNowSQL = `UPDATE backwave.job SET state = 'cancelled', cancel_cause = 'operator', finalized_at = $2
WHERE workflow_id = $1 AND state IN ('scheduled', 'awaiting_parent') RETURNING id`
	workflowCancelRequestSQL = `UPDATE backwave.job SET cancel_requested = true WHERE workflow_id = $1 AND state = 'running'`
	// workflowMovesSQL records Transition Log entries: ids, from, to,
	// attempts, at $5 by $6.
	workflowMovesSQL = `INSERT INTO backwave.job_transition (job_id, at, from_state, state, via, attempt)
SELECT m.id, $5, m.f, m.t, $6, m.a FROM unnest($1::bigint[], $2::text[], $3::text[], $4::int[]) AS m(id, f, t, a) ORDER BY m.id`
	// workflowReanimateSQL applies the reanimations of a RetryPlan (ids,
	// from states, to states, pending counts): core.Reanimate's reset, due
	// at $5. The from state guards the row.
	workflowReanimateSQL = `UPDATE backwave.job j
SET state = m.t, pending_parents = m.p, attempt_base = j.attempt, retry_cause = '', cancel_cause = '',
    cancel_requested = false, worker = NULL, lease_expires_at = NULL, finalized_at = NULL, scheduled_at = $5,
    output = NULL, terminal_cause = NULL
FROM unnest($1::bigint[], $2::text[], $3::text[], $4::int[]) AS m(id, f, t, p)
WHERE j.id = m.id AND j.state = m.f`
	workflowRecountSQL = `UPDATE backwave.job j SET pending_parents = m.p
FROM unnest($1::bigint[], $2::int[]) AS m(id, p) WHERE j.id = m.id AND j.state = 'awaiting_parent'`
	workflowEdgesCountedSQL = `UPDATE backwave.job_dependency e SET counted = m.c
FROM unnest($1::bigint[], $2::bigint[], $3::bool[]) AS m(j, p, c) WHERE e.job_id = m.j AND e.parent_id = m.p`
	workflowHintSQL = `SELECT pg_notify('backwave.hint', d.queue) FROM (SELECT DISTINCT j.queue FROM backwave.job j
WHERE j.id = ANY ($1::bigint[]) AND j.state = 'scheduled') d`
	// foldWorkflowSQL moves the Workflow count deltas into the counts, one
	// fold at a time (a try-lock), in (workflow, state) order; the deltas of
	// a Workflow retention purged are dropped.
	foldWorkflowSQL = `WITH lock AS (SELECT pg_try_advisory_xact_lock(hashtext('backwave.workflow_count')) AS ok),
moved AS (
    DELETE FROM backwave.workflow_count_delta d WHERE (SELECT ok FROM lock) RETURNING d.workflow_id, d.state, d.n
)
INSERT INTO backwave.workflow_count AS c (workflow_id, state, n)
SELECT m.workflow_id, m.state, sum(m.n) FROM moved m
WHERE EXISTS (SELECT 1 FROM backwave.workflow w WHERE w.id = m.workflow_id)
GROUP BY m.workflow_id, m.state ORDER BY m.workflow_id, m.state
ON CONFLICT (workflow_id, state) DO UPDATE SET n = c.n + excluded.n`
)

// foldWorkflowCounts folds the Workflow count deltas; foldCounts calls it.
func (s *Store) foldWorkflowCounts(ctx context.Context) error {
	_, err := s.db.exec(ctx, s.sql(foldWorkflowSQL))
	return err
}

// WorkflowInsert inserts p.Jobs as members of a new or stored Workflow in
// one transaction; see store.Workflows.
func (s *Store) WorkflowInsert(ctx context.Context, p store.WorkflowInsertParams) (store.WorkflowInsertResult, error) {
	if err := checkWorkflowInsert(p); err != nil {
		return store.WorkflowInsertResult{}, err
	}
	if err := s.enter(ctx); err != nil {
		return store.WorkflowInsertResult{}, err
	}
	var res store.WorkflowInsertResult
	err := s.db.inTx(ctx, func(q querier) error {
		var err error
		res, err = s.workflowInsert(ctx, q, p)
		return err
	})
	if err != nil {
		return store.WorkflowInsertResult{}, s.wrap("insert workflow members", err)
	}
	return res, nil
}

func checkWorkflowInsert(p store.WorkflowInsertParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return checkInsert(p.InsertManyParams)
}

// WorkflowInsertInTx implements store.TxWorkflowInserter: tx is a pgx.Tx
// or a *sql.Tx on pgx's stdlib driver, on the store's database (see
// JobInsertManyInTx).
func (s *Store) WorkflowInsertInTx(ctx context.Context, tx any, p store.WorkflowInsertParams) (store.WorkflowInsertResult, error) {
	var q querier
	viaSQL := false
	switch t := tx.(type) {
	case pgx.Tx:
		if isNil(t) {
			return store.WorkflowInsertResult{}, fmt.Errorf("postgres: insert workflow members: %w: nil pgx.Tx", store.ErrTxUnsupported)
		}
		q = pgxTxRunner(t)
	case *sql.Tx:
		if t == nil {
			return store.WorkflowInsertResult{}, fmt.Errorf("postgres: insert workflow members: %w: nil *sql.Tx", store.ErrTxUnsupported)
		}
		q, viaSQL = sqlRunner{q: t}, true
	default:
		return store.WorkflowInsertResult{}, fmt.Errorf("postgres: insert workflow members: %w: a transaction of type %T; the Networked Adapter takes a pgx.Tx or a *sql.Tx on pgx's stdlib driver",
			store.ErrTxUnsupported, tx)
	}
	if err := s.enter(ctx); err != nil {
		return store.WorkflowInsertResult{}, err
	}
	if err := checkWorkflowInsert(p); err != nil {
		return store.WorkflowInsertResult{}, err
	}
	if err := s.checkTx(ctx, q, viaSQL); err != nil {
		return store.WorkflowInsertResult{}, s.wrap("insert workflow members in the caller's transaction", err)
	}
	res, err := s.workflowInsert(ctx, q, p)
	if err != nil {
		return store.WorkflowInsertResult{}, s.wrap("insert workflow members in the caller's transaction", err)
	}
	return res, nil
}

func (s *Store) workflowInsert(ctx context.Context, q querier, p store.WorkflowInsertParams) (store.WorkflowInsertResult, error) {
	id := p.Workflow
	switch {
	case id != 0:
		if _, err := s.workflowRow(ctx, q, id); err != nil {
			return store.WorkflowInsertResult{}, err
		}
	case p.RestartOf != 0:
		if _, err := s.workflowRow(ctx, q, p.RestartOf); err != nil {
			return store.WorkflowInsertResult{}, fmt.Errorf("restart: %w", err)
		}
	}
	if want := store.ExistingParents(p.Jobs); len(want) > 0 {
		found := map[job.ID]bool{}
		if id != 0 {
			err := q.query(ctx, s.sql(workflowMembersOfSQL), []any{int64s(want), int64(id)}, func(scan scanFunc) error {
				var m int64
				err := scan(&m)
				found[job.ID(m)] = true
				return err
			})
			if err != nil {
				return store.WorkflowInsertResult{}, fmt.Errorf("read parents: %w", err)
			}
		}
		for _, w := range want {
			if !found[w] {
				return store.WorkflowInsertResult{}, fmt.Errorf("%w: %w: job %d is not a member of the workflow",
					store.ErrInvalidParams, store.ErrParentOutsideWorkflow, w)
			}
		}
	}
	if id == 0 {
		var restart any
		if p.RestartOf != 0 {
			restart = int64(p.RestartOf)
		}
		err := q.query(ctx, s.sql(workflowCreateSQL), []any{p.Name, s.nowArg(), restart}, func(scan scanFunc) error { return scan(&id) })
		if err != nil {
			return store.WorkflowInsertResult{}, fmt.Errorf("create workflow: %w", err)
		}
	}
	res, err := s.insertChecked(ctx, q, p.InsertManyParams)
	if err != nil {
		return store.WorkflowInsertResult{}, err
	}
	ids := store.ResultIDs(res)
	if _, err := q.exec(ctx, s.sql(workflowJoinSQL), int64(id), int64s(ids)); err != nil {
		return store.WorkflowInsertResult{}, fmt.Errorf("workflow %d: join members: %w", id, err)
	}
	if _, err := q.exec(ctx, s.sql(workflowCountNewSQL), int64(id), int64s(ids)); err != nil {
		return store.WorkflowInsertResult{}, fmt.Errorf("workflow %d: count members: %w", id, err)
	}
	if p.RestartOf != 0 {
		if err := s.audit(ctx, q, p.Actor, store.AuditWorkflowRestart, 0, "", store.WorkflowDetail(p.RestartOf, "new "+id.String())); err != nil {
			return store.WorkflowInsertResult{}, err
		}
	}
	return store.WorkflowInsertResult{Workflow: id, Jobs: ids}, nil
}

func int64s(ids []job.ID) []int64 {
	out := make([]int64, len(ids))
	for i, id := range ids {
		out[i] = int64(id)
	}
	return out
}

// workflowRow reads a Workflow's row and counts through q, or fails with
// store.ErrNotFound.
func (s *Store) workflowRow(ctx context.Context, q querier, id job.WorkflowID) (store.WorkflowInfo, error) {
	var w store.WorkflowInfo
	found := false
	err := q.query(ctx, s.sql(workflowRowSQL), []any{int64(id)}, func(scan scanFunc) error {
		found = true
		var restart sql.NullInt64
		err := scan(&w.ID, &w.Name, &w.CreatedAt, &restart)
		w.RestartOf = job.WorkflowID(restart.Int64)
		return err
	})
	if err != nil {
		return w, fmt.Errorf("workflow %d: %w", id, err)
	}
	if !found {
		return w, fmt.Errorf("workflow %d: %w", id, store.ErrNotFound)
	}
	w.CreatedAt = w.CreatedAt.UTC()
	w.Counts, err = s.workflowCounts(ctx, q, id)
	return w, err
}

func (s *Store) workflowCounts(ctx context.Context, q querier, id job.WorkflowID) (map[job.State]int, error) {
	counts := map[job.State]int{}
	err := q.query(ctx, s.sql(workflowCountsSQL), []any{int64(id)}, func(scan scanFunc) error {
		var state string
		var n int64
		if err := scan(&state, &n); err != nil {
			return err
		}
		st, err := job.ParseState(state)
		counts[st] = int(n)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("workflow %d: counts: %w", id, err)
	}
	return counts, nil
}

// WorkflowGet reads a Workflow's row and member counts in one snapshot.
func (s *Store) WorkflowGet(ctx context.Context, id job.WorkflowID) (store.WorkflowInfo, error) {
	if err := s.enter(ctx); err != nil {
		return store.WorkflowInfo{}, err
	}
	var out store.WorkflowInfo
	err := s.db.inTx(ctx, func(q querier) error {
		var err error
		out, err = s.workflowRow(ctx, q, id)
		return err
	})
	if err != nil {
		return store.WorkflowInfo{}, s.wrap(fmt.Sprintf("get workflow %d", id), err)
	}
	return out, nil
}

// WorkflowList lists Workflows newest first, filtered and paged by p; a
// status filter is applied to each Workflow's counts as pages are read.
func (s *Store) WorkflowList(ctx context.Context, p store.WorkflowListParams) ([]store.WorkflowInfo, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	var out []store.WorkflowInfo
	err := s.db.inTx(ctx, func(q querier) error {
		out = nil
		before := int64(p.BeforeID)
		for len(out) < p.PageLimit() {
			var page []store.WorkflowInfo
			err := q.query(ctx, s.sql(workflowPageSQL), []any{before, pgText(p.Name), p.PageLimit()}, func(scan scanFunc) error {
				var w store.WorkflowInfo
				var restart sql.NullInt64
				err := scan(&w.ID, &w.Name, &w.CreatedAt, &restart)
				w.RestartOf, w.CreatedAt = job.WorkflowID(restart.Int64), w.CreatedAt.UTC()
				page = append(page, w)
				return err
			})
			if err != nil {
				return err
			}
			for _, w := range page {
				if w.Counts, err = s.workflowCounts(ctx, q, w.ID); err != nil {
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
	if err != nil {
		return nil, s.wrap("list workflows", err)
	}
	return out, nil
}

// WorkflowMembers returns every member with its Dependency edges, ascending.
func (s *Store) WorkflowMembers(ctx context.Context, id job.WorkflowID) ([]store.WorkflowMember, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	var out []store.WorkflowMember
	err := s.db.inTx(ctx, func(q querier) error {
		if _, err := s.workflowRow(ctx, q, id); err != nil {
			return err
		}
		out = nil
		at := map[job.ID]int{}
		err := q.query(ctx, s.sql(workflowMembersSQL), []any{int64(id)}, func(scan scanFunc) error {
			var r jobRow
			if err := scan(r.dest()...); err != nil {
				return err
			}
			j, err := r.job()
			at[j.ID] = len(out)
			out = append(out, store.WorkflowMember{Job: j})
			return err
		})
		if err != nil {
			return err
		}
		return s.workflowEdges(ctx, q, id, func(dep, parent job.ID, mode job.DependencyMode) {
			m := &out[at[dep]]
			m.Parents, m.Mode = append(m.Parents, parent), mode
		})
	})
	if err != nil {
		return nil, s.wrap(fmt.Sprintf("members of workflow %d", id), err)
	}
	return out, nil
}

// workflowEdges calls fn with every Dependency edge into a member of
// Workflow id, by dependent then parent.
func (s *Store) workflowEdges(ctx context.Context, q querier, id job.WorkflowID, fn func(dep, parent job.ID, mode job.DependencyMode)) error {
	return q.query(ctx, s.sql(workflowEdgesSQL), []any{int64(id)}, func(scan scanFunc) error {
		var dep, parent int64
		var name string
		if err := scan(&dep, &parent, &name); err != nil {
			return err
		}
		mode, err := job.ParseDependencyMode(name)
		fn(job.ID(dep), job.ID(parent), mode)
		return err
	})
}

// memberHead is what a Workflow action reads of a member it locked.
type memberHead struct {
	store.RetryMember
	attempt job.Attempt
}

// lockMembers locks every member of Workflow id in id order and reads
// them, with the store's now.
func (s *Store) lockMembers(ctx context.Context, q querier, id job.WorkflowID) (map[job.ID]*memberHead, []job.ID, time.Time, error) {
	heads := map[job.ID]*memberHead{}
	var order []job.ID
	var now time.Time
	err := q.query(ctx, s.sql(workflowLockSQL), []any{int64(id), s.nowArg()}, func(scan scanFunc) error {
		var h memberHead
		var state, cc string
		if err := scan(&h.ID, &state, &cc, &h.attempt, &now); err != nil {
			return err
		}
		var err error
		if h.State, err = job.ParseState(state); err != nil {
			return err
		}
		if h.CancelCause, err = job.ParseCancelCause(cc); err != nil {
			return err
		}
		heads[h.ID] = &h
		order = append(order, h.ID)
		return nil
	})
	if err != nil {
		return nil, nil, now, fmt.Errorf("lock members: %w", err)
	}
	if now.IsZero() {
		err = q.query(ctx, `SELECT coalesce($1::timestamptz, now())`, []any{s.nowArg()}, func(scan scanFunc) error { return scan(&now) })
	}
	return heads, order, now, err
}

// recordMoves writes the Transition Log entries of moves by via at now.
func (s *Store) recordMoves(ctx context.Context, q querier, moves []store.RetryMove, attempts map[job.ID]*memberHead, now time.Time, via core.Via) error {
	if !s.opts.History.Records() || len(moves) == 0 {
		return nil
	}
	ids := make([]int64, len(moves))
	from, to := make([]string, len(moves)), make([]string, len(moves))
	att := make([]int32, len(moves))
	for i, m := range moves {
		ids[i], from[i], to[i], att[i] = int64(m.ID), m.From.String(), m.To.String(), int32(attempts[m.ID].attempt)
	}
	if _, err := q.exec(ctx, s.sql(workflowMovesSQL), ids, from, to, att, now, via.String()); err != nil {
		return fmt.Errorf("record transitions: %w", err)
	}
	return nil
}

// WorkflowCancel cancels every live member in one transaction with one
// audit record; see store.Workflows.
func (s *Store) WorkflowCancel(ctx context.Context, p store.WorkflowActionParams) (store.WorkflowInfo, error) {
	if err := p.Validate(); err != nil {
		return store.WorkflowInfo{}, err
	}
	if err := s.enter(ctx); err != nil {
		return store.WorkflowInfo{}, err
	}
	var out store.WorkflowInfo
	err := s.db.inTx(ctx, func(q querier) error {
		if _, err := s.workflowRow(ctx, q, p.ID); err != nil {
			return err
		}
		heads, _, now, err := s.lockMembers(ctx, q, p.ID)
		if err != nil {
			return err
		}
		var cancelled []int64
		var moves []store.RetryMove
		err = q.query(ctx, s.sql(workflowCancelNowSQL), []any{int64(p.ID), now}, func(scan scanFunc) error {
			var id int64
			if err := scan(&id); err != nil {
				return err
			}
			cancelled = append(cancelled, id)
			moves = append(moves, store.RetryMove{ID: job.ID(id), From: heads[job.ID(id)].State, To: job.StateCancelled})
			return nil
		})
		if err != nil {
			return fmt.Errorf("cancel members: %w", err)
		}
		if err := s.recordMoves(ctx, q, moves, heads, now, core.ViaCancel); err != nil {
			return err
		}
		if _, err := q.exec(ctx, s.sql(workflowCancelRequestSQL), int64(p.ID)); err != nil {
			return fmt.Errorf("request cancel of running members: %w", err)
		}
		if err := s.settle(ctx, q, cancelled); err != nil {
			return err
		}
		if err := s.audit(ctx, q, p.Actor, store.AuditWorkflowCancel, 0, "", store.WorkflowDetail(p.ID, "")); err != nil {
			return err
		}
		out, err = s.workflowRow(ctx, q, p.ID)
		return err
	})
	if err != nil {
		return store.WorkflowInfo{}, s.wrap(fmt.Sprintf("cancel workflow %d", p.ID), err)
	}
	return out, nil
}

// WorkflowRetry reanimates the members p.Scope names in one transaction:
// every member is locked and read, the plan worked out from what was read
// (store.PlanWorkflowRetry), and applied set-based, a handful of statements
// whatever the Workflow's size.
func (s *Store) WorkflowRetry(ctx context.Context, p store.WorkflowRetryParams) (store.WorkflowRetryResult, error) {
	if err := p.Validate(); err != nil {
		return store.WorkflowRetryResult{}, err
	}
	if err := s.enter(ctx); err != nil {
		return store.WorkflowRetryResult{}, err
	}
	var out store.WorkflowRetryResult
	err := s.db.inTx(ctx, func(q querier) error {
		if _, err := s.workflowRow(ctx, q, p.ID); err != nil {
			return err
		}
		heads, order, now, err := s.lockMembers(ctx, q, p.ID)
		if err != nil {
			return err
		}
		err = s.workflowEdges(ctx, q, p.ID, func(dep, parent job.ID, mode job.DependencyMode) {
			h := heads[dep]
			h.Parents, h.Mode = append(h.Parents, parent), mode
		})
		if err != nil {
			return err
		}
		members := make([]store.RetryMember, len(order))
		for i, id := range order {
			members[i] = heads[id].RetryMember
		}
		plan := store.PlanWorkflowRetry(members, p.Scope)
		if len(plan.Reanimated) > 0 {
			if err := s.applyRetry(ctx, q, plan, heads, now); err != nil {
				return err
			}
		}
		if err := s.audit(ctx, q, p.Actor, store.AuditWorkflowRetry, 0, "", store.WorkflowDetail(p.ID, "scope "+p.Scope.String())); err != nil {
			return err
		}
		out.Retried = plan.IDs()
		out.Workflow, err = s.workflowRow(ctx, q, p.ID)
		return err
	})
	if err != nil {
		return store.WorkflowRetryResult{}, s.wrap(fmt.Sprintf("retry workflow %d", p.ID), err)
	}
	return out, nil
}

// applyRetry writes a RetryPlan through q.
func (s *Store) applyRetry(ctx context.Context, q querier, plan store.RetryPlan, heads map[job.ID]*memberHead, now time.Time) error {
	n := len(plan.Reanimated)
	ids, from, to, pend := make([]int64, n), make([]string, n), make([]string, n), make([]int32, n)
	for i, m := range plan.Reanimated {
		ids[i], from[i], to[i], pend[i] = int64(m.ID), m.From.String(), m.To.String(), int32(m.Pending)
	}
	moved, err := q.exec(ctx, s.sql(workflowReanimateSQL), ids, from, to, pend, now)
	if err != nil {
		return fmt.Errorf("reanimate: %w", err)
	}
	if moved != int64(n) {
		return fmt.Errorf("reanimate: %d of %d members moved under the lock", moved, n)
	}
	rids, rpend := make([]int64, len(plan.Recounted)), make([]int32, len(plan.Recounted))
	for i, m := range plan.Recounted {
		rids[i], rpend[i] = int64(m.ID), int32(m.Pending)
	}
	if _, err := q.exec(ctx, s.sql(workflowRecountSQL), rids, rpend); err != nil {
		return fmt.Errorf("recount: %w", err)
	}
	ej, ep, ec := make([]int64, len(plan.Edges)), make([]int64, len(plan.Edges)), make([]bool, len(plan.Edges))
	for i, e := range plan.Edges {
		ej[i], ep[i], ec[i] = int64(e.Job), int64(e.Parent), e.Counted
	}
	if _, err := q.exec(ctx, s.sql(workflowEdgesCountedSQL), ej, ep, ec); err != nil {
		return fmt.Errorf("recount edges: %w", err)
	}
	if err := s.recordMoves(ctx, q, plan.Reanimated, heads, now, core.ViaWorkflowRetry); err != nil {
		return err
	}
	if !s.opts.DisableNotify {
		if err := q.query(ctx, s.sql(workflowHintSQL), []any{ids}, nil); err != nil {
			return fmt.Errorf("hint: %w", err)
		}
	}
	return nil
}
