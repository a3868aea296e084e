package backwave_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/memstore"
)

// queueStore is a store whose known Queues are billing and default, with
// one job each (Wire Names invoice.send and report.build), and a Recurring
// Schedule minting digest.mail into default.
func queueStore(t *testing.T) *memstore.Store {
	t.Helper()
	st := memstore.New(memstore.Options{})
	ctx := t.Context()
	if _, err := st.JobInsertMany(ctx, store.InsertManyParams{Jobs: []store.NewJob{
		{WireName: "invoice.send", Queue: "billing", MaxAttempts: 1},
		{WireName: "report.build", Queue: "default", MaxAttempts: 1},
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ScheduleUpsert(ctx, store.ScheduleUpsertParams{Schedule: store.ScheduleDef{
		Name: "digest", Spec: "0 * * * *", Template: store.JobTemplate{WireName: "digest.mail", Queue: "default", MaxAttempts: 1},
	}}); err != nil {
		t.Fatal(err)
	}
	return st
}

func newQueueAdmin(t *testing.T, st backwave.Store, opts ...backwave.AdminOption) *backwave.Admin {
	t.Helper()
	a, err := backwave.NewAdmin(st, "ops:ada", opts...)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// queueActions are the per-Queue Operator Actions, each with whether it
// is a setting WithQueueSetup may set up an unknown Queue for.
var queueActions = []struct {
	name    string
	setting bool
	act     func(a *backwave.Admin, ctx context.Context, q string) error
}{
	{"PauseQueue", true, (*backwave.Admin).PauseQueue},
	{"ResumeQueue", true, (*backwave.Admin).ResumeQueue},
	{"SetQueueLimit", true, func(a *backwave.Admin, ctx context.Context, q string) error { return a.SetQueueLimit(ctx, q, 3) }},
	{"SetQueueRate", true, func(a *backwave.Admin, ctx context.Context, q string) error {
		return a.SetQueueRate(ctx, q, backwave.QueueRate{Limit: 5, Period: time.Minute})
	}},
	{"SetKeyLimit", true, func(a *backwave.Admin, ctx context.Context, q string) error { return a.SetKeyLimit(ctx, q, 2) }},
	{"RemoveKeyLimit", true, (*backwave.Admin).RemoveKeyLimit},
	{"SetKeyRate", true, func(a *backwave.Admin, ctx context.Context, q string) error {
		return a.SetKeyRate(ctx, q, backwave.QueueRate{Limit: 5, Period: time.Minute})
	}},
	{"SetFairClaim", true, func(a *backwave.Admin, ctx context.Context, q string) error { return a.SetFairClaim(ctx, q, true) }},
	{"RemoveQueue", false, (*backwave.Admin).RemoveQueue},
}

// Admin: "an unknown job, Queue or schedule is ErrNotFound" — every
// per-Queue action refuses a Queue the store does not know, saying what it
// knows, and changes nothing (no Queue set up, nothing audited).
func TestQueueActionsRefuseUnknownQueue(t *testing.T) {
	t.Parallel()
	for _, tc := range queueActions {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := queueStore(t)
			a := newQueueAdmin(t, st)
			err := tc.act(a, t.Context(), "mial")
			if !errors.Is(err, backwave.ErrNotFound) {
				t.Fatalf("%s(mial) = %v, want ErrNotFound", tc.name, err)
			}
			if u, ok := errors.AsType[*backwave.UnknownNameError](err); !ok || u.Kind != "Queue" || u.Name != "mial" {
				t.Fatalf("%s(mial) = %#v, want an UnknownNameError for the Queue", tc.name, err)
			}
			if want := `backwave: no such Queue "mial" (known: billing, default)`; err.Error() != want {
				t.Fatalf("%s(mial) says %q, want %q", tc.name, err, want)
			}
			if qs, _ := a.Queues(t.Context()); len(qs) != 2 {
				t.Fatalf("a refused %s set a Queue up: %+v", tc.name, qs)
			}
			if page, _ := a.Audit(t.Context(), backwave.AuditListParams{}); len(page.Items) != 0 {
				t.Fatalf("a refused %s was audited: %+v", tc.name, page.Items)
			}
		})
	}
}

// WithQueueSetup lets the settings set an unknown Queue up, as a
// deployment does before its first job; RemoveQueue still refuses one.
func TestWithQueueSetupSetsUpQueues(t *testing.T) {
	t.Parallel()
	for _, tc := range queueActions {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := newQueueAdmin(t, queueStore(t), backwave.WithQueueSetup())
			err := tc.act(a, t.Context(), "new")
			_, qerr := a.Queue(t.Context(), "new")
			switch {
			case tc.setting && (err != nil || qerr != nil):
				t.Fatalf("%s(new) WithQueueSetup = %v; Queue(new) = %v; want it set up", tc.name, err, qerr)
			case !tc.setting && !errors.Is(err, backwave.ErrNotFound):
				t.Fatalf("%s(new) WithQueueSetup = %v, want ErrNotFound", tc.name, err)
			}
		})
	}
}

// Queue names an operator gives are checked by the insert path's rule
// (store.ValidateName), with or without WithQueueSetup, before any read.
func TestQueueActionsValidateNames(t *testing.T) {
	t.Parallel()
	bad := map[string]string{
		"":                       "empty queue",
		" padded":                "leading or trailing spaces",
		"tab\there":              "control character",
		strings.Repeat("q", 129): "longer than 128 bytes",
		"\xff":                   "not valid UTF-8",
	}
	for _, tc := range queueActions {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, setup := range []bool{false, true} {
				var opts []backwave.AdminOption
				if setup {
					opts = append(opts, backwave.WithQueueSetup())
				}
				a := newQueueAdmin(t, queueStore(t), opts...)
				for name, rule := range bad {
					err := tc.act(a, t.Context(), name)
					if !errors.Is(err, backwave.ErrInvalidParams) || !strings.Contains(err.Error(), rule) {
						t.Errorf("%s(%.20q) setup=%v = %v, want ErrInvalidParams saying %q", tc.name, name, setup, err, rule)
					}
				}
			}
		})
	}
	if _, err := newQueueAdmin(t, queueStore(t)).Queue(t.Context(), " padded"); !errors.Is(err, backwave.ErrInvalidParams) {
		t.Errorf("Queue(\" padded\") = %v, want ErrInvalidParams", err)
	}
}

// RemoveQueue removes an empty Queue with its settings, audited; a Queue
// holding jobs is refused with how many and what to do.
func TestRemoveQueue(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := queueStore(t)
	a := newQueueAdmin(t, st, backwave.WithQueueSetup())
	if err := a.SetQueueLimit(ctx, "spare", 4); err != nil {
		t.Fatal(err)
	}
	if err := a.RemoveQueue(ctx, "spare"); err != nil {
		t.Fatalf("RemoveQueue(spare) = %v", err)
	}
	if _, err := a.Queue(ctx, "spare"); !errors.Is(err, backwave.ErrNotFound) {
		t.Fatalf("Queue(spare) after its removal = %v, want ErrNotFound", err)
	}
	page, err := a.Audit(ctx, backwave.AuditListParams{Queue: "spare", PageParams: backwave.PageParams{Limit: 1}})
	if err != nil || len(page.Items) != 1 || page.Items[0].Action != backwave.AuditQueueRemove || page.Items[0].Actor != "ops:ada" {
		t.Fatalf("audit trail of spare = %+v, %v; want its removal by ops:ada", page.Items, err)
	}
	err = a.RemoveQueue(ctx, "billing")
	if !errors.Is(err, backwave.ErrQueueNotEmpty) {
		t.Fatalf("RemoveQueue(billing) = %v, want ErrQueueNotEmpty", err)
	}
	want := `backwave: remove queue "billing": it holds 1 job (in any state: finished ones count until retention purges them); ` +
		`only an empty Queue can be removed: cancel or finish its jobs, and remove it once retention has purged them`
	if err.Error() != want {
		t.Fatalf("RemoveQueue(billing) says\n%s\nwant\n%s", err, want)
	}
	if _, err := a.Queue(ctx, "billing"); err != nil {
		t.Fatalf("a refused RemoveQueue removed the Queue: %v", err)
	}
}

// Filters naming a Queue or Wire Name the store does not know say so,
// instead of an empty answer; a known one without matches is no error.
func TestFiltersRefuseUnknownNames(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	a := newQueueAdmin(t, queueStore(t))
	noSuchQueue := `backwave: no such Queue "mial" (known: billing, default)`
	noSuchWire := `backwave: no such Wire Name "invoice.snd" (known: digest.mail, invoice.send, report.build)`
	reads := []struct {
		name string
		read func(f backwave.JobFilter) error
	}{
		{"Jobs", func(f backwave.JobFilter) error {
			_, err := a.Jobs(ctx, backwave.JobListParams{JobFilter: f})
			return err
		}},
		{"TagFacet", func(f backwave.JobFilter) error { _, err := a.TagFacet(ctx, f, 0); return err }},
	}
	for _, r := range reads {
		for _, tc := range []struct {
			f    backwave.JobFilter
			want string
		}{
			{backwave.JobFilter{Queue: "mial"}, noSuchQueue},
			{backwave.JobFilter{WireName: "invoice.snd"}, noSuchWire},
			{backwave.JobFilter{Queue: "billing", WireName: "invoice.snd"}, noSuchWire},
			{backwave.JobFilter{Queue: "billing", States: []backwave.JobState{backwave.StateRunning}}, ""},
			{backwave.JobFilter{WireName: "digest.mail"}, ""}, // a schedule mints it
			{backwave.JobFilter{Queue: "billing", WireName: "report.build"}, ""},
		} {
			err := r.read(tc.f)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%s(%+v) = %v, want no error", r.name, tc.f, err)
			case tc.want != "" && (err == nil || err.Error() != tc.want || !errors.Is(err, backwave.ErrNotFound)):
				t.Errorf("%s(%+v) = %v, want %q wrapping ErrNotFound", r.name, tc.f, err, tc.want)
			}
		}
	}
	if _, err := a.CountByState(ctx, "mial"); err == nil || err.Error() != noSuchQueue {
		t.Errorf("CountByState(mial) = %v, want %q", err, noSuchQueue)
	}
	if _, err := a.Retrying(ctx, "mial", backwave.PageParams{}); err == nil || err.Error() != noSuchQueue {
		t.Errorf("Retrying(mial) = %v, want %q", err, noSuchQueue)
	}
	if counts, err := a.CountByState(ctx, ""); err != nil || counts[backwave.StateScheduled] != 2 {
		t.Errorf("CountByState(every Queue) = %v, %v", counts, err)
	}
	if _, err := a.Jobs(ctx, backwave.JobListParams{JobFilter: backwave.JobFilter{WireName: " bad"}}); !errors.Is(err, backwave.ErrInvalidParams) {
		t.Errorf("Jobs(wire name \" bad\") = %v, want ErrInvalidParams", err)
	}
}

// An UnknownNameError lists at most ten known names, then "…", and says
// when the store has none; its Hint follows.
func TestUnknownNameErrorText(t *testing.T) {
	t.Parallel()
	many := strings.Split("a b c d e f g h i j k l", " ")
	for _, tc := range []struct {
		e    backwave.UnknownNameError
		want string
	}{
		{backwave.UnknownNameError{Kind: "Queue", Name: "x"}, `backwave: no such Queue "x" (the store has none)`},
		{backwave.UnknownNameError{Kind: "Queue", Name: "x", Known: many}, `backwave: no such Queue "x" (known: a, b, c, d, e, f, g, h, i, j, …)`},
		{backwave.UnknownNameError{Kind: "schedule", Name: "x", Hint: "register it from code"}, `backwave: no such schedule "x" (the store has none; register it from code)`},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}

// Queue names the configuration gives (a Worker Group's Dispatch Policy)
// are checked by the same rule as the Admin's and the insert path's, and
// refused with ErrInvalidConfig naming it.
func TestConfigValidatesQueueNames(t *testing.T) {
	t.Parallel()
	hs := backwave.NewHandlers()
	if err := backwave.AddHandlerFunc(hs, func(context.Context, *backwave.Job[greet]) error { return nil }); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		policy backwave.DispatchPolicy
		rule   string
	}{
		{backwave.Strict(" padded"), "leading or trailing spaces"},
		{backwave.Strict("tab\there"), "control character"},
		{backwave.Weighted(backwave.QueueWeight{Queue: "", Weight: 1}), "empty queue"},
		{backwave.Strict(strings.Repeat("q", 129)), "longer than 128 bytes"},
	} {
		_, err := backwave.NewClient(memstore.New(memstore.Options{}), backwave.Config{
			Handlers: hs, Groups: []backwave.WorkerGroupOptions{backwave.DefaultWorkerGroup("g", tc.policy)},
		})
		if !errors.Is(err, backwave.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.rule) {
			t.Errorf("NewClient with %v = %v, want ErrInvalidConfig saying %q", tc.policy, err, tc.rule)
		}
	}
}
