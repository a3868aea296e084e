package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// The retention sweeps. Each batch is one short write transaction: pick up
// to Limit terminal jobs that are parents of no job still held (so
// descendants go before their ancestors) per the partial index on (state,
// finalized_at),
// then delete them and everything stored beside them by id. No ORDER BY:
// which qualifying jobs go first does not matter, and an ordered pick would
// sort every qualifying row on each batch.
const (
	sqlPurgePick = `SELECT j.id FROM backwave_job j
	WHERE j.state = ?1 AND j.finalized_at <= ?2
		AND NOT EXISTS (SELECT 1 FROM backwave_job_dependency d WHERE d.parent_id = j.id)
		AND (j.workflow_id IS NULL OR NOT EXISTS (SELECT 1 FROM backwave_workflow_count c
			WHERE c.workflow_id = j.workflow_id AND c.state IN (1, 2, 3) AND c.n > 0))
	LIMIT ?3`
	// sqlPurgePickObserved is sqlPurgePick while a Transition Observer
	// registration is live: it keeps every job holding an entry at or past
	// the lowest live cursor ?4 (see observer.go for why "at").
	sqlPurgePickObserved = `SELECT j.id FROM backwave_job j
	WHERE j.state = ?1 AND j.finalized_at <= ?2
		AND NOT EXISTS (SELECT 1 FROM backwave_job_dependency d WHERE d.parent_id = j.id)
		AND (j.workflow_id IS NULL OR NOT EXISTS (SELECT 1 FROM backwave_workflow_count c
			WHERE c.workflow_id = j.workflow_id AND c.state IN (1, 2, 3) AND c.n > 0))
		AND NOT EXISTS (SELECT 1 FROM backwave_job_transition t WHERE t.job_id = j.id AND t.id >= ?4)
	LIMIT ?3`
)

// purgeDeletes delete a batch of jobs by id (a JSON array) from every table
// that stores something beside a job, the hot row last. Before the batch's
// Tags go, Tag Suggest's dictionary drops each of them that no job outside
// the batch carries: the single writer makes that check exact.
var purgeDeletes = []string{
	`DELETE FROM backwave_job_payload WHERE job_id IN (SELECT value FROM json_each(?1))`,
	`DELETE FROM backwave_job_output WHERE job_id IN (SELECT value FROM json_each(?1))`,
	`DELETE FROM backwave_tag WHERE (key, value) IN (
		SELECT p.key, p.value FROM backwave_job_tag p WHERE p.job_id IN (SELECT value FROM json_each(?1)))
	AND NOT EXISTS (SELECT 1 FROM backwave_job_tag o
		WHERE o.key = backwave_tag.key AND o.value = backwave_tag.value
			AND o.job_id NOT IN (SELECT value FROM json_each(?1)))`,
	`DELETE FROM backwave_job_tag WHERE job_id IN (SELECT value FROM json_each(?1))`,
	`DELETE FROM backwave_job_transition WHERE job_id IN (SELECT value FROM json_each(?1))`,
	`DELETE FROM backwave_schedule_occurrence WHERE job_id IN (SELECT value FROM json_each(?1))`,
	`DELETE FROM backwave_job_dependency WHERE job_id IN (SELECT value FROM json_each(?1))`,
	// A Workflow goes with its last member: its row and its counts.
	`DELETE FROM backwave_workflow_count WHERE workflow_id IN (` + sqlPurgedWorkflows + `)`,
	`DELETE FROM backwave_workflow WHERE id IN (` + sqlPurgedWorkflows + `)`,
	`DELETE FROM backwave_job WHERE id IN (SELECT value FROM json_each(?1))`,
}

// sqlPurgedWorkflows selects the Workflows whose every remaining member is
// in the batch ?1.
const sqlPurgedWorkflows = `SELECT DISTINCT b.workflow_id FROM backwave_job b
	WHERE b.id IN (SELECT value FROM json_each(?1)) AND b.workflow_id IS NOT NULL
		AND NOT EXISTS (SELECT 1 FROM backwave_job o WHERE o.workflow_id = b.workflow_id
			AND o.id NOT IN (SELECT value FROM json_each(?1)))`

// JobPurge deletes up to p.Limit jobs in p.States finalized at or before the
// store's now minus p.KeepFor, with their payloads, Job Output, Tags,
// Transition Logs and occurrence records, in one write transaction. A Tag
// no job left carries leaves Tag Suggest's dictionary. A job holding a
// Transition Log entry a live Transition Observer registration was not yet
// walked past is kept. A member of a Workflow with a live member is kept; a
// Workflow's row and counts go with its last member.
// AUTOINCREMENT ids are never reused after the delete.
func (s *Store) JobPurge(ctx context.Context, p store.PurgeParams) (store.PurgeResult, error) {
	if err := p.Validate(); err != nil {
		return store.PurgeResult{}, err
	}
	var res store.PurgeResult
	err := s.write(ctx, "purge jobs", func(tx *sql.Tx) error {
		res = store.PurgeResult{}
		now := s.clock.Now()
		horizon := micros(now.Add(-p.KeepFor))
		floor, observed, err := s.observedFloor(ctx, tx, micros(now))
		if err != nil {
			return err
		}
		pick, args := s.schema.Rename(sqlPurgePick), []any{nil, horizon, nil}
		if observed {
			pick, args = s.schema.Rename(sqlPurgePickObserved), append(args, floor)
		}
		var ids []int64
		for _, st := range p.States {
			args[0], args[2] = stateCode(st), p.Limit-len(ids)
			rows, err := tx.QueryContext(ctx, pick, args...)
			if err != nil {
				return err
			}
			for rows.Next() {
				var id int64
				if err := rows.Scan(&id); err != nil {
					_ = rows.Close()
					return err
				}
				ids = append(ids, id)
			}
			if err := errors.Join(rows.Err(), rows.Close()); err != nil {
				return err
			}
			if len(ids) == p.Limit {
				break
			}
		}
		if len(ids) == 0 {
			return nil
		}
		if err := s.purgeIDs(ctx, tx, ids); err != nil {
			return err
		}
		res.Purged = len(ids)
		return nil
	})
	if err != nil {
		return store.PurgeResult{}, err
	}
	return res, nil
}

// sqlDeleteNeeds reads, for JobDelete, the reasons sqlPurgePick would keep
// job ?1: it is a Dependency parent of a held job, its Workflow has a live
// member, or it holds a Transition Log entry at or past the lowest live
// observer cursor ?2 (NULL when none is live).
const sqlDeleteNeeds = `SELECT
	EXISTS (SELECT 1 FROM backwave_job_dependency d WHERE d.parent_id = j.id),
	(j.workflow_id IS NOT NULL AND EXISTS (SELECT 1 FROM backwave_workflow_count c
		WHERE c.workflow_id = j.workflow_id AND c.state IN (1, 2, 3) AND c.n > 0)),
	(?2 IS NOT NULL AND EXISTS (SELECT 1 FROM backwave_job_transition t WHERE t.job_id = j.id AND t.id >= ?2))
	FROM backwave_job j WHERE j.id = ?1`

// JobDelete removes one terminal job with everything JobPurge removes
// beside it (purgeDeletes), in one write transaction with its audit
// record. A live job fails with store.ErrIllegalTransition, one JobPurge
// would keep (sqlDeleteNeeds) with an error wrapping store.ErrStillNeeded,
// an unknown one with store.ErrNotFound.
func (s *Store) JobDelete(ctx context.Context, p store.JobDeleteParams) (job.Job, error) {
	if err := p.Validate(); err != nil {
		return job.Job{}, err
	}
	var out job.Job
	err := s.write(ctx, "delete job", func(tx *sql.Tx) error {
		var err error
		if out, err = s.getIn(ctx, tx, p.ID); err != nil {
			return err
		}
		if !out.State.Terminal() {
			return fmt.Errorf("job %d is %s: %w", p.ID, out.State, store.ErrIllegalTransition)
		}
		now := s.clock.Now()
		floor, observed, err := s.observedFloor(ctx, tx, micros(now))
		if err != nil {
			return err
		}
		var floorArg any
		if observed {
			floorArg = floor
		}
		var parent, workflow, unread bool
		if err := tx.QueryRowContext(ctx, s.schema.Rename(sqlDeleteNeeds), int64(p.ID), floorArg).Scan(&parent, &workflow, &unread); err != nil {
			return fmt.Errorf("read what still needs job %d: %w", p.ID, err)
		}
		if err := store.CheckStillNeeded(p.ID, parent, workflow, unread); err != nil {
			return err
		}
		if err := s.purgeIDs(ctx, tx, []int64{int64(p.ID)}); err != nil {
			return err
		}
		return s.audit(ctx, tx, now, p.Actor, store.AuditDelete, p.ID, out.Queue, store.DeleteDetail(out.WireName))
	})
	if err != nil {
		return job.Job{}, err
	}
	return out, nil
}

// purgeIDs deletes the jobs ids with everything stored beside them
// (purgeDeletes), inside tx.
func (s *Store) purgeIDs(ctx context.Context, tx *sql.Tx, ids []int64) error {
	arg := jsonArray(ids)
	for _, q := range purgeDeletes {
		if _, err := tx.ExecContext(ctx, s.schema.Rename(q), arg); err != nil {
			return fmt.Errorf("%.40s…: %w", q, err)
		}
	}
	return nil
}
