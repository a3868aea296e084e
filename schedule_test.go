package backwave_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/memstore"
)

// tick is the job a test schedule mints.
type tick struct{ N int }

func (tick) WireName() string { return "test.tick" }

// runs records the Attempts of tick jobs: when each started and how many
// run at once.
type runs struct {
	mu      sync.Mutex
	started []job.ID
	running int
	most    int
	hold    time.Duration
}

func (r *runs) handle(ctx context.Context, j *backwave.Job[tick]) error {
	r.mu.Lock()
	r.started = append(r.started, j.ID)
	r.running++
	r.most = max(r.most, r.running)
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.running--
		r.mu.Unlock()
	}()
	if r.hold > 0 {
		select {
		case <-time.After(r.hold):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (r *runs) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.started)
}

// scheduleClient starts a Client running tick jobs on the default Queue
// with the given schedules.
func scheduleClient(t *testing.T, st store.Store, r *runs, adjust func(*backwave.Config), scheds ...backwave.RecurringSchedule) *backwave.Client {
	t.Helper()
	h := backwave.NewHandlers()
	if err := backwave.AddHandlerFunc(h, r.handle); err != nil {
		t.Fatal(err)
	}
	cfg := backwave.Config{
		Handlers:  h,
		Groups:    []backwave.WorkerGroupOptions{group("g", backwave.DefaultQueue)},
		Logger:    testLogger(t, slog.LevelError),
		Schedules: scheds,
	}
	if adjust != nil {
		adjust(&cfg)
	}
	return startClient(t, st, cfg)
}

func occurrencesOf(t *testing.T, st store.Schedules, name string, kinds ...store.OccurrenceKind) []store.Occurrence {
	t.Helper()
	occ, err := st.ScheduleOccurrences(context.Background(), store.OccurrenceListParams{Schedule: name, Kinds: kinds, Limit: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	return occ
}

// Bad input is rejected at registration with a message naming the field
// (issue 7, acceptance).
func TestScheduleRejectsBadInput(t *testing.T) {
	t.Parallel()
	c, err := backwave.NewClient(newStore(), backwave.Config{Logger: testLogger(t, slog.LevelError)})
	if err != nil {
		t.Fatal(err)
	}
	ok := backwave.RecurringSchedule{Name: "s", Cron: "0 3 * * *", Zone: "Europe/London", Args: tick{}}
	for _, tc := range []struct {
		field string
		edit  func(*backwave.RecurringSchedule)
	}{
		{"Cron", func(s *backwave.RecurringSchedule) { s.Cron = "61 * * * *" }},
		{"Cron", func(s *backwave.RecurringSchedule) { s.Cron = "every day" }},
		{"Cron", func(s *backwave.RecurringSchedule) { s.Cron = "TZ=UTC 0 3 * * *" }},
		{"Zone", func(s *backwave.RecurringSchedule) { s.Zone = "Mars/Olympus_Mons" }},
		{"Zone", func(s *backwave.RecurringSchedule) { s.Zone = "../../etc/passwd" }},
		{"Name", func(s *backwave.RecurringSchedule) { s.Name = "" }},
		{"Args", func(s *backwave.RecurringSchedule) { s.Args = nil }},
		{"Options", func(s *backwave.RecurringSchedule) {
			s.Options = []backwave.EnqueueOption{backwave.WithDelay(time.Minute)}
		}},
		{"Args", func(s *backwave.RecurringSchedule) {
			s.Options = []backwave.EnqueueOption{backwave.WithQueue(" bad")}
		}},
		{"CatchUp", func(s *backwave.RecurringSchedule) { s.CatchUp = 7 }},
	} {
		s := ok
		tc.edit(&s)
		err := c.RegisterSchedule(t.Context(), s)
		if !errors.Is(err, backwave.ErrInvalidSchedule) || !strings.Contains(err.Error(), ": "+tc.field+": ") {
			t.Errorf("RegisterSchedule with a bad %s: %v; want ErrInvalidSchedule naming the field", tc.field, err)
		}
		_, err = backwave.NewClient(newStore(), backwave.Config{Schedules: []backwave.RecurringSchedule{s}})
		if !errors.Is(err, backwave.ErrInvalidConfig) || !errors.Is(err, backwave.ErrInvalidSchedule) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("Config.Schedules with a bad %s: %v", tc.field, err)
		}
	}
	if err := c.RegisterSchedule(t.Context(), ok); err != nil {
		t.Fatalf("a valid schedule: %v", err)
	}
	_, err = backwave.NewClient(newStore(), backwave.Config{Schedules: []backwave.RecurringSchedule{ok, ok}})
	if !errors.Is(err, backwave.ErrInvalidConfig) {
		t.Errorf("two schedules with one name: %v", err)
	}
}

// A schedule declared in Config mints on time, as jobs due at their
// occurrence, and the Client lists it with its last and next occurrence.
func TestScheduleMintsOnTime(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		r := &runs{}
		c := scheduleClient(t, st, r, nil, backwave.RecurringSchedule{
			Name: "every-minute", Cron: "* * * * *", Args: tick{N: 1},
			Options: []backwave.EnqueueOption{backwave.WithTags(backwave.Label("cron"))},
		})
		start := time.Now()
		time.Sleep(10*time.Minute + 30*time.Second)
		synctest.Wait()
		minted := occurrencesOf(t, st, "every-minute", store.OccurrenceMinted)
		if len(minted) != 10 || r.count() != 10 {
			t.Fatalf("%d minted, %d ran in ten minutes; want 10 and 10", len(minted), r.count())
		}
		for _, o := range minted {
			j, err := c.JobGet(t.Context(), o.Job)
			if err != nil {
				t.Fatal(err)
			}
			if !j.ScheduledAt.Equal(o.At) || o.At.Second() != 0 || o.At.Before(start) {
				t.Errorf("job %d minted for %v is due at %v", j.ID, o.At, j.ScheduledAt)
			}
			if j.State != backwave.StateSucceeded || !j.FinalizedAt.Before(o.At.Add(2*time.Second)) {
				t.Errorf("job %d for %v: %s at %v; want it run on time", j.ID, o.At, j.State, j.FinalizedAt)
			}
			if !slices.Contains(j.Tags, backwave.Label("cron")) || !slices.Contains(j.Tags, backwave.Keyed("schedule", "every-minute")) {
				t.Errorf("job %d tags %v", j.ID, j.Tags)
			}
		}
		admin, err := c.Admin("ops")
		if err != nil {
			t.Fatal(err)
		}
		list, err := admin.Schedules(t.Context())
		if err != nil || len(list) != 1 {
			t.Fatalf("Schedules = %v, %v", list, err)
		}
		now := time.Now()
		if s := list[0]; s.Last.IsZero() || s.Next.Sub(s.Last) != time.Minute || !s.Next.After(now.Add(-time.Minute)) || s.Paused || s.Queue != backwave.DefaultQueue {
			t.Errorf("Schedules: %+v at %v", s, now)
		}
	})
}

// A Client that was down through several occurrences: under Skip the
// missed span is one visible record and no job; under Coalesce exactly one
// make-up job, never one per missed occurrence (glossary, Catch-Up
// Policy). Then both carry on on time.
func TestScheduleCatchUpAfterOutage(t *testing.T) {
	t.Parallel()
	for _, policy := range []backwave.CatchUpPolicy{backwave.CatchUpSkip, backwave.CatchUpCoalesce} {
		t.Run(policy.String(), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				st := newStore()
				sched := backwave.RecurringSchedule{Name: "hourly", Cron: "0 * * * *", Args: tick{}, CatchUp: policy}
				r := &runs{}
				ctx := context.Background()
				c1 := scheduleClient(t, st, r, nil, sched)
				time.Sleep(2*time.Hour + 30*time.Minute) // 01:00, 02:00
				if err := c1.Stop(ctx); err != nil {
					t.Fatal(err)
				}
				if n := r.count(); n != 2 {
					t.Fatalf("%d ran before the outage, want 2", n)
				}
				time.Sleep(5 * time.Hour) // the outage: 03:00 … 07:00 missed
				scheduleClient(t, st, r, nil, sched)
				time.Sleep(2 * time.Hour) // 08:00, 09:00 on time
				synctest.Wait()
				minted := occurrencesOf(t, st, "hourly", store.OccurrenceMinted)
				madeUp := occurrencesOf(t, st, "hourly", store.OccurrenceMadeUp)
				skipped := occurrencesOf(t, st, "hourly", store.OccurrenceSkipped)
				if len(minted) != 4 {
					t.Errorf("%d on-time jobs, want 4 (01:00, 02:00, 08:00, 09:00)", len(minted))
				}
				outageEnd := time.Date(2000, 1, 1, 7, 0, 0, 0, time.UTC)
				switch policy {
				case backwave.CatchUpSkip:
					if len(madeUp) != 0 || len(skipped) != 1 {
						t.Fatalf("Skip: %d make-up jobs, %d skip records; want 0 and 1", len(madeUp), len(skipped))
					}
					s := skipped[0]
					if s.Reason != core.SkipMissed || !s.First.Equal(outageEnd.Add(-4*time.Hour)) || !s.At.Equal(outageEnd) {
						t.Errorf("Skip record %+v, want missed 03:00..07:00", s)
					}
					if r.count() != 4 {
						t.Errorf("%d jobs ran, want 4", r.count())
					}
				case backwave.CatchUpCoalesce:
					if len(madeUp) != 1 || len(skipped) != 0 {
						t.Fatalf("Coalesce: %d make-up jobs, %d skip records; want exactly 1 and 0", len(madeUp), len(skipped))
					}
					if !madeUp[0].At.Equal(outageEnd) {
						t.Errorf("make-up job for %v, want the last missed occurrence %v", madeUp[0].At, outageEnd)
					}
					if j := getJob(t, st, madeUp[0].Job); j.State != job.StateSucceeded {
						t.Errorf("make-up job is %s", j.State)
					}
					if r.count() != 5 {
						t.Errorf("%d jobs ran, want 5", r.count())
					}
				}
			})
		})
	}
}

// No-Overlap: a tick while an earlier instance runs is skipped and
// recorded visibly; two instances never run at once (glossary, No-Overlap).
func TestScheduleNoOverlap(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		r := &runs{hold: 150 * time.Second}
		c := scheduleClient(t, st, r, nil, backwave.RecurringSchedule{
			Name: "slow", Cron: "* * * * *", Args: tick{}, NoOverlap: true,
		})
		time.Sleep(10*time.Minute + 30*time.Second)
		synctest.Wait()
		skipped := occurrencesOf(t, st, "slow", store.OccurrenceSkipped)
		minted := occurrencesOf(t, st, "slow", store.OccurrenceMinted)
		if r.most != 1 {
			t.Errorf("%d instances ran at once under No-Overlap", r.most)
		}
		if len(minted) == 0 || len(skipped) == 0 || len(minted)+len(skipped) != 10 {
			t.Fatalf("%d minted and %d skipped of 10 occurrences", len(minted), len(skipped))
		}
		for _, s := range skipped {
			if s.Reason != core.SkipOverlap || s.Job != 0 {
				t.Errorf("skip record %+v, want an overlap without a job", s)
			}
		}
		// The Operator Action refuses too while an instance is live.
		admin, err := c.Admin("ops")
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "an instance to run", func() bool {
			l, _ := admin.Schedules(context.Background())
			return l[0].InstanceLive
		})
		if _, err := admin.TriggerSchedule(context.Background(), "slow"); !errors.Is(err, backwave.ErrOverlap) {
			t.Errorf("TriggerSchedule while live: %v, want ErrOverlap", err)
		}
	})
}

// Trigger now, pause and resume are audited Operator Actions; a paused
// schedule mints nothing, and resuming does not make up the paused span.
func TestScheduleOperatorActions(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		r := &runs{}
		c := scheduleClient(t, st, r, nil, backwave.RecurringSchedule{Name: "hourly", Cron: "@hourly", Args: tick{}, CatchUp: backwave.CatchUpCoalesce})
		admin, err := c.Admin("alice")
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		id, err := admin.TriggerSchedule(ctx, "hourly")
		if err != nil {
			t.Fatal(err)
		}
		waitState(t, st, id, job.StateSucceeded)
		if err := admin.PauseSchedule(ctx, "hourly"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3*time.Hour + time.Minute)
		if n := r.count(); n != 1 {
			t.Fatalf("%d jobs ran while paused, want only the triggered one", n)
		}
		if err := admin.ResumeSchedule(ctx, "hourly"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := r.count(); n != 2 {
			t.Errorf("%d jobs ran after resuming for an hour, want 2 (no make-up for the pause)", n)
		}
		trail, err := admin.Audit(ctx, backwave.AuditListParams{})
		if err != nil {
			t.Fatal(err)
		}
		var actions []string
		for _, e := range trail.Items {
			actions = append(actions, e.Action.String()+"/"+string(e.Actor))
		}
		if got := strings.Join(actions, " "); got != "schedule_resume/alice schedule_pause/alice schedule_trigger/alice" {
			t.Errorf("audit trail %q", got)
		}
		trig, err := admin.ScheduleOccurrences(ctx, "hourly", backwave.OccurrenceListParams{Kinds: []backwave.OccurrenceKind{backwave.OccurrenceTriggered}})
		if err != nil || len(trig.Items) != 1 || trig.Items[0].Actor != "alice" || trig.Items[0].Job != id || trig.Next != 0 {
			t.Errorf("trigger records %+v, %v", trig, err)
		}
		if err := c.RemoveSchedule(ctx, "hourly"); err != nil {
			t.Fatal(err)
		}
		if l, _ := admin.Schedules(ctx); len(l) != 0 {
			t.Errorf("schedules after remove: %+v", l)
		}
		if trail, _ := admin.Audit(ctx, backwave.AuditListParams{PageParams: backwave.PageParams{Limit: 1}}); len(trail.Items) != 1 ||
			trail.Items[0].Action != backwave.AuditScheduleRemove || trail.Items[0].Actor != backwave.ActorSystem {
			t.Errorf("the code-side remove is audited as %+v, want schedule_remove by the system actor", trail.Items)
		}
		waitState(t, st, id, job.StateSucceeded) // minted jobs stay
	})
}

// Retention: off by default (the once-per-process line saying so is
// TestRetentionOffNotice's); on, it purges them after their keep horizon.
func TestRetention(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var logs lockedBuffer
		logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
		st := newStore()
		r := &runs{}
		off := scheduleClient(t, st, r, func(cfg *backwave.Config) { cfg.Logger = logger })
		if err := off.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		st2 := memstore.New(memstore.Options{Clock: backwave.WallClock{}})
		c := scheduleClient(t, st2, r, func(cfg *backwave.Config) {
			cfg.Retention = &backwave.RetentionPolicy{KeepSucceeded: 10 * time.Minute, KeepDeadLettered: time.Hour, Batch: 3}
		})
		var ids []job.ID
		for i := range 7 {
			ids = append(ids, enqueue(t, c, tick{N: i}))
		}
		for _, id := range ids {
			waitState(t, st2, id, job.StateSucceeded)
		}
		time.Sleep(9 * time.Minute)
		for _, id := range ids {
			getJob(t, st2, id) // kept
		}
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		for _, id := range ids {
			if _, err := st2.JobGet(context.Background(), id); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("job %d after its keep horizon: %v, want purged", id, err)
			}
		}
	})
}

// lockedBuffer is a log sink safe for the Pumps' goroutines and the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
