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

// Recurring Schedules (migrations/0004_schedule.sql). The statements are
// renamed to the Schema Name at the one choke point, schemaName.Rename.

const scheduleColumns = `s.name, s.spec, s.zone, s.wire_name, s.queue, s.payload, s.max_attempts, s.tags,
	s.catch_up, s.no_overlap, s.paused, s.revision, s.cursor_at, s.created_at, s.updated_at,
	COALESCE(j.id, 0), COALESCE(j.state IN (1, 2, 3), 0)`

const (
	sqlScheduleGet = `SELECT ` + scheduleColumns + `
	FROM backwave_schedule s LEFT JOIN backwave_job j ON j.id = s.last_job_id WHERE s.name = ?`
	sqlScheduleList = `SELECT ` + scheduleColumns + `
	FROM backwave_schedule s LEFT JOIN backwave_job j ON j.id = s.last_job_id ORDER BY s.name`
	sqlScheduleInsert = `INSERT INTO backwave_schedule (name, spec, zone, wire_name, queue, payload, max_attempts, tags,
		catch_up, no_overlap, paused, revision, cursor_at, created_at, updated_at)
	VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 0, 1, ?11, ?11, ?11)`
	// sqlScheduleUpdate replaces a definition; ?11 is the store's now when
	// store.ScheduleDef.MovesCursorFrom says the cursor moves, else 0, and
	// MAX never moves it backwards.
	sqlScheduleUpdate = `UPDATE backwave_schedule
	SET spec = ?2, zone = ?3, wire_name = ?4, queue = ?5, payload = ?6, max_attempts = ?7, tags = ?8,
		catch_up = ?9, no_overlap = ?10, cursor_at = MAX(cursor_at, ?11), revision = revision + 1, updated_at = ?12
	WHERE name = ?1 RETURNING revision`
	sqlScheduleDelete      = `DELETE FROM backwave_schedule WHERE name = ? RETURNING queue`
	sqlScheduleForget      = `DELETE FROM backwave_schedule_occurrence WHERE schedule = ?`
	sqlSchedulePause       = `UPDATE backwave_schedule SET paused = 1, revision = revision + 1, updated_at = ?2 WHERE name = ?1 AND paused = 0`
	sqlScheduleResume      = `UPDATE backwave_schedule SET paused = 0, cursor_at = MAX(cursor_at, ?2), revision = revision + 1, updated_at = ?2 WHERE name = ?1 AND paused = 1`
	sqlScheduleExists      = `SELECT queue FROM backwave_schedule WHERE name = ?`
	sqlScheduleAdvance     = `UPDATE backwave_schedule SET cursor_at = MAX(cursor_at, ?2), last_job_id = COALESCE(?3, last_job_id), revision = revision + 1 WHERE name = ?1`
	sqlOccurrenceInsert    = `INSERT OR IGNORE INTO backwave_schedule_occurrence (schedule, kind, at, first_at, reason, job_id, actor, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
	sqlOccurrenceSetJob    = `UPDATE backwave_schedule_occurrence SET job_id = ?2 WHERE seq = ?1`
	sqlOccurrenceTrimSkips = `DELETE FROM backwave_schedule_occurrence WHERE schedule = ?1 AND kind = 3 AND seq NOT IN (
		SELECT seq FROM backwave_schedule_occurrence WHERE schedule = ?1 AND kind = 3 ORDER BY seq DESC LIMIT ?2)`
	sqlOccurrenceList = `SELECT seq, schedule, kind, at, first_at, reason, COALESCE(job_id, 0), actor, recorded_at
	FROM backwave_schedule_occurrence WHERE schedule = ?1 AND (?2 = 0 OR seq < ?2)
		AND (?3 = '[]' OR kind IN (SELECT value FROM json_each(?3)))
	ORDER BY seq DESC LIMIT ?4`
)

var catchUpCodes = map[core.CatchUpPolicy]int64{core.CatchUpSkip: 0, core.CatchUpCoalesce: 1}

var occurrenceKindCodes = map[store.OccurrenceKind]int64{
	store.OccurrenceMinted: 1, store.OccurrenceMadeUp: 2, store.OccurrenceSkipped: 3, store.OccurrenceTriggered: 4,
}

var skipReasonCodes = map[core.SkipReason]int64{0: 0, core.SkipOverlap: 1, core.SkipMissed: 2}

type rowScanner interface{ Scan(dest ...any) error }

func scanSchedule(r rowScanner) (store.Schedule, error) {
	var (
		sc                                store.Schedule
		tags                              string
		catchUp, cursor, created, updated int64
		noOverlap, paused, live           bool
		lastJob                           int64
		payload                           []byte
	)
	err := r.Scan(&sc.Name, &sc.Spec, &sc.Zone, &sc.Template.WireName, &sc.Template.Queue, &payload,
		&sc.Template.MaxAttempts, &tags, &catchUp, &noOverlap, &paused, &sc.Revision, &cursor, &created, &updated,
		&lastJob, &live)
	if err != nil {
		return sc, err
	}
	if sc.Template.Tags, err = store.DecodeTags(tags); err != nil {
		return sc, fmt.Errorf("schedule %q: %w", sc.Name, err)
	}
	if sc.CatchUp, err = decode(catchUpCodes, "catch-up policy", catchUp); err != nil {
		return sc, err
	}
	sc.Template.Payload = payload
	sc.NoOverlap, sc.Paused, sc.InstanceLive = noOverlap, paused, live
	sc.LastJob = job.ID(lastJob)
	sc.Cursor, sc.CreatedAt, sc.UpdatedAt = fromMicros(cursor), fromMicros(created), fromMicros(updated)
	return sc, nil
}

// getSchedule reads one schedule in tx, or fails with store.ErrNotFound.
func (s *Store) getSchedule(ctx context.Context, tx *sql.Tx, name string) (store.Schedule, error) {
	sc, err := scanSchedule(tx.QueryRowContext(ctx, s.schema.Rename(sqlScheduleGet), name))
	if errors.Is(err, sql.ErrNoRows) {
		return sc, fmt.Errorf("schedule %q: %w", name, store.ErrNotFound)
	}
	return sc, err
}

// ScheduleUpsert registers the schedule or replaces its definition, in one
// write transaction; see store.Schedules.
func (s *Store) ScheduleUpsert(ctx context.Context, p store.ScheduleUpsertParams) (store.ScheduleUpsertResult, error) {
	if err := p.Validate(); err != nil {
		return store.ScheduleUpsertResult{}, err
	}
	d := p.Schedule.Normalize()
	var res store.ScheduleUpsertResult
	err := s.write(ctx, "upsert schedule "+d.Name, func(tx *sql.Tx) error {
		now := micros(s.clock.Now())
		old, err := s.getSchedule(ctx, tx, d.Name)
		switch {
		case errors.Is(err, store.ErrNotFound):
			res = store.ScheduleUpsertResult{Outcome: store.UpsertCreated, Revision: 1}
			_, err := tx.ExecContext(ctx, s.schema.Rename(sqlScheduleInsert), d.Name, d.Spec, d.Zone, d.Template.WireName,
				d.Template.Queue, nullBytes(d.Template.Payload), d.Template.MaxAttempts, store.EncodeTags(d.Template.Tags),
				encode(catchUpCodes, d.CatchUp), d.NoOverlap, now)
			return err
		case err != nil:
			return err
		case old.SameDefinition(&d):
			res = store.ScheduleUpsertResult{Outcome: store.UpsertUnchanged, Revision: old.Revision}
			return nil
		}
		cursor := int64(0) // MAX(cursor_at, 0) keeps the cursor
		if d.MovesCursorFrom(&old.ScheduleDef) {
			cursor = now // up to now, never backwards
		}
		res.Outcome = store.UpsertUpdated
		return tx.QueryRowContext(ctx, s.schema.Rename(sqlScheduleUpdate), d.Name, d.Spec, d.Zone, d.Template.WireName,
			d.Template.Queue, nullBytes(d.Template.Payload), d.Template.MaxAttempts, store.EncodeTags(d.Template.Tags),
			encode(catchUpCodes, d.CatchUp), d.NoOverlap, cursor, now).Scan(&res.Revision)
	})
	if err != nil {
		return store.ScheduleUpsertResult{}, err
	}
	return res, nil
}

// ScheduleRemove deletes the schedule and its occurrence records.
func (s *Store) ScheduleRemove(ctx context.Context, p store.ScheduleParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return s.write(ctx, "remove schedule "+p.Name, func(tx *sql.Tx) error {
		var queue string
		err := tx.QueryRowContext(ctx, s.schema.Rename(sqlScheduleDelete), p.Name).Scan(&queue)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("schedule %q: %w", p.Name, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if _, err = tx.ExecContext(ctx, s.schema.Rename(sqlScheduleForget), p.Name); err != nil {
			return err
		}
		return s.audit(ctx, tx, s.clock.Now(), p.Actor, store.AuditScheduleRemove, 0, queue, store.ScheduleDetail(p.Name))
	})
}

// SchedulePause stops the schedule from minting.
func (s *Store) SchedulePause(ctx context.Context, p store.ScheduleParams) error {
	return s.setSchedulePaused(ctx, p, sqlSchedulePause, "pause", store.AuditSchedulePause)
}

// ScheduleResume lets the schedule mint again, from the store's now.
func (s *Store) ScheduleResume(ctx context.Context, p store.ScheduleParams) error {
	return s.setSchedulePaused(ctx, p, sqlScheduleResume, "resume", store.AuditScheduleResume)
}

func (s *Store) setSchedulePaused(ctx context.Context, p store.ScheduleParams, query, what string, action store.AuditAction) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return s.write(ctx, what+" schedule "+p.Name, func(tx *sql.Tx) error {
		now := s.clock.Now()
		var queue string
		err := tx.QueryRowContext(ctx, s.schema.Rename(sqlScheduleExists), p.Name).Scan(&queue)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("schedule %q: %w", p.Name, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.schema.Rename(query), p.Name, micros(now)); err != nil {
			return err // no row changed if it was already in that state
		}
		return s.audit(ctx, tx, now, p.Actor, action, 0, queue, store.ScheduleDetail(p.Name))
	})
}

// ScheduleTrigger inserts one job from the template, due now, as an
// Operator Action; see store.Schedules.
func (s *Store) ScheduleTrigger(ctx context.Context, p store.ScheduleTriggerParams) (job.ID, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	var id job.ID
	var due []string
	err := s.write(ctx, "trigger schedule "+p.Name, func(tx *sql.Tx) error {
		sc, err := s.getSchedule(ctx, tx, p.Name)
		if err != nil {
			return err
		}
		if sc.NoOverlap && sc.InstanceLive {
			return fmt.Errorf("job %d is still live: %w", sc.LastJob, store.ErrOverlap)
		}
		now := s.clock.Now()
		ids, q, err := s.insert(ctx, tx, true, store.InsertManyParams{Jobs: []store.NewJob{sc.NewJob(time.Time{})}})
		if err != nil {
			return err
		}
		id, due = ids[0], q
		if _, err := tx.ExecContext(ctx, s.schema.Rename(sqlOccurrenceInsert), p.Name, encode(occurrenceKindCodes, store.OccurrenceTriggered),
			micros(now), micros(now), 0, int64(id), string(p.Actor.OrSystem()), micros(now)); err != nil {
			return fmt.Errorf("record the trigger: %w", err)
		}
		if _, err = tx.ExecContext(ctx, s.schema.Rename(sqlScheduleAdvance), p.Name, 0, int64(id)); err != nil {
			return err
		}
		return s.audit(ctx, tx, now, p.Actor, store.AuditScheduleTrigger, id, sc.Template.Queue, store.ScheduleDetail(p.Name))
	})
	if err != nil {
		return 0, err
	}
	s.hints.Announce(due)
	return id, nil
}

// ScheduleList returns every schedule by name, and the store's now, in one
// read snapshot.
func (s *Store) ScheduleList(ctx context.Context) (store.ScheduleListResult, error) {
	var res store.ScheduleListResult
	err := s.read(ctx, "list schedules", func(tx *sql.Tx) error {
		res = store.ScheduleListResult{Now: s.clock.Now(), Schedules: []store.Schedule{}}
		rows, err := tx.QueryContext(ctx, s.schema.Rename(sqlScheduleList))
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			sc, err := scanSchedule(rows)
			if err != nil {
				return err
			}
			res.Schedules = append(res.Schedules, sc)
		}
		return rows.Err()
	})
	return res, err
}

// ScheduleMint applies the plans in one write transaction, each fenced by
// its schedule's revision; see store.Schedules. The unique index on
// (schedule, at) backs the at-most-once rule: a Mint whose occurrence
// already has a record inserts nothing.
func (s *Store) ScheduleMint(ctx context.Context, p store.MintParams) ([]store.MintResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	out := make([]store.MintResult, len(p.Plans))
	if len(p.Plans) == 0 {
		return out, s.ready(ctx)
	}
	var due []string
	err := s.write(ctx, "mint", func(tx *sql.Tx) error {
		due = due[:0]
		now := s.clock.Now()
		st, err := s.prepare(ctx, tx, s.schema.Rename(sqlOccurrenceInsert), s.schema.Rename(sqlOccurrenceSetJob))
		if err != nil {
			return err
		}
		defer st.close()
		for i, pl := range p.Plans {
			out[i] = store.MintResult{Schedule: pl.Schedule}
			sc, err := s.getSchedule(ctx, tx, pl.Schedule)
			if errors.Is(err, store.ErrNotFound) || (err == nil && sc.Revision != pl.Revision) {
				continue // stale
			}
			if err != nil {
				return err
			}
			out[i].Applied = true
			jobs, err := s.applyPlan(ctx, tx, st, &sc, pl, now)
			if err != nil {
				return fmt.Errorf("schedule %q: %w", pl.Schedule, err)
			}
			out[i].Jobs = jobs
			for _, j := range jobs {
				if j.DueNow && !slices.Contains(due, j.Queue) {
					due = append(due, j.Queue)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(due)
	s.hints.Announce(due)
	return out, nil
}

// applyPlan writes one current plan in tx: occurrence records first (a
// record the unique index refuses makes no job), then the jobs, then the
// schedule's cursor, latest instance and revision.
func (s *Store) applyPlan(ctx context.Context, tx *sql.Tx, st stmts, sc *store.Schedule, pl core.MintPlan, now time.Time) ([]store.MintedJob, error) {
	record := func(kind store.OccurrenceKind, at, first time.Time, reason core.SkipReason) (int64, bool, error) {
		res, err := st[0].ExecContext(ctx, pl.Schedule, encode(occurrenceKindCodes, kind), micros(at), micros(first),
			encode(skipReasonCodes, reason), nil, "", micros(now))
		if err != nil {
			return 0, false, err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return 0, false, err
		}
		seq, err := res.LastInsertId()
		return seq, err == nil, err
	}
	var minted []store.MintedJob
	var seqs []int64
	var jobs []store.NewJob
	for _, m := range pl.Mints {
		kind := store.OccurrenceMinted
		if m.MakeUp {
			kind = store.OccurrenceMadeUp
		}
		seq, ok, err := record(kind, m.At, m.At, 0)
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
		_, ok, err := record(store.OccurrenceSkipped, sk.At, sk.First, sk.Reason)
		if err != nil {
			return nil, fmt.Errorf("record skip %v: %w", sk.At, err)
		}
		skipped = skipped || ok
	}
	if skipped {
		if _, err := tx.ExecContext(ctx, s.schema.Rename(sqlOccurrenceTrimSkips), pl.Schedule, store.MaxSkipRecords); err != nil {
			return nil, fmt.Errorf("trim skip records: %w", err)
		}
	}
	var last any
	if len(jobs) > 0 {
		ids, _, err := s.insert(ctx, tx, true, store.InsertManyParams{Jobs: jobs})
		if err != nil {
			return nil, err
		}
		for i, id := range ids {
			minted[i].ID = id
			if _, err := st[1].ExecContext(ctx, seqs[i], int64(id)); err != nil {
				return nil, fmt.Errorf("link occurrence %d to job %d: %w", seqs[i], id, err)
			}
		}
		last = int64(ids[len(ids)-1])
	}
	if _, err := tx.ExecContext(ctx, s.schema.Rename(sqlScheduleAdvance), pl.Schedule, micros(pl.Cursor), last); err != nil {
		return nil, fmt.Errorf("advance the cursor: %w", err)
	}
	return minted, nil
}

// ScheduleOccurrences lists a schedule's occurrence records, newest first.
func (s *Store) ScheduleOccurrences(ctx context.Context, p store.OccurrenceListParams) ([]store.Occurrence, error) {
	kinds := make([]int64, len(p.Kinds))
	for i, k := range p.Kinds {
		c, ok := occurrenceKindCodes[k]
		if !ok {
			return nil, fmt.Errorf("sqlite: %w: unknown occurrence kind %s", store.ErrInvalidParams, k)
		}
		kinds[i] = c
	}
	out := []store.Occurrence{}
	err := s.read(ctx, "list occurrences", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, s.schema.Rename(sqlOccurrenceList), p.Schedule, p.BeforeSeq, jsonArray(kinds), p.PageLimit())
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var o store.Occurrence
			var kind, at, first, reason, jobID, recorded int64
			if err := rows.Scan(&o.Seq, &o.Schedule, &kind, &at, &first, &reason, &jobID, &o.Actor, &recorded); err != nil {
				return err
			}
			if o.Kind, err = decode(occurrenceKindCodes, "occurrence kind", kind); err != nil {
				return err
			}
			if o.Reason, err = decode(skipReasonCodes, "skip reason", reason); err != nil {
				return err
			}
			o.At, o.First, o.RecordedAt, o.Job = fromMicros(at), fromMicros(first), fromMicros(recorded), job.ID(jobID)
			out = append(out, o)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
