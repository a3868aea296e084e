package mariadb

import (
	"context"
	"fmt"
	"strings"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// JobPurge deletes up to p.Limit terminal jobs finalized at or before the
// store's now minus p.KeepFor, each with everything stored beside it, in
// one transaction (store.Retention). A job still a Dependency parent of a
// stored job, one holding a Transition Log entry a live Transition
// Observer registration has not been walked past, and a member of a
// Workflow with a live member are kept.
func (s *Store) JobPurge(ctx context.Context, p store.PurgeParams) (store.PurgeResult, error) {
	if err := p.Validate(); err != nil {
		return store.PurgeResult{}, err
	}
	var res store.PurgeResult
	err := s.write(ctx, "purge", func(w *wtx) error {
		res = store.PurgeResult{}
		floor, err := w.observedFloor()
		if err != nil {
			return err
		}
		var b strings.Builder
		args := []any{}
		b.WriteString(`SELECT j.id FROM backwave_job j WHERE j.state IN (`)
		for i, st := range p.States {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('?')
			args = append(args, stateCode(st))
		}
		b.WriteString(`) AND j.finalized_at <= ?
			AND NOT EXISTS (SELECT 1 FROM backwave_job_edge e WHERE e.parent = j.id)
			AND NOT EXISTS (SELECT 1 FROM backwave_transition t WHERE t.job_id = j.id AND t.seq > ?)
			AND (j.workflow_id = 0 OR NOT EXISTS (SELECT 1 FROM backwave_job m WHERE m.workflow_id = j.workflow_id AND m.state IN (1, 2, 3)))
			ORDER BY j.id LIMIT ?`)
		args = append(args, micros(w.now.Add(-p.KeepFor)), floor, p.Limit)
		ids, err := w.ids(b.String(), args...)
		if err != nil {
			return fmt.Errorf("read purgeable jobs: %w", err)
		}
		for _, id := range ids {
			r, err := w.load(job.ID(id))
			if err != nil {
				return err
			}
			if err := w.purge(r); err != nil {
				return err
			}
		}
		res.Purged = len(ids)
		return nil
	})
	return res, err
}

// purge deletes job r and everything stored beside it.
func (w *wtx) purge(r *jrow) error {
	id := int64(r.job.ID)
	for _, q := range []string{
		`DELETE FROM backwave_job_tag WHERE job_id = ?`,
		`DELETE FROM backwave_transition WHERE job_id = ?`,
		`DELETE FROM backwave_job_edge WHERE child = ?`,
		`DELETE FROM backwave_occurrence WHERE job_id = ?`,
		`UPDATE backwave_schedule SET last_job = 0 WHERE last_job = ?`,
		`DELETE FROM backwave_job WHERE id = ?`,
	} {
		if _, err := w.exec(q, id); err != nil {
			return fmt.Errorf("purge job %d: %w", id, err)
		}
	}
	w.counts[countKey{r.job.Queue, stateCode(r.job.State)}]--
	if r.key != "" {
		w.keyCounts[keyCountKey{r.job.Queue, r.key, stateCode(r.job.State)}]--
	}
	if r.workflow != 0 {
		return w.forgetMember(r)
	}
	return nil
}

// JobDelete removes one terminal job with everything JobPurge removes
// beside it (purge), in one transaction with its audit record
// (store.Operator). A live job fails with store.ErrIllegalTransition; one
// JobPurge would keep — a Dependency parent of a stored job, a member of a
// Workflow with a live member, one holding a Transition Log entry a live
// Transition Observer registration was not walked past — with an error
// wrapping store.ErrStillNeeded; an unknown one with store.ErrNotFound.
func (s *Store) JobDelete(ctx context.Context, p store.JobDeleteParams) (job.Job, error) {
	if err := p.Validate(); err != nil {
		return job.Job{}, err
	}
	var out job.Job
	err := s.write(ctx, "delete", func(w *wtx) error {
		r, err := w.find(p.ID)
		if err != nil {
			return err
		}
		if !r.job.State.Terminal() {
			return fmt.Errorf("delete job %d: it is %s: %w", p.ID, r.job.State, store.ErrIllegalTransition)
		}
		floor, err := w.observedFloor()
		if err != nil {
			return err
		}
		var parent, workflow, unread bool
		err = w.row(`SELECT
			EXISTS (SELECT 1 FROM backwave_job_edge e WHERE e.parent = j.id),
			(j.workflow_id <> 0 AND EXISTS (SELECT 1 FROM backwave_job m WHERE m.workflow_id = j.workflow_id AND m.state IN (1, 2, 3))),
			EXISTS (SELECT 1 FROM backwave_transition t WHERE t.job_id = j.id AND t.seq > ?)
			FROM backwave_job j WHERE j.id = ?`, floor, int64(p.ID)).Scan(&parent, &workflow, &unread)
		if err != nil {
			return fmt.Errorf("read what still needs job %d: %w", p.ID, err)
		}
		if err := store.CheckStillNeeded(p.ID, parent, workflow, unread); err != nil {
			return err
		}
		jobs := []job.Job{r.job}
		if err := loadTags(w.tx, w.ctx, jobs); err != nil {
			return err
		}
		out = jobs[0]
		if err := w.purge(r); err != nil {
			return err
		}
		return w.record(p.Actor, store.AuditDelete, r.job.ID, r.job.Queue, store.DeleteDetail(r.job.WireName))
	})
	return out, err
}
