package backwave

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// jobAction is an Operator Action on one job, for its error: the verb the
// operator used, its past participle, and the states the action accepts,
// asked of core's state guards.
type jobAction struct {
	verb, done string
	accepts    func(job.State) bool
}

// The Operator Actions on jobs whose refusals name what is allowed.
var (
	actionRequeue    = jobAction{"requeue", "requeued", core.Requeueable}
	actionReschedule = jobAction{"reschedule", "rescheduled", core.Reschedulable}
	actionCancel     = jobAction{"cancel", "cancelled", func(s job.State) bool { return core.OperatorCancel(s) != core.CancelRefused }}
	actionDelete     = jobAction{"delete", "deleted", job.State.Terminal}
)

// illegalAction is an Operator Action refused for the job's state. It says
// the subject once and what is allowed instead:
//
//	backwave: requeue job 2416: it is scheduled; only dead-lettered or quarantined jobs can be requeued
//
// It wraps ErrIllegalTransition.
type illegalAction struct {
	action jobAction
	id     JobID
	state  job.State
}

func (e *illegalAction) Error() string {
	return fmt.Sprintf("backwave: %s job %d: it is %s; only %s jobs can be %s",
		e.action.verb, e.id, stateWords(e.state), orList(e.action.accepted()), e.action.done)
}

// accepted names the states a accepts, as a sentence says them.
func (a jobAction) accepted() []string {
	var ok []string
	for _, s := range job.States {
		if a.accepts(s) {
			ok = append(ok, stateWords(s))
		}
	}
	return ok
}

func (e *illegalAction) Unwrap() error { return store.ErrIllegalTransition }

// stateWords is a state as a sentence says it: "dead-lettered",
// "awaiting-parent".
func stateWords(s job.State) string { return strings.ReplaceAll(s.String(), "_", "-") }

// orList joins words as "a", "a or b", "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// jobActionErr is the error of action on job id. A refusal for the job's
// state is reworded from the state the job is in now (illegalAction); any
// other error is actionErr's.
func (a *Admin) jobActionErr(ctx context.Context, action jobAction, id JobID, err error) error {
	var needed *store.StillNeededError
	if errors.As(err, &needed) {
		return fmt.Errorf("backwave: %w", needed) // it names the action and the job
	}
	if errors.Is(err, store.ErrIllegalTransition) {
		if j, gerr := a.store.JobGet(ctx, id); gerr == nil && !action.accepts(j.State) {
			return &illegalAction{action: action, id: id, state: j.State}
		}
	}
	return actionErr(fmt.Sprintf("%s job %d", action.verb, id), err)
}
