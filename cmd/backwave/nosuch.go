package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/backwave/backwave"
)

// Every command that names a job, a schedule, a Queue or a Wire Name says
// "no such …" the same way when the store has none by that name, and
// changes nothing. Names are said by backwave.UnknownNameError, the one
// wording the dashboard and the MCP Server share; ids by noSuch.

// noSuch is the error for a job or Workflow id the store does not have.
type noSuch struct {
	what string // "job 42", "workflow 7"
}

func (e noSuch) Error() string { return "no such " + e.what }

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
	e := &backwave.UnknownNameError{Kind: "schedule", Name: name, Known: names}
	if len(names) == 0 {
		e.Hint = "schedules are registered from code"
	}
	return e
}

// offerCreate adds to an unknown Queue's error that --create sets it up:
// for the Queue actions that take the flag (createFlag).
func offerCreate(err error) error {
	if u, ok := errors.AsType[*backwave.UnknownNameError](err); ok && u.Kind == "Queue" {
		c := *u
		c.Hint = "--create sets it up anyway"
		return &c
	}
	return err
}
