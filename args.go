package backwave

import (
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/shell"
	"github.com/backwave/backwave/store"
)

// JobID identifies one stored job: an int64 the store assigns at insert and
// never reuses. The stores share the type.
type JobID = job.ID

// Attempt numbers one execution try of a job: an int32, 1 on a job's first
// run, never reused. The stores share the type.
type Attempt = job.Attempt

// DefaultQueue is the Queue of a job whose args and enqueue options name
// none.
const DefaultQueue = "default"

// JobArgs are a job's arguments. WireName returns the job type's Wire Name:
// its mandatory, explicit identity in storage, stable across refactors. It
// must be a constant of the type — BackWave calls it on the zero value to
// register a worker — and changing it is a deliberate, reviewed act: stored
// jobs under the old name no longer route and become Quarantined. The args
// are stored as JSON (encoding/json).
type JobArgs interface {
	WireName() string
}

// JobOptions are per-job defaults an args type may declare by implementing
// JobArgsWithOptions. Enqueue options override them.
type JobOptions struct {
	// Queue is the default Queue of jobs of this type (DefaultQueue if
	// empty). Every Worker Group's Queues must cover the default Queue of
	// each registered worker.
	Queue string
	// MaxAttempts is the attempt budget of jobs of this type: how many
	// Attempts one life of a job gets before it dead-letters
	// (Config.MaxAttempts if 0). An operator requeue grants a job a fresh
	// budget.
	MaxAttempts int
	// Tags are added to every job of this type.
	Tags []Tag
}

// JobArgsWithOptions is implemented by args types that declare JobOptions.
// Like WireName, JobOptions is called on the zero value at registration and
// must not depend on field values for its Queue.
type JobArgsWithOptions interface {
	JobArgs
	JobOptions() JobOptions
}

// Job is one Attempt of a job as its handler sees it.
type Job[T JobArgs] struct {
	// ID identifies the job.
	ID JobID
	// Args are the decoded arguments.
	Args T
	// Attempt is this Attempt's number: 1 on the first run, never reused,
	// and the same number the logs, the Transition Log and the Monitor
	// show. It keeps counting across operator requeues.
	Attempt Attempt
	// AttemptCeiling is the Attempt number at which the job's current
	// budget is spent: if this Attempt is at or past it and fails, the job
	// dead-letters (Attempt >= AttemptCeiling means this is the last try).
	// It is the job's attempt budget (MaxAttempts) above the Attempt the
	// job stood at when an operator last requeued it: a job with a budget
	// of 5 runs Attempts 1 to 5 under ceiling 5 and, requeued after
	// Attempt 5, Attempts 6 to 10 under ceiling 10. Each free Snooze moves
	// it up by one: the snoozed Attempt is not charged.
	AttemptCeiling int
	// Queue is the Queue the job was claimed from.
	Queue string
	// WireName is the job type's Wire Name.
	WireName string
	// Tags are the job's Tags when it was claimed.
	Tags []Tag
	// CreatedAt is when the job was inserted (store clock).
	CreatedAt time.Time

	output []byte
	tags   []job.Tag
	// deps reads ancestors' Job Output (AncestorOutput).
	deps store.Dependencies
	// progress is where ReportProgress goes; nil outside a Pump.
	progress *shell.Progress
	// cursor is the job's Cursor as this Attempt knows it; cursorSink is
	// where SaveCursor sends a new one, nil outside a Pump.
	cursor     []byte
	cursorSink *shell.Cursor
}

// SetOutput records the Job Output of this Attempt, stored with its outcome
// if the handler succeeds (and discarded if the outcome is fenced out). A
// later call replaces an earlier one. Output over Config.MaxOutputBytes fails
// the Attempt: it is rejected, never truncated.
func (j *Job[T]) SetOutput(b []byte) { j.output = slices.Clone(b) }

// AddTags adds Tags to the job when this Attempt's outcome applies. An
// invalid Tag is refused with an error wrapping ErrInvalidTag and nothing is
// added.
func (j *Job[T]) AddTags(tags ...Tag) error {
	for _, t := range tags {
		if err := t.Validate(); err != nil {
			return err
		}
	}
	j.tags = append(j.tags, jobTags(tags)...)
	return nil
}

// zeroArgs returns a usable zero value of T: for a pointer type, a pointer to
// a fresh zero value, so methods with pointer receivers can be called.
func zeroArgs[T JobArgs]() T {
	var zero T
	rt := reflect.TypeFor[T]()
	if rt.Kind() == reflect.Pointer {
		return reflect.New(rt.Elem()).Interface().(T)
	}
	return zero
}

// isNil reports whether args is nil or a nil pointer, map, slice, … inside
// the interface, on which calling WireName could panic.
func isNil(args JobArgs) bool {
	if args == nil {
		return true
	}
	v := reflect.ValueOf(args)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface, reflect.Func, reflect.Chan:
		return v.IsNil()
	}
	return false
}

// describeArgs returns the Wire Name and declared options of args, catching
// a panic in the user's methods as an error.
func describeArgs(args JobArgs) (wire string, opts JobOptions, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%w: args %T: WireName or JobOptions panicked: %v", ErrInvalidJob, args, v)
		}
	}()
	if isNil(args) {
		return "", opts, fmt.Errorf("%w: nil args", ErrInvalidJob)
	}
	wire = args.WireName()
	if err := store.ValidateName("wire name", wire); err != nil {
		return "", opts, fmt.Errorf("%w: args %T: %w", ErrInvalidJob, args, err)
	}
	if wo, ok := args.(JobArgsWithOptions); ok {
		opts = wo.JobOptions()
	}
	return wire, opts, nil
}
