package backwave_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store/memstore"
)

// ChargeCard is a job whose handler fails for good.
type ChargeCard struct {
	Card string `json:"card"`
}

func (ChargeCard) WireName() string { return "charge_card" }

// An Admin needs only the store: list the Dead-Lettered jobs, requeue one,
// and read its Transition Log. Each Operator Action is recorded, with its
// Actor, in the audit trail.
func ExampleNewAdmin() {
	ctx := context.Background()
	st := memstore.New(memstore.Options{Clock: backwave.WallClock{}})
	deadLetter(ctx, st) // a worker dead-letters one job

	admin, err := backwave.NewAdmin(st, "ops:ada")
	if err != nil {
		panic(err)
	}
	dead, err := admin.Jobs(ctx, backwave.JobListParams{
		JobFilter: backwave.JobFilter{States: []backwave.JobState{backwave.StateDeadLettered}},
	})
	if err != nil {
		panic(err)
	}
	for _, j := range dead.Items {
		fmt.Printf("job %d %s: %s after attempt %d\n", j.ID, j.WireName, j.State, j.Attempt)
	}

	j, err := admin.Requeue(ctx, dead.Items[0].ID)
	if err != nil {
		panic(err)
	}
	fmt.Printf("requeued: %s, retry cause %q, attempts up to %d\n", j.State, j.RetryCause, j.Ceiling)

	d, err := admin.Job(ctx, j.ID)
	if err != nil {
		panic(err)
	}
	for _, t := range d.Transitions {
		fmt.Printf("  %-11s %s → %s (attempt %d)", t.Via, t.From, t.State, t.Attempt)
		if t.FailureDetail != "" {
			fmt.Printf(": %s", t.FailureDetail)
		}
		fmt.Println()
	}

	audit, err := admin.Audit(ctx, backwave.AuditListParams{JobID: j.ID})
	if err != nil {
		panic(err)
	}
	fmt.Printf("audit: %s by %s\n", audit.Items[0].Action, audit.Items[0].Actor)

	// Requeuing it again is not an action its state allows.
	_, err = admin.Requeue(ctx, j.ID)
	fmt.Println(errors.Is(err, backwave.ErrIllegalTransition))
	// Output:
	// job 1 charge_card: dead_lettered after attempt 1
	// requeued: scheduled, retry cause "", attempts up to 4
	//   insert      unknown → scheduled (attempt 0)
	//   claim       scheduled → running (attempt 1)
	//   dead_letter running → dead_lettered (attempt 1): card 4000-0002: expired
	//   requeue     dead_lettered → scheduled (attempt 1)
	// audit: requeue by ops:ada
	// true
}

// deadLetter runs one node until a ChargeCard job has dead-lettered.
func deadLetter(ctx context.Context, st backwave.Store) {
	done := make(chan struct{})
	workers := backwave.NewHandlers()
	err := backwave.AddHandlerFunc(workers, func(ctx context.Context, j *backwave.Job[ChargeCard]) error {
		defer close(done)
		return backwave.FailPermanently(fmt.Errorf("card %s: expired", j.Args.Card))
	})
	if err != nil {
		panic(err)
	}
	client, err := backwave.NewClient(st, backwave.Config{
		Handlers: workers,
		Groups:   []backwave.WorkerGroupOptions{backwave.DefaultWorkerGroup("default", backwave.Strict(backwave.DefaultQueue))},
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	if err := client.Start(ctx); err != nil {
		panic(err)
	}
	if _, err := client.Enqueue(ctx, ChargeCard{Card: "4000-0002"}, backwave.WithMaxAttempts(3)); err != nil {
		panic(err)
	}
	<-done
	if err := client.Stop(ctx); err != nil { // drains: the outcome is reported
		panic(err)
	}
}
