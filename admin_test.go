package backwave_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// Cancel of a Running job through the Admin handle: a handler that watches
// its context stops, and the job ends Cancelled (glossary, Cancelled:
// "Cancelling an executing job is cooperative — the handler's
// CancellationToken fires via heartbeat").
func TestAdminCancelRunningWatchingHandler(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		running := make(chan struct{})
		c := greetClient(t, st, func(ctx context.Context, j *backwave.Job[greet]) error {
			close(running)
			<-ctx.Done()
			return ctx.Err()
		})
		id := enqueue(t, c, greet{})
		<-running
		admin, err := c.Admin("ops:alice")
		if err != nil {
			t.Fatal(err)
		}
		if j, err := admin.Cancel(context.Background(), id); err != nil || !j.CancelRequested || j.State != backwave.StateRunning {
			t.Fatalf("Cancel = %v, %v; want a cancel request", j.State, err)
		}
		waitState(t, st, id, job.StateCancelled)
		entries, err := admin.Audit(context.Background(), backwave.AuditListParams{JobID: id})
		if err != nil || len(entries.Items) != 1 || entries.Items[0].Actor != "ops:alice" || entries.Items[0].Action != backwave.AuditCancelRequest {
			t.Fatalf("audit trail %+v, %v", entries, err)
		}
	})
}

// A handler that ignores its context and succeeds after its cancel was
// recorded still cannot apply Succeeded: the store applies Cancelled under
// the fence (core.UnderCancel cites the glossary: Cancelled "stays
// Cancelled under every automatic path"; Operator Action; Effect-Once). Its
// Job Output is not stored.
func TestAdminCancelWinsOverIgnoringHandler(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		running, proceed := make(chan struct{}), make(chan struct{})
		c := greetClient(t, st, func(ctx context.Context, j *backwave.Job[greet]) error {
			close(running)
			<-proceed // deaf to ctx
			j.SetOutput([]byte(`"done anyway"`))
			return nil
		})
		id := enqueue(t, c, greet{})
		<-running
		admin, err := c.Admin("ops:bob")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := admin.Cancel(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		close(proceed)
		got := waitState(t, st, id, job.StateCancelled)
		d, err := admin.Job(context.Background(), id)
		if err != nil || d.Output != nil || d.Job.CancelCause != backwave.CancelCauseOperator {
			t.Fatalf("Job detail: output %q, cancel cause %q, %v; want no output, cause operator", d.Output, d.Job.CancelCause, err)
		}
		if last := d.Transitions[len(d.Transitions)-1]; last.State != backwave.StateCancelled || last.From != backwave.StateRunning {
			t.Fatalf("last transition %s → %s by %s, want running → cancelled", last.From, last.State, last.Via)
		}
		// An action on the wrong state is a clear error.
		if _, err := admin.Reschedule(context.Background(), id, got.ScheduledAt); !errors.Is(err, backwave.ErrIllegalTransition) {
			t.Fatalf("Reschedule(cancelled job) = %v, want ErrIllegalTransition", err)
		}
	})
}

// An Admin stands without a Client: over the store alone it lists the
// Dead-Lettered jobs, the Retrying view, counts, Queues, the Tag Facet and
// Tag Suggest and a job's Dependencies, requeues, and pages every list by
// keyset (glossary: Operator Action, Retrying, Tag Facet, Tag Suggest,
// Transition Log).
func TestAdminStandalone(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := newStore()
		ctx := context.Background()
		w := greetWorkers(t, func(ctx context.Context, j *backwave.Job[greet]) error {
			switch j.Args.Name {
			case "doomed":
				return backwave.FailPermanently(errors.New("no such mailbox"))
			case "flaky":
				return errors.New("try later")
			}
			return nil
		}, backwave.WithRetryPolicy(backwave.RetryPolicy{Initial: time.Hour, Max: time.Hour, Multiplier: 1}))
		c := startClient(t, st, backwave.Config{Handlers: w, Groups: []backwave.WorkerGroupOptions{group("g", backwave.DefaultQueue)}})
		var ok []backwave.JobID
		for range 5 {
			ok = append(ok, enqueue(t, c, greet{Name: "ok"}, backwave.WithTags(backwave.Keyed("tenant", "Acme"))))
		}
		doomed := enqueue(t, c, greet{Name: "doomed"})
		flaky := enqueue(t, c, greet{Name: "flaky"})
		dependent := enqueue(t, c, greet{Name: "ok"}, backwave.WithParents(backwave.OnSuccess, ok[0]))
		waitState(t, st, doomed, job.StateDeadLettered)
		waitState(t, st, dependent, job.StateSucceeded)
		waitFor(t, "the flaky job to retry", func() bool { j := getJob(t, st, flaky); return j.Retrying() })

		admin, err := backwave.NewAdmin(st, "ops:carol")
		if err != nil {
			t.Fatal(err)
		}
		if admin.Actor() != "ops:carol" {
			t.Fatalf("Actor() = %q", admin.Actor())
		}
		dead, err := admin.Jobs(ctx, backwave.JobListParams{JobFilter: backwave.JobFilter{States: []backwave.JobState{backwave.StateDeadLettered}}})
		if err != nil || len(dead.Items) != 1 || dead.Items[0].ID != doomed || dead.Next != 0 {
			t.Fatalf("dead-lettered jobs: %+v, %v", dead, err)
		}
		if j := dead.Items[0]; j.Attempt != 1 || j.Ceiling != backwave.DefaultMaxAttempts || j.WireName != "test.greet" || string(j.Payload) != `{"Name":"doomed"}` {
			t.Errorf("dead-lettered job row %+v", j)
		}
		retrying, err := admin.Retrying(ctx, "", backwave.PageParams{})
		if err != nil || len(retrying.Items) != 1 || retrying.Items[0].ID != flaky || retrying.Items[0].RetryCause != backwave.RetryCauseHandlerFailed {
			t.Fatalf("Retrying: %+v, %v", retrying, err)
		}

		// Keyset paging: pages of 3, newest first, until Next is zero.
		var paged []backwave.JobID
		p := backwave.JobListParams{PageParams: backwave.PageParams{Limit: 3}}
		for pages := 0; ; pages++ {
			page, err := admin.Jobs(ctx, p)
			if err != nil || pages > 5 {
				t.Fatalf("Jobs page %d: %+v, %v", pages, page, err)
			}
			for _, j := range page.Items {
				paged = append(paged, j.ID)
			}
			if page.Next == 0 {
				break
			}
			p.Before = page.Next
		}
		all := append(slices.Clone(ok), doomed, flaky, dependent)
		slices.Reverse(all)
		if !slices.Equal(paged, all) {
			t.Fatalf("paged ids %v, want %v", paged, all)
		}

		counts, err := admin.CountByState(ctx, "")
		if err != nil || counts[backwave.StateSucceeded] != 6 || counts[backwave.StateDeadLettered] != 1 || counts[backwave.StateScheduled] != 1 {
			t.Errorf("CountByState = %v, %v", counts, err)
		}
		byQueue, err := admin.CountByQueue(ctx)
		if err != nil || !slices.Contains(byQueue, backwave.QueueStateCount{Queue: backwave.DefaultQueue, State: backwave.StateSucceeded, Count: 6}) {
			t.Errorf("CountByQueue = %+v, %v", byQueue, err)
		}
		if qs, err := admin.Queues(ctx); err != nil || len(qs) != 1 || qs[0].Name != backwave.DefaultQueue {
			t.Errorf("Queues = %+v, %v", qs, err)
		}
		facet, err := admin.TagFacet(ctx, backwave.JobFilter{States: []backwave.JobState{backwave.StateSucceeded}}, 0)
		if err != nil || len(facet) != 1 || facet[0] != (backwave.TagCount{Tag: backwave.Keyed("tenant", "Acme"), Count: 5}) {
			t.Errorf("TagFacet = %+v, %v", facet, err)
		}
		if tags, err := admin.TagSuggest(ctx, "TENANT=a", 0); err != nil || !slices.Equal(tags, []backwave.Tag{backwave.Keyed("tenant", "Acme")}) {
			t.Errorf("TagSuggest = %v, %v", tags, err)
		}
		deps, err := admin.Dependencies(ctx, dependent)
		if err != nil || len(deps.Parents) != 1 || deps.Parents[0] != (backwave.ParentEdge{ID: ok[0], State: backwave.StateSucceeded, Counted: true}) || deps.Pending != 0 {
			t.Errorf("Dependencies(dependent) = %+v, %v", deps, err)
		}
		if deps, err := admin.Dependencies(ctx, ok[0]); err != nil || !slices.Equal(deps.Dependents, []backwave.JobID{dependent}) {
			t.Errorf("Dependencies(parent) = %+v, %v", deps, err)
		}

		// Requeue: Scheduled, Retry Cause cleared, a fresh budget, and a
		// Transition Log entry by requeue.
		j, err := admin.Requeue(ctx, doomed)
		if err != nil || j.State != backwave.StateScheduled || j.RetryCause != backwave.RetryCauseNone || j.Ceiling != 1+backwave.DefaultMaxAttempts {
			t.Fatalf("Requeue = %+v, %v", j, err)
		}
		d, err := admin.Job(ctx, doomed)
		if err != nil {
			t.Fatal(err)
		}
		var path []string
		for _, tr := range d.Transitions {
			path = append(path, tr.Via.String()+"→"+tr.State.String())
		}
		if got := strings.Join(path, " "); !strings.HasPrefix(got, "insert→scheduled claim→running dead_letter→dead_lettered requeue→scheduled") {
			t.Errorf("transition log %s", got)
		}
		audit, err := admin.Audit(ctx, backwave.AuditListParams{JobID: doomed})
		if err != nil || len(audit.Items) != 1 || audit.Items[0].Action != backwave.AuditRequeue || audit.Items[0].Actor != "ops:carol" {
			t.Errorf("audit trail %+v, %v", audit, err)
		}

		// Errors: matched with errors.Is on the root sentinels, one
		// "backwave:" each.
		for _, tc := range []struct {
			name string
			err  error
			want error
		}{
			{"requeue a succeeded job", second(admin.Requeue(ctx, ok[1])), backwave.ErrIllegalTransition},
			{"read an unknown job", second(admin.Job(ctx, 9999)), backwave.ErrNotFound},
			{"JobGet an unknown job", second(c.JobGet(ctx, 9999)), backwave.ErrNotFound},
			{"cancel an unknown job", second(admin.Cancel(ctx, 9999)), backwave.ErrNotFound},
			{"reschedule without a time", second(admin.Reschedule(ctx, flaky, time.Time{})), backwave.ErrInvalidParams},
			{"a negative page limit", second(admin.Jobs(ctx, backwave.JobListParams{PageParams: backwave.PageParams{Limit: -1}})), backwave.ErrInvalidParams},
			{"a negative cursor", second(admin.Audit(ctx, backwave.AuditListParams{PageParams: backwave.PageParams{Before: -4}})), backwave.ErrInvalidParams},
			{"an invalid filter tag", second(admin.TagFacet(ctx, backwave.JobFilter{Tags: []backwave.Tag{backwave.Label("")}}, 0)), backwave.ErrInvalidParams},
			{"a negative suggest limit", second(admin.TagSuggest(ctx, "", -1)), backwave.ErrInvalidParams},
			{"pause an unnamed queue", admin.PauseQueue(ctx, ""), backwave.ErrInvalidParams},
			{"trigger an unknown schedule", second(admin.TriggerSchedule(ctx, "nope")), backwave.ErrNotFound},
		} {
			if !errors.Is(tc.err, tc.want) {
				t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.want)
			} else if msg := tc.err.Error(); !strings.HasPrefix(msg, "backwave: ") || strings.Count(msg, "backwave:") != 1 {
				t.Errorf("%s: %q: want one \"backwave: \" prefix", tc.name, msg)
			}
		}
	})
}

func second[T any](_ T, err error) error { return err }

func TestNewAdminRefusesBadInput(t *testing.T) {
	t.Parallel()
	st := newStore()
	c, err := backwave.NewClient(st, backwave.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Admin(""); !errors.Is(err, backwave.ErrNoActor) {
		t.Errorf("Admin(\"\") = %v, want ErrNoActor", err)
	}
	if _, err := backwave.NewAdmin(st, ""); !errors.Is(err, backwave.ErrNoActor) {
		t.Errorf("NewAdmin(st, \"\") = %v, want ErrNoActor", err)
	}
	if _, err := backwave.NewAdmin(nil, "ops"); !errors.Is(err, backwave.ErrInvalidConfig) {
		t.Errorf("NewAdmin(nil, …) = %v, want ErrInvalidConfig", err)
	}
	for _, bad := range []backwave.Actor{"tab\there", backwave.Actor(strings.Repeat("a", 257)), "\xff"} {
		if _, err := backwave.NewAdmin(st, bad); !errors.Is(err, backwave.ErrInvalidParams) {
			t.Errorf("NewAdmin(st, %.20q) = %v, want ErrInvalidParams", bad, err)
		}
	}
}

type named struct {
	wire string
	Blob string
}

func (n named) WireName() string { return n.wire }

// Bad input at enqueue is a clear error wrapping ErrInvalidJob: an empty
// Wire Name, a Tag key or value over job.MaxTagLen bytes, a payload over
// store.MaxPayloadBytes.
func TestEnqueueRejectsBadInput(t *testing.T) {
	t.Parallel()
	c, err := backwave.NewClient(newStore(), backwave.Config{})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", job.MaxTagLen+1)
	for _, tc := range []struct {
		name string
		args backwave.JobArgs
		opts []backwave.EnqueueOption
	}{
		{"empty wire name", named{wire: ""}, nil},
		{"tag value too long", named{wire: "w"}, []backwave.EnqueueOption{backwave.WithTags(backwave.Label(long))}},
		{"tag key too long", named{wire: "w"}, []backwave.EnqueueOption{backwave.WithTags(backwave.Keyed(long, "v"))}},
		{"payload too large", named{wire: "w", Blob: strings.Repeat("p", store.MaxPayloadBytes)}, nil},
	} {
		if _, err := c.Enqueue(context.Background(), tc.args, tc.opts...); !errors.Is(err, backwave.ErrInvalidJob) {
			t.Errorf("%s: Enqueue = %v, want ErrInvalidJob", tc.name, err)
		}
	}
}
