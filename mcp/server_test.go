package mcp

import (
	"context"
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/permission"
	"github.com/backwave/backwave/store/memstore"
)

// The 39 tools (glossary, MCP Server): the Monitor reads, then the audited
// Operator Actions. docs/mcp.md lists the same names.
var wantTools = []string{
	"job_get", "job_transitions", "job_list", "job_retrying", "job_dependencies",
	"tag_facet", "tag_suggest", "count_by_state", "count_by_queue", "queue_list",
	"schedule_list", "schedule_occurrences", "audit_list",
	"workflow_list", "workflow_get", "queue_keys", "nodes_list",
	"job_requeue", "job_cancel", "job_reschedule", "job_enqueue",
	"schedule_trigger", "schedule_pause", "schedule_resume", "schedule_remove",
	"queue_pause", "queue_resume", "queue_set_limit",
	"workflow_cancel", "workflow_restart", "workflow_retry",
	"queue_set_key_limit", "queue_set_key_rate", "queue_set_fair_claim",
	"queue_remove",
	"job_delete", "job_requeue_matching", "job_cancel_matching", "job_delete_matching",
}

func TestCatalogue(t *testing.T) {
	t.Parallel()
	s, err := NewServer(memstore.New(memstore.Options{}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	tools := s.Tools()
	var names []string
	actions := map[permission.Action]string{}
	for _, tool := range tools {
		names = append(names, tool.Name)
		switch {
		case tool.Action == 0 && tool.Permission != permission.View:
			t.Errorf("read %s is gated by %s, want View", tool.Name, tool.Permission)
		case tool.Action != 0 && tool.Permission != tool.Action.Permission():
			t.Errorf("write %s is gated by %s, but %s is gated by %s", tool.Name, tool.Permission, tool.Action, tool.Action.Permission())
		case tool.Action != 0:
			if other, dup := actions[tool.Action]; dup {
				t.Errorf("%s and %s both take %s", other, tool.Name, tool.Action)
			}
			actions[tool.Action] = tool.Name
		}
	}
	if len(tools) != len(wantTools) || !slices.Equal(names, wantTools) {
		t.Errorf("catalogue has %d tools %v\nwant %d %v", len(tools), names, len(wantTools), wantTools)
	}
	for _, a := range permission.Actions() {
		switch a {
		case permission.ActionCancelWorkflow, permission.ActionRestartWorkflow, permission.ActionRetryWorkflow:
			continue // the Workflow tools take these; they are not among the 23
		}
		if _, ok := actions[a]; !ok {
			t.Errorf("no tool takes the Operator Action %s", a)
		}
	}
}

// docs/mcp.md lists every tool in its table, in catalogue order.
func TestDocsListTheCatalogue(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../docs/mcp.md")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	row := regexp.MustCompile("^\\| *\\d+ *\\| *`([a-z_]+)`")
	for line := range strings.SplitSeq(string(b), "\n") {
		if m := row.FindStringSubmatch(line); m != nil {
			listed = append(listed, m[1])
		}
	}
	if !slices.Equal(listed, wantTools) {
		t.Errorf("docs/mcp.md lists %v\nwant %v", listed, wantTools)
	}
}

func TestNewServerRefuses(t *testing.T) {
	t.Parallel()
	st := memstore.New(memstore.Options{})
	for _, tc := range []struct {
		name  string
		store backwave.Store
		opts  Options
	}{
		{"nil store", nil, Options{}},
		{"relative prefix", st, Options{Prefix: "mcp"}},
		{"trailing slash", st, Options{Prefix: "/mcp/"}},
		{"root", st, Options{Prefix: "/"}},
		{"pattern", st, Options{Prefix: "/mcp/{id}"}},
		{"empty allowed host", st, Options{AllowedHosts: []string{""}}},
		{"allowed host with a path", st, Options{AllowedHosts: []string{"example.com/mcp"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := NewServer(tc.store, tc.opts); !errors.Is(err, backwave.ErrInvalidConfig) {
				t.Errorf("NewServer: %v, want ErrInvalidConfig", err)
			}
		})
	}
	s, err := NewServer(st, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Prefix() != DefaultPrefix {
		t.Errorf("Prefix %q, want %q", s.Prefix(), DefaultPrefix)
	}
}

// The tool list follows the Policy, caller by caller (stdio form).
func TestToolListPerCaller(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	reads := wantTools[:17]
	sorted := func(names ...[]string) []string {
		out := slices.Concat(names...)
		slices.Sort(out)
		return out
	}
	all := permission.All()
	for _, tc := range []struct {
		name string
		pol  permission.Policy
		want []string
	}{
		{"zero policy: reads only", permission.Policy{}, sorted(reads)},
		{"View denied: nothing", grant("ops:x"), nil},
		{"sensitive reader", grant("", permission.View, permission.ViewSensitiveData), sorted(reads)},
		{"every permission but no ResolveActor", grant("", all...), sorted(reads)},
		{"Requeue", grant("ops:r", permission.View, permission.Requeue), sorted(reads, []string{"job_requeue", "job_reschedule", "workflow_restart", "workflow_retry", "job_requeue_matching"})},
		{"Cancel", grant("ops:c", permission.View, permission.Cancel), sorted(reads, []string{"job_cancel", "workflow_cancel", "job_cancel_matching"})},
		{"TriggerSchedule", grant("ops:t", permission.View, permission.TriggerSchedule), sorted(reads, []string{"schedule_trigger", "schedule_pause", "schedule_resume", "schedule_remove"})},
		{"PauseQueue", grant("ops:q", permission.View, permission.PauseQueue), sorted(reads, []string{"queue_pause", "queue_resume", "queue_set_limit", "queue_set_key_limit", "queue_set_key_rate", "queue_set_fair_claim", "queue_remove"})},
		{"Enqueue", grant("ops:e", permission.View, permission.Enqueue), sorted(reads, []string{"job_enqueue"})},
		{"Delete", grant("ops:d", permission.View, permission.Delete), sorted(reads, []string{"job_delete", "job_delete_matching"})},
		{"everything", grant("ops:all", all...), sorted(wantTools)},
		{"everything but read-only", func() permission.Policy { p := grant("ops:all", all...); p.ReadOnly = true; return p }(), sorted(reads)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := toolNames(t, connect(t, f.server(t, tc.pol)))
			if !slices.Equal(got, tc.want) {
				t.Errorf("tools %v\nwant %v", got, tc.want)
			}
		})
	}
}

// The gate bites: for every write tool, a caller holding every Permission
// but that tool's is not offered it, and calling it anyway is refused and
// audits nothing.
func TestEveryWriteToolIsGated(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	args := writeArgs(f)
	for _, tool := range f.server(t, permission.Policy{}).Tools() {
		if tool.Action == 0 {
			continue
		}
		t.Run(tool.Name, func(t *testing.T) {
			var others []permission.Permission
			for _, p := range permission.All() {
				if p != tool.Permission {
					others = append(others, p)
				}
			}
			before := len(f.audit(t))
			cs := connect(t, f.server(t, grant("ops:eve", others...)))
			if slices.Contains(toolNames(t, cs), tool.Name) {
				t.Errorf("%s is listed to a caller without %s", tool.Name, tool.Permission)
			}
			a, ok := args[tool.Name]
			if !ok {
				t.Fatalf("no arguments for %s", tool.Name)
			}
			if r := call(t, cs, tool.Name, a); !r.isError {
				t.Errorf("%s ran for a caller without %s: %s", tool.Name, tool.Permission, r.structured)
			}
			if after := len(f.audit(t)); after != before {
				t.Errorf("the refused %s wrote %d audit records", tool.Name, after-before)
			}
		})
	}
}

// writeArgs are valid arguments for every write tool on the fixture.
func writeArgs(f *fixture) map[string]map[string]any {
	return map[string]map[string]any{
		"job_requeue":          {"id": f.dead},
		"job_cancel":           {"id": f.waiting[0]},
		"job_reschedule":       {"id": f.waiting[1], "at": "2031-01-02T03:04:05Z"},
		"schedule_trigger":     {"name": scheduleName},
		"schedule_pause":       {"name": scheduleName},
		"schedule_resume":      {"name": scheduleName},
		"schedule_remove":      {"name": scheduleName},
		"queue_pause":          {"queue": mailQueue},
		"queue_resume":         {"queue": mailQueue},
		"queue_set_limit":      {"queue": mailQueue, "limit": 3},
		"queue_set_key_limit":  {"queue": mailQueue, "limit": 2},
		"queue_set_key_rate":   {"queue": mailQueue, "limit": 5, "period": "1m"},
		"queue_set_fair_claim": {"queue": mailQueue, "on": true},
		"job_enqueue":          {"wire_name": "mcp.test", "payload": map[string]any{"n": 1}},
		"queue_remove":         {"queue": mailQueue},
		// The fixture holds no Workflow: the gate refuses before the id
		// is read (workflow_test.go runs these on a real Workflow).
		"workflow_cancel":  {"id": 1},
		"workflow_restart": {"id": 1},
		"workflow_retry":   {"id": 1, "scope": "failed"},

		"job_delete":           {"id": f.dead},
		"job_requeue_matching": {"queue": mailQueue},
		"job_cancel_matching":  {"queue": mailQueue},
		"job_delete_matching":  {"queue": mailQueue},
	}
}

// A write whose permission the Policy withdraws after the tools were
// listed is refused when called, and audits nothing; so is one whose Actor
// cannot be resolved.
func TestWriteRecheckedAtCall(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var allow, actorOK atomic.Bool
	allow.Store(true)
	actorOK.Store(true)
	pol := permission.Policy{
		Allow: func(_ context.Context, p permission.Permission) bool { return p == permission.View || allow.Load() },
		ResolveActor: func(context.Context) (string, error) {
			if !actorOK.Load() {
				return "", errors.New("session expired")
			}
			return "ops:ada", nil
		},
	}
	cs := connect(t, f.server(t, pol))
	if !slices.Contains(toolNames(t, cs), "job_requeue") {
		t.Fatal("job_requeue not offered while allowed")
	}
	before := len(f.audit(t))
	allow.Store(false)
	r := call(t, cs, "job_requeue", map[string]any{"id": f.dead})
	if !r.isError || !strings.Contains(r.text, "permission denied") || !strings.Contains(r.text, "Requeue") {
		t.Errorf("requeue after the permission was withdrawn: %+v", r)
	}
	allow.Store(true)
	actorOK.Store(false)
	r = call(t, cs, "job_requeue", map[string]any{"id": f.dead})
	if !r.isError || !strings.Contains(r.text, "session expired") {
		t.Errorf("requeue without an Actor: %+v", r)
	}
	if after := len(f.audit(t)); after != before {
		t.Errorf("refused writes wrote %d audit records", after-before)
	}
	if got := f.job(t, f.dead).State; got != backwave.StateDeadLettered {
		t.Errorf("refused requeue left the job %s", got)
	}
}
