package jobtest

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/core/cron"
	"github.com/backwave/backwave/job"
)

// dueSet follows, from the store's OnTransition calls, which jobs are
// Scheduled (they come due at their due time) and which are Running (their
// Lease may lapse), so next reads only those rows.
type dueSet struct {
	mu        sync.Mutex
	scheduled map[job.ID]bool
	running   map[job.ID]bool
	// seq counts every transition noted: a Transition Observer's walk may
	// have entries to read once it moved.
	seq uint64
}

func newDueSet() *dueSet {
	return &dueSet{scheduled: make(map[job.ID]bool), running: make(map[job.ID]bool)}
}

// note is the store's OnTransition: called under the store's lock, so it
// only records.
func (d *dueSet) note(id job.ID, e core.Edge, _ job.Attempt) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.seq++
	delete(d.scheduled, id)
	delete(d.running, id)
	switch e.To {
	case job.StateScheduled:
		d.scheduled[id] = true
	case job.StateRunning:
		d.running[id] = true
	}
}

// transitions returns how many transitions were noted so far.
func (d *dueSet) transitions() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.seq
}

func (d *dueSet) ids() (scheduled, running []job.ID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for id := range d.scheduled {
		scheduled = append(scheduled, id)
	}
	for id := range d.running {
		running = append(running, id)
	}
	slices.Sort(scheduled)
	slices.Sort(running)
	return scheduled, running
}

// next returns the first instant after now at which something may happen
// that the Pumps would not find by themselves without their idle ticks,
// and false if there is none:
//   - each Pump's own next instant while it holds an Attempt (Manual.Next);
//   - each Transition Observer walk's next round while it has not caught
//     up with the Transition Log (WalkManual.Next);
//   - the due time of each Scheduled job not yet due;
//   - the Lease expiry of each Running job, or, once it has passed and
//     the job is still Running, the next poll (the maintenance beat that
//     expires it comes within a few);
//   - with schedules, each unpaused Recurring Schedule's next occurrence,
//     or the next poll if that occurrence is already past (the beat that
//     mints it was not due yet), provided some Pump mints.
//
// A job already due but still Scheduled is not an instant: it waits on
// something that only a store call wakes the Pumps for (a resumed Queue, a
// freed slot), or on a Queue no Pump serves.
func (c *Client) next(schedules bool) (time.Time, bool) {
	now := c.Now()
	var best time.Time
	found := false
	consider := func(t time.Time) {
		if !t.After(now) {
			t = now.Add(c.poll)
		}
		if !found || t.Before(best) {
			best, found = t, true
		}
	}
	for _, m := range c.pumps {
		if t, ok := m.Next(now); ok {
			consider(t)
		}
	}
	for _, w := range c.walks {
		if t, ok := w.Next(now); ok {
			consider(t)
		}
	}
	ctx := context.Background()
	scheduled, running := c.due.ids()
	for _, id := range scheduled {
		j, err := c.store.JobGet(ctx, id)
		if err == nil && j.State == job.StateScheduled && j.ScheduledAt.After(now) {
			consider(j.ScheduledAt)
		}
	}
	for _, id := range running {
		j, err := c.store.JobGet(ctx, id)
		if err == nil && j.State == job.StateRunning && len(c.pumps) > 0 {
			consider(j.LeaseExpiresAt)
		}
	}
	if schedules && len(c.pumps) > 0 {
		if t, ok := c.nextOccurrence(ctx); ok {
			consider(t)
		}
	}
	return best, found
}

// nextOccurrence returns the earliest next occurrence of the unpaused
// Recurring Schedules, and false if none has one.
func (c *Client) nextOccurrence(ctx context.Context) (time.Time, bool) {
	res, err := c.store.ScheduleList(ctx)
	if err != nil {
		c.t.Fatalf("jobtest: list schedules: %v", err)
		return time.Time{}, false
	}
	var best time.Time
	found := false
	for _, s := range res.Schedules {
		if s.Paused {
			continue
		}
		loc, ok := c.zone(s.Zone)
		if !ok {
			continue
		}
		expr, ok := c.exprs[s.Spec]
		if !ok {
			if expr, err = cron.Parse(s.Spec); err != nil {
				continue // registration validates; the Driver leaves it alone too
			}
			c.exprs[s.Spec] = expr
		}
		cursor := s.Cursor
		if cursor.IsZero() {
			cursor = res.Now
		}
		key := nextKey{spec: s.Spec, zone: s.Zone, cursor: cursor}
		t, ok := c.nextOcc[s.Name]
		if !ok || t.key != key {
			t = nextAt{key: key, at: expr.Next(cursor, loc)}
			c.nextOcc[s.Name] = t
		}
		if !t.at.IsZero() && (!found || t.at.Before(best)) {
			best, found = t.at, true
		}
	}
	return best, found
}

// nextKey is what a schedule's next occurrence depends on; nextAt caches
// the occurrence for it.
type nextKey struct {
	spec, zone string
	cursor     time.Time
}

type nextAt struct {
	key nextKey
	at  time.Time
}

// zone loads and caches an IANA zone; a zone that does not load leaves its
// schedule out, as the Pumps do.
func (c *Client) zone(name string) (*time.Location, bool) {
	if loc, ok := c.zones[name]; ok {
		return loc, loc != nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		loc = nil
	}
	c.zones[name] = loc
	return loc, loc != nil
}
