package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/backwave/backwave"
)

// Every command that names a job, a schedule or a Queue says "no such …"
// the same way when the store has none by that name, and changes nothing.

// noSuch is the error for a job, schedule or Queue the store does not have.
type noSuch struct {
	what string // "job 42", `schedule "nightly"`, `Queue "mail"`
	hint string // optional: what exists, what to do
}

func (e noSuch) Error() string {
	if e.hint == "" {
		return "no such " + e.what
	}
	return "no such " + e.what + " (" + e.hint + ")"
}

// noSuchJob turns the store's not-found for job id into a noSuch.
func noSuchJob(err error, id backwave.JobID) error {
	if errors.Is(err, backwave.ErrNotFound) {
		return noSuch{what: fmt.Sprintf("job %d", id)}
	}
	return err
}

// scheduleExists refuses a schedule name the store does not have, naming
// the ones it has.
func scheduleExists(ctx context.Context, a *backwave.Admin, name string) error {
	list, err := a.Schedules(ctx)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(list))
	for _, s := range list {
		if s.Name == name {
			return nil
		}
		names = append(names, s.Name)
	}
	return noSuch{what: fmt.Sprintf("schedule %q", name), hint: known(names, "schedules are registered from code")}
}

// queueExists refuses a Queue the store has never seen (no job, no
// setting), naming the ones it knows: an Operator Action on a mistyped
// name would otherwise create a Queue. create lets it through.
func queueExists(ctx context.Context, a *backwave.Admin, queue string, create bool) error {
	if create {
		return nil
	}
	_, err := findQueue(ctx, a, queue)
	return err
}

// findQueue returns the Queue the store knows by name, or a noSuch error
// listing the Queues it knows.
func findQueue(ctx context.Context, a *backwave.Admin, queue string) (backwave.QueueInfo, error) {
	qs, err := a.Queues(ctx)
	if err != nil {
		return backwave.QueueInfo{}, err
	}
	names := make([]string, 0, len(qs))
	for _, q := range qs {
		if q.Name == queue {
			return q, nil
		}
		names = append(names, q.Name)
	}
	return backwave.QueueInfo{}, noSuch{what: fmt.Sprintf("Queue %q", queue), hint: known(names, "") + "; --create sets it up anyway"}
}

// known lists names for a hint, or says there are none.
func known(names []string, none string) string {
	switch {
	case len(names) == 0 && none != "":
		return "the store has none; " + none
	case len(names) == 0:
		return "the store has none"
	case len(names) > 10:
		names = append(slices.Clip(names[:10]), "…")
	}
	return "known: " + strings.Join(names, ", ")
}
