package backwave

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/backwave/backwave/store"
)

// The per-Queue Operator Actions and the one rule of which names the
// Monitor and the actions accept. A Queue is known once a job names it or
// a setting is written for it (Admin.Queues lists them); an action or a
// filter naming any other is refused with an UnknownNameError wrapping
// ErrNotFound, the same on every surface over Admin (the command-line tool,
// the dashboard, the MCP Server), because a mistyped name would otherwise
// list nothing, or set up a Queue no job will ever reach.

// UnknownNameError is the error for a name an Operator Action or a Monitor
// filter gives and the store does not know: a Queue, a Wire Name, a
// Recurring Schedule. It wraps ErrNotFound, and its text says what the
// store does know:
//
//	backwave: no such Queue "mial" (known: billing, default)
type UnknownNameError struct {
	// Kind is what was looked for: "Queue", "Wire Name", "schedule".
	Kind string
	// Name is the name given.
	Name string
	// Known are names the store knows, in order (the text says at most
	// ten). What "known" means for each Kind is said where the error comes
	// from (Admin.Queue, Admin.Jobs).
	Known []string
	// Hint, if set, follows the known names: what to do instead.
	Hint string
}

// maxKnownSaid bounds the known names an UnknownNameError's text lists.
const maxKnownSaid = 10

func (e *UnknownNameError) Error() string {
	var b strings.Builder
	b.WriteString("backwave: no such " + e.Kind + " " + store.Echo(e.Name) + " (")
	switch {
	case len(e.Known) == 0:
		b.WriteString("the store has none")
	case len(e.Known) > maxKnownSaid:
		b.WriteString("known: " + strings.Join(e.Known[:maxKnownSaid], ", ") + ", …")
	default:
		b.WriteString("known: " + strings.Join(e.Known, ", "))
	}
	if e.Hint != "" {
		b.WriteString("; " + e.Hint)
	}
	b.WriteString(")")
	return b.String()
}

// Unwrap returns ErrNotFound.
func (e *UnknownNameError) Unwrap() error { return ErrNotFound }

// WithQueueSetup lets the Admin's per-Queue settings actions (PauseQueue,
// ResumeQueue, SetQueueLimit, SetQueueRate, SetKeyLimit, RemoveKeyLimit,
// SetKeyRate, SetFairClaim) act on a Queue the store does not know yet,
// setting it up, as a deployment does before its first job arrives. Without
// it such a name is refused with an UnknownNameError, as a likely typo.
// RemoveQueue and the Monitor's filters refuse an unknown Queue either way.
func WithQueueSetup() AdminOption {
	return func(a *Admin) { a.queueSetup = true }
}

// Queue returns the Queue the store knows by name, with its settings and
// counts (as Admin.Queues lists it). A Queue is known once a job names it
// or a setting is written for it; any other name is an UnknownNameError
// (wrapping ErrNotFound) listing the known ones, and an invalid name (see
// the insert path's rule: non-empty UTF-8 of at most 128 bytes, without
// control characters or spaces at either end) is an error wrapping
// ErrInvalidParams.
func (a *Admin) Queue(ctx context.Context, name string) (QueueInfo, error) {
	if err := store.ValidateName("queue", name); err != nil {
		return QueueInfo{}, fmt.Errorf("backwave: %w", err)
	}
	qs, err := a.Queues(ctx)
	if err != nil {
		return QueueInfo{}, err
	}
	names := make([]string, len(qs))
	for i, q := range qs {
		if q.Name == name {
			return q, nil
		}
		names[i] = q.Name
	}
	return QueueInfo{}, &UnknownNameError{Kind: "Queue", Name: name, Known: names}
}

// queueAction runs one per-Queue Operator Action: it checks the name, and
// that the store knows the Queue unless the Admin sets Queues up
// (WithQueueSetup) and the action is a setting; what names the action and
// its subject for errors ("pause queue \"mail\"").
func (a *Admin) queueAction(ctx context.Context, queue string, setting bool, what string, act func() error) error {
	if setting && a.queueSetup {
		if err := store.ValidateName("queue", queue); err != nil {
			return fmt.Errorf("backwave: %w", err)
		}
	} else if _, err := a.Queue(ctx, queue); err != nil {
		return err
	}
	if err := act(); err != nil {
		return actionErr(what, err)
	}
	return nil
}

// PauseQueue stops claims from queue; running jobs are unaffected. It is
// an audited Operator Action. An unknown Queue is an UnknownNameError
// (unless WithQueueSetup); an invalid name wraps ErrInvalidParams.
func (a *Admin) PauseQueue(ctx context.Context, queue string) error {
	return a.queueAction(ctx, queue, true, fmt.Sprintf("pause queue %q", queue), func() error {
		return a.store.QueuePause(ctx, store.QueueParams{Queue: queue, Actor: store.Actor(a.actor)})
	})
}

// ResumeQueue lets claims from queue start again. It is an audited
// Operator Action; an unknown Queue is refused as by PauseQueue.
func (a *Admin) ResumeQueue(ctx context.Context, queue string) error {
	return a.queueAction(ctx, queue, true, fmt.Sprintf("resume queue %q", queue), func() error {
		return a.store.QueueResume(ctx, store.QueueParams{Queue: queue, Actor: store.Actor(a.actor)})
	})
}

// SetQueueLimit sets queue's cluster-wide Concurrency Limit; 0 removes it.
// A lowered limit never revokes a Lease: it stops claims until the Running
// count drops below it. It is an audited Operator Action; an unknown Queue
// is refused as by PauseQueue.
func (a *Admin) SetQueueLimit(ctx context.Context, queue string, limit int) error {
	return a.queueAction(ctx, queue, true, fmt.Sprintf("set the limit of queue %q", queue), func() error {
		return a.store.QueueSetLimit(ctx, store.QueueSetLimitParams{Queue: queue, Limit: limit, Actor: store.Actor(a.actor)})
	})
}

// SetQueueRate sets queue's cluster-wide Rate Limit: at most rate.Limit of
// its jobs start per window of rate.Period (see QueueRate); the zero
// QueueRate removes it. It is an audited Operator Action. A new Limit under
// the same Period keeps the current window's count, so a lowered one stops
// claims for the rest of the window; a new Period starts the count afresh.
// It never revokes a Lease. An invalid rate (Limit below 1, Period outside
// one millisecond to 366 days or not whole microseconds) is an error
// wrapping ErrInvalidParams; an unknown Queue is refused as by PauseQueue.
func (a *Admin) SetQueueRate(ctx context.Context, queue string, rate QueueRate) error {
	return a.queueAction(ctx, queue, true, fmt.Sprintf("set the rate of queue %q", queue), func() error {
		return a.store.QueueSetRate(ctx, store.QueueSetRateParams{Queue: queue, Rate: store.QueueRate(rate), Actor: store.Actor(a.actor)})
	})
}

// RemoveQueue removes an empty Queue: one holding no job in any state.
// Every setting written for it goes with it (pause, Concurrency Limit, Rate
// Limit, Key Limit, Key Rate, Fair Claim), and Admin.Queues no longer lists
// it; a job enqueued to the name later makes it known again, with no
// settings. It is an audited Operator Action (AuditQueueRemove), gated in
// the dashboard and the MCP Server by the PauseQueue Permission like every
// Queue action. A Queue still holding jobs — finished ones count until
// retention purges them — is refused with an error wrapping
// ErrQueueNotEmpty that says how many and what to do, and nothing changes.
// An unknown Queue is an UnknownNameError, even WithQueueSetup.
func (a *Admin) RemoveQueue(ctx context.Context, queue string) error {
	err := a.queueAction(ctx, queue, false, fmt.Sprintf("remove queue %q", queue), func() error {
		return a.store.QueueRemove(ctx, store.QueueParams{Queue: queue, Actor: store.Actor(a.actor)})
	})
	if ne, ok := errors.AsType[*store.QueueNotEmptyError](err); ok {
		return fmt.Errorf("backwave: %w", ne) // the store's text names the action and the Queue once
	}
	return err
}

// checkFilter refuses a filter naming a Queue or a Wire Name the store
// does not know, once a read under it found nothing (a name some job
// carries needs no check). A Queue is known as Admin.Queue says. A Wire
// Name is known when a stored job carries it or a Recurring Schedule
// mints it; the error lists the Wire Names of the Recurring Schedules and
// of the newest wireNameSample stored jobs, which may not be all of them.
func (a *Admin) checkFilter(ctx context.Context, queue, wireName string) error {
	if queue != "" {
		if _, err := a.Queue(ctx, queue); err != nil {
			return err
		}
	}
	if wireName == "" {
		return nil
	}
	if err := store.ValidateName("wire name", wireName); err != nil {
		return fmt.Errorf("backwave: %w", err)
	}
	some, err := a.monitor.JobList(ctx, store.JobListParams{JobFilter: store.JobFilter{WireName: wireName}, Limit: 1})
	if err != nil || len(some) > 0 {
		return err
	}
	scheds, err := a.store.ScheduleList(ctx)
	if err != nil {
		return err
	}
	var known []string
	for _, sc := range scheds.Schedules {
		if sc.Template.WireName == wireName {
			return nil
		}
		known = append(known, sc.Template.WireName)
	}
	recent, err := a.monitor.JobList(ctx, store.JobListParams{Limit: wireNameSample})
	if err != nil {
		return err
	}
	for _, j := range recent {
		known = append(known, j.WireName)
	}
	slices.Sort(known)
	return &UnknownNameError{Kind: "Wire Name", Name: wireName, Known: slices.Compact(known)}
}

// wireNameSample is how many of the newest jobs checkFilter reads for the
// Wire Names it lists as known.
const wireNameSample = 200
