package mcp

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/permission"
)

// Every tool, called by a caller holding every Permission, does what its
// Admin method does; every write is audited with the caller's Actor.
func TestCallEveryTool(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const actor = "ops:ada"
	cs := connect(t, f.server(t, grant(actor, permission.All()...)))
	called := map[string]bool{}
	do := func(name string) string {
		called[name] = true
		return name
	}

	// Reads.
	got := mustCall[jobGetResult](t, cs, do("job_get"), map[string]any{"id": f.succeeded})
	if got.Job.State != "succeeded" || got.Output == nil || got.Output.Encoding != "json" ||
		got.Output.Value.(map[string]any)["summary"] != outputMarker || got.Withheld != nil {
		t.Errorf("job_get of the Succeeded job: %+v", got)
	}
	if got.Job.Payload == nil || got.Job.Payload.Value.(map[string]any)["account"] != secretAccount {
		t.Errorf("job_get payload: %+v", got.Job.Payload)
	}
	if got.Transitions < 3 {
		t.Errorf("job_get: %d transitions, want insert, claim, succeed", got.Transitions)
	}

	if got.Job.TerminalCause != "" || got.Job.EndedBecause != "" {
		t.Errorf("job_get of the Succeeded job has a terminal cause: %+v", got.Job)
	}
	dead := mustCall[jobGetResult](t, cs, "job_get", map[string]any{"id": f.dead})
	if dead.Job.TerminalCause != "permanent_failure" || dead.Job.EndedBecause != "permanent failure: the handler failed Attempt 1 permanently" {
		t.Errorf("job_get of the Dead-Lettered job: terminal cause %q, ended because %q", dead.Job.TerminalCause, dead.Job.EndedBecause)
	}

	trs := mustCall[transitionsResult](t, cs, do("job_transitions"), map[string]any{"id": f.dead})
	last := trs.Transitions[len(trs.Transitions)-1]
	if last.State != "dead_lettered" || last.Via != "dead_letter" || !strings.Contains(last.FailureDetail, secretDetail) {
		t.Errorf("job_transitions of the Dead-Lettered job ends %+v", last)
	}

	list := mustCall[jobPage](t, cs, do("job_list"), map[string]any{"states": []string{"dead_lettered"}, "tags": []map[string]string{{"key": "tenant", "value": "acme"}}})
	if len(list.Jobs) != 1 || list.Jobs[0].ID != jobID(f.dead) || list.Jobs[0].Payload == nil {
		t.Errorf("job_list dead_lettered tenant=acme: %+v", list.Jobs)
	}
	page := mustCall[jobPage](t, cs, "job_list", map[string]any{"limit": 1})
	if len(page.Jobs) != 1 || page.Next == 0 {
		t.Errorf("job_list limit 1: %+v", page)
	}
	rest := mustCall[jobPage](t, cs, "job_list", map[string]any{"before": page.Next, "limit": 100})
	if len(rest.Jobs) != 4 || rest.Jobs[0].ID >= page.Jobs[0].ID {
		t.Errorf("job_list second page: %+v", rest.Jobs)
	}

	retrying := mustCall[jobPage](t, cs, do("job_retrying"), map[string]any{})
	if len(retrying.Jobs) != 1 || retrying.Jobs[0].ID != jobID(f.retrying) || retrying.Jobs[0].RetryCause != "handler_failed" {
		t.Errorf("job_retrying: %+v, want the hook job", retrying.Jobs)
	}

	deps := mustCall[dependenciesResult](t, cs, do("job_dependencies"), map[string]any{"id": f.dead})
	if deps.JobID != jobID(f.dead) || len(deps.Parents) != 0 || len(deps.Dependents) != 0 {
		t.Errorf("job_dependencies: %+v", deps)
	}

	facet := mustCall[facetResult](t, cs, do("tag_facet"), map[string]any{})
	if len(facet.Tags) != 2 || facet.Tags[0] != (tagCountView{Key: "tenant", Value: "acme", Count: 2}) {
		t.Errorf("tag_facet: %+v", facet.Tags)
	}
	suggest := mustCall[suggestResult](t, cs, do("tag_suggest"), map[string]any{"prefix": "ten"})
	if !slices.Equal(suggest.Tags, []tagValue{{Key: "tenant", Value: "acme"}}) {
		t.Errorf("tag_suggest ten: %+v", suggest.Tags)
	}

	counts := mustCall[countByStateResult](t, cs, do("count_by_state"), map[string]any{})
	if counts.Total != 5 || counts.Counts["dead_lettered"] != 1 || counts.Counts["succeeded"] != 1 || counts.Counts["scheduled"] != 3 || len(counts.Counts) != len(backwave.JobStates()) {
		t.Errorf("count_by_state: %+v", counts)
	}
	mail := mustCall[countByStateResult](t, cs, "count_by_state", map[string]any{"queue": mailQueue})
	if mail.Total != 2 || mail.Queue != mailQueue || mail.Ready+mail.Later != 2 {
		t.Errorf("count_by_state mail: %+v", mail)
	}
	byQueue := mustCall[countByQueueResult](t, cs, do("count_by_queue"), nil)
	if !slices.Contains(byQueue.Counts, queueStateCount{Queue: mailQueue, State: "scheduled", Count: 2}) {
		t.Errorf("count_by_queue: %+v", byQueue.Counts)
	}

	queues := mustCall[queuesResult](t, cs, do("queue_list"), nil)
	if !slices.ContainsFunc(queues.Queues, func(q queueView) bool { return q.Name == mailQueue && !q.Paused && q.Ready+q.Later == 2 }) {
		t.Errorf("queue_list: %+v", queues.Queues)
	}

	// The fixture's working Client stopped, so its row is gone; nothing in
	// mail is due yet, so mail is not unserved.
	nodes := mustCall[nodesResult](t, cs, do("nodes_list"), nil)
	if len(nodes.Nodes) != 0 || !slices.ContainsFunc(nodes.Queues, func(q queueNodesView) bool { return q.Queue == mailQueue && q.LiveNodes == 0 && !q.Unserved }) {
		t.Errorf("nodes_list: %+v", nodes)
	}

	schedules := mustCall[schedulesResult](t, cs, do("schedule_list"), nil)
	if len(schedules.Schedules) != 1 || schedules.Schedules[0].Name != scheduleName || schedules.Schedules[0].Cron != "0 3 * * *" || schedules.Schedules[0].Next.IsZero() {
		t.Errorf("schedule_list: %+v", schedules.Schedules)
	}

	// Writes, each checked in the store and in the audit trail.
	auditHas := func(action backwave.AuditAction, jobID backwave.JobID) {
		t.Helper()
		entries := f.audit(t)
		if len(entries) == 0 || entries[0].Action != action || entries[0].Actor != actor || entries[0].JobID != jobID {
			t.Errorf("after %s the newest audit entry is %+v, want %s by %s", action, entries, action, actor)
		}
	}

	req := mustCall[jobActionResult](t, cs, do("job_requeue"), map[string]any{"id": f.dead})
	if req.Job.State != "scheduled" || req.Actor != actor || f.job(t, f.dead).State != backwave.StateScheduled {
		t.Errorf("job_requeue: %+v", req)
	}
	auditHas(backwave.AuditRequeue, f.dead)

	canc := mustCall[jobActionResult](t, cs, do("job_cancel"), map[string]any{"id": f.waiting[0]})
	if canc.Job.State != "cancelled" || canc.Job.CancelCause != "operator" {
		t.Errorf("job_cancel: %+v", canc.Job)
	}
	auditHas(backwave.AuditCancel, f.waiting[0])

	at := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	resch := mustCall[jobActionResult](t, cs, do("job_reschedule"), map[string]any{"id": f.waiting[1], "at": at.Format(time.RFC3339)})
	if !resch.Job.ScheduledAt.Equal(at) || !f.job(t, f.waiting[1]).ScheduledAt.Equal(at) {
		t.Errorf("job_reschedule: due %s, want %s", resch.Job.ScheduledAt, at)
	}
	auditHas(backwave.AuditReschedule, f.waiting[1])

	enq := mustCall[jobActionResult](t, cs, do("job_enqueue"), map[string]any{"wire_name": "mcptest.resend", "queue": mailQueue, "payload": map[string]any{"to": "ada"}, "max_attempts": 2})
	if enq.Job.State != "scheduled" || enq.Job.Queue != mailQueue || f.job(t, backwave.JobID(enq.Job.ID)).WireName != "mcptest.resend" {
		t.Errorf("job_enqueue: %+v", enq.Job)
	}
	auditHas(backwave.AuditEnqueue, backwave.JobID(enq.Job.ID))

	trig := mustCall[triggerResult](t, cs, do("schedule_trigger"), map[string]any{"name": scheduleName})
	if trig.JobID == 0 || f.job(t, backwave.JobID(trig.JobID)).WireName != "mcptest.build_report" {
		t.Errorf("schedule_trigger: %+v", trig)
	}
	auditHas(backwave.AuditScheduleTrigger, backwave.JobID(trig.JobID))

	occ := mustCall[occurrencesResult](t, cs, do("schedule_occurrences"), map[string]any{"name": scheduleName, "kinds": []string{"triggered"}})
	if len(occ.Occurrences) != 1 || occ.Occurrences[0].Actor != actor || occ.Occurrences[0].JobID != trig.JobID {
		t.Errorf("schedule_occurrences: %+v", occ.Occurrences)
	}

	for _, tc := range []struct {
		tool   string
		action backwave.AuditAction
		paused bool
	}{
		{"schedule_pause", backwave.AuditSchedulePause, true},
		{"schedule_resume", backwave.AuditScheduleResume, false},
	} {
		r := mustCall[scheduleActionResult](t, cs, do(tc.tool), map[string]any{"name": scheduleName})
		if r.Actor != actor {
			t.Errorf("%s: %+v", tc.tool, r)
		}
		auditHas(tc.action, 0)
		s := mustCall[schedulesResult](t, cs, "schedule_list", nil)
		if s.Schedules[0].Paused != tc.paused {
			t.Errorf("after %s paused is %v", tc.tool, s.Schedules[0].Paused)
		}
	}

	for _, tc := range []struct {
		tool   string
		args   map[string]any
		action backwave.AuditAction
		check  func(queueView) bool
	}{
		{"queue_pause", map[string]any{"queue": mailQueue}, backwave.AuditQueuePause, func(q queueView) bool { return q.Paused }},
		{"queue_resume", map[string]any{"queue": mailQueue}, backwave.AuditQueueResume, func(q queueView) bool { return !q.Paused }},
		{"queue_set_limit", map[string]any{"queue": mailQueue, "limit": 3}, backwave.AuditQueueSetLimit, func(q queueView) bool { return q.Limit == 3 }},
	} {
		r := mustCall[queueActionResult](t, cs, do(tc.tool), tc.args)
		if r.Actor != actor || r.Queue != mailQueue {
			t.Errorf("%s: %+v", tc.tool, r)
		}
		auditHas(tc.action, 0)
		qs := mustCall[queuesResult](t, cs, "queue_list", nil)
		if !slices.ContainsFunc(qs.Queues, func(q queueView) bool { return q.Name == mailQueue && tc.check(q) }) {
			t.Errorf("after %s: %+v", tc.tool, qs.Queues)
		}
	}

	audit := mustCall[auditResult](t, cs, do("audit_list"), map[string]any{"job_id": f.dead})
	if len(audit.Entries) != 1 || audit.Entries[0].Action != "requeue" || audit.Entries[0].Actor != actor {
		t.Errorf("audit_list job_id: %+v", audit.Entries)
	}

	mustCall[scheduleActionResult](t, cs, do("schedule_remove"), map[string]any{"name": scheduleName})
	auditHas(backwave.AuditScheduleRemove, 0)
	if s := mustCall[schedulesResult](t, cs, "schedule_list", nil); len(s.Schedules) != 0 {
		t.Errorf("schedule_list after schedule_remove: %+v", s.Schedules)
	}

	callWorkflowTools(t, f, cs, do, actor)
	callKeyTools(t, cs, do, actor, auditHas)

	// queue_remove: an empty Queue goes with its settings.
	setup, err := backwave.NewAdmin(f.store, "test:setup", backwave.WithQueueSetup())
	if err != nil {
		t.Fatal(err)
	}
	if err := setup.SetQueueLimit(t.Context(), "spare", 2); err != nil {
		t.Fatal(err)
	}
	if r := mustCall[queueActionResult](t, cs, do("queue_remove"), map[string]any{"queue": "spare"}); r.Actor != actor || r.Action != "remove_queue" {
		t.Errorf("queue_remove: %+v", r)
	}
	auditHas(backwave.AuditQueueRemove, 0)
	if qs := mustCall[queuesResult](t, cs, "queue_list", nil); slices.ContainsFunc(qs.Queues, func(q queueView) bool { return q.Name == "spare" }) {
		t.Errorf("queue_list after queue_remove: %+v", qs.Queues)
	}

	// The bulk tools and job_delete (bulk_test.go checks their effects).
	for _, name := range []string{"job_requeue_matching", "job_cancel_matching", "job_delete_matching"} {
		if r := mustCall[bulkResult](t, cs, do(name), map[string]any{"queue": mailQueue, "dry_run": true}); !r.DryRun {
			t.Errorf("%s dry run: %+v", name, r)
		}
	}
	if r := mustCall[jobActionResult](t, cs, do("job_delete"), map[string]any{"id": f.succeeded}); r.Job.State != "succeeded" || r.Actor != actor {
		t.Errorf("job_delete: %+v", r)
	}
	auditHas(backwave.AuditDelete, f.succeeded)

	for _, name := range wantTools {
		if !called[name] {
			t.Errorf("%s was not called", name)
		}
	}
}

// Operator Actions the job's state does not allow, unknown jobs and bad
// arguments come back as error results naming the tool, never a crash or
// a silent default.
func TestToolErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cs := connect(t, f.server(t, grant("ops:ada", permission.All()...)))
	before := len(f.audit(t))
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"job_requeue", map[string]any{"id": f.succeeded}, "job_requeue"},
		// The one wording of a refused action, as the CLI and the dashboard show it.
		{"job_requeue", map[string]any{"id": f.succeeded}, fmt.Sprintf("requeue job %d: it is succeeded; only dead-lettered or quarantined jobs can be requeued", f.succeeded)},
		{"job_reschedule", map[string]any{"id": f.dead, "at": "2031-01-02T03:04:05Z"}, "job_reschedule"},
		{"job_get", map[string]any{"id": 999999}, "job_get"},
		{"job_get", map[string]any{"id": 0}, "id"},
		{"job_get", map[string]any{}, "id"},
		{"job_list", map[string]any{"states": []string{"retrying"}}, "states"},
		{"job_list", map[string]any{"limit": -1}, "limit"},
		{"job_list", map[string]any{"unknown": 1}, "unknown"},
		{"job_reschedule", map[string]any{"id": f.waiting[0], "at": "tomorrow"}, "at"},
		{"schedule_trigger", map[string]any{"name": "no-such-schedule"}, "schedule_trigger"},
		{"schedule_occurrences", map[string]any{"name": scheduleName, "kinds": []string{"exploded"}}, "kinds"},
		{"queue_set_limit", map[string]any{"queue": mailQueue, "limit": -2}, "limit"},
		{"queue_pause", map[string]any{"queue": ""}, "queue"},
		// The one wording of an unknown name, as the CLI and the dashboard say it.
		{"queue_pause", map[string]any{"queue": "mial"}, `no such Queue "mial" (known: `},
		{"job_list", map[string]any{"queue": "mial"}, `no such Queue "mial" (known: `},
		{"job_list", map[string]any{"wire_name": "no.such"}, `no such Wire Name "no.such" (known: `},
		{"count_by_state", map[string]any{"queue": "mial"}, `no such Queue "mial"`},
		{"queue_remove", map[string]any{"queue": mailQueue}, `remove queue "` + mailQueue + `": it holds `},
		{"queue_remove", map[string]any{"queue": "mial"}, `no such Queue "mial"`},
		{"job_enqueue", map[string]any{"wire_name": "w", "max_attempts": -1}, "negative"},
		{"job_enqueue", map[string]any{"wire_name": "w", "payload": []int{1}}, "payload"},
	} {
		r := call(t, cs, tc.tool, tc.args)
		if !r.isError || !strings.Contains(r.text, tc.want) {
			t.Errorf("%s(%v): %+v, want an error naming %q", tc.tool, tc.args, r, tc.want)
		}
	}
	if after := len(f.audit(t)); after != before {
		t.Errorf("failed writes wrote %d audit records", after-before)
	}
}

// Without ViewSensitiveData, payloads, Failure Detail and Job Output are
// absent from every result that would carry them, and "withheld" says so.
func TestSensitiveFieldsWithheld(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	markers := []string{secretCard, secretDetail, secretAccount, outputMarker, secretURL}
	for _, tc := range []struct {
		name      string
		pol       permission.Policy
		sensitive bool
	}{
		{"zero policy", permission.Policy{}, false},
		{"operator without ViewSensitiveData", grant("ops:bob", permission.View, permission.Requeue), false},
		{"ViewSensitiveData", grant("ops:ada", permission.View, permission.ViewSensitiveData, permission.Requeue), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cs := connect(t, f.server(t, tc.pol))
			calls := []struct {
				tool     string
				args     map[string]any
				withheld []string
			}{
				{"job_get", map[string]any{"id": f.succeeded}, []string{fieldPayload, fieldOutput}},
				{"job_get", map[string]any{"id": f.dead}, []string{fieldPayload}}, // it has no Job Output
				{"job_transitions", map[string]any{"id": f.dead}, []string{fieldFailureDetail}},
				{"job_transitions", map[string]any{"id": f.retrying}, []string{fieldFailureDetail}},
				{"job_list", map[string]any{}, []string{fieldPayload}},
				{"job_retrying", map[string]any{}, []string{fieldPayload}},
			}
			var seen strings.Builder
			for _, c := range calls {
				r := call(t, cs, c.tool, c.args)
				if r.isError {
					t.Fatalf("%s: %s", c.tool, r.text)
				}
				seen.Write(r.structured)
				seen.WriteString(r.text)
				for _, field := range c.withheld {
					key := `"` + field + `":`
					if has := strings.Contains(string(r.structured), key); has != tc.sensitive {
						t.Errorf("%s: %s present %v, want %v: %s", c.tool, field, has, tc.sensitive, r.structured)
					}
				}
				if has := strings.Contains(string(r.structured), `"withheld":`); has == tc.sensitive {
					t.Errorf("%s: withheld present %v: %s", c.tool, has, r.structured)
				}
			}
			for _, m := range markers {
				if has := strings.Contains(seen.String(), m); has != tc.sensitive {
					t.Errorf("secret %q in results: %v, want %v", m, has, tc.sensitive)
				}
			}
		})
	}
}

// A write result carries the payload only for a sensitive caller, too.
func TestWriteResultWithholdsPayload(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cs := connect(t, f.server(t, grant("ops:bob", permission.View, permission.Requeue)))
	r := call(t, cs, "job_requeue", map[string]any{"id": f.dead})
	if r.isError || strings.Contains(string(r.structured), secretCard) || strings.Contains(r.text, secretCard) || !strings.Contains(string(r.structured), `"withheld":["payload"]`) {
		t.Errorf("job_requeue result for a caller without ViewSensitiveData: %+v", r)
	}
}
