package backwave

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// EnqueueOption overrides one setting of an enqueued job.
type EnqueueOption func(*enqueueSettings)

type enqueueSettings struct {
	queue       string
	runAt       time.Time
	delay       time.Duration
	hasDelay    bool
	maxAttempts int
	// hasMaxAttempts records a WithMaxAttempts call, so that
	// WithMaxAttempts(0) is refused rather than read as "not set".
	hasMaxAttempts bool
	tags           []Tag

	// Dependency options (dependency.go).
	parents                          []store.ParentRef
	mode                             DependencyMode
	hasMode, modeConflict, badParent bool

	// WithUnique (unique.go).
	unique    store.Unique
	hasUnique bool
	hasQueue  bool

	// WithConcurrencyKey (concurrency_key.go).
	key    string
	hasKey bool
}

// WithQueue puts the job on queue instead of its args type's default. An
// empty or invalid name is an error wrapping ErrInvalidJob, never the
// default Queue in disguise.
func WithQueue(queue string) EnqueueOption {
	return func(s *enqueueSettings) { s.queue, s.hasQueue = queue, true }
}

// WithRunAt makes the job due at t (store clock) instead of now. A t outside
// the years store.MinYear to store.MaxYear (UTC) is an error wrapping
// ErrInvalidJob on every store.
func WithRunAt(t time.Time) EnqueueOption {
	return func(s *enqueueSettings) { s.runAt = t }
}

// WithDelay makes the job due d after the Client's clock now. It cannot be
// combined with WithRunAt; d must not be negative.
func WithDelay(d time.Duration) EnqueueOption {
	return func(s *enqueueSettings) { s.delay, s.hasDelay = d, true }
}

// WithMaxAttempts sets the job's attempt budget: how many Attempts one life
// of the job may take before it dead-letters. n must be at least 1; any
// other value is an error wrapping ErrInvalidJob, never the default.
func WithMaxAttempts(n int) EnqueueOption {
	return func(s *enqueueSettings) { s.maxAttempts, s.hasMaxAttempts = n, true }
}

// WithTags adds Tags to the job, beside those its args type declares.
func WithTags(tags ...Tag) EnqueueOption {
	return func(s *enqueueSettings) { s.tags = append(s.tags, tags...) }
}

// EnqueueParams is one job of an EnqueueMany call.
type EnqueueParams struct {
	Args    JobArgs
	Options []EnqueueOption
}

// Enqueue stores one job and returns its id. Invalid input is an error
// wrapping ErrInvalidJob and stores nothing.
func (c *Client) Enqueue(ctx context.Context, args JobArgs, opts ...EnqueueOption) (JobID, error) {
	ids, err := c.EnqueueMany(ctx, []EnqueueParams{{Args: args, Options: opts}})
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// EnqueueMany stores every job in one atomic store call and returns their ids
// in input order. If any job is invalid, nothing is stored and the error
// (wrapping ErrInvalidJob) names its index. A job whose unique key
// (WithUnique) is held is not stored, and its place holds the id of the job
// holding the key; EnqueueManyUnique tells the two apart.
func (c *Client) EnqueueMany(ctx context.Context, params []EnqueueParams) ([]JobID, error) {
	res, err := c.enqueue(ctx, params)
	return store.ResultIDs(res), err
}

// enqueue stores every job of params in one atomic store call and answers
// per job; nil for no params.
func (c *Client) enqueue(ctx context.Context, params []EnqueueParams) ([]store.InsertResult, error) {
	if len(params) == 0 {
		return nil, nil
	}
	jobs, err := c.newJobs(params)
	if err != nil {
		return nil, err
	}
	res, err := c.insertThrough(ctx, jobs, false, "", func(ctx context.Context) ([]store.InsertResult, error) {
		return c.store.JobInsertManyResults(ctx, store.InsertManyParams{Jobs: jobs})
	})
	if err != nil {
		return nil, err
	}
	c.logResults(ctx, "", jobs, res)
	stored := jobs
	if slices.ContainsFunc(res, func(r store.InsertResult) bool { return !r.Inserted }) {
		stored = nil
		for i, r := range res {
			if r.Inserted || r.Replaced {
				stored = append(stored, jobs[i])
			}
		}
	}
	c.wakeLocal(stored)
	return res, nil
}

// newJobs turns the params of one call into the rows to insert: the one
// path every enqueue takes, in a transaction of the caller's or not.
func (c *Client) newJobs(params []EnqueueParams) ([]store.NewJob, error) {
	jobs := make([]store.NewJob, len(params))
	for i, p := range params {
		nj, err := c.newJob(p.Args, p.Options, len(params))
		if err != nil {
			if len(params) == 1 {
				return nil, fmt.Errorf("backwave: enqueue: %w", err)
			}
			return nil, fmt.Errorf("backwave: enqueue jobs[%d]: %w", i, err)
		}
		jobs[i] = nj
	}
	return jobs, nil
}

// insertError wraps the store's refusal of n jobs; where says where they
// went ("" or " in the caller's transaction").
func insertError(where string, n int, err error) error {
	what := "enqueue"
	if n > 1 {
		what = fmt.Sprintf("enqueue %d jobs", n)
	}
	if errors.Is(err, store.ErrInvalidParams) {
		// A refused graph: a cycle, an unknown parent, or an in-batch
		// parent with a unique key.
		return fmt.Errorf("backwave: %s%s: %w: %w", what, where, ErrInvalidJob, err)
	}
	return fmt.Errorf("backwave: %s%s: %w", what, where, err)
}

// logResults logs at debug level what the insert did with each job; where
// says where the jobs went ("" or " in the caller's transaction").
func (c *Client) logResults(ctx context.Context, where string, jobs []store.NewJob, res []store.InsertResult) {
	if !c.log.Enabled(ctx, levelDebug) {
		return
	}
	for i, r := range res {
		switch {
		case r.Inserted:
			c.log.DebugContext(ctx, "job enqueued"+where, "job", int64(r.ID), "queue", jobs[i].Queue, "wire_name", jobs[i].WireName)
		case r.Replaced:
			c.log.DebugContext(ctx, "job not enqueued"+where+": it rewrote the holder of its unique key", "job", int64(r.ID),
				"queue", jobs[i].Queue, "wire_name", jobs[i].WireName, "unique_key", jobs[i].Unique.Key, "unique_mode", jobs[i].Unique.Mode.String())
		default:
			c.log.DebugContext(ctx, "job not enqueued"+where+": its unique key is held", "job", int64(r.ID), "queue", jobs[i].Queue,
				"wire_name", jobs[i].WireName, "unique_key", jobs[i].Unique.Key)
		}
	}
}

// logEnqueued logs msg at debug level for each stored job.
func (c *Client) logEnqueued(ctx context.Context, msg string, jobs []store.NewJob, ids []JobID) {
	if !c.log.Enabled(ctx, levelDebug) {
		return
	}
	for i, id := range ids {
		c.log.DebugContext(ctx, msg, "job", int64(id), "queue", jobs[i].Queue, "wire_name", jobs[i].WireName)
	}
}

// newJob turns args and options into a row to insert, one of a call of n
// jobs.
func (c *Client) newJob(args JobArgs, opts []EnqueueOption, n int) (store.NewJob, error) {
	wire, jo, err := describeArgs(args)
	if err != nil {
		return store.NewJob{}, err
	}
	var s enqueueSettings
	for _, o := range opts {
		if o == nil {
			return store.NewJob{}, fmt.Errorf("%w: nil EnqueueOption", ErrInvalidJob)
		}
		o(&s)
	}
	nj := store.NewJob{WireName: wire, Queue: DefaultQueue, MaxAttempts: c.maxAttempts}
	if jo.Queue != "" {
		nj.Queue = jo.Queue
	}
	if s.hasQueue {
		if s.queue == "" {
			return store.NewJob{}, fmt.Errorf(`%w: WithQueue(""): a Queue needs a name`, ErrInvalidJob)
		}
		nj.Queue = s.queue
	}
	if err := store.ValidateName("queue", nj.Queue); err != nil {
		return store.NewJob{}, fmt.Errorf("%w: %w", ErrInvalidJob, err)
	}
	switch {
	case s.hasMaxAttempts && s.maxAttempts < 1:
		return store.NewJob{}, fmt.Errorf("%w: WithMaxAttempts(%d): the attempt budget is at least 1", ErrInvalidJob, s.maxAttempts)
	case jo.MaxAttempts < 0:
		return store.NewJob{}, fmt.Errorf("%w: JobOptions of %T: MaxAttempts %d is negative", ErrInvalidJob, args, jo.MaxAttempts)
	case s.hasMaxAttempts:
		nj.MaxAttempts = s.maxAttempts
	case jo.MaxAttempts > 0:
		nj.MaxAttempts = jo.MaxAttempts
	}
	switch {
	case s.hasDelay && !s.runAt.IsZero():
		return store.NewJob{}, fmt.Errorf("%w: both WithDelay and WithRunAt given", ErrInvalidJob)
	case s.hasDelay && s.delay < 0:
		return store.NewJob{}, fmt.Errorf("%w: negative delay %v", ErrInvalidJob, s.delay)
	case s.hasDelay:
		nj.ScheduledAt = c.clock.Now().Add(s.delay)
	default:
		nj.ScheduledAt = s.runAt
	}
	if err := store.ValidateTime("due time", nj.ScheduledAt); err != nil {
		return store.NewJob{}, fmt.Errorf("%w: %w", ErrInvalidJob, err)
	}
	nj.Tags = job.NormalizeTags(jobTags(append(slices.Clone(jo.Tags), s.tags...)))
	for _, t := range nj.Tags {
		if err := t.Validate(); err != nil {
			return store.NewJob{}, fmt.Errorf("%w: %w", ErrInvalidJob, err)
		}
	}
	if nj.Dependency, err = s.dependency(n); err != nil {
		return store.NewJob{}, err
	}
	if nj.Unique, err = s.uniqueKey(); err != nil {
		return store.NewJob{}, err
	}
	if nj.ConcurrencyKey, err = s.concurrencyKey(); err != nil {
		return store.NewJob{}, err
	}
	payload, err := marshalArgs(args)
	if err != nil {
		return store.NewJob{}, fmt.Errorf("%w: args %T (wire name %q) do not encode as JSON: %w", ErrInvalidJob, args, wire, err)
	}
	if len(payload) > store.MaxPayloadBytes {
		return store.NewJob{}, fmt.Errorf("%w: args %T (wire name %q) encode to %d bytes, over the %d-byte payload limit (store.MaxPayloadBytes)",
			ErrInvalidJob, args, wire, len(payload), store.MaxPayloadBytes)
	}
	if err := store.ValidateText("payload", payload); err != nil {
		return store.NewJob{}, fmt.Errorf("%w: args %T (wire name %q): %w", ErrInvalidJob, args, wire, err)
	}
	nj.Payload = payload
	return nj, nil
}

// marshalArgs encodes args, catching a panicking MarshalJSON as an error.
func marshalArgs(args JobArgs) (b []byte, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("encoding panicked: %v", v)
		}
	}()
	return json.Marshal(args)
}
