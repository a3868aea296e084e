package store

import (
	"context"
	"fmt"
	"time"

	"github.com/backwave/backwave/job"
)

// ObserverRemoveAfter is how long a registration may go unseen — no claim
// and no advance under its name, by any node — before the store considers
// it removed and lets retention purge what it was not yet delivered. A
// registration is seen at every walk (node.ObserverConfig.Interval, a
// second by default), so a week is far past any outage a fleet rides out
// while still meaning to deliver.
const ObserverRemoveAfter = 7 * 24 * time.Hour

// MaxObserverNameBytes bounds an observer name.
const MaxObserverNameBytes = 200

// ObserverPosition is a place in the Transition Log's commit order: where a
// walk's cursor stands, or where one entry lies. Positions order by Commit,
// then Seq. Seq is the entry's Transition Log sequence number. Commit is
// the commit-order key of the transaction that wrote it where commit order
// differs from Seq order (the PostgreSQL adapter: the writing transaction's
// id), zero where it does not (a store with one writer at a time). The zero
// ObserverPosition lies before every entry.
type ObserverPosition struct {
	Commit uint64
	Seq    int64
}

// Before reports whether p lies before q in the walk's order.
func (p ObserverPosition) Before(q ObserverPosition) bool {
	if p.Commit != q.Commit {
		return p.Commit < q.Commit
	}
	return p.Seq < q.Seq
}

// String renders the position as commit/seq.
func (p ObserverPosition) String() string { return fmt.Sprintf("%d/%d", p.Commit, p.Seq) }

// ObservedTransition is one Transition Log entry as a walk delivers it: the
// entry, where it lies, and the job it belongs to. It carries no Failure
// Detail: the walk reads only what a reaction needs.
type ObservedTransition struct {
	Position ObserverPosition
	Job      job.ID
	WireName string
	Queue    string
	Transition
}

// ObserverClaimParams are the params of Observers.ObserverClaim.
type ObserverClaimParams struct {
	// Observer names the registration; required, at most
	// MaxObserverNameBytes.
	Observer string
	// Holder is the node asking for the walk's Lease; required.
	Holder job.WorkerID
	// LeaseDuration is the walk's Lease length from the store's now;
	// positive.
	LeaseDuration time.Duration
	// States are the declared states: the entries whose resulting state is
	// one of them are returned. At least one.
	States []job.State
	// Limit bounds how many entries past the cursor one claim reads
	// (matching a declared state or not); at least 1.
	Limit int
	// StartAtEnd registers a new name at the end of the Transition Log
	// instead of its beginning: its cursor starts on the newest entry the
	// walk could read now, so it is delivered only entries written after.
	// It changes nothing for a registered name, whose cursor stays where it
	// is.
	StartAtEnd bool
}

// ObserverClaimResult answers an ObserverClaim.
type ObserverClaimResult struct {
	// Held is false when another holder's Lease on the walk is live; then
	// nothing else is set.
	Held bool
	// Token fences the holder's ObserverAdvance calls.
	Token int64
	// Cursor is the registration's durable cursor: every entry at or
	// before it was delivered (or walked past).
	Cursor ObserverPosition
	// Through is the position of the last entry the claim read past
	// Cursor, Cursor itself when it read none: once Transitions are
	// delivered, the holder advances the cursor to Through.
	Through ObserverPosition
	// Transitions are the entries past Cursor up to Through whose state
	// is declared, in walk order.
	Transitions []ObservedTransition
	// More is true when the claim read Limit entries: more may be
	// waiting past Through.
	More bool
}

// ObserverAdvanceParams are the params of Observers.ObserverAdvance.
type ObserverAdvanceParams struct {
	Observer string
	Holder   job.WorkerID
	// Token is the one the holder's claim returned.
	Token int64
	// To is where the cursor moves: the position of the last entry
	// delivered in order. A To at or before the stored cursor leaves the
	// cursor where it is (an advance only renews then).
	To ObserverPosition
	// LeaseDuration renews the walk's Lease to the store's now plus it;
	// positive unless Release.
	LeaseDuration time.Duration
	// Release gives the walk's Lease back after the advance (a clean
	// stop), so another node may take the walk at once.
	Release bool
}

// Observers is the Storage Contract of the Transition Observer walk.
//
// A Transition Observer is host code delivered every Transition Log entry
// whose resulting state it declared. Delivery is a walk of the Transition
// Log in the store's commit order, claimed under a Lease per observer name
// so that one node walks at a time, with a durable cursor the walk's holder
// advances after delivering: at-least-once, never Effect-Once (a holder
// that stops mid-delivery leaves the cursor behind what it delivered, and
// the next holder delivers those entries again).
//
// Registrations. An observer name is registered by its first ObserverClaim
// and starts at the beginning of the Transition Log the store still holds
// (its first walk is delivered every retained entry), or, with
// ObserverClaimParams.StartAtEnd, at its end (only entries written after
// the claim are delivered; on a store whose commit order is not Seq order,
// entries of transactions still open at the claim may be delivered too). Each claim and advance
// stamps the registration as seen at the store's now. A registration is
// removed by ObserverRemove, or considered removed once it was not seen
// for ObserverRemoveAfter: from then on it no longer holds retention back
// (its next claim finds its cursor where it was, and delivers what is still
// there).
//
// Retention. JobPurge never purges a job holding a Transition Log entry a
// live registration has not been walked past: an entry outlives retention
// until every live registration was delivered it (or walked past it, when
// its state was not declared), or until its registration is removed. A
// store may also keep the job of the entry a cursor stands on (the
// Embedded Adapter does, so that an entry id is never handed out again).
//
// The fence. ObserverClaim hands a holder a Token, bumped every time the
// walk changes hands; ObserverAdvance applies only for the holder and Token
// of the walk's live Lease, so a holder whose Lease lapsed and was taken
// over cannot move the cursor (ErrStaleLease).
type Observers interface {
	// ObserverClaim registers p.Observer if the store does not know it yet
	// (its cursor at the zero ObserverPosition), then takes or renews the
	// walk's Lease for p.Holder: if another holder's Lease is live at the
	// store's clock, it answers Held false and changes nothing but the
	// registration's seen time. Otherwise p.Holder holds the walk until
	// the store's now + LeaseDuration; the Token is bumped when the Lease
	// changes hands (a holder renewing its own live Lease keeps its
	// Token). It returns the durable cursor and reads up to p.Limit
	// entries past it, in the walk's order, answering those whose state
	// is declared.
	//
	// The walk's order is commit order: an entry the claim does not return
	// never lies before one it returns, once both are committed. A store
	// whose sequence numbers are allocated before commit (so a lower Seq
	// may commit later) returns only entries whose order can no longer be
	// preceded by a commit still to come (the PostgreSQL adapter's
	// horizon; see its package doc).
	ObserverClaim(ctx context.Context, p ObserverClaimParams) (ObserverClaimResult, error)

	// ObserverAdvance moves p.Observer's cursor to p.To (never backwards)
	// and renews the walk's Lease, or releases it when p.Release, fenced:
	// if p.Holder does not hold a live Lease on the walk under p.Token, it
	// changes nothing and fails with ErrStaleLease. An unknown observer is
	// ErrNotFound.
	ObserverAdvance(ctx context.Context, p ObserverAdvanceParams) error

	// ObserverRemove forgets the registration: its cursor and its Lease.
	// Retention no longer holds entries back for it; a later claim under
	// the name registers it afresh at the beginning of the Transition Log.
	// An unknown observer is ErrNotFound.
	ObserverRemove(ctx context.Context, observer string) error
}

// validateObserverName checks an observer name.
func validateObserverName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: observer name is empty", ErrInvalidParams)
	}
	if len(name) > MaxObserverNameBytes {
		return fmt.Errorf("%w: observer name is %d bytes, over %d", ErrInvalidParams, len(name), MaxObserverNameBytes)
	}
	return nil
}

// ValidateObserverName checks an observer name for ObserverRemove.
func ValidateObserverName(name string) error { return validateObserverName(name) }

// Validate checks the params of ObserverClaim.
func (p ObserverClaimParams) Validate() error {
	if err := validateObserverName(p.Observer); err != nil {
		return err
	}
	if p.Holder == "" {
		return fmt.Errorf("%w: observer %q: claim names no holder", ErrInvalidParams, p.Observer)
	}
	if p.LeaseDuration <= 0 {
		return fmt.Errorf("%w: observer %q: lease duration %v is not positive", ErrInvalidParams, p.Observer, p.LeaseDuration)
	}
	if len(p.States) == 0 {
		return fmt.Errorf("%w: observer %q declares no state", ErrInvalidParams, p.Observer)
	}
	for _, s := range p.States {
		if s == job.StateUnknown || int(s) > len(job.States) {
			return fmt.Errorf("%w: observer %q: %s is not a stored state", ErrInvalidParams, p.Observer, s)
		}
	}
	if p.Limit < 1 {
		return fmt.Errorf("%w: observer %q: claim limit %d is below 1", ErrInvalidParams, p.Observer, p.Limit)
	}
	return nil
}

// Validate checks the params of ObserverAdvance.
func (p ObserverAdvanceParams) Validate() error {
	if err := validateObserverName(p.Observer); err != nil {
		return err
	}
	if p.Holder == "" {
		return fmt.Errorf("%w: observer %q: advance names no holder", ErrInvalidParams, p.Observer)
	}
	if !p.Release && p.LeaseDuration <= 0 {
		return fmt.Errorf("%w: observer %q: lease duration %v is not positive", ErrInvalidParams, p.Observer, p.LeaseDuration)
	}
	if p.To.Seq < 0 {
		return fmt.Errorf("%w: observer %q: position %s is negative", ErrInvalidParams, p.Observer, p.To)
	}
	return nil
}

// Declares reports whether s is one of the declared states.
func (p ObserverClaimParams) Declares(s job.State) bool {
	for _, d := range p.States {
		if d == s {
			return true
		}
	}
	return false
}
