package dashboardext_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/dashboard"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/permission"
	"github.com/backwave/backwave/store/memstore"
	"github.com/backwave/backwave/workflow"
	"github.com/backwave/backwave/workflow/dashboardext"
)

// okStep succeeds; failStep dead-letters at once.
type (
	okStep struct {
		workflow.Step[string]
	}
	failStep struct {
		workflow.StepNoOutput
	}
)

func (okStep) WireName() string   { return "test.ok" }
func (failStep) WireName() string { return "test.fail" }

type fixture struct {
	t      *testing.T
	st     backwave.Store
	client *backwave.Client
	admin  *backwave.Admin
	moved  chan struct{}
}

// newFixture runs a Client with the Steps' handlers over a fresh In-Memory
// Store on the wall clock, so members reach their states as in production.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	moved := make(chan struct{}, 1)
	st := memstore.New(memstore.Options{
		Clock: backwave.WallClock{},
		OnTransition: func(job.ID, core.Edge, job.Attempt) {
			select {
			case moved <- struct{}{}:
			default:
			}
		},
	})
	f := &fixture{t: t, st: st, moved: moved}
	hs := backwave.NewHandlers()
	if err := errors.Join(
		backwave.AddHandlerFunc(hs, func(_ context.Context, j *backwave.Job[okStep]) error {
			return workflow.SetOutput(j, "ok")
		}),
		backwave.AddHandlerFunc(hs, func(context.Context, *backwave.Job[failStep]) error {
			return backwave.FailPermanently(errors.New("card expired"))
		}),
	); err != nil {
		t.Fatal(err)
	}
	g := backwave.DefaultWorkerGroup("test", backwave.Strict(backwave.DefaultQueue))
	g.PollInterval = 20 * time.Millisecond
	c, err := backwave.NewClient(st, backwave.Config{Handlers: hs, Groups: []backwave.WorkerGroupOptions{g}, Logger: slog.New(slog.DiscardHandler), NodeID: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Stop(ctx)
	})
	f.client = c
	if f.admin, err = c.Admin("test:setup"); err != nil {
		t.Fatal(err)
	}
	return f
}

// failedWorkflow enqueues root → {charge (fails), pack} → ship → notify and
// waits until it drained: charge Dead-Lettered, ship and notify Cancelled by
// it — the failed path — and root and pack Succeeded.
func (f *fixture) failedWorkflow() workflow.Enqueued {
	f.t.Helper()
	b := workflow.New("order", workflow.None{})
	root := workflow.Add(b, okStep{}, workflow.Named("root"))
	charge := workflow.Then(b, root, failStep{}, workflow.Named("charge"))
	pack := workflow.Then(b, root, okStep{}, workflow.Named("pack"))
	ship := workflow.FanIn(b, okStep{}, []workflow.Parent{charge, pack}, workflow.Named("ship"))
	workflow.Then(b, ship, okStep{}, workflow.Named("notify"))
	run, err := b.Enqueue(context.Background(), f.client)
	if err != nil {
		f.t.Fatal(err)
	}
	f.waitStatus(run.ID, backwave.WorkflowFailed)
	return run
}

// waitStatus waits, on the store's transition signal, until Workflow id's
// derived status is want.
func (f *fixture) waitStatus(id backwave.WorkflowID, want backwave.WorkflowStatus) {
	f.t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		w, err := f.admin.WorkflowStatus(context.Background(), id)
		if err != nil {
			f.t.Fatalf("workflow %d: %v", id, err)
		}
		if w.Status == want {
			return
		}
		select {
		case <-f.moved:
		case <-time.After(50 * time.Millisecond): // a transition may land between the read and the wait
		case <-deadline:
			f.t.Fatalf("workflow %d is %s, want %s", id, w.Status, want)
		}
	}
}

// waitAudit waits until the audit trail holds an entry of action.
func (f *fixture) waitAudit(action string) {
	f.t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		page, err := f.admin.Audit(context.Background(), backwave.AuditListParams{})
		if err != nil {
			f.t.Fatalf("audit: %v", err)
		}
		for _, e := range page.Items {
			if e.Action.String() == action {
				return
			}
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			f.t.Fatalf("no %s in the audit trail: %+v", action, page.Items)
		}
	}
}

func allowOnly(ps ...permission.Permission) permission.Policy {
	return permission.Policy{
		Allow: func(_ context.Context, p permission.Permission) bool {
			for _, q := range ps {
				if p == q {
					return true
				}
			}
			return false
		},
		ResolveActor: func(context.Context) (string, error) { return "test:alice", nil },
	}
}

// serve mounts the dashboard with the extension over the fixture's store.
func (f *fixture) serve(pol permission.Policy) *httptest.Server {
	f.t.Helper()
	h, err := dashboard.New(f.st, dashboard.Options{Policy: pol, Extensions: []dashboard.Extension{dashboardext.New()}})
	if err != nil {
		f.t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(dashboard.DefaultPrefix+"/", h)
	ts := httptest.NewServer(mux)
	f.t.Cleanup(ts.Close)
	// Before Close (cleanups run last first): a browser's keep-alive
	// connection would hold Close until the browser is gone.
	f.t.Cleanup(ts.CloseClientConnections)
	return ts
}

func get(t *testing.T, ts *httptest.Server, path string) (int, string) {
	t.Helper()
	resp, err := ts.Client().Get(ts.URL + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// post sends a same-origin form POST without following the redirect.
func post(t *testing.T, ts *httptest.Server, path string, form url.Values) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", ts.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	client := *ts.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp
}
