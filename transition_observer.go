package backwave

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/node"
	"github.com/backwave/backwave/shell"
	"github.com/backwave/backwave/store"
)

// ObservedTransition is one Transition Log entry as a Transition Observer
// is delivered it: job JobID of WireName in Queue made the Transition. Its
// FailureDetail is empty unless the observer asked for it
// (TransitionObserver.FailureDetail). Seq is the entry's
// Transition Log sequence number; with JobID it names the entry, so a
// subscriber can recognise a redelivery.
type ObservedTransition struct {
	Seq      int64
	JobID    JobID
	WireName string
	Queue    string
	Transition
}

// TransitionObserver is host code BackWave invokes when a job reaches one of
// the declared States — the sanctioned way to react to the lifecycle (e.g.
// Dead-Lettered → post to a chat). It observes the Transition Log, after the
// fact: it cannot intercept, veto or rewrite a transition, and nothing it
// does changes a decision.
//
// Delivery is at-least-once, never Effect-Once: the nodes of the cluster
// that register the same Name take turns on one Lease-claimed walk of the
// Transition Log, so one node delivers each transition in the happy path,
// and a node that stops mid-delivery leaves the transition to the next
// holder, which delivers it again. Making the reaction idempotent is the
// subscriber's job, the same contract as a handler's (ObservedTransition.Seq
// with JobID names the entry).
//
// Observe is called for one transition at a time, in the order the store
// committed them. An error or a panic (recovered and logged) delivers the
// same transition again after a backoff (Interval, doubled per consecutive
// failure, at most DefaultObserverMaxBackoff); the walk never skips one, so a transition
// that always fails holds back those after it. Observe's context is
// cancelled when the Client stops.
//
// It needs the store's Job History Policy to record the Transition Log
// (transitions or transitions+detail): NewClient refuses a store opened
// with history=off. A new Name starts at the beginning of the Transition
// Log the store holds, or at its end with StartFromNow. While a Name is registered, retention keeps every
// job holding a transition it was not yet delivered; remove a Name you no
// longer register with Admin.RemoveTransitionObserver, or it is considered
// removed once no node has walked for it for store.ObserverRemoveAfter (a
// week). A Client with no TransitionObservers costs nothing: no goroutine,
// no store call. A Client whose Start package jobtest takes over drives its
// Transition Observers by hand on Virtual Time, as it does its Pumps
// (jobtest.Client.RunUntilIdle delivers what they declare).
type TransitionObserver struct {
	// Name identifies the observer across the cluster and its restarts
	// (its durable cursor); required, unique within a Config.
	Name string
	// States are the declared states; at least one.
	States []JobState
	// Observe is the callback; required.
	Observe func(ctx context.Context, t ObservedTransition) error
	// Interval is how long a caught-up walk waits before looking again,
	// and the first backoff after a failure (DefaultObserverInterval if 0).
	Interval time.Duration
	// LeaseDuration is the walk's Lease, renewed while delivering
	// (DefaultObserverLeaseDuration if 0). A node that stops without
	// releasing it holds the walk that long.
	LeaseDuration time.Duration
	// FailureDetail asks for the Failure Detail of each delivered
	// transition made by a failed Attempt, a lapsed Lease, a quarantine or
	// a parent's failure: it is read from the job's Transition Log, one
	// more store read per such transition (a failed read delivers the
	// transition again later, as a failed Observe does). Failure Detail is
	// sensitive — a handler's error may quote its arguments, and the
	// dashboard shows it only with the ViewSensitiveData Permission — so
	// it is off unless asked for. It is empty under a Job History Policy
	// without detail.
	FailureDetail bool
	// StartFromNow starts a new Name at the end of the Transition Log
	// rather than at its beginning: it is delivered only transitions made
	// after its first walk, not every one the store retains (a new
	// notifier does not replay old dead-letters). A Name already
	// registered carries on from its cursor either way; after
	// Admin.RemoveTransitionObserver it is new again.
	StartFromNow bool
}

// Defaults of a TransitionObserver's knobs: package node's, the one
// defaults table of every machine a node runs. Stop drains a delivery in
// flight for Config.DrainTimeout, as it does the Pumps' handlers.
const (
	// DefaultObserverInterval is the TransitionObserver.Interval used
	// when it is 0.
	DefaultObserverInterval = node.DefaultWalkInterval
	// DefaultObserverLeaseDuration is the TransitionObserver.LeaseDuration
	// used when it is 0.
	DefaultObserverLeaseDuration = node.DefaultWalkLeaseDuration
	// DefaultObserverMaxBackoff is the longest wait after consecutive
	// failed deliveries.
	DefaultObserverMaxBackoff = node.DefaultWalkMaxBackoff
)

// walkerConfig returns the node.WalkerConfig of o.
func (o TransitionObserver) walkerConfig() node.WalkerConfig {
	states := make([]job.State, len(o.States))
	for i, s := range o.States {
		states[i] = job.State(s)
	}
	return node.WalkerConfig{Observer: o.Name, States: states, Interval: o.Interval, LeaseDuration: o.LeaseDuration, StartAtEnd: o.StartFromNow}
}

// newTransitionObservers checks the Config's Transition Observers and makes
// their pumps. None makes none.
func (c *Client) newTransitionObservers(s Store, cfg Config, nodeID string) error {
	if len(cfg.TransitionObservers) == 0 {
		return nil
	}
	if h := s.History(); !h.Records() {
		return fmt.Errorf("%w: Transition Observers need the store's Transition Log, but its Job History Policy is %q: "+
			"open the store with history=transitions or history=transitions+detail (the default)", ErrInvalidConfig, h)
	}
	names := make(map[string]bool, len(cfg.TransitionObservers))
	for _, o := range cfg.TransitionObservers {
		switch {
		case o.Name == "":
			return fmt.Errorf("%w: a Transition Observer has no Name", ErrInvalidConfig)
		case names[o.Name]:
			return fmt.Errorf("%w: two Transition Observers are named %q", ErrInvalidConfig, o.Name)
		case o.Observe == nil:
			return fmt.Errorf("%w: Transition Observer %q has no Observe func", ErrInvalidConfig, o.Name)
		}
		names[o.Name] = true
		observe, withDetail := o.Observe, o.FailureDetail
		p, err := shell.NewWalkPump(shell.WalkPumpConfig{
			Walker:            o.walkerConfig(),
			Worker:            job.WorkerID(nodeID + "/observer/" + o.Name),
			Store:             s,
			Clock:             cfg.Clock,
			DrainTimeout:      cfg.DrainTimeout,
			RelinquishTimeout: cfg.RelinquishTimeout,
			Logger:            cfg.Logger,
			Deliver: func(ctx context.Context, t store.ObservedTransition) error {
				if withDetail && carriesDetail(t.Via) {
					d, err := failureDetail(ctx, s, t)
					if err != nil {
						return err
					}
					t.FailureDetail = d
				}
				return observe(ctx, ObservedTransition{
					Seq: t.Position.Seq, JobID: t.Job, WireName: t.WireName, Queue: t.Queue,
					Transition: observedOf(t),
				})
			},
		})
		if err != nil {
			return err // it names the observer and the knob
		}
		c.walks = append(c.walks, p)
	}
	return nil
}

// RemoveTransitionObserver forgets the Transition Observer registration
// name: its durable cursor and the hold it has on retention. A node still
// registering the name starts it afresh, at the beginning of the
// Transition Log. An unknown name is an error wrapping ErrNotFound.
func (a *Admin) RemoveTransitionObserver(ctx context.Context, name string) error {
	if err := a.store.ObserverRemove(ctx, name); err != nil {
		return fmt.Errorf("backwave: remove transition observer %q: %w", name, err)
	}
	return nil
}

// observedOf is the Transition of an observed entry, its Seq the walk's.
func observedOf(t store.ObservedTransition) Transition {
	tr := transitionsOf([]store.Transition{t.Transition})[0]
	tr.Seq = t.Position.Seq
	return tr
}

// carriesDetail reports whether an entry made via v may record a Failure
// Detail: the edges of a failed Attempt, a lapsed Lease, a quarantine and
// a parent's failure.
func carriesDetail(v core.Via) bool {
	switch v {
	case core.ViaRetry, core.ViaDeadLetter, core.ViaExpire, core.ViaQuarantine, core.ViaParentFailure:
		return true
	case core.ViaInsert, core.ViaClaim, core.ViaSucceed, core.ViaRelinquish, core.ViaCancel,
		core.ViaRequeue, core.ViaRelease, core.ViaWorkflowRetry:
		return false
	}
	return false
}

// failureDetail reads the Failure Detail of the observed entry from its
// job's Transition Log, matched by Seq. A job or entry no longer held (a
// purge, the log's cap) has none: its transition is delivered without.
func failureDetail(ctx context.Context, s Store, t store.ObservedTransition) (string, error) {
	log, err := s.JobTransitions(ctx, t.Job)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("backwave: transition observer: read the failure detail of job %d: %w", t.Job, err)
	}
	for _, e := range log {
		if e.Seq == t.Position.Seq {
			return e.FailureDetail, nil
		}
	}
	return "", nil
}
