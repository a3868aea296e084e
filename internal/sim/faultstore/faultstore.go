package faultstore

import (
	"context"
	"errors"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// The errors a faulty call answers with.
var (
	// ErrIsolated answers a Rejected call: the node is isolated from the
	// store.
	ErrIsolated = errors.New("faultstore: node isolated from the store")
	// ErrDown answers a call while the store restarts.
	ErrDown = errors.New("faultstore: store restarting")
	// ErrUnknown answers a Lost or an Applied call: the caller cannot know
	// whether it applied.
	ErrUnknown = errors.New("faultstore: store operation outcome unknown")
)

// Fault is what happens to a call (see the package documentation).
type Fault uint8

const (
	// None: the call reaches the store and its answer comes back.
	None Fault = iota
	// Rejected: the call never reaches the store; ErrIsolated.
	Rejected
	// Down: the call never reaches the store; ErrDown.
	Down
	// Lost: the call is not applied; ErrUnknown.
	Lost
	// Applied: the call is applied and its answer lost; ErrUnknown.
	Applied
)

// String names the fault.
func (f Fault) String() string {
	switch f {
	case None:
		return "none"
	case Rejected:
		return "rejected"
	case Down:
		return "down"
	case Lost:
		return "lost"
	case Applied:
		return "applied"
	}
	return "fault(?)"
}

// Target is the store a node calls: what node.Caller needs.
type Target interface {
	store.Worker
	store.Schedules
	store.Retention
	store.Observers
	store.Fleet
}

// Store is Target with Fault applied to every call made through it. It
// implements Target, so it is what a node.Caller is given.
type Store struct {
	// Target is the store the calls reach when the Fault lets them.
	Target Target
	// Fault is what happens to each call.
	Fault Fault
}

var _ Target = (*Store)(nil)

// call carries out one call under s.Fault: do reaches the store.
func call[T any](s *Store, do func() (T, error)) (T, error) {
	var zero T
	switch s.Fault {
	case Rejected:
		return zero, ErrIsolated
	case Down:
		return zero, ErrDown
	case Lost:
		return zero, ErrUnknown
	}
	v, err := do()
	if err != nil || s.Fault != Applied {
		return v, err
	}
	return zero, ErrUnknown
}

// callErr is call for a method that answers only an error.
func callErr(s *Store, do func() error) error {
	_, err := call(s, func() (struct{}, error) { return struct{}{}, do() })
	return err
}

// JobClaim is store.Worker.JobClaim under the Fault.
func (s *Store) JobClaim(ctx context.Context, p store.ClaimParams) ([]job.Job, error) {
	return call(s, func() ([]job.Job, error) { return s.Target.JobClaim(ctx, p) })
}

// LeaseRenew is store.Worker.LeaseRenew under the Fault.
func (s *Store) LeaseRenew(ctx context.Context, p store.RenewParams) ([]store.RenewResult, error) {
	return call(s, func() ([]store.RenewResult, error) { return s.Target.LeaseRenew(ctx, p) })
}

// OutcomeReport is store.Worker.OutcomeReport under the Fault.
func (s *Store) OutcomeReport(ctx context.Context, p store.ReportParams) ([]store.ReportResult, error) {
	return call(s, func() ([]store.ReportResult, error) { return s.Target.OutcomeReport(ctx, p) })
}

// LeaseExpire is store.Worker.LeaseExpire under the Fault.
func (s *Store) LeaseExpire(ctx context.Context, p store.ExpireParams) (store.ExpireResult, error) {
	return call(s, func() (store.ExpireResult, error) { return s.Target.LeaseExpire(ctx, p) })
}

// LeaseRelinquish is store.Worker.LeaseRelinquish under the Fault.
func (s *Store) LeaseRelinquish(ctx context.Context, p store.RelinquishParams) (store.RelinquishResult, error) {
	return call(s, func() (store.RelinquishResult, error) { return s.Target.LeaseRelinquish(ctx, p) })
}

// ScheduleUpsert is store.Schedules.ScheduleUpsert under the Fault.
func (s *Store) ScheduleUpsert(ctx context.Context, p store.ScheduleUpsertParams) (store.ScheduleUpsertResult, error) {
	return call(s, func() (store.ScheduleUpsertResult, error) { return s.Target.ScheduleUpsert(ctx, p) })
}

// ScheduleRemove is store.Schedules.ScheduleRemove under the Fault.
func (s *Store) ScheduleRemove(ctx context.Context, p store.ScheduleParams) error {
	return callErr(s, func() error { return s.Target.ScheduleRemove(ctx, p) })
}

// SchedulePause is store.Schedules.SchedulePause under the Fault.
func (s *Store) SchedulePause(ctx context.Context, p store.ScheduleParams) error {
	return callErr(s, func() error { return s.Target.SchedulePause(ctx, p) })
}

// ScheduleResume is store.Schedules.ScheduleResume under the Fault.
func (s *Store) ScheduleResume(ctx context.Context, p store.ScheduleParams) error {
	return callErr(s, func() error { return s.Target.ScheduleResume(ctx, p) })
}

// ScheduleTrigger is store.Schedules.ScheduleTrigger under the Fault.
func (s *Store) ScheduleTrigger(ctx context.Context, p store.ScheduleTriggerParams) (job.ID, error) {
	return call(s, func() (job.ID, error) { return s.Target.ScheduleTrigger(ctx, p) })
}

// ScheduleList is store.Schedules.ScheduleList under the Fault.
func (s *Store) ScheduleList(ctx context.Context) (store.ScheduleListResult, error) {
	return call(s, func() (store.ScheduleListResult, error) { return s.Target.ScheduleList(ctx) })
}

// ScheduleMint is store.Schedules.ScheduleMint under the Fault.
func (s *Store) ScheduleMint(ctx context.Context, p store.MintParams) ([]store.MintResult, error) {
	return call(s, func() ([]store.MintResult, error) { return s.Target.ScheduleMint(ctx, p) })
}

// ScheduleOccurrences is store.Schedules.ScheduleOccurrences under the
// Fault.
func (s *Store) ScheduleOccurrences(ctx context.Context, p store.OccurrenceListParams) ([]store.Occurrence, error) {
	return call(s, func() ([]store.Occurrence, error) { return s.Target.ScheduleOccurrences(ctx, p) })
}

// JobPurge is store.Retention.JobPurge under the Fault.
func (s *Store) JobPurge(ctx context.Context, p store.PurgeParams) (store.PurgeResult, error) {
	return call(s, func() (store.PurgeResult, error) { return s.Target.JobPurge(ctx, p) })
}

// ObserverClaim is store.Observers.ObserverClaim under the Fault.
func (s *Store) ObserverClaim(ctx context.Context, p store.ObserverClaimParams) (store.ObserverClaimResult, error) {
	return call(s, func() (store.ObserverClaimResult, error) { return s.Target.ObserverClaim(ctx, p) })
}

// ObserverAdvance is store.Observers.ObserverAdvance under the Fault.
func (s *Store) ObserverAdvance(ctx context.Context, p store.ObserverAdvanceParams) error {
	return callErr(s, func() error { return s.Target.ObserverAdvance(ctx, p) })
}

// ObserverRemove is store.Observers.ObserverRemove under the Fault.
func (s *Store) ObserverRemove(ctx context.Context, observer string) error {
	return callErr(s, func() error { return s.Target.ObserverRemove(ctx, observer) })
}

// FleetStamp is store.Fleet.FleetStamp under the Fault.
func (s *Store) FleetStamp(ctx context.Context, p store.FleetStampParams) (store.FleetView, error) {
	return call(s, func() (store.FleetView, error) { return s.Target.FleetStamp(ctx, p) })
}
