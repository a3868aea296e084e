package dashboard

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/backwave/backwave"
)

// TestKeyActions sets a Queue's Key Limit, Key Rate and Fair Claim through
// the dashboard's forms: each audited under the signed-in operator, bad
// input refused with 400, and the Queues page showing the policy.
func TestKeyActions(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	seed(t, f)
	_, ts := f.serve(Options{Policy: allowAll()})
	ctx := context.Background()
	for _, tc := range []struct {
		path string
		form url.Values
		want int
	}{
		{"/backwave/queues/key-limit", url.Values{"name": {"mail"}, "key_limit": {"2"}}, http.StatusSeeOther},
		{"/backwave/queues/key-limit", url.Values{"name": {"mail"}, "key_limit": {"-1"}}, http.StatusBadRequest},
		{"/backwave/queues/key-rate", url.Values{"name": {"mail"}, "key_rate_limit": {"5"}, "key_rate_period": {"1m"}}, http.StatusSeeOther},
		{"/backwave/queues/key-rate", url.Values{"name": {"mail"}, "key_rate_limit": {"5"}, "key_rate_period": {"soon"}}, http.StatusBadRequest},
		{"/backwave/queues/fair", url.Values{"name": {"mail"}, "fair": {"on"}}, http.StatusSeeOther},
		{"/backwave/queues/fair", url.Values{"name": {"mail"}, "fair": {"maybe"}}, http.StatusBadRequest},
	} {
		if resp := post(t, ts, tc.path, tc.form); resp.StatusCode != tc.want {
			t.Errorf("POST %s %v: status %d, want %d", tc.path, tc.form, resp.StatusCode, tc.want)
		}
	}
	qs, err := f.admin.Queues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := backwave.KeyPolicy{Limit: 2, Rate: backwave.QueueRate{Limit: 5, Period: time.Minute}, Fair: true}
	for _, q := range qs {
		if q.Name == "mail" && q.Keys != want {
			t.Errorf("queue mail's key policy %s, want %s", q.Keys, want)
		}
	}
	if status, body := get(t, ts, "/backwave/queues"); status != http.StatusOK || !strings.Contains(body, want.String()) {
		t.Errorf("the Queues page (status %d) does not show %q", status, want.String())
	}
	au, err := f.admin.Audit(ctx, backwave.AuditListParams{Queue: "mail"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[backwave.AuditAction]bool{}
	for _, e := range au.Items {
		if e.Actor == "test:alice" {
			got[e.Action] = true
		}
	}
	for _, a := range []backwave.AuditAction{backwave.AuditQueueSetKeyLimit, backwave.AuditQueueSetKeyRate, backwave.AuditQueueSetFairClaim} {
		if !got[a] {
			t.Errorf("no %s by test:alice in the audit trail", a)
		}
	}
}
