package postgres

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// Unique keys in Replace and Debounce mode (store.UniqueReplace,
// store.UniqueDebounce). The insert statement takes keys as ever
// (uniqueSQL); then, in the same transaction and in insert order, each job
// that rewrites and found its key held rewrites the holder
// (rewriteHolderSQL after holderSQL locked it), and each debounced job that
// took a free key gets its first wait (debounceFirstSQL). holderSQL's FOR
// UPDATE waits for a racing rewrite of the same holder to commit and then
// reads the newest row, so racing rewrites apply one after the other, the
// last to commit winning; a claim passes a locked row over (SKIP LOCKED),
// so a holder cannot start Running between the check and the rewrite.

// holderSQL locks a unique key's holder and reads its state and Queue.
const holderSQL = `SELECT state, queue FROM backwave.job WHERE id = $1 FOR UPDATE`

// rewriteHolderSQL gives the holder $2 its new due time: with a Debounce
// wait ($3 µs, > 0) core.DebounceDue restated — least(now + wait,
// greatest(created_at + max wait ($4 µs), now)) — else core.ReplaceDue, the
// requested $5 or now; its payload ($6, NULL for none) and Tags ($7 keys,
// $8 values, $9 folded, $10 display; stored by rewriteTagSQL) replace the
// old ones, and Tag Suggest's dictionary drops each old Tag no other job
// carries (as a purge does, after purgeTagLockSQL). It returns the
// new due time and whether it is due now.
const rewriteHolderSQL = `WITH now AS (SELECT coalesce($1::timestamptz, now()) AS t),
dropped_payload AS (DELETE FROM backwave.job_payload WHERE job_id = $2 AND $6::bytea IS NULL),
new_payload AS (
    INSERT INTO backwave.job_payload (job_id, payload) SELECT $2, $6::bytea WHERE $6::bytea IS NOT NULL
    ON CONFLICT (job_id) DO UPDATE SET payload = EXCLUDED.payload
),
dropped_tag AS (DELETE FROM backwave.job_tag WHERE job_id = $2),
pruned_tag AS (
    DELETE FROM backwave.tag d
    WHERE (d.key, d.value) IN (SELECT t.key, t.value FROM backwave.job_tag t WHERE t.job_id = $2)
      AND (d.key, d.value) NOT IN (SELECT * FROM unnest($7::text[], $8::text[]))
      AND NOT EXISTS (SELECT 1 FROM backwave.job_tag t WHERE t.key = d.key AND t.value = d.value AND t.job_id <> $2)
),
known_tag AS (
    INSERT INTO backwave.tag (key, value, folded, display)
    SELECT t.key, t.value, t.folded, t.display
    FROM unnest($7::text[], $8::text[], $9::text[], $10::text[]) AS t(key, value, folded, display)
    WHERE NOT EXISTS (SELECT 1 FROM backwave.tag d WHERE d.key = t.key AND d.value = t.value)
    ON CONFLICT DO NOTHING
),
job AS (
    UPDATE backwave.job j SET scheduled_at = CASE
        WHEN $3::bigint > 0 THEN least(now.t + $3::bigint * interval '1 microsecond',
                                       greatest(j.created_at + $4::bigint * interval '1 microsecond', now.t))
        ELSE coalesce($5::timestamptz, now.t) END
    FROM now WHERE j.id = $2
    RETURNING j.scheduled_at, j.scheduled_at <= now.t AS due
)
SELECT scheduled_at, due FROM job`

// rewriteTagSQL stores the holder's new Tags once its old ones are gone:
// a data-modifying CTE cannot see the deletes of its siblings, so the
// inserts go in a statement of their own.
const rewriteTagSQL = `INSERT INTO backwave.job_tag (job_id, key, value)
SELECT $1, t.key, t.value FROM unnest($2::text[], $3::text[]) AS t(key, value)
ON CONFLICT DO NOTHING`

// debounceFirstSQL gives a debounced job that took a free key its first
// wait: due at its insert (created_at, the insert statement's now) + $2
// µs (store.Unique.InsertDue).
const debounceFirstSQL = `UPDATE backwave.job SET scheduled_at = created_at + $2::bigint * interval '1 microsecond' WHERE id = $1`

// hintSQL sends the Wake-Up Hint of a Queue; inside a transaction it goes
// out at commit.
const hintSQL = `SELECT pg_notify('backwave.hint', $1)`

// rewrites reports whether some job of p rewrites a held key's holder or
// debounces.
func rewrites(p store.InsertManyParams) bool {
	return slices.ContainsFunc(p.Jobs, func(nj store.NewJob) bool { return nj.Unique.Mode.Rewrites() })
}

// followsInsert reports whether the insert of p runs statements after its
// own, in its transaction (afterInsert): rewrites, or an operator's audit.
func followsInsert(p store.InsertManyParams) bool { return rewrites(p) || p.Actor != "" }

// afterInsert runs, through q and after the insert that answered res, what
// follows it in its transaction: the rewrites of held keys' holders
// (rewriteHeld) and, for an operator's enqueue (p.Actor), the audit record
// of each job inserted.
func (s *Store) afterInsert(ctx context.Context, q querier, p store.InsertManyParams, res []store.InsertResult) error {
	if rewrites(p) {
		if err := s.rewriteHeld(ctx, q, p, res); err != nil {
			return err
		}
	}
	if p.Actor == "" {
		return nil
	}
	for i, r := range res {
		if r.Inserted {
			if err := s.audit(ctx, q, p.Actor, store.AuditEnqueue, r.ID, p.Jobs[i].Queue, store.EnqueueDetail(p.Jobs[i].WireName)); err != nil {
				return err
			}
		}
	}
	return nil
}

// rewriteHeld runs, through q and after the insert that answered res, the
// rewrites and first debounce waits of p's jobs (see above). It must run in
// the insert's transaction.
func (s *Store) rewriteHeld(ctx context.Context, q querier, p store.InsertManyParams, res []store.InsertResult) error {
	for _, i := range p.InsertOrder() {
		nj := p.Jobs[i]
		switch {
		case !nj.Unique.Mode.Rewrites():
		case res[i].Inserted && nj.Unique.Mode == store.UniqueDebounce:
			if _, err := q.exec(ctx, s.sql(debounceFirstSQL), int64(res[i].ID), micros(nj.Unique.Wait)); err != nil {
				return fmt.Errorf("jobs[%d]: first debounce wait: %w", i, err)
			}
		case !res[i].Inserted:
			if err := s.rewrite(ctx, q, p, i, res[i].ID); err != nil {
				return fmt.Errorf("jobs[%d]: %w", i, err)
			}
			res[i].Replaced = true
		}
	}
	return nil
}

// rewrite gives holder, the Scheduled job holding job i's unique key, job
// i's payload (through PayloadFor under the holder's id), Tags and the due
// time its mode decides, and records it in the audit trail. A holder in any
// other state, or purged, is store.ErrHolderNotPending.
func (s *Store) rewrite(ctx context.Context, q querier, p store.InsertManyParams, i int, holder job.ID) error {
	nj := p.Jobs[i]
	var state, queue string
	found := false
	err := q.query(ctx, s.sql(holderSQL), []any{int64(holder)}, func(scan scanFunc) error {
		found = true
		return scan(&state, &queue)
	})
	switch {
	case err != nil:
		return fmt.Errorf("read the holder of unique key %q: %w", nj.Unique.Key, err)
	case !found:
		return fmt.Errorf("%w: unique key %q is held by job %d, which is purged", store.ErrHolderNotPending, nj.Unique.Key, holder)
	case state != job.StateScheduled.String():
		return fmt.Errorf("%w: unique key %q is held by job %d, which is %s", store.ErrHolderNotPending, nj.Unique.Key, holder, state)
	}
	var payload []byte
	if len(nj.Payload) > 0 {
		payload = nj.Payload
	}
	if p.PayloadFor != nil {
		b, err := p.PayloadFor(i, holder)
		if err != nil {
			return fmt.Errorf("payload: %w", err)
		}
		payload = nil
		if len(b) > 0 {
			payload = b
		}
	}
	tags := job.NormalizeTags(nj.Tags)
	keys, values := make([]string, len(tags)), make([]string, len(tags))
	for k, t := range tags {
		keys[k], values[k] = t.Key, t.Value
	}
	folded, display := foldArrays(keys, values)
	var requested *time.Time
	if !nj.ScheduledAt.IsZero() {
		requested = &nj.ScheduledAt
	}
	var wait, maxWait int64
	if nj.Unique.Mode == store.UniqueDebounce {
		wait, maxWait = micros(nj.Unique.Wait), micros(nj.Unique.MaxWait)
	}
	err = q.query(ctx, s.sql(purgeTagLockSQL), []any{[]int64{int64(holder)}}, func(scan scanFunc) error { return nil })
	if err != nil {
		return fmt.Errorf("rewrite job %d: lock its Tags: %w", holder, err)
	}
	var dueAt time.Time
	var due bool
	err = q.query(ctx, s.sql(rewriteHolderSQL),
		[]any{s.nowArg(), int64(holder), wait, maxWait, requested, payload, keys, values, folded, display},
		func(scan scanFunc) error { return scan(&dueAt, &due) })
	if err != nil {
		return fmt.Errorf("rewrite job %d: %w", holder, err)
	}
	if _, err := q.exec(ctx, s.sql(rewriteTagSQL), int64(holder), keys, values); err != nil {
		return fmt.Errorf("rewrite job %d: tags: %w", holder, err)
	}
	if err := s.audit(ctx, q, store.ActorSystem, store.RewriteAction(nj.Unique.Mode), holder, queue,
		store.RewriteDetail(nj.Unique.Key, dueAt)); err != nil {
		return err
	}
	if due && !s.opts.DisableNotify {
		if err := q.query(ctx, s.sql(hintSQL), []any{queue}, func(scan scanFunc) error { return nil }); err != nil {
			return fmt.Errorf("hint queue %q: %w", queue, err)
		}
	}
	return nil
}
