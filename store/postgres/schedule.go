package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// Recurring Schedules (migration/004_schedule.sql).

const scheduleColumns = `s.name, s.spec, s.zone, s.wire_name, s.queue, s.payload, s.max_attempts, s.tags,
    s.catch_up, s.no_overlap, s.paused, s.revision, s.cursor_at, s.created_at, s.updated_at,
    coalesce(j.id, 0), coalesce(j.state IN ('scheduled', 'awaiting_parent', 'running'), false)`

const (
	scheduleGetSQL = `SELECT ` + scheduleColumns + `
FROM backwave.schedule s LEFT JOIN backwave.job j ON j.id = s.last_job_id
WHERE s.name = $1 FOR UPDATE OF s`
	scheduleListSQL = `SELECT coalesce($1::timestamptz, now()), ` + scheduleColumns + `
FROM backwave.schedule s LEFT JOIN backwave.job j ON j.id = s.last_job_id
ORDER BY s.name COLLATE "C"`
	scheduleInsertSQL = `INSERT INTO backwave.schedule (name, spec, zone, wire_name, queue, payload, max_attempts, tags,
    catch_up, no_overlap, revision, cursor_at, created_at, updated_at)
SELECT $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 1, n.t, n.t, n.t
FROM (SELECT coalesce($1::timestamptz, now()) AS t) n
ON CONFLICT (name) DO NOTHING`
	// scheduleUpdateSQL replaces a definition; $12 is
	// store.ScheduleDef.MovesCursorFrom, and greatest never moves the cursor
	// backwards.
	scheduleUpdateSQL = `UPDATE backwave.schedule
SET spec = $3, zone = $4, wire_name = $5, queue = $6, payload = $7, max_attempts = $8, tags = $9,
    catch_up = $10, no_overlap = $11, revision = revision + 1, updated_at = n.t,
    cursor_at = CASE WHEN $12::bool THEN greatest(cursor_at, n.t) ELSE cursor_at END
FROM (SELECT coalesce($1::timestamptz, now()) AS t) n
WHERE name = $2 RETURNING revision`
	scheduleDeleteSQL = `WITH gone AS (DELETE FROM backwave.schedule WHERE name = $1 RETURNING name, queue),
forgot AS (DELETE FROM backwave.schedule_occurrence o USING gone WHERE o.schedule = gone.name)
SELECT queue FROM gone`
	schedulePauseSQL = `WITH s AS (SELECT queue FROM backwave.schedule WHERE name = $2),
changed AS (
    UPDATE backwave.schedule SET paused = $3, revision = revision + 1, updated_at = n.t,
        cursor_at = CASE WHEN $3 THEN cursor_at ELSE greatest(cursor_at, n.t) END
    FROM (SELECT coalesce($1::timestamptz, now()) AS t) n
    WHERE name = $2 AND paused <> $3
    RETURNING 1)
SELECT queue FROM s`
	scheduleAdvanceSQL = `UPDATE backwave.schedule
SET cursor_at = greatest(cursor_at, coalesce($2, cursor_at)), last_job_id = coalesce($3, last_job_id), revision = revision + 1
WHERE name = $1`
	occurrenceInsertSQL = `INSERT INTO backwave.schedule_occurrence (schedule, kind, at, first_at, reason, job_id, actor, recorded_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (schedule, at) WHERE kind <> 'triggered' DO NOTHING
RETURNING seq`
	occurrenceLinkSQL = `UPDATE backwave.schedule_occurrence o SET job_id = u.job
FROM unnest($1::bigint[], $2::bigint[]) AS u(seq, job) WHERE o.seq = u.seq`
	occurrenceTrimSQL = `DELETE FROM backwave.schedule_occurrence
WHERE schedule = $1 AND kind = 'skipped' AND seq < (
    SELECT seq FROM backwave.schedule_occurrence WHERE schedule = $1 AND kind = 'skipped'
    ORDER BY seq DESC OFFSET $2 - 1 LIMIT 1)`
	occurrenceListSQL = `SELECT seq, schedule, kind, at, first_at, reason, coalesce(job_id, 0), actor, recorded_at
FROM backwave.schedule_occurrence
WHERE schedule = $1 AND ($2::bigint = 0 OR seq < $2)
  AND (coalesce(cardinality($3::text[]), 0) = 0 OR kind = ANY($3::text[]))
ORDER BY seq DESC LIMIT $4`
)

// scheduleRow receives one row of scheduleColumns.
type scheduleRow struct {
	s                        store.Schedule
	tags, catchUp            string
	cursor, created, updated time.Time
	lastJob                  int64
}

func (r *scheduleRow) dest() []any {
	return []any{&r.s.Name, &r.s.Spec, &r.s.Zone, &r.s.Template.WireName, &r.s.Template.Queue, &r.s.Template.Payload,
		&r.s.Template.MaxAttempts, &r.tags, &r.catchUp, &r.s.NoOverlap, &r.s.Paused, &r.s.Revision,
		&r.cursor, &r.created, &r.updated, &r.lastJob, &r.s.InstanceLive}
}

func (r *scheduleRow) schedule() (store.Schedule, error) {
	sc := r.s
	var err error
	if sc.CatchUp, err = core.ParseCatchUpPolicy(r.catchUp); err != nil {
		return sc, fmt.Errorf("schedule %q: %w", sc.Name, err)
	}
	if sc.Template.Tags, err = store.DecodeTags(r.tags); err != nil {
		return sc, fmt.Errorf("schedule %q: %w", sc.Name, err)
	}
	sc.LastJob = job.ID(r.lastJob)
	sc.Cursor, sc.CreatedAt, sc.UpdatedAt = r.cursor.UTC(), r.created.UTC(), r.updated.UTC()
	return sc, nil
}

// getSchedule reads and locks one schedule in q; found is false if there is
// none.
func (s *Store) getSchedule(ctx context.Context, q querier, name string) (sc store.Schedule, found bool, err error) {
	var r scheduleRow
	err = q.query(ctx, s.sql(scheduleGetSQL), []any{name}, func(scan scanFunc) error {
		found = true
		return scan(r.dest()...)
	})
	if err != nil || !found {
		return sc, false, err
	}
	sc, err = r.schedule()
	return sc, err == nil, err
}

// ScheduleUpsert registers the schedule or replaces its definition, in one
// transaction; see store.Schedules.
func (s *Store) ScheduleUpsert(ctx context.Context, p store.ScheduleUpsertParams) (store.ScheduleUpsertResult, error) {
	if err := s.enter(ctx); err != nil {
		return store.ScheduleUpsertResult{}, err
	}
	if err := p.Validate(); err != nil {
		return store.ScheduleUpsertResult{}, err
	}
	d := p.Schedule.Normalize()
	if err := checkTagText(d.Template.Tags); err != nil {
		return store.ScheduleUpsertResult{}, fmt.Errorf("schedule %q: Template.Tags: %w", d.Name, err)
	}
	var payload any
	if len(d.Template.Payload) > 0 {
		payload = d.Template.Payload
	}
	var res store.ScheduleUpsertResult
	err := s.db.inTx(ctx, func(q querier) error {
		res = store.ScheduleUpsertResult{}
		n, err := q.exec(ctx, s.sql(scheduleInsertSQL), s.nowArg(), d.Name, d.Spec, d.Zone, d.Template.WireName,
			d.Template.Queue, payload, d.Template.MaxAttempts, store.EncodeTags(d.Template.Tags), d.CatchUp.String(), d.NoOverlap)
		if err != nil {
			return err
		}
		if n == 1 {
			res = store.ScheduleUpsertResult{Outcome: store.UpsertCreated, Revision: 1}
			return nil
		}
		old, found, err := s.getSchedule(ctx, q, d.Name)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("schedule %q vanished during the upsert", d.Name)
		}
		if old.SameDefinition(&d) {
			res = store.ScheduleUpsertResult{Outcome: store.UpsertUnchanged, Revision: old.Revision}
			return nil
		}
		res.Outcome = store.UpsertUpdated
		moved := d.MovesCursorFrom(&old.ScheduleDef)
		return q.query(ctx, s.sql(scheduleUpdateSQL), []any{s.nowArg(), d.Name, d.Spec, d.Zone, d.Template.WireName,
			d.Template.Queue, payload, d.Template.MaxAttempts, store.EncodeTags(d.Template.Tags), d.CatchUp.String(), d.NoOverlap, moved},
			func(scan scanFunc) error { return scan(&res.Revision) })
	})
	if err != nil {
		return store.ScheduleUpsertResult{}, s.wrap("upsert schedule "+d.Name, err)
	}
	return res, nil
}

// ScheduleRemove deletes the schedule and its occurrence records.
func (s *Store) ScheduleRemove(ctx context.Context, p store.ScheduleParams) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	if err := p.Validate(); err != nil {
		return err
	}
	var n int64
	err := s.db.inTx(ctx, func(q querier) error {
		var queue string
		err := q.query(ctx, s.sql(scheduleDeleteSQL), []any{p.Name}, func(scan scanFunc) error { n++; return scan(&queue) })
		if err != nil || n == 0 {
			return err
		}
		return s.audit(ctx, q, p.Actor, store.AuditScheduleRemove, 0, queue, store.ScheduleDetail(p.Name))
	})
	if err != nil {
		return s.wrap("remove schedule "+p.Name, err)
	}
	if n == 0 {
		return fmt.Errorf("postgres: schedule %q: %w", p.Name, store.ErrNotFound)
	}
	return nil
}

// SchedulePause stops the schedule from minting.
func (s *Store) SchedulePause(ctx context.Context, p store.ScheduleParams) error {
	return s.setSchedulePaused(ctx, p, true)
}

// ScheduleResume lets the schedule mint again, from the store's now.
func (s *Store) ScheduleResume(ctx context.Context, p store.ScheduleParams) error {
	return s.setSchedulePaused(ctx, p, false)
}

func (s *Store) setSchedulePaused(ctx context.Context, p store.ScheduleParams, paused bool) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	if err := p.Validate(); err != nil {
		return err
	}
	action := store.AuditScheduleResume
	if paused {
		action = store.AuditSchedulePause
	}
	var n int64
	err := s.db.inTx(ctx, func(q querier) error {
		var queue string
		err := q.query(ctx, s.sql(schedulePauseSQL), []any{s.nowArg(), p.Name, paused}, func(scan scanFunc) error { n++; return scan(&queue) })
		if err != nil || n == 0 {
			return err
		}
		return s.audit(ctx, q, p.Actor, action, 0, queue, store.ScheduleDetail(p.Name))
	})
	if err != nil {
		return s.wrap(fmt.Sprintf("set schedule %s paused=%v", p.Name, paused), err)
	}
	if n == 0 {
		return fmt.Errorf("postgres: schedule %q: %w", p.Name, store.ErrNotFound)
	}
	return nil
}

// storeNow reads the store's clock inside q.
func (s *Store) storeNow(ctx context.Context, q querier) (time.Time, error) {
	var now time.Time
	err := q.query(ctx, `SELECT coalesce($1::timestamptz, now())`, []any{s.nowArg()}, func(scan scanFunc) error { return scan(&now) })
	return now.UTC(), err
}

// errOverlap carries the live job out of a trigger's transaction.
type errOverlap struct{ job job.ID }

func (e errOverlap) Error() string { return fmt.Sprintf("job %d is still live", e.job) }

// ScheduleTrigger inserts one job from the template, due now, as an
// Operator Action; see store.Schedules.
func (s *Store) ScheduleTrigger(ctx context.Context, p store.ScheduleTriggerParams) (job.ID, error) {
	if err := s.enter(ctx); err != nil {
		return 0, err
	}
	if err := p.Validate(); err != nil {
		return 0, err
	}
	var id job.ID
	found := false
	err := s.db.inTx(ctx, func(q querier) error {
		sc, ok, err := s.getSchedule(ctx, q, p.Name)
		found = ok
		if err != nil || !ok {
			return err
		}
		if sc.NoOverlap && sc.InstanceLive {
			return errOverlap{sc.LastJob}
		}
		now, err := s.storeNow(ctx, q)
		if err != nil {
			return err
		}
		ids, err := s.insert(ctx, q, store.InsertManyParams{Jobs: []store.NewJob{sc.NewJob(time.Time{})}})
		if err != nil {
			return err
		}
		id = ids[0]
		if _, err := q.exec(ctx, s.sql(occurrenceInsertSQL), p.Name, store.OccurrenceTriggered.String(), now, now, "",
			int64(id), pgText(string(p.Actor.OrSystem())), now); err != nil {
			return fmt.Errorf("record the trigger: %w", err)
		}
		if _, err := q.exec(ctx, s.sql(scheduleAdvanceSQL), p.Name, nil, int64(id)); err != nil {
			return err
		}
		return s.audit(ctx, q, p.Actor, store.AuditScheduleTrigger, id, sc.Template.Queue, store.ScheduleDetail(p.Name))
	})
	var overlap errOverlap
	switch {
	case errors.As(err, &overlap):
		return 0, fmt.Errorf("postgres: trigger schedule %q: %w: %w", p.Name, overlap, store.ErrOverlap)
	case err != nil:
		return 0, s.wrap("trigger schedule "+p.Name, err)
	case !found:
		return 0, fmt.Errorf("postgres: schedule %q: %w", p.Name, store.ErrNotFound)
	}
	return id, nil
}

// ScheduleList returns every schedule by name, and the store's now, in one
// statement (or, with no schedules, the clock alone).
func (s *Store) ScheduleList(ctx context.Context) (store.ScheduleListResult, error) {
	if err := s.enter(ctx); err != nil {
		return store.ScheduleListResult{}, err
	}
	res := store.ScheduleListResult{Schedules: []store.Schedule{}}
	err := s.db.query(ctx, s.sql(scheduleListSQL), []any{s.nowArg()}, func(scan scanFunc) error {
		var r scheduleRow
		if err := scan(append([]any{&res.Now}, r.dest()...)...); err != nil {
			return err
		}
		sc, err := r.schedule()
		if err != nil {
			return err
		}
		res.Schedules = append(res.Schedules, sc)
		return nil
	})
	if err == nil && len(res.Schedules) == 0 {
		res.Now, err = s.storeNow(ctx, s.db)
	}
	if err != nil {
		return store.ScheduleListResult{}, s.wrap("list schedules", err)
	}
	res.Now = res.Now.UTC()
	return res, nil
}

// ScheduleMint applies the plans in one transaction, each fenced by its
// schedule's revision under a row lock; see store.Schedules. The unique
// index on (schedule, at) backs the at-most-once rule: a Mint whose
// occurrence already has a record inserts nothing.
func (s *Store) ScheduleMint(ctx context.Context, p store.MintParams) ([]store.MintResult, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	out := make([]store.MintResult, len(p.Plans))
	if len(p.Plans) == 0 {
		return out, nil
	}
	err := s.db.inTx(ctx, func(q querier) error {
		now, err := s.storeNow(ctx, q)
		if err != nil {
			return err
		}
		for i, pl := range p.Plans {
			out[i] = store.MintResult{Schedule: pl.Schedule}
			sc, found, err := s.getSchedule(ctx, q, pl.Schedule)
			if err != nil {
				return err
			}
			if !found || sc.Revision != pl.Revision {
				continue // stale
			}
			out[i].Applied = true
			if out[i].Jobs, err = s.applyPlan(ctx, q, &sc, pl, now); err != nil {
				return fmt.Errorf("schedule %q: %w", pl.Schedule, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, s.wrap(fmt.Sprintf("mint %d plans", len(p.Plans)), err)
	}
	return out, nil
}

// applyPlan writes one current plan in q: occurrence records first (a
// record the unique index refuses makes no job), then the jobs, then the
// schedule's cursor, latest instance and revision.
func (s *Store) applyPlan(ctx context.Context, q querier, sc *store.Schedule, pl core.MintPlan, now time.Time) ([]store.MintedJob, error) {
	record := func(kind store.OccurrenceKind, at, first time.Time, reason string) (seq int64, ok bool, err error) {
		err = q.query(ctx, s.sql(occurrenceInsertSQL), []any{pl.Schedule, kind.String(), at, first, reason, nil, "", now},
			func(scan scanFunc) error {
				ok = true
				return scan(&seq)
			})
		return seq, ok, err
	}
	var minted []store.MintedJob
	var seqs []int64
	var jobs []store.NewJob
	for _, m := range pl.Mints {
		kind := store.OccurrenceMinted
		if m.MakeUp {
			kind = store.OccurrenceMadeUp
		}
		seq, ok, err := record(kind, m.At, m.At, "")
		if err != nil {
			return nil, fmt.Errorf("record occurrence %v: %w", m.At, err)
		}
		if !ok {
			continue // already recorded: the unique key holds
		}
		seqs = append(seqs, seq)
		jobs = append(jobs, sc.NewJob(m.At))
		minted = append(minted, store.MintedJob{At: m.At, MakeUp: m.MakeUp, Queue: sc.Template.Queue, DueNow: !m.At.After(now)})
	}
	skipped := false
	for _, sk := range pl.Skips {
		_, ok, err := record(store.OccurrenceSkipped, sk.At, sk.First, sk.Reason.String())
		if err != nil {
			return nil, fmt.Errorf("record skip %v: %w", sk.At, err)
		}
		skipped = skipped || ok
	}
	if skipped {
		if _, err := q.exec(ctx, s.sql(occurrenceTrimSQL), pl.Schedule, store.MaxSkipRecords); err != nil {
			return nil, fmt.Errorf("trim skip records: %w", err)
		}
	}
	var last any
	if len(jobs) > 0 {
		ids, err := s.insert(ctx, q, store.InsertManyParams{Jobs: jobs})
		if err != nil {
			return nil, err
		}
		idArr := make([]int64, len(ids))
		for i, id := range ids {
			minted[i].ID, idArr[i] = id, int64(id)
		}
		if _, err := q.exec(ctx, s.sql(occurrenceLinkSQL), seqs, idArr); err != nil {
			return nil, fmt.Errorf("link occurrences to jobs: %w", err)
		}
		last = idArr[len(idArr)-1]
	}
	if _, err := q.exec(ctx, s.sql(scheduleAdvanceSQL), pl.Schedule, pl.Cursor, last); err != nil {
		return nil, fmt.Errorf("advance the cursor: %w", err)
	}
	return minted, nil
}

// ScheduleOccurrences lists a schedule's occurrence records, newest first.
func (s *Store) ScheduleOccurrences(ctx context.Context, p store.OccurrenceListParams) ([]store.Occurrence, error) {
	if err := s.enter(ctx); err != nil {
		return nil, err
	}
	kinds := make([]string, len(p.Kinds))
	for i, k := range p.Kinds {
		kinds[i] = k.String()
	}
	out := []store.Occurrence{}
	err := s.db.query(ctx, s.sql(occurrenceListSQL), []any{p.Schedule, p.BeforeSeq, kinds, int32(p.PageLimit())},
		func(scan scanFunc) error {
			var o store.Occurrence
			var kind, reason string
			var jobID int64
			if err := scan(&o.Seq, &o.Schedule, &kind, &o.At, &o.First, &reason, &jobID, &o.Actor, &o.RecordedAt); err != nil {
				return err
			}
			var err error
			if o.Kind, err = store.ParseOccurrenceKind(kind); err != nil {
				return err
			}
			if reason != "" {
				if o.Reason, err = core.ParseSkipReason(reason); err != nil {
					return err
				}
			}
			o.Job = job.ID(jobID)
			o.At, o.First, o.RecordedAt = o.At.UTC(), o.First.UTC(), o.RecordedAt.UTC()
			out = append(out, o)
			return nil
		})
	if err != nil {
		return nil, s.wrap("list occurrences of "+p.Schedule, err)
	}
	return out, nil
}
