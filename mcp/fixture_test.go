package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/permission"
	"github.com/backwave/backwave/store/memstore"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The fixture's job types. Their payloads and outputs carry marker strings
// a test looks for, to prove sensitive content is (or is not) in a result.

type chargeCard struct {
	Card string `json:"card"`
}

func (chargeCard) WireName() string { return "mcptest.charge_card" }

type buildReport struct {
	Account string `json:"account"`
}

func (buildReport) WireName() string { return "mcptest.build_report" }

type callHook struct {
	URL string `json:"url"`
}

func (callHook) WireName() string { return "mcptest.call_hook" }

type sendMail struct {
	To string `json:"to"`
}

func (sendMail) WireName() string { return "mcptest.send_mail" }

const (
	secretCard    = "4000-0002-SECRET"
	secretDetail  = "declined by issuer"
	secretAccount = "acct-SECRET-77"
	secretURL     = "https://hooks.example/SECRET-token"
	outputMarker  = "total-SECRET"
	scheduleName  = "nightly-report"
	mailQueue     = "mail"
)

// fixture is a store holding one job of each kind the tools read: a
// Dead-Lettered job with Failure Detail, a Succeeded job with Job Output,
// a Retrying job (its first Attempt failed, the next is an hour away), two
// Scheduled jobs due tomorrow, and a Recurring Schedule.
type fixture struct {
	store     backwave.Store
	dead      backwave.JobID
	succeeded backwave.JobID
	retrying  backwave.JobID
	waiting   [2]backwave.JobID
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureOn(t, memstore.New(memstore.Options{Clock: backwave.WallClock{}}))
}

// newFixtureOn fills st, a store on the host's clock.
func newFixtureOn(t *testing.T, st backwave.Store) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{store: st}

	charged, reported, hooked := make(chan struct{}), make(chan struct{}), make(chan struct{})
	handlers := backwave.NewHandlers()
	if err := backwave.AddHandlerFunc(handlers, func(ctx context.Context, j *backwave.Job[chargeCard]) error {
		defer close(charged)
		return backwave.FailPermanently(fmt.Errorf("card %s: %s", j.Args.Card, secretDetail))
	}); err != nil {
		t.Fatal(err)
	}
	if err := backwave.AddHandlerFunc(handlers, func(ctx context.Context, j *backwave.Job[buildReport]) error {
		defer close(reported)
		return j.SetOutputJSON(map[string]string{"summary": outputMarker})
	}); err != nil {
		t.Fatal(err)
	}
	hourly := backwave.RetryPolicy{Initial: time.Hour, Max: time.Hour, Multiplier: 1}
	if err := backwave.AddHandlerFunc(handlers, func(ctx context.Context, j *backwave.Job[callHook]) error {
		defer close(hooked)
		return fmt.Errorf("POST %s: timed out", j.Args.URL)
	}, backwave.WithRetryPolicy(hourly)); err != nil {
		t.Fatal(err)
	}
	group := backwave.DefaultWorkerGroup("default", backwave.Strict(backwave.DefaultQueue))
	group.PollInterval = 10 * time.Millisecond
	client, err := backwave.NewClient(st, backwave.Config{
		Handlers: handlers,
		Groups:   []backwave.WorkerGroupOptions{group},
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	acme := backwave.Keyed("tenant", "acme")
	if f.dead, err = client.Enqueue(ctx, chargeCard{Card: secretCard}, backwave.WithMaxAttempts(3), backwave.WithTags(acme)); err != nil {
		t.Fatal(err)
	}
	if f.succeeded, err = client.Enqueue(ctx, buildReport{Account: secretAccount}, backwave.WithTags(acme, backwave.Label("urgent"))); err != nil {
		t.Fatal(err)
	}
	if f.retrying, err = client.Enqueue(ctx, callHook{URL: secretURL}); err != nil {
		t.Fatal(err)
	}
	<-charged
	<-reported
	<-hooked
	if err := client.Stop(ctx); err != nil { // drains: both outcomes are reported
		t.Fatal(err)
	}

	// An insert-only Client for the waiting jobs and the schedule: nothing
	// claims them.
	inserter, err := backwave.NewClient(st, backwave.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	tomorrow := time.Now().Add(24 * time.Hour)
	for i := range f.waiting {
		if f.waiting[i], err = inserter.Enqueue(ctx, sendMail{To: fmt.Sprintf("user%d@example.com", i)}, backwave.WithQueue(mailQueue), backwave.WithRunAt(tomorrow)); err != nil {
			t.Fatal(err)
		}
	}
	if err := inserter.RegisterSchedule(ctx, backwave.RecurringSchedule{
		Name:    scheduleName,
		Cron:    "0 3 * * *",
		Args:    buildReport{Account: "nightly"},
		Options: []backwave.EnqueueOption{backwave.WithQueue("reports")},
	}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		id    backwave.JobID
		state backwave.JobState
	}{{f.dead, backwave.StateDeadLettered}, {f.succeeded, backwave.StateSucceeded}, {f.waiting[0], backwave.StateScheduled}, {f.retrying, backwave.StateScheduled}} {
		if got := f.job(t, want.id).State; got != want.state {
			t.Fatalf("fixture job %d is %s, want %s", want.id, got, want.state)
		}
	}
	if !f.job(t, f.retrying).Retrying() {
		t.Fatalf("fixture job %d is not Retrying", f.retrying)
	}
	return f
}

func (f *fixture) admin(t *testing.T) *backwave.Admin {
	t.Helper()
	a, err := backwave.NewAdmin(f.store, "test:observer")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func (f *fixture) job(t *testing.T, id backwave.JobID) backwave.JobInfo {
	t.Helper()
	d, err := f.admin(t).Job(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return d.Job
}

// audit returns the whole audit trail, newest first.
func (f *fixture) audit(t *testing.T) []backwave.AuditEntry {
	t.Helper()
	p, err := f.admin(t).Audit(context.Background(), backwave.AuditListParams{PageParams: backwave.PageParams{Limit: backwave.MaxPageLimit}})
	if err != nil {
		t.Fatal(err)
	}
	return p.Items
}

func (f *fixture) server(t *testing.T, pol permission.Policy) *Server {
	t.Helper()
	s, err := NewServer(f.store, Options{Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// grant is a Policy granting exactly perms, recording actor on writes
// (none if empty).
func grant(actor string, perms ...permission.Permission) permission.Policy {
	pol := permission.Policy{Allow: func(_ context.Context, p permission.Permission) bool { return slices.Contains(perms, p) }}
	if actor != "" {
		pol.ResolveActor = func(context.Context) (string, error) { return actor, nil }
	}
	return pol
}

// connect runs s over in-memory transports (the stdio form: one session,
// no HTTP request) and returns a connected SDK client session.
func connect(t *testing.T, s *Server) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	serverT, clientT := sdk.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, serverT) }()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "mcptest", Version: "v0"}, nil).Connect(ctx, clientT, nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, sdk.ErrConnectionClosed) {
			t.Errorf("Run: %v", err)
		}
	})
	return cs
}

// toolNames lists the tools the session is offered, sorted.
func toolNames(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// result is a tool call's outcome as a client sees it.
type result struct {
	isError    bool
	text       string          // the text content
	structured json.RawMessage // the structured content, re-encoded
}

// call calls a tool; a protocol error (such as an unknown tool) comes back
// as an error result, since to the caller both are a refusal.
func call(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) result {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return result{isError: true, text: err.Error()}
	}
	var r result
	r.isError = res.IsError
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	r.text = strings.Join(texts, "\n")
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		r.structured = b
	}
	return r
}

// mustCall calls a tool that must succeed and decodes its structured
// content into out.
func mustCall[T any](t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) T {
	t.Helper()
	r := call(t, cs, name, args)
	if r.isError {
		t.Fatalf("%s(%v): error result: %s", name, args, r.text)
	}
	var out T
	dec := json.NewDecoder(strings.NewReader(string(r.structured)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("%s: decoding %s: %v", name, r.structured, err)
	}
	return out
}
