package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

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
// Transition Logs and occurrence records, in one write transaction. A
// member of a Workflow with a live member is kept; a Workflow's row and
// counts go with its last member. A Tag
// no job left carries leaves Tag Suggest's dictionary.
// AUTOINCREMENT ids are never reused after the delete.
func (s *Store) JobPurge(ctx context.Context, p store.PurgeParams) (store.PurgeResult, error) {
	if err := p.Validate(); err != nil {
		return store.PurgeResult{}, err
	}
	var res store.PurgeResult
	err := s.write(ctx, "purge jobs", func(tx *sql.Tx) error {
		res = store.PurgeResult{}
		horizon := micros(s.clock.Now().Add(-p.KeepFor))
		var ids []int64
		for _, st := range p.States {
			rows, err := tx.QueryContext(ctx, s.schema.Rename(sqlPurgePick), stateCode(st), horizon, p.Limit-len(ids))
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
		arg := jsonArray(ids)
		for _, q := range purgeDeletes {
			if _, err := tx.ExecContext(ctx, s.schema.Rename(q), arg); err != nil {
				return fmt.Errorf("%.40s…: %w", q, err)
			}
		}
		res.Purged = len(ids)
		return nil
	})
	if err != nil {
		return store.PurgeResult{}, err
	}
	return res, nil
}
