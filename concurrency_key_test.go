package backwave_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store/memstore"
)

// TestConcurrencyKeyBadInput: an empty or over-long key is refused at
// enqueue, and a Key Limit of 0 or above the Queue's Concurrency Limit and
// an invalid Key Rate are refused by Admin; nothing is stored or audited
// (issue: Bad input).
func TestConcurrencyKeyBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	client, err := backwave.NewClient(st, backwave.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := backwave.NewAdmin(st, "ops:test", backwave.WithQueueSetup())
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"", strings.Repeat("k", backwave.MaxConcurrencyKeyBytes+1), "a\nb"} {
		if _, err := client.Enqueue(ctx, ImportContacts{}, backwave.WithConcurrencyKey(key)); !errors.Is(err, backwave.ErrInvalidJob) {
			t.Errorf("enqueue with key %q: %v, want ErrInvalidJob", key, err)
		}
	}
	if err := admin.SetQueueLimit(ctx, "q", 3); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"key limit 0":         admin.SetKeyLimit(ctx, "q", 0),
		"key limit -2":        admin.SetKeyLimit(ctx, "q", -2),
		"key limit 4 over 3":  admin.SetKeyLimit(ctx, "q", 4),
		"key rate no period":  admin.SetKeyRate(ctx, "q", backwave.QueueRate{Limit: 1}),
		"key rate no limit":   admin.SetKeyRate(ctx, "q", backwave.QueueRate{Period: time.Second}),
		"fair claim no queue": admin.SetFairClaim(ctx, "", true),
	} {
		if !errors.Is(err, backwave.ErrInvalidParams) {
			t.Errorf("%s: %v, want ErrInvalidParams", name, err)
		}
	}
	qs, err := admin.Queues(ctx)
	if err != nil || len(qs) != 1 || !qs[0].Keys.IsZero() {
		t.Fatalf("Queues after refused key settings = %+v, %v", qs, err)
	}
	audit, err := admin.Audit(ctx, backwave.AuditListParams{Queue: "q"})
	if err != nil || len(audit.Items) != 1 || audit.Items[0].Action != backwave.AuditQueueSetLimit {
		t.Fatalf("audit after refused key settings = %+v, %v", audit.Items, err)
	}
	if counts, err := admin.CountByQueue(ctx); err != nil || len(counts) != 0 {
		t.Fatalf("refused enqueues stored jobs: %+v, %v", counts, err)
	}
}

// TestKeySettingsAudited: each key setting is an audited Operator Action
// under the Admin's Actor, and Queues shows the policy.
func TestKeySettingsAudited(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin, err := backwave.NewAdmin(memstore.New(memstore.Options{}), "ops:ada", backwave.WithQueueSetup())
	if err != nil {
		t.Fatal(err)
	}
	r := backwave.QueueRate{Limit: 5, Period: time.Minute}
	for _, set := range []func() error{
		func() error { return admin.SetKeyLimit(ctx, "q", 2) },
		func() error { return admin.SetKeyRate(ctx, "q", r) },
		func() error { return admin.SetFairClaim(ctx, "q", true) },
		func() error { return admin.RemoveKeyLimit(ctx, "q") },
	} {
		if err := set(); err != nil {
			t.Fatal(err)
		}
	}
	qs, err := admin.Queues(ctx)
	if err != nil || len(qs) != 1 || qs[0].Keys != (backwave.KeyPolicy{Rate: r, Fair: true}) {
		t.Fatalf("Queues = %+v, %v", qs, err)
	}
	audit, err := admin.Audit(ctx, backwave.AuditListParams{Queue: "q"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range audit.Items {
		if a.Actor != "ops:ada" {
			t.Errorf("audit entry %+v has actor %q", a, a.Actor)
		}
		got = append(got, a.Action.String()+": "+a.Detail)
	}
	want := "queue_set_key_limit: key limit none|queue_set_fair_claim: fair claim on|queue_set_key_rate: key rate 5/1m0s|queue_set_key_limit: key limit 2"
	if strings.Join(got, "|") != want {
		t.Fatalf("audit trail %q, want %q", strings.Join(got, "|"), want)
	}
}
