package postgres

import (
	"context"
	"fmt"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// A retention batch is one short transaction of three statements. The first
// picks up to $4 terminal jobs that are parents of no job still held (so
// descendants go before their ancestors), oldest first within each state,
// through the
// partial index on (state, finalized_at) — an index walk, so the dead rows
// of earlier batches are not rescanned the way a sequential scan would,
// before vacuum, rescan them — and locks them, skipping rows another
// transaction holds. The second locks the dictionary rows of their Tags
// (purgeTagLockSQL). The third deletes them and everything stored beside
// them by id, with each of their Tags no other job carries, the ids bound
// as an array: the planner then knows how few
// rows each delete touches and walks each table's job_id index, where a
// join against a CTE of unknown size may flip to a sequential scan of a
// large, bloated table.
const (
	purgePickSQL = `SELECT v.id FROM unnest($2::text[]) AS s(state)
CROSS JOIN LATERAL (
    SELECT j.id FROM backwave.job j
    WHERE j.state = s.state
      AND j.finalized_at <= coalesce($1::timestamptz, now()) - $3::bigint * interval '1 microsecond'
      AND NOT EXISTS (SELECT 1 FROM backwave.job_dependency d WHERE d.parent_id = j.id)
      AND (j.workflow_id IS NULL OR NOT EXISTS (
          SELECT 1 FROM (SELECT c.state, c.n FROM backwave.workflow_count c WHERE c.workflow_id = j.workflow_id
                         UNION ALL
                         SELECT d.state, d.n FROM backwave.workflow_count_delta d WHERE d.workflow_id = j.workflow_id) w
          WHERE w.state IN ('scheduled', 'awaiting_parent', 'running') GROUP BY w.state HAVING sum(w.n) > 0))
    ORDER BY j.finalized_at
    LIMIT $4
    FOR UPDATE OF j SKIP LOCKED
) v
LIMIT $4`
	// purgeTagLockSQL locks the dictionary rows of the batch's Tags, in one
	// order so that two batches never deadlock. Two nodes purging the last
	// two jobs carrying a Tag then prune one after the other: the second
	// gets the lock once the first commits, and its delete statement, on a
	// fresh snapshot, sees the first's job gone and drops the Tag. (A
	// transaction still uncommitted that gives the Tag to a new job is not
	// seen: the Tag may then go missing from the dictionary until the next
	// job carrying it is inserted or tagged, which puts it back. Tag
	// Suggest never offers a Tag no job carries.)
	purgeTagLockSQL = `SELECT d.key, d.value FROM backwave.tag d
WHERE (d.key, d.value) IN (SELECT t.key, t.value FROM backwave.job_tag t WHERE t.job_id = ANY($1::bigint[]))
ORDER BY d.key, d.value
FOR UPDATE OF d`
	purgeDeleteSQL = `WITH payload AS (DELETE FROM backwave.job_payload WHERE job_id = ANY($1::bigint[])),
tag AS (DELETE FROM backwave.job_tag WHERE job_id = ANY($1::bigint[])),
known_tag AS (
    DELETE FROM backwave.tag d
    WHERE (d.key, d.value) IN (SELECT * FROM unnest($2::text[], $3::text[]))
      AND NOT EXISTS (SELECT 1 FROM backwave.job_tag t
                      WHERE t.key = d.key AND t.value = d.value AND t.job_id <> ALL($1::bigint[]))
),
transition AS (DELETE FROM backwave.job_transition WHERE job_id = ANY($1::bigint[])),
occurrence AS (DELETE FROM backwave.schedule_occurrence WHERE job_id = ANY($1::bigint[])),
dependency AS (DELETE FROM backwave.job_dependency WHERE job_id = ANY($1::bigint[])),
purged AS (DELETE FROM backwave.job WHERE id = ANY($1::bigint[]) RETURNING workflow_id),
-- A Workflow goes with its last member: its row and its counts. The
-- delete trigger's deltas for it, written at the statement's end, are
-- discarded by the next fold (foldWorkflowSQL folds only deltas of a
-- Workflow that exists).
emptied AS (
    SELECT DISTINCT p.workflow_id AS id FROM purged p
    WHERE p.workflow_id IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM backwave.job o WHERE o.workflow_id = p.workflow_id AND o.id <> ALL($1::bigint[]))
),
workflow AS (DELETE FROM backwave.workflow w WHERE w.id IN (SELECT id FROM emptied)),
workflow_count AS (DELETE FROM backwave.workflow_count c WHERE c.workflow_id IN (SELECT id FROM emptied)),
workflow_delta AS (DELETE FROM backwave.workflow_count_delta d WHERE d.workflow_id IN (SELECT id FROM emptied))
SELECT count(*) FROM purged`
)

// JobPurge deletes up to p.Limit jobs in p.States finalized at or before the
// store's now minus p.KeepFor, oldest first within each state, with their
// payloads, Job Output (a column of the job row), Tags, Transition Logs and
// occurrence records, in one short transaction. A Tag no job left carries
// leaves Tag Suggest's dictionary (see purgeTagLockSQL). A job holding a
// Transition Log entry a live Transition Observer registration was not yet
// walked past is kept (purgePick).
func (s *Store) JobPurge(ctx context.Context, p store.PurgeParams) (store.PurgeResult, error) {
	if err := s.enter(ctx); err != nil {
		return store.PurgeResult{}, err
	}
	if err := p.Validate(); err != nil {
		return store.PurgeResult{}, err
	}
	states := make([]string, len(p.States))
	for i, st := range p.States {
		states[i] = st.String()
	}
	var n int64
	err := s.db.inTx(ctx, func(q querier) error {
		n = 0
		var ids []int64
		pick, args, err := s.purgePick(ctx, q, []any{s.nowArg(), states, micros(p.KeepFor), int32(p.Limit)})
		if err != nil {
			return err
		}
		err = q.query(ctx, pick, args,
			func(scan scanFunc) error {
				var id int64
				if err := scan(&id); err != nil {
					return err
				}
				ids = append(ids, id)
				return nil
			})
		if err != nil || len(ids) == 0 {
			return err
		}
		n, err = s.purgeIDs(ctx, q, ids)
		return err
	})
	if err != nil {
		return store.PurgeResult{}, s.wrap("purge jobs", err)
	}
	return store.PurgeResult{Purged: int(n)}, nil
}

// deleteNeedsSQL reads, for JobDelete, the reasons purgePickSQL would keep
// job $1: it is a Dependency parent of a held job, its Workflow has a live
// member (counts and their unfolded deltas), or it holds a Transition Log
// entry past the lowest live observer cursor ($2, $3; NULL when none is
// live).
const deleteNeedsSQL = `SELECT
    EXISTS (SELECT 1 FROM backwave.job_dependency d WHERE d.parent_id = j.id),
    (j.workflow_id IS NOT NULL AND EXISTS (
        SELECT 1 FROM (SELECT c.state, c.n FROM backwave.workflow_count c WHERE c.workflow_id = j.workflow_id
                       UNION ALL
                       SELECT d.state, d.n FROM backwave.workflow_count_delta d WHERE d.workflow_id = j.workflow_id) w
        WHERE w.state IN ('scheduled', 'awaiting_parent', 'running') GROUP BY w.state HAVING sum(w.n) > 0)),
    ($2::text IS NOT NULL AND EXISTS (SELECT 1 FROM backwave.job_transition t
        WHERE t.job_id = j.id AND (coalesce(t.xid, '0'::xid8), t.seq) > ($2::text::xid8, $3::bigint)))
FROM backwave.job j WHERE j.id = $1`

// JobDelete removes one terminal job with everything JobPurge removes
// beside it (purgeTagLockSQL, purgeDeleteSQL), in one transaction with its
// audit record. A live job fails with store.ErrIllegalTransition, one
// JobPurge would keep (deleteNeedsSQL) with an error wrapping
// store.ErrStillNeeded, an unknown one with store.ErrNotFound.
func (s *Store) JobDelete(ctx context.Context, p store.JobDeleteParams) (job.Job, error) {
	if err := p.Validate(); err != nil {
		return job.Job{}, err
	}
	if err := s.enter(ctx); err != nil {
		return job.Job{}, err
	}
	var out job.Job
	err := s.db.inTx(ctx, func(q querier) error {
		h, err := s.head(ctx, q, p.ID)
		if err != nil {
			return err
		}
		if !h.state.Terminal() {
			return fmt.Errorf("job %d is %s: %w", p.ID, h.state, store.ErrIllegalTransition)
		}
		if out, err = s.jobIn(ctx, q, p.ID); err != nil {
			return err
		}
		var xid, seq any
		err = q.query(ctx, s.sql(observedFloorSQL), []any{s.nowArg(), store.ObserverRemoveAfter.Microseconds()}, func(scan scanFunc) error {
			var x string
			var n int64
			err := scan(&x, &n)
			xid, seq = x, n
			return err
		})
		if err != nil {
			return fmt.Errorf("read the observers' floor: %w", err)
		}
		var parent, workflow, unread bool
		err = q.query(ctx, s.sql(deleteNeedsSQL), []any{int64(p.ID), xid, seq}, func(scan scanFunc) error {
			return scan(&parent, &workflow, &unread)
		})
		if err != nil {
			return fmt.Errorf("read what still needs job %d: %w", p.ID, err)
		}
		if err := store.CheckStillNeeded(p.ID, parent, workflow, unread); err != nil {
			return err
		}
		if _, err := s.purgeIDs(ctx, q, []int64{int64(p.ID)}); err != nil {
			return err
		}
		return s.audit(ctx, q, p.Actor, store.AuditDelete, p.ID, h.queue, store.DeleteDetail(out.WireName))
	})
	if err != nil {
		return job.Job{}, s.wrap(fmt.Sprintf("delete job %d", p.ID), err)
	}
	return out, nil
}

// purgeIDs deletes the jobs ids, picked and locked by the caller, with
// everything stored beside them: it locks their Tags' dictionary rows
// (purgeTagLockSQL), then deletes (purgeDeleteSQL). It returns how many
// jobs went.
func (s *Store) purgeIDs(ctx context.Context, q querier, ids []int64) (int64, error) {
	var keys, values []string
	err := q.query(ctx, s.sql(purgeTagLockSQL), []any{ids}, func(scan scanFunc) error {
		var k, v string
		if err := scan(&k, &v); err != nil {
			return err
		}
		keys, values = append(keys, k), append(values, v)
		return nil
	})
	if err != nil {
		return 0, err
	}
	var n int64
	err = q.query(ctx, s.sql(purgeDeleteSQL), []any{ids, keys, values}, func(scan scanFunc) error { return scan(&n) })
	return n, err
}
