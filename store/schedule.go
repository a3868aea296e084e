package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/core/cron"
	"github.com/backwave/backwave/job"
)

// ErrOverlap: a Recurring Schedule with No-Overlap was asked to make a job
// while a job it made earlier is still non-terminal. Nothing was written.
var ErrOverlap = errors.New("store: a live instance of the schedule blocks it (No-Overlap)")

// Schedules keeps Recurring Schedules durably and mints their jobs. A
// Recurring Schedule is a cron-defined template; the jobs it mints are
// ordinary jobs with a lifecycle of their own.
//
// # Minting
//
// A node's maintenance beat loads every schedule with ScheduleList, the
// Core plans what each one mints (core.PlanMint) and ScheduleMint applies
// the plans. A plan applies only to the schedule revision it was made
// from, so two nodes planning from the same load mint once; and a job is
// minted at most once per (schedule, occurrence instant), enforced by a
// unique key, so no interleaving mints an occurrence twice.
//
// # Every change is a revision
//
// Upsert (when it changes the definition), remove, pause, resume, trigger
// and an applied mint each bump the schedule's Revision, so a plan made
// before any of them is stale and applies nothing.
type Schedules interface {
	// ScheduleUpsert registers the schedule or replaces the definition of
	// the one with its Name. A new schedule's cursor is the store's now:
	// it never makes up for the time before it existed. The definition is
	// stored normalized (ScheduleDef.Normalize). Replacing keeps the cursor
	// and the paused flag; if the Spec or Zone changed the cursor moves up
	// to the store's now (ScheduleDef.MovesCursorFrom), so the new
	// timetable does not count the past as missed. Upserting an identical
	// definition (ScheduleDef.SameDefinition) writes nothing, so a
	// declarative set registered at every start changes nothing.
	ScheduleUpsert(ctx context.Context, p ScheduleUpsertParams) (ScheduleUpsertResult, error)

	// ScheduleRemove deletes the schedule and its occurrence records; the
	// jobs it minted stay. Audited (AuditScheduleRemove). ErrNotFound if
	// there is no such schedule.
	ScheduleRemove(ctx context.Context, p ScheduleParams) error

	// SchedulePause stops the schedule from minting. Audited
	// (AuditSchedulePause); pausing a paused schedule changes nothing but
	// the audit trail. ErrNotFound if there is no such schedule.
	SchedulePause(ctx context.Context, p ScheduleParams) error

	// ScheduleResume lets a paused schedule mint again, from the store's
	// now: occurrences while it was paused are not missed, they are
	// dropped. Audited (AuditScheduleResume); resuming a running schedule
	// changes nothing but the audit trail. ErrNotFound if there is no such
	// schedule.
	ScheduleResume(ctx context.Context, p ScheduleParams) error

	// ScheduleTrigger is the Operator Action "trigger a Recurring Schedule
	// now": it inserts one job from the template (ScheduleDef.NewJob), due
	// at the store's now, records the trigger with its Actor as an
	// occurrence record and in the audit trail (AuditScheduleTrigger), and
	// makes the job the schedule's latest instance. It works on a paused
	// schedule too. A schedule with No-Overlap whose latest instance is
	// non-terminal refuses with ErrOverlap. ErrNotFound if there is no such
	// schedule.
	ScheduleTrigger(ctx context.Context, p ScheduleTriggerParams) (job.ID, error)

	// ScheduleList returns every schedule, ordered by name, with the
	// store's now read in the same snapshot: what a maintenance beat plans
	// from, and what the Monitor shows.
	ScheduleList(ctx context.Context) (ScheduleListResult, error)

	// ScheduleMint applies mint plans, each atomically and independently,
	// and answers each in input order. A plan whose schedule is gone or
	// whose Revision is no longer the stored one is stale: nothing is
	// written. An applied plan, in one step: inserts a job from the
	// template for each Mint (ScheduleDef.NewJob), due at Mint.At, with the
	// schedule's Tags plus the Keyed Tag ScheduleTagKey→name, unless the
	// (schedule,
	// Mint.At) occurrence already has a record (then that Mint makes no
	// job); records each Mint and Skip as an occurrence record; moves the
	// cursor to the plan's Cursor (never backwards); makes the last job
	// minted the latest instance; and bumps the Revision. Of the skip
	// records, only the newest MaxSkipRecords per schedule are kept.
	ScheduleMint(ctx context.Context, p MintParams) ([]MintResult, error)

	// ScheduleOccurrences lists a schedule's occurrence records — minted,
	// made up, skipped, triggered — newest first, one page at a time
	// (keyset pagination on Seq). It answers an empty list for an unknown
	// schedule.
	ScheduleOccurrences(ctx context.Context, p OccurrenceListParams) ([]Occurrence, error)
}

// ScheduleTagKey is the key of the Keyed Tag every minted or triggered job
// carries, valued with its schedule's name.
const ScheduleTagKey = "schedule"

// MaxSkipRecords is how many skip records a store keeps per schedule; older
// ones are deleted as new ones are written.
const MaxSkipRecords = 100

// JobTemplate is what each job a Recurring Schedule makes is made from.
type JobTemplate struct {
	WireName string
	Queue    string
	// Payload is the encoded job arguments, opaque to the store.
	Payload     []byte
	MaxAttempts int
	Tags        []job.Tag
}

// ScheduleDef is the definition of a Recurring Schedule: what a user
// registers.
type ScheduleDef struct {
	// Name identifies the schedule.
	Name string
	// Spec is the cron expression (package core/cron).
	Spec string
	// Zone is the IANA time zone name the Spec is read in; empty means
	// UTC. Stores check only its form; loading it is the caller's.
	Zone      string
	Template  JobTemplate
	CatchUp   core.CatchUpPolicy
	NoOverlap bool
}

// Normalize returns the definition as every store keeps it: the template's
// Tags as a set (job.NormalizeTags) and an empty Payload as none. A
// definition is stored normalized, so SameDefinition between a stored one
// and a normalized new one decides whether an upsert writes anything.
func (d ScheduleDef) Normalize() ScheduleDef {
	d.Template.Tags = job.NormalizeTags(d.Template.Tags)
	if len(d.Template.Payload) == 0 {
		d.Template.Payload = nil
	}
	return d
}

// SameDefinition reports whether d and other define the same schedule:
// every field equal once normalized (Tags compared as sets; a nil and an
// empty Payload alike, as no store keeps either). ScheduleUpsert of a
// definition that is the same as the stored one writes nothing.
func (d *ScheduleDef) SameDefinition(other *ScheduleDef) bool {
	a, b := &d.Template, &other.Template
	return d.Name == other.Name && d.Spec == other.Spec && d.Zone == other.Zone && d.CatchUp == other.CatchUp &&
		d.NoOverlap == other.NoOverlap && a.WireName == b.WireName && a.Queue == b.Queue &&
		a.MaxAttempts == b.MaxAttempts && bytes.Equal(a.Payload, b.Payload) &&
		slices.Equal(job.NormalizeTags(a.Tags), job.NormalizeTags(b.Tags))
}

// MovesCursorFrom reports whether replacing the definition old by d moves
// the schedule's cursor up to the store's now (never backwards): it does
// when the Spec or the Zone changed, so the new timetable does not count
// the past as missed. Any other change keeps the cursor.
func (d *ScheduleDef) MovesCursorFrom(old *ScheduleDef) bool {
	return d.Spec != old.Spec || d.Zone != old.Zone
}

// NewJob is the job the schedule makes for an occurrence due at at (zero:
// the store's now), for ScheduleMint and ScheduleTrigger alike: the
// template, with the template's Tags plus the Keyed Tag ScheduleTagKey→Name
// as a set.
func (d *ScheduleDef) NewJob(at time.Time) NewJob {
	return NewJob{
		WireName:    d.Template.WireName,
		Queue:       d.Template.Queue,
		Payload:     d.Template.Payload,
		ScheduledAt: at,
		MaxAttempts: d.Template.MaxAttempts,
		Tags:        job.MergeTags(d.Template.Tags, []job.Tag{job.Keyed(ScheduleTagKey, d.Name)}),
	}
}

// Schedule is a stored Recurring Schedule.
type Schedule struct {
	ScheduleDef
	Paused bool
	// Revision counts the schedule's changes; see Schedules.
	Revision int64
	// Cursor is the last occurrence instant the schedule has dealt with.
	Cursor time.Time
	// LastJob is the latest job the schedule minted or an operator
	// triggered (0 if none, or if retention purged it).
	LastJob job.ID
	// InstanceLive is true while LastJob is non-terminal.
	InstanceLive bool
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// State returns what the mint planner needs of the schedule.
func (s *Schedule) State() core.ScheduleState {
	return core.ScheduleState{
		Name:         s.Name,
		Revision:     s.Revision,
		Cursor:       s.Cursor,
		CatchUp:      s.CatchUp,
		NoOverlap:    s.NoOverlap,
		Paused:       s.Paused,
		InstanceLive: s.InstanceLive,
	}
}

// ScheduleUpsertParams are the params of Schedules.ScheduleUpsert.
type ScheduleUpsertParams struct {
	Schedule ScheduleDef
}

// UpsertOutcome says what a ScheduleUpsert did.
type UpsertOutcome uint8

const (
	// UpsertCreated: a new schedule was registered.
	UpsertCreated UpsertOutcome = iota + 1
	// UpsertUpdated: the definition changed.
	UpsertUpdated
	// UpsertUnchanged: the stored definition was identical; nothing was
	// written.
	UpsertUnchanged
)

// String names the outcome.
func (o UpsertOutcome) String() string {
	switch o {
	case UpsertCreated:
		return "created"
	case UpsertUpdated:
		return "updated"
	case UpsertUnchanged:
		return "unchanged"
	}
	return "upsert_outcome(" + strconv.Itoa(int(o)) + ")"
}

// ScheduleUpsertResult reports a ScheduleUpsert.
type ScheduleUpsertResult struct {
	Outcome  UpsertOutcome
	Revision int64
}

// ScheduleParams name one schedule and who acts on it: remove, pause and
// resume are audited Operator Actions.
type ScheduleParams struct {
	Name  string
	Actor Actor
}

// ScheduleTriggerParams are the params of Schedules.ScheduleTrigger.
type ScheduleTriggerParams struct {
	Name string
	// Actor is the recorded identity of whoever triggered it.
	Actor Actor
}

// ScheduleDetail is the audit Detail of an action on schedule name.
func ScheduleDetail(name string) string { return "schedule " + name }

// ScheduleListResult is what ScheduleList reads.
type ScheduleListResult struct {
	// Now is the store's clock at the read.
	Now       time.Time
	Schedules []Schedule
}

// MintParams are the params of Schedules.ScheduleMint.
type MintParams struct {
	Plans []core.MintPlan
}

// MintResult answers one plan of a ScheduleMint.
type MintResult struct {
	Schedule string
	// Applied is false for a stale plan, which wrote nothing.
	Applied bool
	// Jobs are the jobs the plan inserted, in plan order.
	Jobs []MintedJob
}

// MintedJob is one job a mint inserted.
type MintedJob struct {
	ID     job.ID
	At     time.Time
	MakeUp bool
	Queue  string
	// DueNow is true when the job was due at the store's clock when it
	// was inserted (an occurrence minted at or after its instant).
	DueNow bool
}

// OccurrenceKind says what became of one occurrence of a schedule.
type OccurrenceKind uint8

const (
	// OccurrenceMinted: a job was minted for it.
	OccurrenceMinted OccurrenceKind = iota + 1
	// OccurrenceMadeUp: the one make-up job of a missed span (CatchUpCoalesce).
	OccurrenceMadeUp
	// OccurrenceSkipped: no job; Reason says why.
	OccurrenceSkipped
	// OccurrenceTriggered: an operator triggered the schedule; At is when.
	OccurrenceTriggered
)

var occurrenceKindNames = [...]string{
	OccurrenceMinted: "minted", OccurrenceMadeUp: "made_up",
	OccurrenceSkipped: "skipped", OccurrenceTriggered: "triggered",
}

// String returns the stored name of the kind.
func (k OccurrenceKind) String() string {
	if int(k) < len(occurrenceKindNames) && occurrenceKindNames[k] != "" {
		return occurrenceKindNames[k]
	}
	return "occurrence_kind(" + strconv.Itoa(int(k)) + ")"
}

// ParseOccurrenceKind is the inverse of OccurrenceKind.String.
func ParseOccurrenceKind(s string) (OccurrenceKind, error) {
	for k, name := range occurrenceKindNames {
		if name != "" && name == s {
			return OccurrenceKind(k), nil
		}
	}
	return 0, fmt.Errorf("store: unknown occurrence kind %q", s)
}

// Occurrence is one occurrence record of a schedule.
type Occurrence struct {
	// Seq orders the records of one store: a later record has a larger
	// Seq.
	Seq      int64
	Schedule string
	Kind     OccurrenceKind
	// At is the occurrence instant (the last of a span; the trigger's time
	// for OccurrenceTriggered) and First the span's first occurrence
	// (equal to At for one occurrence).
	At    time.Time
	First time.Time
	// Reason says why an OccurrenceSkipped made no job.
	Reason core.SkipReason
	// Job is the job made (0 for a skip).
	Job job.ID
	// Actor is who triggered an OccurrenceTriggered.
	Actor      Actor
	RecordedAt time.Time
}

// OccurrenceListParams filter and page Schedules.ScheduleOccurrences.
type OccurrenceListParams struct {
	Schedule string
	// Kinds, if non-empty, keeps records of these kinds.
	Kinds []OccurrenceKind
	// BeforeSeq, if non-zero, keeps records with a smaller Seq (the keyset
	// cursor: the last Seq of the previous page).
	BeforeSeq int64
	// Limit is the page size; 0 means 100.
	Limit int
}

// PageLimit returns the effective page size.
func (p OccurrenceListParams) PageLimit() int {
	if p.Limit <= 0 {
		return 100
	}
	return min(p.Limit, 10_000)
}

// MaxZoneLen bounds a schedule's Zone, in bytes.
const MaxZoneLen = 64

// Validate checks a schedule definition: a valid Name, a Spec that parses,
// a Zone of IANA form, a valid template and a known Catch-Up Policy. Each
// error names the field and wraps ErrInvalidParams.
func (d *ScheduleDef) Validate() error {
	if err := ValidateName("schedule name", d.Name); err != nil {
		return fmt.Errorf("schedule: Name: %w", err)
	}
	if err := ValidateCron(d.Spec); err != nil {
		return fmt.Errorf("schedule %q: Spec: %w", d.Name, err)
	}
	if err := ValidateZoneName(d.Zone); err != nil {
		return fmt.Errorf("schedule %q: Zone: %w", d.Name, err)
	}
	t := &d.Template
	if err := ValidateName("wire name", t.WireName); err != nil {
		return fmt.Errorf("schedule %q: Template.WireName: %w", d.Name, err)
	}
	if err := ValidateName("queue", t.Queue); err != nil {
		return fmt.Errorf("schedule %q: Template.Queue: %w", d.Name, err)
	}
	if t.MaxAttempts < 1 {
		return fmt.Errorf("schedule %q: Template.MaxAttempts: %w: %d is below 1", d.Name, ErrInvalidParams, t.MaxAttempts)
	}
	for _, tag := range t.Tags {
		if err := tag.Validate(); err != nil {
			return fmt.Errorf("schedule %q: Template.Tags: %w: %w", d.Name, ErrInvalidParams, err)
		}
	}
	if d.CatchUp != core.CatchUpSkip && d.CatchUp != core.CatchUpCoalesce {
		return fmt.Errorf("schedule %q: CatchUp: %w: unknown policy %s", d.Name, ErrInvalidParams, d.CatchUp)
	}
	return nil
}

// ValidateZoneName checks the form of an IANA time zone name ("" is UTC):
// at most MaxZoneLen bytes of ASCII letters, digits and "/_-+", not starting
// or ending with "/" and with no "..", and not "Local", the zone of
// whichever process reads it. Whether the zone exists is for the
// caller, who can load zone data, to check.
func ValidateZoneName(zone string) error {
	if zone == "" {
		return nil
	}
	bad := func(why string) error {
		return fmt.Errorf("%w: time zone %s %s", ErrInvalidParams, Echo(zone), why)
	}
	if zone == "Local" {
		return bad("is the zone of whichever process reads it, so minted times would depend on the node: give an IANA name (Europe/Paris) or UTC")
	}
	if len(zone) > MaxZoneLen {
		return bad("is longer than " + strconv.Itoa(MaxZoneLen) + " bytes")
	}
	for _, c := range []byte(zone) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '/' || c == '_' || c == '-' || c == '+') {
			return bad("is not an IANA zone name (letters, digits and /_-+)")
		}
	}
	if zone[0] == '/' || zone[len(zone)-1] == '/' || containsDotDot(zone) {
		return bad("is not an IANA zone name")
	}
	return nil
}

// ValidateCron checks a cron expression as cron.Parse does; the error wraps
// ErrInvalidParams and cron.ErrInvalid and repeats the expression clipped
// (Echo), whatever its length.
func ValidateCron(spec string) error {
	_, err := cron.Parse(spec)
	if err == nil {
		return nil
	}
	why, ok := strings.CutPrefix(err.Error(), fmt.Sprintf("%v %q: ", cron.ErrInvalid, spec))
	if !ok {
		why = "does not parse"
	}
	return fmt.Errorf("%w: %w %s: %s", ErrInvalidParams, cron.ErrInvalid, Echo(spec), ClipText(why, 4*MaxEchoBytes))
}

func containsDotDot(s string) bool {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '.' && s[i+1] == '.' {
			return true
		}
	}
	return false
}

// Validate checks the params of ScheduleUpsert.
func (p ScheduleUpsertParams) Validate() error { return p.Schedule.Validate() }

// Validate checks the params of the calls that name one schedule.
func (p ScheduleParams) Validate() error {
	if err := ValidateName("schedule name", p.Name); err != nil {
		return err
	}
	return p.Actor.Validate()
}

// Validate checks the params of ScheduleTrigger.
func (p ScheduleTriggerParams) Validate() error {
	if err := ValidateName("schedule name", p.Name); err != nil {
		return err
	}
	return p.Actor.Validate()
}

// Validate checks the params of ScheduleMint: each plan names a schedule,
// mints and skips nothing after its Cursor, and holds at most one make-up
// job.
func (p MintParams) Validate() error {
	for i, pl := range p.Plans {
		if err := ValidateName("schedule name", pl.Schedule); err != nil {
			return fmt.Errorf("plan %d: %w", i, err)
		}
		makeUps := 0
		for _, m := range pl.Mints {
			if m.At.IsZero() || m.At.After(pl.Cursor) {
				return fmt.Errorf("%w: plan %d for %q mints at %v, beyond its cursor %v", ErrInvalidParams, i, pl.Schedule, m.At, pl.Cursor)
			}
			if m.MakeUp {
				makeUps++
			}
		}
		if makeUps > 1 {
			return fmt.Errorf("%w: plan %d for %q holds %d make-up jobs (Coalesce mints exactly one)", ErrInvalidParams, i, pl.Schedule, makeUps)
		}
		for _, s := range pl.Skips {
			if s.At.IsZero() || s.At.After(pl.Cursor) || s.First.After(s.At) {
				return fmt.Errorf("%w: plan %d for %q skips %v..%v, beyond its cursor %v", ErrInvalidParams, i, pl.Schedule, s.First, s.At, pl.Cursor)
			}
			if s.Reason != core.SkipOverlap && s.Reason != core.SkipMissed {
				return fmt.Errorf("%w: plan %d for %q skips for reason %s", ErrInvalidParams, i, pl.Schedule, s.Reason)
			}
		}
	}
	return nil
}
