package dashboard

import (
	"context"
	"errors"
	"fmt"
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
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/permission"
	"github.com/backwave/backwave/store/memstore"
)

// The fixtures drive a real backwave.Client with handlers over the
// In-Memory Store on the wall clock, so every job reaches its state the way
// production jobs do: a handler that fails permanently dead-letters its
// job with Failure Detail, one that sets output succeeds with Job Output,
// and a Wire Name without a handler is Quarantined.

// okJob succeeds, storing Out as its Job Output.
type okJob struct {
	Out    string `json:"out"`
	Secret string `json:"secret"`
}

func (okJob) WireName() string { return "test.ok" }

// failJob dead-letters at once with Detail as its Failure Detail.
type failJob struct {
	Detail string `json:"detail"`
	Secret string `json:"secret"`
}

func (failJob) WireName() string { return "test.fail" }

// snoozeJob snoozes its first Attempt (due again at once) and succeeds on
// the next.
type snoozeJob struct{}

func (snoozeJob) WireName() string { return "test.snooze" }

// anyJob has the Wire Name its W says: without a handler it is Quarantined
// on a served Queue and waits on any other.
type anyJob struct {
	W    string `json:"-"`
	Data string `json:"data"`
}

func (a anyJob) WireName() string { return a.W }

// servedQueue is the one Queue the fixture's Worker Group serves.
const servedQueue = "default"

type fixture struct {
	t      *testing.T
	st     backwave.Store
	client *backwave.Client
	admin  *backwave.Admin
	moved  chan struct{}
}

// newFixture starts a Client with the test handlers over a fresh
// In-Memory Store, whose transitions wake waitState.
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
	return newFixtureOn(t, st, moved)
}

// newFixtureOn starts a Client with the test handlers over st; moved, if
// the store can signal its transitions, wakes waitState.
func newFixtureOn(t *testing.T, st backwave.Store, moved chan struct{}) *fixture {
	t.Helper()
	if moved == nil {
		moved = make(chan struct{})
	}
	f := &fixture{t: t, st: st, moved: moved}
	hs := backwave.NewHandlers()
	if err := backwave.AddHandlerFunc(hs, func(_ context.Context, j *backwave.Job[okJob]) error {
		j.SetOutput([]byte(j.Args.Out))
		return j.SaveCursor(map[string]string{"at": secretCursor})
	}); err != nil {
		t.Fatal(err)
	}
	if err := backwave.AddHandlerFunc(hs, func(_ context.Context, j *backwave.Job[failJob]) error {
		return backwave.FailPermanently(errors.New(j.Args.Detail))
	}); err != nil {
		t.Fatal(err)
	}
	if err := backwave.AddHandlerFunc(hs, func(_ context.Context, j *backwave.Job[snoozeJob]) error {
		if j.Attempt == 1 {
			return fmt.Errorf("waiting for the upstream: %w", backwave.Snooze(0))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	g := backwave.DefaultWorkerGroup("test", backwave.Strict(servedQueue))
	g.PollInterval = 20 * time.Millisecond
	c, err := backwave.NewClient(f.st, backwave.Config{
		Handlers: hs, Groups: []backwave.WorkerGroupOptions{g},
		Logger: slog.New(slog.DiscardHandler), NodeID: "test",
	})
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
	if f.admin, err = c.Admin("test:setup", backwave.WithQueueSetup()); err != nil {
		t.Fatal(err)
	}
	return f
}

// enqueue stores one job, failing the test on error.
func (f *fixture) enqueue(args backwave.JobArgs, opts ...backwave.EnqueueOption) backwave.JobID {
	f.t.Helper()
	id, err := f.client.Enqueue(context.Background(), args, opts...)
	if err != nil {
		f.t.Fatalf("enqueue %T: %v", args, err)
	}
	return id
}

// waitState waits, on the store's transition signal, until job id is in
// state want.
func (f *fixture) waitState(id backwave.JobID, want backwave.JobState) {
	f.t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		j, err := f.client.JobGet(context.Background(), id)
		if err != nil {
			f.t.Fatalf("job %d: %v", id, err)
		}
		if j.State == want {
			return
		}
		select {
		case <-f.moved:
		case <-time.After(50 * time.Millisecond): // a report may land between the read and the wait
		case <-deadline:
			f.t.Fatalf("job %d is %s, want %s", id, j.State, want)
		}
	}
}

// policies used by the tests.
func allowAll() permission.Policy {
	return permission.Policy{
		Allow:        func(context.Context, permission.Permission) bool { return true },
		ResolveActor: func(context.Context) (string, error) { return "test:alice", nil },
	}
}

// allowOnly grants exactly the given Permissions.
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
		ResolveActor: func(context.Context) (string, error) { return "test:bob", nil },
	}
}

// serve mounts a dashboard over the fixture's store on a test server.
func (f *fixture) serve(opts Options) (*server, *httptest.Server) {
	f.t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s, err := newServer(f.st, opts)
	if err != nil {
		f.t.Fatalf("newServer: %v", err)
	}
	ts := httptest.NewServer(s.handler)
	f.t.Cleanup(ts.Close)
	return s, ts
}

// get fetches path on ts and returns status and body.
func get(t *testing.T, ts *httptest.Server, path string) (int, string) {
	t.Helper()
	resp, err := ts.Client().Get(ts.URL + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read: %v", path, err)
	}
	return resp.StatusCode, string(b)
}

// post sends a same-origin form POST (as a browser on the dashboard's own
// page would) without following the redirect.
func post(t *testing.T, ts *httptest.Server, path string, form url.Values) *http.Response {
	t.Helper()
	resp, _ := postRead(t, ts, path, form)
	return resp
}

// postRead is post returning the body it read too.
func postRead(t *testing.T, ts *httptest.Server, path string, form url.Values) (*http.Response, string) {
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
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("POST %s: read the body: %v", path, err)
	}
	return resp, string(body)
}
