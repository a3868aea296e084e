package postgres

import (
	"context"
	"fmt"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// The Dependency latch in SQL (migration/003_dependency.sql). The rules are
// core's (core.AfterParent), restated set-based by settleSQL for a whole
// batch of parents that have just become terminal.
//
// # One more statement, in the same transaction
//
// Every write that makes jobs terminal — an outcome batch, a Relinquish, a
// lease-expiry sweep, an operator cancel — is followed, in the same
// transaction, by settleSQL over the jobs it touched; with pgx the two go
// out as one pipelined batch, so an outcome batch still costs one round
// trip. The second statement must be a statement of its own: under READ
// COMMITTED a statement sees the rows committed before it started, and a
// dependent inserted concurrently (see insertGraphSQL, which locks its
// parents FOR SHARE) may commit while the first statement waits for its
// parent's row lock. The settle statement starts after that wait, so it
// sees the new edge; the insert, in turn, waits for an in-flight outcome
// and then reads the parent's new state. Either way the edge is counted
// once: by the parent's settle, or at the dependent's insert.
//
// Two outcome batches that finish two parents of one dependent at once both
// update the dependent's row: the second waits for the first and then reads
// its pending_parents afresh (a row-level recheck), so the latch counts
// down through both and reaches zero exactly once.

// terminalStates is the SQL list of terminal states.
const terminalStates = `('succeeded', 'dead_lettered', 'cancelled', 'quarantined')`

// settleSQL counts the terminal jobs among $2 against their dependents'
// latches:
//
//   - doomed is the cascade: every waiting on-success dependent reachable
//     over uncounted edges from a parent that failed (core.ParentFails:
//     terminal, not succeeded), at any depth;
//   - counted marks every uncounted edge out of those parents and out of
//     the doomed jobs, each edge once;
//   - moved applies, per waiting dependent, the count of its edges this
//     statement marked: Cancelled with cause parent failure if an
//     on-success edge came from a failed or doomed parent, Scheduled and
//     due at greatest(due, now) (core.ReleasedDueAt) if its latch reached
//     zero, still waiting otherwise;
//
// and records the Transition Log entries (if $4, the Job History Policy
// records any) and one NOTIFY per Queue that got a released job due now.
//
// Only uncounted edges can change anything, so src is empty unless one
// exists: a single probe of the job_dependency_uncounted index, evaluated
// once, spares a batch of jobs without Dependencies its per-job lookups.
// The probe reads this statement's snapshot, as the rest of it does.
const settleSQL = `WITH RECURSIVE now AS (SELECT coalesce($1::timestamptz, now()) AS t),
src AS (
    SELECT p.id, p.state = 'succeeded' AS ok FROM backwave.job p
    WHERE EXISTS (SELECT 1 FROM backwave.job_dependency u WHERE NOT u.counted)
      AND p.id = ANY ($2::bigint[]) AND p.state IN ` + terminalStates + `
),
doomed(id) AS (
    SELECT e.job_id FROM src s
    JOIN backwave.job_dependency e ON e.parent_id = s.id
    JOIN backwave.job d ON d.id = e.job_id
    WHERE NOT s.ok AND NOT e.counted AND e.mode = 'on_success' AND d.state = 'awaiting_parent'
  UNION
    SELECT e.job_id FROM doomed c
    JOIN backwave.job_dependency e ON e.parent_id = c.id
    JOIN backwave.job d ON d.id = e.job_id
    WHERE NOT e.counted AND e.mode = 'on_success' AND d.state = 'awaiting_parent'
),
counted AS (
    UPDATE backwave.job_dependency e SET counted = true
    WHERE e.parent_id = ANY (ARRAY(SELECT id FROM src UNION ALL SELECT id FROM doomed)) AND NOT e.counted
    RETURNING e.job_id, e.parent_id, e.mode
),
tally AS (
    SELECT c.job_id, count(*)::int AS n,
           bool_or(c.mode = 'on_success' AND (s.ok IS FALSE OR dm.id IS NOT NULL)) AS fails
    FROM counted c
    LEFT JOIN src s ON s.id = c.parent_id
    LEFT JOIN doomed dm ON dm.id = c.parent_id
    GROUP BY c.job_id
),
moved AS (
    UPDATE backwave.job d
    SET pending_parents = d.pending_parents - t.n,
        state = CASE WHEN t.fails THEN 'cancelled'
                     WHEN d.pending_parents - t.n <= 0 THEN 'scheduled'
                     ELSE 'awaiting_parent' END,
        cancel_cause = CASE WHEN t.fails THEN 'parent_failure' ELSE d.cancel_cause END,
        finalized_at = CASE WHEN t.fails THEN now.t ELSE d.finalized_at END,
        scheduled_at = CASE WHEN NOT t.fails AND d.pending_parents - t.n <= 0
            THEN greatest(d.scheduled_at, now.t) ELSE d.scheduled_at END
    FROM tally t, now
    WHERE d.id = t.job_id AND d.state = 'awaiting_parent'
    RETURNING d.id, d.state, d.attempt, d.queue, d.scheduled_at, now.t AS now
),
logged AS (
    INSERT INTO backwave.job_transition (job_id, at, from_state, state, via, attempt)
    SELECT m.id, m.now, 'awaiting_parent', m.state,
           CASE m.state WHEN 'cancelled' THEN 'parent_failure' ELSE 'release' END, m.attempt
    FROM moved m WHERE $4::bool AND m.state <> 'awaiting_parent' ORDER BY m.id
),
hint AS (
    SELECT pg_notify('backwave.hint', d.queue)
    FROM (SELECT DISTINCT m.queue FROM moved m JOIN backwave.queue q ON q.name = m.queue
          WHERE $3::bool AND m.state = 'scheduled' AND m.scheduled_at <= m.now AND NOT q.paused) d
)
SELECT count(*), (SELECT count(*) FROM hint) FROM moved`

// settleStmt is settleSQL over the jobs candidates, any superset of the
// jobs the statements before it in the transaction made terminal.
func (s *Store) settleStmt(candidates pgArray[int8Elem]) stmt {
	return stmt{sql: s.sql(settleSQL), args: []any{s.nowArg(), candidates, !s.opts.DisableNotify, s.opts.History.Records()}}
}

// settle runs settleStmt on q, in the caller's transaction.
func (s *Store) settle(ctx context.Context, q querier, candidates []int64) error {
	if len(candidates) == 0 {
		return nil
	}
	st := s.settleStmt(int8Array(candidates))
	return q.query(ctx, st.sql, st.args, nil)
}

// insertGraphSQL is insertSQL for a batch in which some job names parents,
// with the same $1…$13 and these:
//
//   - $20, the distinct parents the store already holds, are locked FOR
//     SHARE first, so none of them changes state until this transaction
//     ends; if any is missing nothing is inserted and no row comes back;
//   - ids are drawn in the batch's InsertOrder ($15, each job's rank in
//     it), so a parent's id is below its dependents';
//   - a job with parents ($14, its count of distinct parents) is inserted
//     awaiting_parent with that latch, and its edges ($16 dependent
//     ordinal, $17 in-batch parent ordinal or 0, $18 stored parent id or 0)
//     are written with its mode ($19);
//   - ids drawn ahead ($23, see givenIDs), when given, are used instead;
//   - the Concurrency Keys are $26 (as insertSQL's $19);
//   - the jobs take their unique keys ($21 keys, $22 periods; see
//     uniqueSQL) in insert order, and a job whose key is held is not
//     inserted, nor are its edges (no job of the batch names it as a
//     parent: store.InsertManyParams.Validate).
//
// settleSQL over $20 follows in the same transaction and counts the parents
// that are terminal already.
const insertGraphSQL = `WITH now AS (SELECT coalesce($1::timestamptz, now()) AS t),
parents AS (
    SELECT p.id FROM backwave.job p WHERE p.id = ANY ($20::bigint[]) ORDER BY p.id FOR SHARE
),
ok AS (SELECT count(*) = coalesce(cardinality($20::bigint[]), 0) AS ok FROM parents),
candidate AS (
    SELECT coalesce(u.given_id, nextval('backwave.job_id_seq')) AS id, u.*
    FROM (SELECT * FROM unnest($2::text[], $3::text[], $4::bytea[], $5::timestamptz[], $6::int[],
                               $14::int[], $15::int[], $19::text[], $21::text[], $22::bigint[], $23::bigint[], $26::text[])
            WITH ORDINALITY AS u(wire_name, queue, payload, scheduled_at, max_attempts, pending, rank, mode,
                                 unique_key, unique_period, given_id, concurrency_key, ord)
          WHERE (SELECT ok FROM ok)
          ORDER BY rank) u
),
` + uniqueSQL + `,
` + insertSideSQL + `,
` + traceGraphSQL + `,
new_job AS (
    INSERT INTO backwave.job (id, queue, wire_name, state, max_attempts, scheduled_at, created_at, pending_parents, concurrency_key)
    SELECT i.id, i.queue, i.wire_name, CASE WHEN i.pending > 0 THEN 'awaiting_parent' ELSE 'scheduled' END,
           i.max_attempts, coalesce(i.scheduled_at, now.t), now.t, i.pending, i.concurrency_key
    FROM input i, now
),
known_tag AS (
    INSERT INTO backwave.tag (key, value, folded, display)
    SELECT DISTINCT ON (t.key, t.value) t.key, t.value, t.folded, t.display
    FROM unnest($7::int[], $8::text[], $9::text[], $11::text[], $12::text[]) AS t(ord, key, value, folded, display)
    WHERE t.ord IN (SELECT i.ord FROM input i)
      AND NOT EXISTS (SELECT 1 FROM backwave.tag d WHERE d.key = t.key AND d.value = t.value)
    ON CONFLICT DO NOTHING
),
new_edge AS (
    INSERT INTO backwave.job_dependency (job_id, parent_id, mode)
    SELECT c.id, CASE WHEN e.parent_id > 0 THEN e.parent_id ELSE p.id END, c.mode
    FROM unnest($16::int[], $17::int[], $18::bigint[]) AS e(ord, parent_ord, parent_id)
    JOIN input c ON c.ord = e.ord
    LEFT JOIN input p ON p.ord = e.parent_ord
),
logged AS (
    INSERT INTO backwave.job_transition (job_id, at, from_state, state, via, attempt)
    SELECT i.id, now.t, 'unknown', CASE WHEN i.pending > 0 THEN 'awaiting_parent' ELSE 'scheduled' END, 'insert', 0
    FROM input i, now WHERE $13::bool
),
hint AS (
    SELECT pg_notify('backwave.hint', d.queue)
    FROM (SELECT DISTINCT i.queue FROM input i, now
          WHERE $10::bool AND i.pending = 0 AND coalesce(i.scheduled_at, now.t) <= now.t) d
)
SELECT i.ord, i.id, true, (SELECT count(*) FROM hint) FROM input i
UNION ALL
` + heldSQL

// hasParents reports whether any job of p names a parent.
func hasParents(p store.InsertManyParams) bool {
	for _, nj := range p.Jobs {
		if len(nj.Dependency.Parents) > 0 {
			return true
		}
	}
	return false
}

// insertGraph inserts a batch with Dependencies: insertGraphSQL, then
// settleSQL over the stored parents, in one transaction — one pipelined
// round trip on a pgx pool, or inside the caller's transaction. args are
// insertSQL's $1…$13, unique its unique-key arrays.
func (s *Store) insertGraph(ctx context.Context, q querier, p store.InsertManyParams, args, unique []any) ([]store.InsertResult, error) {
	n := len(p.Jobs)
	pending := make([]int32, n)
	rank := make([]int32, n)
	modes := make([]string, n)
	var edgeOrd, edgeParentOrd []int32
	var edgeParentID []int64
	for k, i := range p.InsertOrder() {
		rank[i] = int32(k)
	}
	for i, nj := range p.Jobs {
		modes[i] = nj.Dependency.Mode.String()
		seen := make(map[store.ParentRef]bool, len(nj.Dependency.Parents))
		for _, r := range nj.Dependency.Parents {
			if seen[r] {
				continue
			}
			seen[r] = true
			pending[i]++
			edgeOrd = append(edgeOrd, int32(i+1))
			if r.ID != 0 {
				edgeParentOrd, edgeParentID = append(edgeParentOrd, 0), append(edgeParentID, int64(r.ID))
			} else {
				edgeParentOrd, edgeParentID = append(edgeParentOrd, int32(r.Index+1)), append(edgeParentID, 0)
			}
		}
	}
	existing := store.ExistingParents(p.Jobs)
	stored := make([]int64, len(existing))
	for k, id := range existing {
		stored[k] = int64(id)
	}
	res := make([]store.InsertResult, n)
	got := 0
	read := resultScanner(res)
	insert := stmt{
		sql:  s.sql(insertGraphSQL),
		args: append(append(args, pending, rank, edgeOrd, edgeParentOrd, edgeParentID, modes, stored), unique...),
		each: func(scan scanFunc) error {
			got++
			return read(scan)
		},
	}
	settle := s.settleStmt(int8Array(stored))
	var err error
	if d, ok := q.(database); ok {
		err = d.batch(ctx, insert, settle)
	} else {
		err = q.query(ctx, insert.sql, insert.args, insert.each)
		if err == nil && got == n {
			err = q.query(ctx, settle.sql, settle.args, nil)
		}
	}
	if err != nil {
		return nil, s.wrap(fmt.Sprintf("insert %d jobs", n), err)
	}
	if got == 0 {
		return nil, s.unknownParents(ctx, q, stored)
	}
	if err := checkResults(res); err != nil {
		return nil, s.wrap("insert", err)
	}
	return res, nil
}

// unknownParents names the parents of a refused insert the store does not
// hold.
func (s *Store) unknownParents(ctx context.Context, q querier, stored []int64) error {
	found := make(map[int64]bool, len(stored))
	err := q.query(ctx, s.sql(`SELECT j.id FROM backwave.job j WHERE j.id = ANY ($1::bigint[])`), []any{stored},
		func(scan scanFunc) error {
			var id int64
			if err := scan(&id); err != nil {
				return err
			}
			found[id] = true
			return nil
		})
	if err != nil {
		return s.wrap("read parents", err)
	}
	var missing []int64
	for _, id := range stored {
		if !found[id] {
			missing = append(missing, id)
		}
	}
	return fmt.Errorf("postgres: %w: %w: no job %v", store.ErrInvalidParams, store.ErrUnknownParent, missing)
}

// JobDependencies returns the job's mode, its parents (ascending, each with
// its state now and whether the latch counted it) and its dependents
// (ascending), in one statement. It fails with store.ErrNotFound for an
// unknown job.
func (s *Store) JobDependencies(ctx context.Context, id job.ID) (store.DependencyInfo, error) {
	if err := s.enter(ctx); err != nil {
		return store.DependencyInfo{}, err
	}
	var info store.DependencyInfo
	found := false
	err := s.db.query(ctx, s.sql(`SELECT 0 AS kind, e.parent_id, p.state, e.counted, e.mode
FROM backwave.job_dependency e JOIN backwave.job p ON p.id = e.parent_id WHERE e.job_id = $1
UNION ALL
SELECT 1, e.job_id, '', false, '' FROM backwave.job_dependency e WHERE e.parent_id = $1
UNION ALL
SELECT 2, j.id, '', false, '' FROM backwave.job j WHERE j.id = $1
ORDER BY 1, 2`), []any{int64(id)}, func(scan scanFunc) error {
		var kind int
		var other int64
		var state, mode string
		var counted bool
		if err := scan(&kind, &other, &state, &counted, &mode); err != nil {
			return err
		}
		switch kind {
		case 0:
			st, err := job.ParseState(state)
			if err != nil {
				return err
			}
			if info.Mode, err = job.ParseDependencyMode(mode); err != nil {
				return err
			}
			info.Parents = append(info.Parents, store.ParentEdge{ID: job.ID(other), State: st, Counted: counted})
		case 1:
			info.Dependents = append(info.Dependents, job.ID(other))
		default:
			found = true
		}
		return nil
	})
	if err != nil {
		return store.DependencyInfo{}, s.wrap(fmt.Sprintf("read the dependencies of job %d", id), err)
	}
	if !found {
		return store.DependencyInfo{}, fmt.Errorf("postgres: job %d: %w", id, store.ErrNotFound)
	}
	return info, nil
}

// ancestorSQL reads, in one statement, whether $1 exists, whether $2 is
// among its ancestors (a recursive walk up the parent edges, pruned below
// $2: every parent's id is below its dependent's), and $2's state and
// output.
const ancestorSQL = `WITH RECURSIVE up(id) AS (
    SELECT e.parent_id FROM backwave.job_dependency e WHERE e.job_id = $1 AND e.parent_id >= $2
  UNION
    SELECT e.parent_id FROM up JOIN backwave.job_dependency e ON e.job_id = up.id
    WHERE up.id > $2 AND e.parent_id >= $2
)
SELECT EXISTS (SELECT 1 FROM backwave.job j WHERE j.id = $1),
       EXISTS (SELECT 1 FROM up WHERE up.id = $2),
       a.state, a.output IS NOT NULL, a.output
FROM (SELECT 1) one
LEFT JOIN backwave.job a ON a.id = $2`

// JobAncestorOutput reads the Job Output and state of p.Ancestor for the
// job p.Job in one statement, refusing a job that is not among p.Job's
// transitive parents with store.ErrNotAncestor. An ancestor without a
// stored output reads Present=false. It fails with store.ErrNotFound for an
// unknown p.Job.
func (s *Store) JobAncestorOutput(ctx context.Context, p store.AncestorOutputParams) (store.AncestorOutput, error) {
	if err := s.enter(ctx); err != nil {
		return store.AncestorOutput{}, err
	}
	var exists, ancestor bool
	var state *string
	var out store.AncestorOutput
	err := s.db.query(ctx, s.sql(ancestorSQL), []any{int64(p.Job), int64(p.Ancestor)}, func(scan scanFunc) error {
		return scan(&exists, &ancestor, &state, &out.Present, &out.Output)
	})
	if err != nil {
		return store.AncestorOutput{}, s.wrap(fmt.Sprintf("job %d reads the output of job %d", p.Job, p.Ancestor), err)
	}
	switch {
	case !exists:
		return store.AncestorOutput{}, fmt.Errorf("postgres: job %d: %w", p.Job, store.ErrNotFound)
	case !ancestor:
		return store.AncestorOutput{}, fmt.Errorf("postgres: job %d reads the output of job %d: %w", p.Job, p.Ancestor, store.ErrNotAncestor)
	case state == nil:
		return store.AncestorOutput{}, nil // the ancestor's row was deleted: nothing to read
	}
	if out.State, err = job.ParseState(*state); err != nil {
		return store.AncestorOutput{}, s.wrap("read ancestor output", err)
	}
	if out.Present && out.Output == nil {
		out.Output = []byte{}
	}
	if !out.Present {
		out.Output = nil
	}
	return out, nil
}
