package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/permission"
)

// The bulk tools: a dry run counts and changes nothing; a call acts on
// every match, one audit entry per job; a limit over the cap is refused
// before anything is touched; job_delete removes a terminal job.
func TestBulkTools(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cs := connect(t, f.server(t, grant("ops:ada", permission.All()...)))
	before := len(f.audit(t))
	var got bulkResult
	decode := func(r result) {
		t.Helper()
		if r.isError {
			t.Fatalf("call failed: %s", r.text)
		}
		got = bulkResult{}
		if err := json.Unmarshal(r.structured, &got); err != nil {
			t.Fatal(err)
		}
	}
	decode(call(t, cs, "job_cancel_matching", map[string]any{"queue": mailQueue, "dry_run": true}))
	if !got.DryRun || got.Matched != 2 || got.Applicable != 2 || got.Acted != 0 || len(f.audit(t)) != before {
		t.Fatalf("dry run = %+v with %d audit entries written; want 2 matched, 2 applicable, nothing changed", got, len(f.audit(t))-before)
	}
	if r := call(t, cs, "job_cancel_matching", map[string]any{"queue": mailQueue, "limit": backwave.MaxBulkLimit + 1}); !r.isError {
		t.Fatalf("a limit over the cap ran: %s", r.structured)
	}
	if r := call(t, cs, "job_cancel_matching", map[string]any{"queue": "nope"}); !r.isError || !strings.Contains(r.text, `"nope"`) {
		t.Fatalf("an unknown Queue: %+v, want it refused by name", r)
	}
	decode(call(t, cs, "job_cancel_matching", map[string]any{"queue": mailQueue, "limit": 1}))
	if got.Acted != 1 || !got.More || got.Next == 0 || got.Actor != "ops:ada" {
		t.Fatalf("first call = %+v; want 1 cancelled and more to come", got)
	}
	decode(call(t, cs, "job_cancel_matching", map[string]any{"queue": mailQueue, "before": got.Next}))
	if got.Acted != 1 || got.More {
		t.Fatalf("second call = %+v; want the last one cancelled", got)
	}
	for _, id := range f.waiting {
		if st := f.job(t, id).State; st != backwave.StateCancelled {
			t.Errorf("job %d is %s after the bulk cancel", id, st)
		}
	}
	if r := call(t, cs, "job_delete", map[string]any{"id": f.dead}); r.isError {
		t.Fatalf("job_delete: %s", r.text)
	}
	if n := len(f.audit(t)) - before; n != 3 {
		t.Fatalf("%d audit entries written, want 3 (two cancels, one delete)", n)
	}
}

// Each bulk tool is gated once per call by its action's Permission, checked
// again when it runs: withdrawn after listing, the call is refused before
// any job is touched.
func TestBulkToolsRecheckedAtCall(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tool string
		perm permission.Permission
	}{
		{"job_requeue_matching", permission.Requeue},
		{"job_cancel_matching", permission.Cancel},
		{"job_delete_matching", permission.Delete},
		{"job_delete", permission.Delete},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			var allow atomic.Bool
			allow.Store(true)
			pol := permission.Policy{
				Allow: func(_ context.Context, p permission.Permission) bool {
					return p == permission.View || (p == tc.perm && allow.Load())
				},
				ResolveActor: func(context.Context) (string, error) { return "ops:eve", nil },
			}
			cs := connect(t, f.server(t, pol))
			before := len(f.audit(t))
			allow.Store(false)
			args := map[string]any{"id": f.dead}
			if tc.tool != "job_delete" {
				args = map[string]any{}
			}
			r := call(t, cs, tc.tool, args)
			if !r.isError || !strings.Contains(r.text, "permission denied") || !strings.Contains(r.text, tc.perm.String()) {
				t.Errorf("%s after %s was withdrawn: %+v", tc.tool, tc.perm, r)
			}
			if n := len(f.audit(t)) - before; n != 0 {
				t.Errorf("the refused %s wrote %d audit entries", tc.tool, n)
			}
			for _, id := range append([]backwave.JobID{f.dead, f.succeeded}, f.waiting[:]...) {
				if _, err := f.admin(t).Job(context.Background(), id); err != nil {
					t.Errorf("job %d after the refused %s: %v", id, tc.tool, err)
				}
			}
		})
	}
}
