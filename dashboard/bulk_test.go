package dashboard

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/permission"
)

// The "… all matching" actions: the confirm page shows the preview count;
// a POST without the action's Permission is refused and changes nothing
// (no job moved, no audit entry); with it every match is acted on, one
// audit entry each, and the list says so.
func TestMatchingActions(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ids := seed(t, f)
	filter := url.Values{"queue": {"mail"}}
	audits := func() int { return len(f.auditActors()) }
	state := func(id backwave.JobID) backwave.JobState {
		j, err := f.client.JobGet(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		return j.State
	}

	_, all := f.serve(Options{Policy: allowAll()})
	status, body := get(t, all, "/backwave/jobs?queue=mail")
	if status != http.StatusOK || !strings.Contains(body, "Cancel all matching…") || !strings.Contains(body, `id="select-page"`) {
		t.Fatalf("job list under a filter: %d, without the matching controls or the page checkbox", status)
	}
	if _, body := get(t, all, "/backwave/jobs"); strings.Contains(body, "all matching…") {
		t.Error("the unfiltered list offers an action on every job of the store")
	}
	status, body = get(t, all, "/backwave/jobs/matching?action=cancel&queue=mail")
	if status != http.StatusOK || !strings.Contains(body, `<strong id="preview-matched">3</strong>`) || !strings.Contains(body, `<strong id="preview-applicable">3</strong>`) {
		t.Fatalf("confirm page: %d\n%s", status, body)
	}

	for _, tc := range []struct {
		path string
		perm permission.Permission
		form url.Values
	}{
		{"/backwave/jobs/matching/cancel", permission.Cancel, filter},
		{"/backwave/jobs/matching/requeue", permission.Requeue, url.Values{"state": {"dead_lettered"}}},
		{"/backwave/jobs/matching/delete", permission.Delete, url.Values{"state": {"succeeded"}}},
		{"/backwave/jobs/bulk/delete", permission.Delete, url.Values{"id": {ids.succeeded.String()}}},
		{idPath(ids.succeeded) + "/delete", permission.Delete, url.Values{}},
	} {
		var others []permission.Permission
		for _, p := range permission.All() {
			if p != tc.perm {
				others = append(others, p)
			}
		}
		_, ts := f.serve(Options{Policy: allowOnly(others...)})
		before := audits()
		if resp := post(t, ts, tc.path, tc.form); resp.StatusCode != http.StatusForbidden {
			t.Errorf("POST %s without %v: %d, want 403", tc.path, tc.perm, resp.StatusCode)
		}
		if n := audits() - before; n != 0 {
			t.Errorf("the refused POST %s wrote %d audit entries", tc.path, n)
		}
	}
	for id, want := range map[backwave.JobID]backwave.JobState{ids.waiting: backwave.StateScheduled, ids.deadLettered: backwave.StateDeadLettered, ids.succeeded: backwave.StateSucceeded} {
		if got := state(id); got != want {
			t.Errorf("after the refused requests job %d is %s, want %s", id, got, want)
		}
	}

	if resp := post(t, all, "/backwave/jobs/matching/cancel", url.Values{}); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a bulk action without a filter: %d, want 400", resp.StatusCode)
	}
	if resp := post(t, all, "/backwave/jobs/matching/cancel", url.Values{"queue": {"mail"}, "bulk_limit": {"10001"}}); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a limit over the cap: %d, want 400", resp.StatusCode)
	}
	before := audits()
	resp := post(t, all, "/backwave/jobs/matching/cancel", url.Values{"queue": {"mail"}, "bulk_limit": {"2"}})
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.Contains(loc, "done=cancel") || !strings.Contains(loc, "ok=2") || !strings.Contains(loc, "more=1") {
		t.Fatalf("bulk cancel: %d to %q", resp.StatusCode, loc)
	}
	if _, body := get(t, all, strings.TrimPrefix(loc, all.URL)); !strings.Contains(body, "2 jobs cancelled. More jobs match: run it again to go on.") {
		t.Errorf("the list after the bulk cancel does not say what it did")
	}
	if n := audits() - before; n != 2 {
		t.Errorf("bulk cancel of 2 wrote %d audit entries, want 2", n)
	}
}

// The job list shows the first line of a failed job's last Failure Detail
// to a caller holding ViewSensitiveData, and never sends it to one
// without.
func TestJobListLastFailure(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	seed(t, f)
	_, all := f.serve(Options{Policy: allowAll()})
	if _, body := get(t, all, "/backwave/jobs?state=dead_lettered"); !strings.Contains(body, `<div class="failure">`+secretDetail) {
		t.Errorf("the dead-lettered row does not show its last Failure Detail to a sensitive reader")
	}
	_, plain := f.serve(Options{Policy: allowOnly(permission.View)})
	if _, body := get(t, plain, "/backwave/jobs?state=dead_lettered"); strings.Contains(body, secretDetail) || strings.Contains(body, `class="failure"`) {
		t.Errorf("the job list sent Failure Detail without ViewSensitiveData")
	}
}
