package backwave

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// The bound of one bulk Operator Action (BulkOptions.Limit).
const (
	// DefaultBulkLimit is how many jobs one bulk action examines when
	// BulkOptions.Limit is 0.
	DefaultBulkLimit = 1000
	// MaxBulkLimit is the hard cap of BulkOptions.Limit: a larger one is
	// refused, never cut.
	MaxBulkLimit = 10_000
	// MaxPreviewJobs bounds how many matching jobs PreviewMatching counts;
	// past it the preview says AtLeast.
	MaxPreviewJobs = 100_000
)

// bulkPage is how many matching jobs a bulk action reads at a time.
const bulkPage = 500

// BulkAction is an Operator Action on one job that RequeueMatching,
// CancelMatching and DeleteMatching apply to every job a JobFilter
// matches, and PreviewMatching counts.
type BulkAction uint8

// The bulk actions, each the single-job Operator Action of its name.
const (
	// BulkRequeue is Admin.Requeue (Dead-Lettered or Quarantined jobs).
	BulkRequeue BulkAction = iota + 1
	// BulkCancel is Admin.Cancel (Scheduled, Awaiting-Parent or Running
	// jobs).
	BulkCancel
	// BulkDelete is Admin.Delete (terminal jobs).
	BulkDelete
)

// jobAction returns the single-job action b applies.
func (b BulkAction) jobAction() (jobAction, bool) {
	switch b {
	case BulkRequeue:
		return actionRequeue, true
	case BulkCancel:
		return actionCancel, true
	case BulkDelete:
		return actionDelete, true
	}
	return jobAction{}, false
}

// String returns the action's verb: "requeue", "cancel" or "delete".
func (b BulkAction) String() string {
	if a, ok := b.jobAction(); ok {
		return a.verb
	}
	return fmt.Sprintf("BulkAction(%d)", uint8(b))
}

// ParseBulkAction is the inverse of BulkAction.String.
func ParseBulkAction(s string) (BulkAction, error) {
	for _, b := range []BulkAction{BulkRequeue, BulkCancel, BulkDelete} {
		if b.String() == s {
			return b, nil
		}
	}
	return 0, fmt.Errorf("backwave: %w: unknown bulk action %q (want requeue, cancel or delete)", ErrInvalidParams, s)
}

// BulkOptions bound one bulk action.
type BulkOptions struct {
	// Limit is how many matching jobs the request examines (acts on or
	// skips): 0 means DefaultBulkLimit; above MaxBulkLimit, or negative,
	// is an error wrapping ErrInvalidParams that names the cap, and nothing
	// is touched.
	Limit int
	// Before, if set, continues a bulk action below it: the Next of the
	// previous BulkResult.
	Before Cursor
}

// BulkPreview is what a bulk action would do, read without acting.
type BulkPreview struct {
	// Matched is how many jobs the filter matches, in any state.
	Matched int
	// Applicable is how many of them are in a state the action applies to.
	Applicable int
	// AtLeast says the count stopped at MaxPreviewJobs matching jobs: the
	// true numbers are at least these.
	AtLeast bool
}

// BulkSkip counts the jobs a bulk action skipped for one reason.
type BulkSkip struct {
	// Reason says why, e.g. "changed state meanwhile".
	Reason string
	// Jobs is how many.
	Jobs int
}

// BulkResult reports one bulk action request.
type BulkResult struct {
	// Acted is how many jobs the action was applied to, each audited as
	// the single-job action is.
	Acted int
	// Skipped is how many matching jobs it examined and left as they
	// were; Skips says why, most frequent first.
	Skipped int
	Skips   []BulkSkip
	// More says matching jobs remain beyond the request's Limit: repeat
	// the request, with Before set to Next to continue past the jobs this
	// one examined (those it skipped, in particular).
	More bool
	Next Cursor
}

// The reasons a bulk action skips a job it examined.
const (
	skipChanged = "changed state meanwhile"
	skipGone    = "removed meanwhile"
)

func (r *BulkResult) skip(reason string) {
	r.Skipped++
	for i := range r.Skips {
		if r.Skips[i].Reason == reason {
			r.Skips[i].Jobs++
			return
		}
	}
	r.Skips = append(r.Skips, BulkSkip{Reason: reason, Jobs: 1})
}

// RequeueMatching requeues every Dead-Lettered or Quarantined job f
// matches, newest first, up to o.Limit of them (see actMatching).
func (a *Admin) RequeueMatching(ctx context.Context, f JobFilter, o BulkOptions) (BulkResult, error) {
	return a.actMatching(ctx, BulkRequeue, f, o)
}

// CancelMatching cancels every live job f matches — waiting ones at once,
// Running ones cooperatively, as Cancel does — newest first, up to o.Limit
// of them (see actMatching).
func (a *Admin) CancelMatching(ctx context.Context, f JobFilter, o BulkOptions) (BulkResult, error) {
	return a.actMatching(ctx, BulkCancel, f, o)
}

// DeleteMatching deletes every terminal job f matches, newest first (so a
// dependent goes before its parent), up to o.Limit of them (see
// actMatching). A job Delete refuses as still needed is skipped with the
// reason.
func (a *Admin) DeleteMatching(ctx context.Context, f JobFilter, o BulkOptions) (BulkResult, error) {
	return a.actMatching(ctx, BulkDelete, f, o)
}

// Matching applies action to the jobs f matches, as RequeueMatching,
// CancelMatching or DeleteMatching.
func (a *Admin) Matching(ctx context.Context, action BulkAction, f JobFilter, o BulkOptions) (BulkResult, error) {
	return a.actMatching(ctx, action, f, o)
}

// PreviewMatching counts the jobs f matches and how many of them action
// applies to, without acting. It reads page by page (up to MaxPreviewJobs
// jobs) through the Admin's Monitor. An unknown Queue or Wire Name in f is
// refused as by Jobs.
func (a *Admin) PreviewMatching(ctx context.Context, action BulkAction, f JobFilter) (BulkPreview, error) {
	act, ok := action.jobAction()
	if !ok {
		return BulkPreview{}, fmt.Errorf("backwave: preview: %w: unknown bulk action %d", ErrInvalidParams, action)
	}
	what := "preview " + act.verb + " matching jobs"
	if err := a.checkFilter(ctx, f.Queue, f.WireName); err != nil {
		return BulkPreview{}, err
	}
	var p BulkPreview
	sf, before := f.store(), job.ID(0)
	for {
		page, err := a.monitor.JobList(ctx, store.JobListParams{JobFilter: sf, BeforeID: before, Limit: MaxPageLimit})
		if err != nil {
			return BulkPreview{}, fmt.Errorf("backwave: %s: %w", what, err)
		}
		for _, j := range page {
			p.Matched++
			if act.accepts(j.State) {
				p.Applicable++
			}
		}
		if len(page) < MaxPageLimit {
			return p, nil
		}
		if p.Matched >= MaxPreviewJobs {
			p.AtLeast = true
			return p, nil
		}
		before = page[len(page)-1].ID
	}
}

// actMatching applies action to the jobs f matches, in the states the
// action accepts, newest first: each job gets the single-job action
// through the state machine, with its own audit entry, exactly as the
// action on its id would; never one set-based write. It examines at most
// o.Limit jobs, read bulkPage at a time, so one request costs about one
// list read per bulkPage jobs plus one store action (one transaction) per
// job. A job that changed state between the read and its action, or was
// removed, is skipped and counted, not an error. A filter naming an
// unknown Queue or Wire Name is an UnknownNameError, one whose States the
// action accepts none of is an error wrapping ErrInvalidParams, and
// nothing is touched; a store error stops the request and returns what it
// did so far beside the error.
func (a *Admin) actMatching(ctx context.Context, action BulkAction, f JobFilter, o BulkOptions) (BulkResult, error) {
	act, ok := action.jobAction()
	if !ok {
		return BulkResult{}, fmt.Errorf("backwave: %w: unknown bulk action %d", ErrInvalidParams, action)
	}
	what := act.verb + " matching jobs"
	limit, err := o.limit()
	if err != nil {
		return BulkResult{}, fmt.Errorf("backwave: %s: %w", what, err)
	}
	sf := f.store()
	if sf.States, err = act.narrow(sf.States); err != nil {
		return BulkResult{}, fmt.Errorf("backwave: %s: %w", what, err)
	}
	if err := a.checkFilter(ctx, f.Queue, f.WireName); err != nil {
		return BulkResult{}, err
	}
	var res BulkResult
	before, examined := job.ID(o.Before), 0
	for examined < limit {
		n := min(limit-examined, bulkPage)
		page, err := a.store.JobList(ctx, store.JobListParams{JobFilter: sf, BeforeID: before, Limit: n})
		if err != nil {
			return res, fmt.Errorf("backwave: %s: %w", what, err)
		}
		for _, j := range page {
			err := a.actOn(ctx, action, j.ID)
			var needed *store.StillNeededError
			switch {
			case err == nil:
				res.Acted++
			case errors.Is(err, store.ErrIllegalTransition):
				res.skip(skipChanged)
			case errors.Is(err, store.ErrNotFound):
				res.skip(skipGone)
			case errors.As(err, &needed):
				res.skip("still needed: " + needed.Why)
			default:
				res.More, res.Next = true, Cursor(before)
				return res, fmt.Errorf("backwave: %s: job %d (after %d acted on): %w", what, j.ID, res.Acted, err)
			}
			before = j.ID
			examined++
		}
		if len(page) < n {
			return res.sorted(), nil
		}
	}
	rest, err := a.store.JobList(ctx, store.JobListParams{JobFilter: sf, BeforeID: before, Limit: 1})
	if err != nil {
		return res, fmt.Errorf("backwave: %s: look for more: %w", what, err)
	}
	if len(rest) > 0 {
		res.More, res.Next = true, Cursor(before)
	}
	return res.sorted(), nil
}

// actOn applies action to job id through the store's single-job action.
func (a *Admin) actOn(ctx context.Context, action BulkAction, id job.ID) error {
	who := store.Actor(a.actor)
	var err error
	switch action {
	case BulkRequeue:
		_, err = a.store.JobRequeue(ctx, store.JobRequeueParams{ID: id, Actor: who})
	case BulkCancel:
		_, err = a.store.JobCancel(ctx, store.JobCancelParams{ID: id, Actor: who})
	case BulkDelete:
		_, err = a.store.JobDelete(ctx, store.JobDeleteParams{ID: id, Actor: who})
	}
	return err
}

// sorted orders r's Skips most frequent first (ties by reason).
func (r BulkResult) sorted() BulkResult {
	slices.SortFunc(r.Skips, func(x, y BulkSkip) int {
		if x.Jobs != y.Jobs {
			return y.Jobs - x.Jobs
		}
		return strings.Compare(x.Reason, y.Reason)
	})
	return r
}

// limit returns the effective Limit of o.
func (o BulkOptions) limit() (int, error) {
	switch {
	case o.Limit < 0:
		return 0, fmt.Errorf("%w: limit %d is negative", ErrInvalidParams, o.Limit)
	case o.Limit > MaxBulkLimit:
		return 0, fmt.Errorf("%w: limit %d is over the cap of %d jobs per request (repeat the request to go on)", ErrInvalidParams, o.Limit, MaxBulkLimit)
	case o.Limit == 0:
		return DefaultBulkLimit, nil
	}
	return o.Limit, nil
}

// narrow returns the states of a filter for a's bulk run: the filter's own
// (every state if none) that a accepts. A filter whose states a accepts
// none of is an error wrapping ErrInvalidParams.
func (a jobAction) narrow(states []job.State) ([]job.State, error) {
	from := states
	if len(from) == 0 {
		from = job.States
	}
	var out []job.State
	for _, s := range from {
		if a.accepts(s) {
			out = append(out, s)
		}
	}
	if len(out) > 0 {
		return out, nil
	}
	kept := make([]string, len(states))
	for i, s := range states {
		kept[i] = stateWords(s)
	}
	return nil, fmt.Errorf("%w: the filter keeps %s jobs; only %s jobs can be %s",
		ErrInvalidParams, orList(kept), orList(a.accepted()), a.done)
}
