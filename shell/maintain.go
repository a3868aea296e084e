package shell

import (
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/node"
	"github.com/backwave/backwave/store"
)

// loadSchedules reads the Recurring Schedules and loads each one's time
// zone (zone data is I/O, so it happens here, above the determinism
// boundary). Zones are cached for the Pump's life; a zone that does not
// load is logged and its schedule left out, so one bad row never stops the
// others from minting.
func (p *Pump) loadSchedules(c node.LoadSchedules) node.Event {
	res, err := p.cfg.Schedules.ScheduleList(p.ioCtx)
	if err != nil {
		p.log.Error("loading recurring schedules failed", "error", err)
		return node.SchedulesLoaded{Now: p.now(), Op: c.Op, Err: err}
	}
	ev := node.SchedulesLoaded{Now: p.now(), Op: c.Op, StoreNow: res.Now, Schedules: make([]node.LoadedSchedule, 0, len(res.Schedules))}
	for _, s := range res.Schedules {
		loc, err := p.zone(s.Zone)
		if err != nil {
			p.log.Error("recurring schedule left out: its time zone does not load", "schedule", s.Name, "zone", s.Zone, "error", err)
			continue
		}
		ev.Schedules = append(ev.Schedules, node.LoadedSchedule{Schedule: s, Location: loc})
	}
	return ev
}

// zone loads and caches an IANA zone ("" is UTC).
func (p *Pump) zone(name string) (*time.Location, error) {
	if loc, ok := p.zones[name]; ok {
		return loc, nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, err
	}
	p.zones[name] = loc
	return loc, nil
}

// mint applies the Driver's mint plans and logs what they did: each job
// minted, each make-up job and each skipped occurrence.
func (p *Pump) mint(c node.Mint) node.Event {
	res, err := p.cfg.Schedules.ScheduleMint(p.ioCtx, store.MintParams{Plans: c.Plans})
	if err != nil {
		p.log.Error("minting recurring schedules failed", "plans", len(c.Plans), "error", err)
		return node.MintDone{Now: p.now(), Op: c.Op, Err: err}
	}
	for i, r := range res {
		if !r.Applied {
			p.log.Debug("mint plan stale: another node minted first", "schedule", r.Schedule)
			continue
		}
		for _, j := range r.Jobs {
			msg := "recurring schedule minted a job"
			if j.MakeUp {
				msg = "recurring schedule minted its one make-up job for missed occurrences"
			}
			p.log.Info(msg, "schedule", r.Schedule, "job", int64(j.ID), "queue", j.Queue, "occurrence", j.At)
		}
		for _, s := range c.Plans[i].Skips {
			msg := "recurring schedule skipped an occurrence: an earlier instance is still live (No-Overlap)"
			if s.Reason == core.SkipMissed {
				msg = "recurring schedule missed occurrences while no node minted (Catch-Up Policy skip)"
			}
			p.log.Warn(msg, "schedule", r.Schedule, "occurrence", s.At, "first_missed", s.First)
		}
	}
	return node.MintDone{Now: p.now(), Op: c.Op, Results: res}
}

// purge runs one retention batch.
func (p *Pump) purge(c node.Purge) node.Event {
	res, err := p.cfg.Retention.JobPurge(p.ioCtx, store.PurgeParams{States: c.Sweep.States(), KeepFor: c.KeepFor, Limit: c.Limit})
	if err != nil {
		p.log.Error("retention sweep failed", "sweep", c.Sweep.String(), "error", err)
		return node.PurgeDone{Now: p.now(), Op: c.Op, Err: err}
	}
	if res.Purged > 0 {
		p.log.Info("retention purged terminal jobs", "sweep", c.Sweep.String(), "purged", res.Purged, "keep", c.KeepFor)
	}
	return node.PurgeDone{Now: p.now(), Op: c.Op, Purged: res.Purged}
}
