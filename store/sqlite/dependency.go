package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// The Dependency latch in SQL (migrations/0003_dependency.sql). The rules
// are core's (core.AfterParent); the statements below restate them
// set-based, for a whole batch of parents that have just become terminal:
//
//   - a parent "fails" an on-success dependent (core.ParentFails) when it
//     is Dead-Lettered, Cancelled or Quarantined: state IN (5, 6, 7) and
//     mode = 0;
//   - the cascade is the recursive closure of waiting (state 2) on-success
//     dependents reachable over uncounted edges from a failing parent;
//   - every uncounted edge out of a terminal parent (state IN (4, 5, 6, 7))
//     is counted once; a waiting dependent whose latch reaches zero is
//     Scheduled, due at max(its due time, now) (core.ReleasedDueAt).
//
// An edge is counted only while uncounted, and every path that makes a job
// terminal counts its edges in the same transaction, so a terminal parent
// never has an uncounted edge for long: settle may be handed any superset
// of the parents that just became terminal.

const (
	sqlInsertDependent = `INSERT INTO backwave_job (queue, wire_name, state, max_attempts, scheduled_at, created_at, pending_parents)
	VALUES (?, ?, 2, ?, ?, ?, ?)`
	// sqlInsertKeyedDependent is sqlInsertDependent for a job with a
	// Concurrency Key.
	sqlInsertKeyedDependent = `INSERT INTO backwave_job (queue, wire_name, state, max_attempts, scheduled_at, created_at, pending_parents, concurrency_key)
	VALUES (?, ?, 2, ?, ?, ?, ?, ?)`
	sqlInsertEdge  = `INSERT INTO backwave_job_dependency (job_id, parent_id, mode) VALUES (?, ?, ?)`
	sqlExistingIDs = `SELECT id FROM backwave_job WHERE id IN (SELECT value FROM json_each(?))`

	// sqlHasEdgesIn tells whether any job with an id from ?1 to ?2 is a
	// parent: one probe of the parent index, which spares the common case
	// — no Dependencies near the batch — the per-parent probes of
	// sqlHasUncounted.
	sqlHasEdgesIn = `SELECT EXISTS (SELECT 1 FROM backwave_job_dependency WHERE parent_id BETWEEN ?1 AND ?2)`

	// sqlHasUncounted tells whether any of the parents ?1 is terminal with
	// an uncounted edge: the common case — no dependents — stops here.
	sqlHasUncounted = `SELECT EXISTS (SELECT 1 FROM backwave_job_dependency e
		JOIN backwave_job p ON p.id = e.parent_id
		WHERE e.parent_id IN (SELECT value FROM json_each(?1)) AND e.counted = 0 AND p.state IN (4, 5, 6, 7))`

	// sqlCascade cancels, with cause parent failure (2), every waiting
	// on-success dependent reachable from a failing parent of ?1 over
	// uncounted edges, at any depth.
	sqlCascade = `WITH RECURSIVE doomed(id) AS (
		SELECT e.job_id FROM backwave_job_dependency e
		JOIN backwave_job p ON p.id = e.parent_id
		JOIN backwave_job d ON d.id = e.job_id
		WHERE e.parent_id IN (SELECT value FROM json_each(?1)) AND p.state IN (5, 6, 7)
		  AND e.counted = 0 AND e.mode = 0 AND d.state = 2
		UNION
		SELECT e.job_id FROM backwave_job_dependency e
		JOIN doomed c ON c.id = e.parent_id
		JOIN backwave_job d ON d.id = e.job_id
		WHERE e.counted = 0 AND e.mode = 0 AND d.state = 2)
	UPDATE backwave_job SET state = 6, cancel_cause = 2, finalized_at = ?2
	WHERE id IN (SELECT id FROM doomed)
	RETURNING id`

	// sqlCount takes, for every waiting dependent of the terminal parents
	// ?1, the number of its uncounted edges from them off its latch, and
	// releases it at zero.
	sqlCount = `UPDATE backwave_job AS d
	SET pending_parents = d.pending_parents - c.n,
		state = CASE WHEN d.pending_parents - c.n <= 0 THEN 1 ELSE 2 END,
		scheduled_at = CASE WHEN d.pending_parents - c.n <= 0 THEN max(d.scheduled_at, ?2) ELSE d.scheduled_at END
	FROM (SELECT e.job_id, COUNT(*) AS n FROM backwave_job_dependency e
		JOIN backwave_job p ON p.id = e.parent_id
		WHERE e.parent_id IN (SELECT value FROM json_each(?1)) AND e.counted = 0 AND p.state IN (4, 5, 6, 7)
		GROUP BY e.job_id) AS c
	WHERE d.id = c.job_id AND d.state = 2
	RETURNING id, state, queue, scheduled_at`

	// sqlMarkCounted marks every uncounted edge out of the terminal parents
	// ?1 counted.
	sqlMarkCounted = `UPDATE backwave_job_dependency SET counted = 1
	WHERE counted = 0 AND parent_id IN (
		SELECT id FROM backwave_job WHERE id IN (SELECT value FROM json_each(?1)) AND state IN (4, 5, 6, 7))`

	// sqlSettledTransitions records the Transition Log entries of the jobs
	// ?1 that left Awaiting Parent for state ?3 by ?4.
	sqlSettledTransitions = `INSERT INTO backwave_job_transition (job_id, at, from_state, state, via, attempt)
	SELECT id, ?2, 2, ?3, ?4, attempt FROM backwave_job WHERE id IN (SELECT value FROM json_each(?1)) ORDER BY id`

	sqlParentsOf = `SELECT e.parent_id, p.state, e.counted, e.mode FROM backwave_job_dependency e
	JOIN backwave_job p ON p.id = e.parent_id WHERE e.job_id = ? ORDER BY e.parent_id`
	sqlDependentsOf = `SELECT job_id FROM backwave_job_dependency WHERE parent_id = ? ORDER BY job_id`

	// sqlIsAncestor walks up the parent edges of ?1 and tells whether ?2
	// is among them. Every parent's id is below its dependent's, so the
	// walk prunes below ?2.
	sqlIsAncestor = `WITH RECURSIVE up(id) AS (
		SELECT parent_id FROM backwave_job_dependency WHERE job_id = ?1 AND parent_id >= ?2
		UNION
		SELECT e.parent_id FROM backwave_job_dependency e JOIN up ON e.job_id = up.id
		WHERE up.id > ?2 AND e.parent_id >= ?2)
	SELECT EXISTS (SELECT 1 FROM up WHERE id = ?2)`
	sqlStateAndOutput = `SELECT j.state, o.job_id IS NOT NULL, o.output FROM backwave_job j
	LEFT JOIN backwave_job_output o ON o.job_id = j.id WHERE j.id = ?`
)

// depQueries are the Dependency statements renamed to one Schema Name.
type depQueries struct {
	insertDependent, insertEdge, existingIDs                      string
	hasEdgesIn                                                    string
	hasUncounted, cascade, count, markCounted, settledTransitions string
	parentsOf, dependentsOf, isAncestor, stateAndOutput           string
}

func newDepQueries(n schemaName) depQueries {
	r := n.Rename
	return depQueries{
		insertDependent: r(sqlInsertDependent), insertEdge: r(sqlInsertEdge), existingIDs: r(sqlExistingIDs),
		hasEdgesIn: r(sqlHasEdgesIn), hasUncounted: r(sqlHasUncounted), cascade: r(sqlCascade), count: r(sqlCount),
		markCounted: r(sqlMarkCounted), settledTransitions: r(sqlSettledTransitions),
		parentsOf: r(sqlParentsOf), dependentsOf: r(sqlDependentsOf),
		isAncestor: r(sqlIsAncestor), stateAndOutput: r(sqlStateAndOutput),
	}
}

var modeCodes = map[job.DependencyMode]int64{
	job.DependencyOnSuccess:     0,
	job.DependencyOnAnyTerminal: 1,
}

// checkParents fails with store.ErrUnknownParent unless the file holds every
// Existing parent of the insert. It runs in the insert's transaction.
func (s *Store) checkParents(ctx context.Context, tx *sql.Tx, jobs []store.NewJob) error {
	want := store.ExistingParents(jobs)
	if len(want) == 0 {
		return nil
	}
	ids := make([]int64, len(want))
	for i, id := range want {
		ids[i] = int64(id)
	}
	rows, err := tx.QueryContext(ctx, s.q.dep.existingIDs, jsonArray(ids))
	if err != nil {
		return fmt.Errorf("read parents: %w", err)
	}
	found := make(map[job.ID]bool, len(want))
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			_ = rows.Close()
			return fmt.Errorf("read parents: %w", err)
		}
		found[job.ID(id)] = true
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return fmt.Errorf("read parents: %w", err)
	}
	var missing []job.ID
	for _, id := range want {
		if !found[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %w: no job %v", store.ErrInvalidParams, store.ErrUnknownParent, missing)
	}
	return nil
}

// settle counts the terminal jobs among candidates against their
// dependents' latches, in tx, set-based: at most seven statements whatever
// the number of dependents, one when no job in the candidates' id range is
// a parent, two when none of the candidates has an uncounted edge. It returns the Queues of the dependents released due at
// now, sorted, for Wake-Up Hints.
func (s *Store) settle(ctx context.Context, tx *sql.Tx, candidates []int64, now time.Time) ([]string, error) {
	if len(candidates) == 0 {
		return nil, nil
	}
	q := &s.q.dep
	var has bool
	if err := tx.QueryRowContext(ctx, q.hasEdgesIn, slices.Min(candidates), slices.Max(candidates)).Scan(&has); err != nil {
		return nil, fmt.Errorf("settle dependents: %w", err)
	}
	if !has {
		return nil, nil
	}
	arg := jsonArray(candidates)
	if err := tx.QueryRowContext(ctx, q.hasUncounted, arg).Scan(&has); err != nil {
		return nil, fmt.Errorf("settle dependents: %w", err)
	}
	if !has {
		return nil, nil
	}
	at := micros(now)
	cancelled, err := queryIDs(ctx, tx, q.cascade, arg, at)
	if err != nil {
		return nil, fmt.Errorf("settle dependents: cascade: %w", err)
	}
	record := s.opts.History.Records() // the Job History Policy
	if len(cancelled) > 0 && record {
		if _, err := tx.ExecContext(ctx, q.settledTransitions, jsonArray(cancelled), at,
			stateCode(job.StateCancelled), viaCode(core.ViaParentFailure)); err != nil {
			return nil, fmt.Errorf("settle dependents: record cancels: %w", err)
		}
	}
	if len(cancelled) > 0 {
		arg = jsonArray(append(slices.Clone(candidates), cancelled...))
	}
	rows, err := tx.QueryContext(ctx, q.count, arg, at)
	if err != nil {
		return nil, fmt.Errorf("settle dependents: count: %w", err)
	}
	var released []int64
	var queues []string
	for rows.Next() {
		var id, state, due int64
		var queue string
		if err := rows.Scan(&id, &state, &queue, &due); err != nil {
			_ = rows.Close()
			return nil, fmt.Errorf("settle dependents: count: %w", err)
		}
		if state != codeScheduled {
			continue
		}
		released = append(released, id)
		if due <= at && !slices.Contains(queues, queue) {
			queues = append(queues, queue)
		}
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("settle dependents: count: %w", err)
	}
	if _, err := tx.ExecContext(ctx, q.markCounted, arg); err != nil {
		return nil, fmt.Errorf("settle dependents: mark edges: %w", err)
	}
	if len(released) > 0 && record {
		if _, err := tx.ExecContext(ctx, q.settledTransitions, jsonArray(released), at,
			codeScheduled, viaCode(core.ViaRelease)); err != nil {
			return nil, fmt.Errorf("settle dependents: record releases: %w", err)
		}
	}
	slices.Sort(queues)
	return queues, nil
}

// queryIDs runs a query returning one id column.
func queryIDs(ctx context.Context, tx *sql.Tx, query string, args ...any) ([]int64, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			_ = rows.Close()
			return nil, err
		}
		out = append(out, id)
	}
	return out, errors.Join(rows.Err(), rows.Close())
}

// JobDependencies returns the job's mode, its parents (ascending, each with
// its state now and whether the latch counted it) and its dependents
// (ascending), from one read snapshot. It fails with store.ErrNotFound for
// an unknown job.
func (s *Store) JobDependencies(ctx context.Context, id job.ID) (store.DependencyInfo, error) {
	var info store.DependencyInfo
	err := s.read(ctx, "read dependencies", func(tx *sql.Tx) error {
		info = store.DependencyInfo{}
		if err := s.exists(ctx, tx, id); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, s.q.dep.parentsOf, int64(id))
		if err != nil {
			return err
		}
		for rows.Next() {
			var pid, state, mode int64
			var counted bool
			if err := rows.Scan(&pid, &state, &counted, &mode); err != nil {
				_ = rows.Close()
				return err
			}
			st, err := decode(stateCodes, "state", state)
			if err == nil {
				info.Mode, err = decode(modeCodes, "dependency mode", mode)
			}
			if err != nil {
				_ = rows.Close()
				return err
			}
			info.Parents = append(info.Parents, store.ParentEdge{ID: job.ID(pid), State: st, Counted: counted})
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return err
		}
		deps, err := queryIDs(ctx, tx, s.q.dep.dependentsOf, int64(id))
		for _, d := range deps {
			info.Dependents = append(info.Dependents, job.ID(d))
		}
		return err
	})
	return info, err
}

// JobAncestorOutput reads the Job Output and state of p.Ancestor for the job
// p.Job, from one read snapshot, after checking with a recursive walk of
// p.Job's parent edges that p.Ancestor is among its ancestors
// (store.ErrNotAncestor otherwise). An ancestor without a stored output
// reads Present=false. It fails with store.ErrNotFound for an unknown p.Job.
func (s *Store) JobAncestorOutput(ctx context.Context, p store.AncestorOutputParams) (store.AncestorOutput, error) {
	var out store.AncestorOutput
	err := s.read(ctx, "read ancestor output", func(tx *sql.Tx) error {
		out = store.AncestorOutput{}
		if err := s.exists(ctx, tx, p.Job); err != nil {
			return err
		}
		var ok bool
		if err := tx.QueryRowContext(ctx, s.q.dep.isAncestor, int64(p.Job), int64(p.Ancestor)).Scan(&ok); err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("job %d reads the output of job %d: %w", p.Job, p.Ancestor, store.ErrNotAncestor)
		}
		var state int64
		err := tx.QueryRowContext(ctx, s.q.dep.stateAndOutput, int64(p.Ancestor)).Scan(&state, &out.Present, &out.Output)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return nil // the ancestor's row was deleted: nothing to read
		case err != nil:
			return err
		}
		if out.Present && out.Output == nil {
			out.Output = []byte{} // an empty output is stored, and present
		}
		out.State, err = decode(stateCodes, "state", state)
		return err
	})
	return out, err
}

// mergeQueues adds the Queues of more to queues, each once.
func mergeQueues(queues, more []string) []string {
	for _, q := range more {
		if !slices.Contains(queues, q) {
			queues = append(queues, q)
		}
	}
	return queues
}
