package backwave_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/backwave/backwave"
)

// Admin.Enqueue: an operator's enqueue is stored as given and audited with
// the Admin's Actor; bad input is refused with nothing stored.
func TestAdminEnqueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newStore()
	admin, err := backwave.NewAdmin(st, "ops:ada")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	info, err := admin.Enqueue(ctx, backwave.OperatorEnqueue{WireName: "mail.resend", Queue: "mail", Payload: []byte(`{"to": "ada@example.com"}`), RunAt: at, MaxAttempts: 3})
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	if info.WireName != "mail.resend" || info.Queue != "mail" || info.State != backwave.StateScheduled || !info.ScheduledAt.Equal(at) || info.Ceiling != 3 {
		t.Fatalf("enqueued %+v, want mail.resend on mail, Scheduled at %v, budget 3", info, at)
	}
	page, err := admin.Audit(ctx, backwave.AuditListParams{JobID: info.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 1 || page.Items[0].Action != backwave.AuditEnqueue || page.Items[0].Actor != "ops:ada" || !strings.Contains(page.Items[0].Detail, "mail.resend") {
		t.Fatalf("audit of the enqueue = %+v, want one enqueue entry by ops:ada naming mail.resend", page.Items)
	}
	def, err := admin.Enqueue(ctx, backwave.OperatorEnqueue{WireName: "mail.resend"})
	if err != nil || def.Queue != backwave.DefaultQueue || def.Ceiling != backwave.DefaultMaxAttempts {
		t.Fatalf("Enqueue with defaults = %+v, %v; want the default Queue and budget", def, err)
	}

	for _, tc := range []struct {
		name string
		p    backwave.OperatorEnqueue
		want string
	}{
		{"no wire name", backwave.OperatorEnqueue{}, "empty wire name"},
		{"array payload", backwave.OperatorEnqueue{WireName: "w", Payload: []byte(`[1]`)}, "not a JSON object"},
		{"broken payload", backwave.OperatorEnqueue{WireName: "w", Payload: []byte(`{"a":`)}, "not valid JSON"},
		{"negative budget", backwave.OperatorEnqueue{WireName: "w", MaxAttempts: -1}, "negative"},
		{"bad queue", backwave.OperatorEnqueue{WireName: "w", Queue: strings.Repeat("q", 200)}, "longer than"},
		{"year 10000", backwave.OperatorEnqueue{WireName: "w", RunAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, "due time"},
	} {
		_, err := admin.Enqueue(ctx, tc.p)
		if !errors.Is(err, backwave.ErrInvalidParams) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want ErrInvalidParams saying %q", tc.name, err, tc.want)
		}
	}
	all, err := admin.Jobs(ctx, backwave.JobListParams{})
	if err != nil || len(all.Items) != 2 {
		t.Fatalf("%d jobs stored (%v), want the two good enqueues only", len(all.Items), err)
	}
}
