package memstore

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/backwave/backwave/internal/plant"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// schedule is one stored Recurring Schedule with its occurrence records.
type schedule struct {
	s store.Schedule // InstanceLive is computed at read, not stored
	// occ are the occurrence records, oldest first.
	occ []store.Occurrence
	// taken holds the occurrence instants (Unix microseconds) that have a
	// record other than a trigger: the unique key of minting.
	taken map[int64]bool
}

func (sc *schedule) clone() *schedule {
	c := &schedule{s: sc.s, occ: slices.Clone(sc.occ), taken: make(map[int64]bool, len(sc.taken))}
	c.s.Template = copyTemplate(sc.s.Template)
	for k := range sc.taken {
		c.taken[k] = true
	}
	return c
}

func copyTemplate(t store.JobTemplate) store.JobTemplate {
	t.Payload = bytes.Clone(t.Payload)
	t.Tags = slices.Clone(t.Tags)
	return t
}

// occKey is the unique key of an occurrence instant: the SQL adapters store
// instants to the microsecond.
func occKey(t time.Time) int64 { return t.UnixMicro() }

// findSchedule returns the named schedule or an error wrapping
// store.ErrNotFound. The caller holds s.mu.
func (s *Store) findSchedule(name string) (*schedule, error) {
	sc := s.schedules[name]
	if sc == nil {
		return nil, fmt.Errorf("memstore: schedule %q: %w", name, store.ErrNotFound)
	}
	return sc, nil
}

// ScheduleUpsert registers the schedule or replaces its definition; see
// store.Schedules.
func (s *Store) ScheduleUpsert(ctx context.Context, p store.ScheduleUpsertParams) (store.ScheduleUpsertResult, error) {
	if err := p.Validate(); err != nil {
		return store.ScheduleUpsertResult{}, err
	}
	if err := s.lock(ctx); err != nil {
		return store.ScheduleUpsertResult{}, err
	}
	defer s.mu.Unlock()
	now := s.clock.Now()
	def := p.Schedule.Normalize()
	def.Template = copyTemplate(def.Template)
	sc := s.schedules[def.Name]
	if sc == nil {
		sc = &schedule{taken: map[int64]bool{}, s: store.Schedule{
			ScheduleDef: def, Revision: 1, Cursor: now, CreatedAt: now, UpdatedAt: now,
		}}
		s.schedules[def.Name] = sc
		return store.ScheduleUpsertResult{Outcome: store.UpsertCreated, Revision: 1}, nil
	}
	if sc.s.SameDefinition(&def) {
		return store.ScheduleUpsertResult{Outcome: store.UpsertUnchanged, Revision: sc.s.Revision}, nil
	}
	if def.MovesCursorFrom(&sc.s.ScheduleDef) {
		sc.s.Cursor = latest(sc.s.Cursor, now)
	}
	sc.s.ScheduleDef = def
	sc.s.Revision++
	sc.s.UpdatedAt = now
	return store.ScheduleUpsertResult{Outcome: store.UpsertUpdated, Revision: sc.s.Revision}, nil
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// ScheduleRemove deletes the schedule and its occurrence records.
func (s *Store) ScheduleRemove(ctx context.Context, p store.ScheduleParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	sc, err := s.findSchedule(p.Name)
	if err != nil {
		return err
	}
	delete(s.schedules, p.Name)
	s.record(s.clock.Now(), p.Actor, store.AuditScheduleRemove, 0, sc.s.Template.Queue, store.ScheduleDetail(p.Name))
	return nil
}

// SchedulePause stops the schedule from minting.
func (s *Store) SchedulePause(ctx context.Context, p store.ScheduleParams) error {
	return s.setPaused(ctx, p, true)
}

// ScheduleResume lets the schedule mint again, from the store's now.
func (s *Store) ScheduleResume(ctx context.Context, p store.ScheduleParams) error {
	return s.setPaused(ctx, p, false)
}

func (s *Store) setPaused(ctx context.Context, p store.ScheduleParams, paused bool) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	sc, err := s.findSchedule(p.Name)
	if err != nil {
		return err
	}
	now := s.clock.Now()
	action := store.AuditScheduleResume
	if paused {
		action = store.AuditSchedulePause
	}
	s.record(now, p.Actor, action, 0, sc.s.Template.Queue, store.ScheduleDetail(p.Name))
	if sc.s.Paused == paused {
		return nil
	}
	sc.s.Paused = paused
	if !paused {
		sc.s.Cursor = latest(sc.s.Cursor, now)
	}
	sc.s.Revision++
	sc.s.UpdatedAt = now
	return nil
}

// instanceLive reports whether the schedule's latest job is non-terminal.
// The caller holds s.mu.
func (s *Store) instanceLive(sc *schedule) bool {
	r := s.row(sc.s.LastJob)
	return r != nil && r.job.State.Live()
}

// ScheduleTrigger inserts one job from the template, due now, as an
// Operator Action; see store.Schedules.
func (s *Store) ScheduleTrigger(ctx context.Context, p store.ScheduleTriggerParams) (job.ID, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	var hints []string
	defer func() { s.hints.Announce(hints) }() // after the unlock below
	if err := s.lock(ctx); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	sc, err := s.findSchedule(p.Name)
	if err != nil {
		return 0, err
	}
	if sc.s.NoOverlap && s.instanceLive(sc) {
		return 0, fmt.Errorf("memstore: trigger schedule %q: job %d is %s: %w",
			p.Name, sc.s.LastJob, s.row(sc.s.LastJob).job.State, store.ErrOverlap)
	}
	now := s.clock.Now()
	var hs hintSet
	r := s.insert(sc.s.NewJob(time.Time{}), now, &hs)
	r.schedule = p.Name
	s.occSeq++
	sc.occ = append(sc.occ, store.Occurrence{
		Seq: s.occSeq, Schedule: p.Name, Kind: store.OccurrenceTriggered,
		At: now, First: now, Job: r.job.ID, Actor: p.Actor.OrSystem(), RecordedAt: now,
	})
	sc.s.LastJob = r.job.ID
	sc.s.Revision++
	s.record(now, p.Actor, store.AuditScheduleTrigger, r.job.ID, r.job.Queue, store.ScheduleDetail(p.Name))
	hints = s.hintable(&hs, now)
	return r.job.ID, nil
}

// ScheduleList returns every schedule by name, and the store's now.
func (s *Store) ScheduleList(ctx context.Context) (store.ScheduleListResult, error) {
	if err := s.lock(ctx); err != nil {
		return store.ScheduleListResult{}, err
	}
	defer s.mu.Unlock()
	res := store.ScheduleListResult{Now: s.clock.Now(), Schedules: make([]store.Schedule, 0, len(s.schedules))}
	for _, sc := range s.schedules {
		out := sc.s
		out.Template = copyTemplate(out.Template)
		out.InstanceLive = s.instanceLive(sc)
		res.Schedules = append(res.Schedules, out)
	}
	slices.SortFunc(res.Schedules, func(a, b store.Schedule) int { return strings.Compare(a.Name, b.Name) })
	return res, nil
}

// ScheduleMint applies mint plans; see store.Schedules.
func (s *Store) ScheduleMint(ctx context.Context, p store.MintParams) ([]store.MintResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var hints []string
	defer func() { s.hints.Announce(hints) }() // after the unlock below
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	now := s.clock.Now()
	var hs hintSet
	out := make([]store.MintResult, len(p.Plans))
	for i, pl := range p.Plans {
		out[i] = store.MintResult{Schedule: pl.Schedule}
		sc := s.schedules[pl.Schedule]
		if sc == nil || (sc.s.Revision != pl.Revision && !s.planted(plant.MintIgnoresFence)) {
			continue // stale
		}
		out[i].Applied = true
		for _, m := range pl.Mints {
			key := occKey(m.At)
			if sc.taken[key] && !s.planted(plant.MintIgnoresFence) {
				continue
			}
			sc.taken[key] = true
			r := s.insert(sc.s.NewJob(m.At), now, &hs)
			r.schedule = pl.Schedule
			kind := store.OccurrenceMinted
			if m.MakeUp {
				kind = store.OccurrenceMadeUp
			}
			s.note(sc, store.Occurrence{Kind: kind, At: m.At, First: m.At, Job: r.job.ID}, now)
			sc.s.LastJob = r.job.ID
			out[i].Jobs = append(out[i].Jobs, store.MintedJob{
				ID: r.job.ID, At: m.At, MakeUp: m.MakeUp, Queue: r.job.Queue, DueNow: !m.At.After(now),
			})
		}
		skipped := false
		for _, sk := range pl.Skips {
			key := occKey(sk.At)
			if sc.taken[key] {
				continue
			}
			sc.taken[key] = true
			s.note(sc, store.Occurrence{Kind: store.OccurrenceSkipped, At: sk.At, First: sk.First, Reason: sk.Reason}, now)
			skipped = true
		}
		if skipped {
			s.trimSkips(sc)
		}
		sc.s.Cursor = latest(sc.s.Cursor, pl.Cursor)
		sc.s.Revision++
	}
	hints = s.hintable(&hs, now)
	return out, nil
}

// note appends an occurrence record. The caller holds s.mu.
func (s *Store) note(sc *schedule, o store.Occurrence, now time.Time) {
	s.occSeq++
	o.Seq, o.Schedule, o.RecordedAt = s.occSeq, sc.s.Name, now
	sc.occ = append(sc.occ, o)
}

// trimSkips keeps the newest store.MaxSkipRecords skip records. The caller
// holds s.mu.
func (s *Store) trimSkips(sc *schedule) {
	n := 0
	for _, o := range sc.occ {
		if o.Kind == store.OccurrenceSkipped {
			n++
		}
	}
	drop := n - store.MaxSkipRecords
	if drop <= 0 {
		return
	}
	sc.occ = slices.DeleteFunc(sc.occ, func(o store.Occurrence) bool {
		if drop > 0 && o.Kind == store.OccurrenceSkipped {
			drop--
			delete(sc.taken, occKey(o.At))
			return true
		}
		return false
	})
}

// ScheduleOccurrences lists a schedule's occurrence records, newest first.
func (s *Store) ScheduleOccurrences(ctx context.Context, p store.OccurrenceListParams) ([]store.Occurrence, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	sc := s.schedules[p.Schedule]
	if sc == nil {
		return []store.Occurrence{}, nil
	}
	limit := p.PageLimit()
	out := []store.Occurrence{}
	for i := len(sc.occ) - 1; i >= 0 && len(out) < limit; i-- {
		o := sc.occ[i]
		if (p.BeforeSeq > 0 && o.Seq >= p.BeforeSeq) || (len(p.Kinds) > 0 && !slices.Contains(p.Kinds, o.Kind)) {
			continue
		}
		out = append(out, o)
	}
	return out, nil
}

// forgetJob deletes the occurrence record of a purged job made by a
// schedule. The caller holds s.mu.
func (s *Store) forgetJob(r *row) {
	sc := s.schedules[r.schedule]
	if sc == nil {
		return
	}
	sc.occ = slices.DeleteFunc(sc.occ, func(o store.Occurrence) bool {
		if o.Job != r.job.ID {
			return false
		}
		if o.Kind != store.OccurrenceTriggered {
			delete(sc.taken, occKey(o.At))
		}
		return true
	})
	if sc.s.LastJob == r.job.ID {
		sc.s.LastJob = 0
	}
}
