package backwave_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
	"github.com/backwave/backwave/store/sqlite"
)

// tracing is an EnqueueMiddleware that logs its name around next and
// stamps each job's TraceContext with it.
func tracing(name string, log *[]string) backwave.EnqueueMiddleware {
	return func(ctx context.Context, call *backwave.EnqueueCall, next func(context.Context) error) error {
		*log = append(*log, name+" before")
		for i := range call.Jobs {
			if call.Jobs[i].TraceContext == nil {
				call.Jobs[i].TraceContext = map[string]string{}
			}
			call.Jobs[i].TraceContext[name] = call.Jobs[i].WireName
		}
		err := next(ctx)
		ids := make([]string, len(call.Jobs))
		for i, j := range call.Jobs {
			ids[i] = fmt.Sprintf("%d/%v", j.ID, j.Inserted)
		}
		*log = append(*log, fmt.Sprintf("%s after %s tx=%v err=%v", name, strings.Join(ids, ","), call.InTx, err))
		return err
	}
}

// TestEnqueueMiddlewareWrapsEveryEnqueue: the first EnqueueMiddleware listed
// is the outermost, around Enqueue, EnqueueUnique and EnqueueTx alike; the
// jobs' ids are set after next; the TraceContext a middleware sets is
// stored with the job and reaches the Attempt's Middleware.
func TestEnqueueMiddlewareWrapsEveryEnqueue(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		db := openSQLiteApp(t, filepath.Join(t.TempDir(), "app.db"))
		st, err := sqlite.OpenDB(ctx, db, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		var (
			log  []string
			mu   sync.Mutex
			seen = map[job.ID]map[string]string{}
		)
		h := backwave.NewHandlers()
		mustAdd(t, backwave.AddHandlerFunc(h, func(context.Context, *backwave.Job[obsOK]) error { return nil }))
		c := startClient(t, st, backwave.Config{
			Handlers:          h,
			Groups:            []backwave.WorkerGroupOptions{group("g", backwave.DefaultQueue)},
			EnqueueMiddleware: []backwave.EnqueueMiddleware{tracing("outer", &log), tracing("inner", &log)},
			Middleware: []backwave.Middleware{func(ctx context.Context, a backwave.AttemptInfo, next func(context.Context) error) error {
				mu.Lock()
				seen[a.ID] = a.TraceContext
				mu.Unlock()
				return next(ctx)
			}},
		})
		id, err := c.Enqueue(ctx, obsOK{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.EnqueueUnique(ctx, obsOK{}, backwave.WithUnique("k", backwave.UniqueWhileLive())); err != nil {
			t.Fatal(err)
		}
		if _, err := c.EnqueueUnique(ctx, obsOK{}, backwave.WithUnique("k", backwave.UniqueWhileLive())); err != nil {
			t.Fatal(err)
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		txID, err := c.EnqueueTx(ctx, tx, obsOK{})
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		want := []string{
			"outer before", "inner before",
			fmt.Sprintf("inner after %d/true tx=false err=<nil>", id), fmt.Sprintf("outer after %d/true tx=false err=<nil>", id),
			"outer before", "inner before", "inner after 2/true tx=false err=<nil>", "outer after 2/true tx=false err=<nil>",
			"outer before", "inner before", "inner after 2/false tx=false err=<nil>", "outer after 2/false tx=false err=<nil>",
			"outer before", "inner before",
			fmt.Sprintf("inner after %d/true tx=true err=<nil>", txID), fmt.Sprintf("outer after %d/true tx=true err=<nil>", txID),
		}
		if !slices.Equal(log, want) {
			t.Errorf("middleware ran\n%s\nwant\n%s", strings.Join(log, "\n"), strings.Join(want, "\n"))
		}
		wantTC := map[string]string{"outer": "test.obs.ok", "inner": "test.obs.ok"}
		for _, jid := range []job.ID{id, txID} {
			waitState(t, st, jid, job.StateSucceeded)
			if got := getJob(t, st, jid).TraceContext; !mapsEqual(got, wantTC) {
				t.Errorf("job %d stored trace context %v, want %v", jid, got, wantTC)
			}
			mu.Lock()
			got := seen[jid]
			mu.Unlock()
			if !mapsEqual(got, wantTC) {
				t.Errorf("the Attempt of job %d saw trace context %v, want %v", jid, got, wantTC)
			}
		}
	})
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestEnqueueMiddlewareMisuse: a middleware that returns nil without calling
// next stores nothing and the call fails saying so; one that calls next
// twice stores the jobs once; a middleware's own error fails the call; a
// nil middleware, or a trace context over the limit, is refused.
func TestEnqueueMiddlewareMisuse(t *testing.T) {
	t.Parallel()
	errVeto := errors.New("veto")
	cases := []struct {
		name    string
		mw      backwave.EnqueueMiddleware
		wantErr string
		stored  int
	}{
		{
			name:    "next not called",
			mw:      func(context.Context, *backwave.EnqueueCall, func(context.Context) error) error { return nil },
			wantErr: "without calling next",
		},
		{
			name: "next called twice",
			mw: func(ctx context.Context, _ *backwave.EnqueueCall, next func(context.Context) error) error {
				if err := next(ctx); err != nil {
					return err
				}
				return next(ctx)
			},
			wantErr: "a second time",
			stored:  1,
		},
		{
			name:    "middleware error",
			mw:      func(context.Context, *backwave.EnqueueCall, func(context.Context) error) error { return errVeto },
			wantErr: "veto",
		},
		{
			name: "trace context over the limit",
			mw: func(ctx context.Context, call *backwave.EnqueueCall, next func(context.Context) error) error {
				call.Jobs[0].TraceContext = map[string]string{"traceparent": strings.Repeat("x", 4096)}
				return next(ctx)
			},
			wantErr: "trace context",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := newStore()
			c, err := backwave.NewClient(st, backwave.Config{EnqueueMiddleware: []backwave.EnqueueMiddleware{tc.mw}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Enqueue(context.Background(), obsOK{})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Enqueue error = %v, want one saying %q", err, tc.wantErr)
			}
			counts, err := st.JobCountByState(context.Background(), store.CountParams{})
			if err != nil {
				t.Fatal(err)
			}
			if n := counts[job.StateScheduled]; n != tc.stored {
				t.Errorf("%d jobs stored, want %d", n, tc.stored)
			}
		})
	}
	t.Run("nil middleware", func(t *testing.T) {
		t.Parallel()
		_, err := backwave.NewClient(newStore(), backwave.Config{EnqueueMiddleware: []backwave.EnqueueMiddleware{nil}})
		if !errors.Is(err, backwave.ErrInvalidConfig) {
			t.Errorf("NewClient error = %v, want ErrInvalidConfig", err)
		}
	})
}
