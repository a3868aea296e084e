package mariadb

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// schedRow is one stored Recurring Schedule.
type schedRow struct {
	s store.Schedule
}

const schedCols = `name, def, paused, revision, cursor_at, last_job, created_at, updated_at`

func scanSchedule(sc scanner) (*schedRow, error) {
	var r schedRow
	var name, def string
	var cursor, last, created, updated int64
	if err := sc.Scan(&name, &def, &r.s.Paused, &r.s.Revision, &cursor, &last, &created, &updated); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(def), &r.s.ScheduleDef); err != nil {
		return nil, fmt.Errorf("schedule %q: stored definition: %w", name, err)
	}
	r.s.Cursor, r.s.LastJob = fromMicros(cursor), job.ID(last)
	r.s.CreatedAt, r.s.UpdatedAt = fromMicros(created), fromMicros(updated)
	return &r, nil
}

// schedule reads the named schedule, nil if there is none.
func (w *wtx) schedule(name string) (*schedRow, error) {
	r, err := scanSchedule(w.row(`SELECT `+schedCols+` FROM backwave_schedule WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("schedule %q: %w", name, err)
	}
	return r, nil
}

func (w *wtx) findSchedule(name string) (*schedRow, error) {
	r, err := w.schedule(name)
	if err == nil && r == nil {
		err = fmt.Errorf("schedule %q: %w", name, store.ErrNotFound)
	}
	return r, err
}

// saveSchedule writes r back.
func (w *wtx) saveSchedule(r *schedRow) error {
	def, err := json.Marshal(r.s.ScheduleDef)
	if err != nil {
		return fmt.Errorf("schedule %q: %w", r.s.Name, err)
	}
	_, err = w.exec(`UPDATE backwave_schedule SET def = ?, paused = ?, revision = ?, cursor_at = ?, last_job = ?, updated_at = ? WHERE name = ?`,
		string(def), r.s.Paused, r.s.Revision, micros(r.s.Cursor), int64(r.s.LastJob), micros(r.s.UpdatedAt), r.s.Name)
	if err != nil {
		return fmt.Errorf("schedule %q: %w", r.s.Name, err)
	}
	return nil
}

// ScheduleUpsert creates or updates a Recurring Schedule (store.Schedules).
func (s *Store) ScheduleUpsert(ctx context.Context, p store.ScheduleUpsertParams) (store.ScheduleUpsertResult, error) {
	if err := p.Validate(); err != nil {
		return store.ScheduleUpsertResult{}, err
	}
	var res store.ScheduleUpsertResult
	err := s.write(ctx, "upsert schedule", func(w *wtx) error {
		def := p.Schedule.Normalize()
		r, err := w.schedule(def.Name)
		if err != nil {
			return err
		}
		if r == nil {
			b, err := json.Marshal(def)
			if err != nil {
				return err
			}
			if _, err := w.exec(`INSERT INTO backwave_schedule (name, def, revision, cursor_at, created_at, updated_at) VALUES (?, ?, 1, ?, ?, ?)`,
				def.Name, string(b), micros(w.now), micros(w.now), micros(w.now)); err != nil {
				return fmt.Errorf("schedule %q: %w", def.Name, err)
			}
			res = store.ScheduleUpsertResult{Outcome: store.UpsertCreated, Revision: 1}
			return nil
		}
		if r.s.SameDefinition(&def) {
			res = store.ScheduleUpsertResult{Outcome: store.UpsertUnchanged, Revision: r.s.Revision}
			return nil
		}
		if def.MovesCursorFrom(&r.s.ScheduleDef) {
			r.s.Cursor = latest(r.s.Cursor, w.now)
		}
		r.s.ScheduleDef = def
		r.s.Revision++
		r.s.UpdatedAt = w.now
		res = store.ScheduleUpsertResult{Outcome: store.UpsertUpdated, Revision: r.s.Revision}
		return w.saveSchedule(r)
	})
	return res, err
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// ScheduleRemove deletes a Recurring Schedule and its occurrence records
// (store.Schedules); the jobs it made stay.
func (s *Store) ScheduleRemove(ctx context.Context, p store.ScheduleParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return s.write(ctx, "remove schedule", func(w *wtx) error {
		r, err := w.findSchedule(p.Name)
		if err != nil {
			return err
		}
		if _, err := w.exec(`DELETE FROM backwave_schedule WHERE name = ?`, p.Name); err != nil {
			return err
		}
		if _, err := w.exec(`DELETE FROM backwave_occurrence WHERE schedule = ?`, p.Name); err != nil {
			return err
		}
		if _, err := w.exec(`UPDATE backwave_job SET schedule_name = '' WHERE schedule_name = ?`, p.Name); err != nil {
			return err
		}
		return w.record(p.Actor, store.AuditScheduleRemove, 0, r.s.Template.Queue, store.ScheduleDetail(p.Name))
	})
}

// SchedulePause stops a schedule minting (store.Schedules).
func (s *Store) SchedulePause(ctx context.Context, p store.ScheduleParams) error {
	return s.setPaused(ctx, p, true)
}

// ScheduleResume lets a paused schedule mint again, from now
// (store.Schedules).
func (s *Store) ScheduleResume(ctx context.Context, p store.ScheduleParams) error {
	return s.setPaused(ctx, p, false)
}

func (s *Store) setPaused(ctx context.Context, p store.ScheduleParams, paused bool) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return s.write(ctx, "pause schedule", func(w *wtx) error {
		r, err := w.findSchedule(p.Name)
		if err != nil {
			return err
		}
		action := store.AuditScheduleResume
		if paused {
			action = store.AuditSchedulePause
		}
		if err := w.record(p.Actor, action, 0, r.s.Template.Queue, store.ScheduleDetail(p.Name)); err != nil {
			return err
		}
		if r.s.Paused == paused {
			return nil
		}
		r.s.Paused = paused
		if !paused {
			r.s.Cursor = latest(r.s.Cursor, w.now)
		}
		r.s.Revision++
		r.s.UpdatedAt = w.now
		return w.saveSchedule(r)
	})
}

// instanceLive reports whether the schedule's last job is live.
func instanceLive(ctx context.Context, q querier, last job.ID) (bool, job.State, error) {
	if last == 0 {
		return false, job.StateUnknown, nil
	}
	var st int64
	err := q.QueryRowContext(ctx, `SELECT state FROM backwave_job WHERE id = ?`, int64(last)).Scan(&st)
	if errors.Is(err, sql.ErrNoRows) {
		return false, job.StateUnknown, nil
	}
	if err != nil {
		return false, job.StateUnknown, err
	}
	state, err := decode(stateCodes, "state", st)
	return err == nil && state.Live(), state, err
}

// insertFor inserts the schedule's job for the occurrence at at (zero: now).
func (w *wtx) insertFor(r *schedRow, at time.Time) (job.ID, string, error) {
	nj := r.s.NewJob(at)
	res, err := w.insertMany(store.InsertManyParams{Jobs: []store.NewJob{nj}}, 0)
	if err != nil {
		return 0, "", err
	}
	id := res[0].ID
	if _, err := w.exec(`UPDATE backwave_job SET schedule_name = ? WHERE id = ?`, r.s.Name, int64(id)); err != nil {
		return 0, "", err
	}
	return id, nj.Queue, nil
}

// note appends an occurrence record.
func (w *wtx) note(o store.Occurrence, keyed bool) error {
	w.occSeq++
	var atKey any
	if keyed {
		atKey = micros(o.At)
	}
	_, err := w.exec(`INSERT INTO backwave_occurrence (seq, schedule, kind, at, first, reason, job_id, actor, recorded_at, at_key)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, w.occSeq, o.Schedule, int64(o.Kind), micros(o.At), micros(o.First),
		int64(o.Reason), int64(o.Job), string(o.Actor), micros(w.now), atKey)
	if err != nil {
		return fmt.Errorf("schedule %q: record occurrence: %w", o.Schedule, err)
	}
	return nil
}

// ScheduleTrigger makes one job of the schedule now (store.Schedules).
func (s *Store) ScheduleTrigger(ctx context.Context, p store.ScheduleTriggerParams) (job.ID, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	var id job.ID
	err := s.write(ctx, "trigger schedule", func(w *wtx) error {
		r, err := w.findSchedule(p.Name)
		if err != nil {
			return err
		}
		if r.s.NoOverlap {
			live, st, err := instanceLive(w.ctx, w.tx, r.s.LastJob)
			if err != nil {
				return err
			}
			if live {
				return fmt.Errorf("trigger schedule %q: job %d is %s: %w", p.Name, r.s.LastJob, st, store.ErrOverlap)
			}
		}
		var queue string
		if id, queue, err = w.insertFor(r, time.Time{}); err != nil {
			return err
		}
		if err := w.note(store.Occurrence{Schedule: p.Name, Kind: store.OccurrenceTriggered, At: w.now, First: w.now,
			Job: id, Actor: p.Actor.OrSystem()}, false); err != nil {
			return err
		}
		r.s.LastJob = id
		r.s.Revision++
		if err := w.saveSchedule(r); err != nil {
			return err
		}
		return w.record(p.Actor, store.AuditScheduleTrigger, id, queue, store.ScheduleDetail(p.Name))
	})
	return id, err
}

// ScheduleList returns every schedule, ordered by name, with the store's
// now (store.Schedules).
func (s *Store) ScheduleList(ctx context.Context) (store.ScheduleListResult, error) {
	var res store.ScheduleListResult
	err := s.read(ctx, "list schedules", func(q querier, now time.Time) error {
		res = store.ScheduleListResult{Now: now, Schedules: []store.Schedule{}}
		rows, err := q.QueryContext(ctx, `SELECT `+schedCols+` FROM backwave_schedule ORDER BY name`)
		if err != nil {
			return err
		}
		for rows.Next() {
			r, err := scanSchedule(rows)
			if err != nil {
				_ = rows.Close()
				return err
			}
			res.Schedules = append(res.Schedules, r.s)
		}
		_ = rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for i := range res.Schedules {
			live, _, err := instanceLive(ctx, q, res.Schedules[i].LastJob)
			if err != nil {
				return err
			}
			res.Schedules[i].InstanceLive = live
		}
		return nil
	})
	return res, err
}

// ScheduleMint applies the Core's mint plans, each fenced by the
// schedule's revision (store.Schedules).
func (s *Store) ScheduleMint(ctx context.Context, p store.MintParams) ([]store.MintResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var out []store.MintResult
	err := s.write(ctx, "mint", func(w *wtx) error {
		out = make([]store.MintResult, len(p.Plans))
		for i, pl := range p.Plans {
			out[i] = store.MintResult{Schedule: pl.Schedule}
			r, err := w.schedule(pl.Schedule)
			if err != nil {
				return err
			}
			if r == nil || r.s.Revision != pl.Revision {
				continue
			}
			out[i].Applied = true
			for _, m := range pl.Mints {
				if taken, err := w.taken(pl.Schedule, m.At); err != nil || taken {
					if err != nil {
						return err
					}
					continue
				}
				id, queue, err := w.insertFor(r, m.At)
				if err != nil {
					return err
				}
				kind := store.OccurrenceMinted
				if m.MakeUp {
					kind = store.OccurrenceMadeUp
				}
				if err := w.note(store.Occurrence{Schedule: pl.Schedule, Kind: kind, At: m.At, First: m.At, Job: id}, true); err != nil {
					return err
				}
				r.s.LastJob = id
				out[i].Jobs = append(out[i].Jobs, store.MintedJob{ID: id, At: m.At, MakeUp: m.MakeUp, Queue: queue, DueNow: !m.At.After(w.now)})
			}
			skipped := false
			for _, sk := range pl.Skips {
				if taken, err := w.taken(pl.Schedule, sk.At); err != nil || taken {
					if err != nil {
						return err
					}
					continue
				}
				if err := w.note(store.Occurrence{Schedule: pl.Schedule, Kind: store.OccurrenceSkipped, At: sk.At, First: sk.First, Reason: sk.Reason}, true); err != nil {
					return err
				}
				skipped = true
			}
			if skipped {
				if _, err := w.exec(`DELETE FROM backwave_occurrence WHERE schedule = ? AND kind = ? AND seq <= (
					SELECT seq FROM (SELECT seq FROM backwave_occurrence WHERE schedule = ? AND kind = ? ORDER BY seq DESC LIMIT 1 OFFSET ?) x)`,
					pl.Schedule, int64(store.OccurrenceSkipped), pl.Schedule, int64(store.OccurrenceSkipped), store.MaxSkipRecords); err != nil {
					return fmt.Errorf("schedule %q: trim skips: %w", pl.Schedule, err)
				}
			}
			r.s.Cursor = latest(r.s.Cursor, pl.Cursor)
			r.s.Revision++
			if err := w.saveSchedule(r); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// taken reports whether the schedule has a record of the occurrence at at.
func (w *wtx) taken(schedule string, at time.Time) (bool, error) {
	var one int
	err := w.row(`SELECT 1 FROM backwave_occurrence WHERE schedule = ? AND at_key = ?`, schedule, micros(at)).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// ScheduleOccurrences lists a schedule's occurrence records, newest first
// (store.Schedules).
func (s *Store) ScheduleOccurrences(ctx context.Context, p store.OccurrenceListParams) ([]store.Occurrence, error) {
	out := []store.Occurrence{}
	err := s.read(ctx, "occurrences", func(q querier, _ time.Time) error {
		var b strings.Builder
		args := []any{p.Schedule}
		b.WriteString(`SELECT seq, kind, at, first, reason, job_id, actor, recorded_at FROM backwave_occurrence WHERE schedule = ?`)
		if p.BeforeSeq > 0 {
			b.WriteString(` AND seq < ?`)
			args = append(args, p.BeforeSeq)
		}
		if len(p.Kinds) > 0 {
			b.WriteString(` AND kind IN (`)
			for i, k := range p.Kinds {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteByte('?')
				args = append(args, int64(k))
			}
			b.WriteString(`)`)
		}
		b.WriteString(` ORDER BY seq DESC LIMIT ?`)
		args = append(args, p.PageLimit())
		rows, err := q.QueryContext(ctx, b.String(), args...)
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			o := store.Occurrence{Schedule: p.Schedule}
			var kind, reason, at, first, jid, rec int64
			var actor string
			if err := rows.Scan(&o.Seq, &kind, &at, &first, &reason, &jid, &actor, &rec); err != nil {
				return err
			}
			o.Kind, o.Reason = store.OccurrenceKind(kind), core.SkipReason(reason)
			o.At, o.First, o.Job, o.Actor, o.RecordedAt = fromMicros(at), fromMicros(first), job.ID(jid), store.Actor(actor), fromMicros(rec)
			out = append(out, o)
		}
		return rows.Err()
	})
	return out, err
}

// sameBytes compares stored bytes with the expected old value.
func sameBytes(a, b []byte) bool { return bytes.Equal(a, b) }
