package backwave

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/core/cron"
	"github.com/backwave/backwave/node"
	"github.com/backwave/backwave/store"
)

// CatchUpPolicy is what a Recurring Schedule does about occurrences missed
// while no node minted them: CatchUpSkip (the default: missed means missed)
// or CatchUpCoalesce (exactly one make-up job for the whole missed span).
// Replaying every missed occurrence is deliberately not offered.
type CatchUpPolicy uint8

// The Catch-Up Policies.
const (
	// CatchUpSkip (the default): missed means missed. The missed span is
	// recorded as one skipped occurrence.
	CatchUpSkip CatchUpPolicy = CatchUpPolicy(core.CatchUpSkip)
	// CatchUpCoalesce mints exactly one make-up job for the whole missed
	// span.
	CatchUpCoalesce CatchUpPolicy = CatchUpPolicy(core.CatchUpCoalesce)
)

// String returns the stored name of the policy: "skip" or "coalesce".
func (p CatchUpPolicy) String() string { return core.CatchUpPolicy(p).String() }

// RetentionPolicy says how long terminal jobs are kept before the
// maintenance beat purges them, with everything stored beside them, in
// bounded batches. Each keep horizon is measured from when a job became
// terminal, on the store's clock.
type RetentionPolicy struct {
	// KeepSucceeded is how long Succeeded and Cancelled jobs are kept.
	KeepSucceeded time.Duration
	// KeepDeadLettered is how long Dead-Lettered and Quarantined jobs are
	// kept: usually longer, since an operator may still requeue them.
	KeepDeadLettered time.Duration
	// Batch bounds how many jobs one purge deletes, in one short
	// transaction (DefaultPurgeBatch if 0).
	Batch int
}

// DefaultPurgeBatch is the RetentionPolicy.Batch used when it is 0.
const DefaultPurgeBatch = node.DefaultPurgeBatch

// ErrInvalidSchedule is wrapped by every error about a Recurring Schedule
// definition; the message names the field at fault.
var ErrInvalidSchedule = errors.New("backwave: invalid recurring schedule")

// RecurringSchedule is a cron-defined template that mints Scheduled jobs as
// time passes. The schedule and the jobs it mints are distinct things: a
// minted job lives on whatever becomes of the schedule. Minting is durable
// and idempotent: the schedule is stored, every Client running Worker Groups
// mints on its maintenance beat, and no occurrence is ever minted twice.
type RecurringSchedule struct {
	// Name identifies the schedule; registering the name again replaces
	// the definition.
	Name string
	// Cron is the cron expression: five fields (minute hour day-of-month
	// month day-of-week), or six with a leading seconds field; or
	// @yearly, @monthly, @weekly, @daily, @hourly, or @every with a Go
	// duration (multiples of it since the Unix epoch). When both day fields
	// are restricted a day matches if either does.
	Cron string
	// Zone is the IANA time zone Cron is read in ("" is UTC); "Local" is
	// refused, as minted times would depend on the minting node. Across
	// daylight saving changes a fixed-time expression fires once right
	// after a skipped local time and once in a repeated one; an expression
	// whose minute or hour is a wildcard follows real time.
	Zone string
	// Args is the job each occurrence mints (its Wire Name, payload and
	// JobOptions).
	Args JobArgs
	// Options adjust the minted jobs as at enqueue: WithQueue,
	// WithMaxAttempts, WithTags. A minted job is due at its occurrence, so
	// WithDelay and WithRunAt are refused.
	Options []EnqueueOption
	// CatchUp is the Catch-Up Policy (CatchUpSkip if zero).
	CatchUp CatchUpPolicy
	// NoOverlap skips an occurrence while a job the schedule made earlier
	// is still non-terminal, recording the skip as an occurrence record.
	NoOverlap bool
}

// def checks the schedule and turns it into the stored definition. Errors
// wrap ErrInvalidSchedule and name the field.
func (c *Client) scheduleDef(s RecurringSchedule) (store.ScheduleDef, error) {
	bad := func(field string, err error) (store.ScheduleDef, error) {
		return store.ScheduleDef{}, fmt.Errorf("%w %s: %s: %w", ErrInvalidSchedule, store.Echo(s.Name), field, err)
	}
	if err := store.ValidateName("schedule name", s.Name); err != nil {
		return bad("Name", err)
	}
	if err := store.ValidateCron(s.Cron); err != nil {
		return bad("Cron", err)
	}
	if err := store.ValidateZoneName(s.Zone); err != nil {
		return bad("Zone", err)
	}
	if _, err := time.LoadLocation(s.Zone); err != nil {
		return bad("Zone", fmt.Errorf("unknown time zone %s (not in the IANA zone database)", store.Echo(s.Zone)))
	}
	if s.Args == nil {
		return bad("Args", errors.New("no job args"))
	}
	var probe enqueueSettings
	for _, o := range s.Options {
		if o != nil {
			o(&probe)
		}
	}
	if probe.hasDelay || !probe.runAt.IsZero() {
		return bad("Options", errors.New("a minted job is due at its occurrence: WithDelay and WithRunAt do not apply"))
	}
	nj, err := c.newJob(s.Args, s.Options, 1)
	if err != nil {
		return bad("Args", err)
	}
	if len(nj.Dependency.Parents) > 0 {
		return bad("Options", errors.New("a minted job has no Dependency parents"))
	}
	if s.CatchUp != CatchUpSkip && s.CatchUp != CatchUpCoalesce {
		return bad("CatchUp", fmt.Errorf("unknown policy %s", s.CatchUp))
	}
	d := store.ScheduleDef{
		Name: s.Name, Spec: s.Cron, Zone: s.Zone, CatchUp: core.CatchUpPolicy(s.CatchUp), NoOverlap: s.NoOverlap,
		Template: store.JobTemplate{
			WireName: nj.WireName, Queue: nj.Queue, Payload: nj.Payload, MaxAttempts: nj.MaxAttempts, Tags: nj.Tags,
		},
	}
	if err := d.Validate(); err != nil {
		return store.ScheduleDef{}, fmt.Errorf("%w: %w", ErrInvalidSchedule, err)
	}
	return d, nil
}

// RegisterSchedule stores the Recurring Schedule, or replaces the
// definition of the one with its Name. A new schedule mints from now on;
// replacing one keeps what it minted and, unless Cron or Zone changed, where
// it is. Registering an identical definition changes nothing. An invalid
// definition (a malformed Cron, an unknown Zone, args that do not encode)
// is an error wrapping ErrInvalidSchedule that names the field.
func (c *Client) RegisterSchedule(ctx context.Context, s RecurringSchedule) error {
	d, err := c.scheduleDef(s)
	if err != nil {
		return err
	}
	return c.upsertSchedule(ctx, d)
}

func (c *Client) upsertSchedule(ctx context.Context, d store.ScheduleDef) error {
	res, err := c.store.ScheduleUpsert(ctx, store.ScheduleUpsertParams{Schedule: d})
	if err != nil {
		return fmt.Errorf("backwave: register schedule %q: %w", d.Name, err)
	}
	if res.Outcome != store.UpsertUnchanged {
		c.log.InfoContext(ctx, "recurring schedule "+res.Outcome.String(), "schedule", d.Name, "cron", d.Spec, "zone", d.Zone,
			"wire_name", d.Template.WireName, "queue", d.Template.Queue)
	}
	return nil
}

// RemoveSchedule deletes the Recurring Schedule and its occurrence records,
// as the application's own code: the code-side counterpart of
// RegisterSchedule, recorded in the audit trail as ActorSystem. The jobs it
// minted stay. Operators use Admin.RemoveSchedule.
func (c *Client) RemoveSchedule(ctx context.Context, name string) error {
	return (&Admin{store: c.store, monitor: c.store, actor: ActorSystem}).RemoveSchedule(ctx, name)
}

// ScheduleInfo is a Recurring Schedule as Admin.Schedules shows it.
type ScheduleInfo struct {
	Name      string
	Cron      string
	Zone      string
	WireName  string
	Queue     string
	CatchUp   CatchUpPolicy
	NoOverlap bool
	Paused    bool
	// Last is the last occurrence the schedule dealt with — minted, made
	// up or skipped — or zero if none since it was registered, resumed or
	// given a new Cron or Zone.
	Last time.Time
	// Next is the next occurrence it will mint (for a paused schedule, the
	// next after now). A Next well in the past means no Client with Worker
	// Groups is running to mint it. Zero if the expression has no further
	// occurrence or its zone does not load on this host.
	Next time.Time
	// LastJob is the latest job it minted or an operator triggered (0 if
	// none, or purged), and InstanceLive whether that job is non-terminal.
	LastJob      JobID
	InstanceLive bool
	Revision     int64
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Schedules returns every Recurring Schedule, ordered by name, with its
// last and next occurrence.
func (a *Admin) Schedules(ctx context.Context) ([]ScheduleInfo, error) {
	res, err := a.store.ScheduleList(ctx)
	if err != nil {
		return nil, fmt.Errorf("backwave: list schedules: %w", err)
	}
	out := make([]ScheduleInfo, len(res.Schedules))
	for i, sc := range res.Schedules {
		info := ScheduleInfo{
			Name: sc.Name, Cron: sc.Spec, Zone: sc.Zone, WireName: sc.Template.WireName, Queue: sc.Template.Queue,
			CatchUp: CatchUpPolicy(sc.CatchUp), NoOverlap: sc.NoOverlap, Paused: sc.Paused, LastJob: sc.LastJob,
			InstanceLive: sc.InstanceLive, Revision: sc.Revision, CreatedAt: sc.CreatedAt, UpdatedAt: sc.UpdatedAt,
		}
		expr, err := cron.Parse(sc.Spec)
		loc, zerr := time.LoadLocation(sc.Zone)
		if err == nil && zerr == nil {
			if expr.Next(sc.Cursor.Add(-time.Nanosecond), loc).Equal(sc.Cursor) {
				info.Last = sc.Cursor.In(loc)
			}
			from := sc.Cursor
			if sc.Paused && res.Now.After(from) {
				from = res.Now
			}
			info.Next = expr.Next(from, loc)
		}
		out[i] = info
	}
	return out, nil
}

// ScheduleOccurrences lists the occurrence records of the schedule name
// that p keeps, newest first, one page at a time: what became of each
// occurrence, skipped ones included.
func (a *Admin) ScheduleOccurrences(ctx context.Context, name string, p OccurrenceListParams) (Page[Occurrence], error) {
	kinds := make([]store.OccurrenceKind, len(p.Kinds))
	for i, k := range p.Kinds {
		kinds[i] = store.OccurrenceKind(k)
	}
	return readPage(p.PageParams, fmt.Sprintf("occurrences of schedule %q", name), func(limit int) ([]store.Occurrence, error) {
		return a.store.ScheduleOccurrences(ctx, store.OccurrenceListParams{Schedule: name, Kinds: kinds, BeforeSeq: int64(p.Before), Limit: limit})
	}, occurrenceOf, func(o *Occurrence) Cursor { return Cursor(o.Seq) })
}

// TriggerSchedule is the Operator Action "trigger a Recurring Schedule now":
// it enqueues one job from the schedule's template, due now, and records
// the trigger, with the Actor, as an occurrence record and in the audit
// trail. A paused schedule can be triggered. Under No-Overlap, a schedule
// whose latest instance is still live refuses with an error wrapping
// ErrOverlap.
func (a *Admin) TriggerSchedule(ctx context.Context, name string) (JobID, error) {
	id, err := a.store.ScheduleTrigger(ctx, store.ScheduleTriggerParams{Name: name, Actor: store.Actor(a.actor)})
	if err != nil {
		return 0, actionErr(fmt.Sprintf("trigger schedule %q", name), err)
	}
	return id, nil
}

// PauseSchedule stops the schedule from minting until ResumeSchedule.
func (a *Admin) PauseSchedule(ctx context.Context, name string) error {
	if err := a.store.SchedulePause(ctx, store.ScheduleParams{Name: name, Actor: store.Actor(a.actor)}); err != nil {
		return actionErr(fmt.Sprintf("pause schedule %q", name), err)
	}
	return nil
}

// ResumeSchedule lets a paused schedule mint again, from now: the
// occurrences while it was paused are dropped, not made up.
func (a *Admin) ResumeSchedule(ctx context.Context, name string) error {
	if err := a.store.ScheduleResume(ctx, store.ScheduleParams{Name: name, Actor: store.Actor(a.actor)}); err != nil {
		return actionErr(fmt.Sprintf("resume schedule %q", name), err)
	}
	return nil
}

// RemoveSchedule deletes the schedule and its occurrence records; the jobs
// it minted stay.
func (a *Admin) RemoveSchedule(ctx context.Context, name string) error {
	if err := a.store.ScheduleRemove(ctx, store.ScheduleParams{Name: name, Actor: store.Actor(a.actor)}); err != nil {
		return actionErr(fmt.Sprintf("remove schedule %q", name), err)
	}
	return nil
}

// checkMaintenance checks Config.Schedules and keeps a copy of
// Config.Retention for NewClient.
func (c *Client) checkMaintenance(cfg Config) error {
	names := make(map[string]bool, len(cfg.Schedules))
	for i, s := range cfg.Schedules {
		d, err := c.scheduleDef(s)
		if err != nil {
			return fmt.Errorf("%w: Schedules[%d]: %w", ErrInvalidConfig, i, err)
		}
		if names[d.Name] {
			return fmt.Errorf("%w: Schedules: two schedules are named %q", ErrInvalidConfig, d.Name)
		}
		names[d.Name] = true
		c.schedules = append(c.schedules, d)
	}
	if cfg.Retention != nil {
		// Checked with the first Pump's Driver, which runs the sweeps.
		r := *cfg.Retention
		c.retention = &r
	}
	return nil
}

// retentionFor is the Retention of a Pump's Driver: the policy for the
// first Pump, nil for the others.
func (c *Client) retentionFor(first bool) *node.RetentionPolicy {
	if !first || c.retention == nil {
		return nil
	}
	r := node.RetentionPolicy(*c.retention)
	return &r
}

// startMaintenance registers Config.Schedules and says, once per process,
// that terminal jobs are kept forever when a Client that works jobs has no
// Retention Policy.
func (c *Client) startMaintenance(ctx context.Context) error {
	for _, d := range c.schedules {
		if err := c.upsertSchedule(ctx, d); err != nil {
			return err
		}
	}
	if len(c.pumps) > 0 && c.retention == nil {
		c.notices.retentionOff.Do(func() {
			c.log.InfoContext(ctx, "retention policy is off: terminal jobs are kept forever; set Config.Retention to purge them")
		})
	}
	return nil
}

// startNotices are the lines a Client logs at Start once per process, not
// once per Client: a process that makes a Client per request or per test
// says each thing once.
type startNotices struct {
	// retentionOff guards the "terminal jobs are kept forever" line.
	retentionOff sync.Once
}

// processNotices is the process's one startNotices, the only state the
// package keeps beyond a Client: "once per process" needs it. Tests give a
// Client a fresh one.
var processNotices startNotices
