package backwave

import (
	"context"
	"errors"
	"time"

	"github.com/backwave/backwave/store"
)

// EnqueueMiddleware wraps the store insert of every enqueue call — Enqueue,
// EnqueueMany, EnqueueUnique, EnqueueManyUnique, EnqueueTx and
// EnqueueManyTx — as Middleware wraps every Attempt: it runs code around
// next and returns what the call should return (usually next's error). The
// first in Config.EnqueueMiddleware is the outermost. It runs once the jobs
// are built and checked, so an invalid job fails before any middleware
// runs.
//
// call describes the jobs. A middleware may set each job's TraceContext
// before calling next; every other field is for reading, and changes to it
// are not stored. After next returns nil, each job's ID and Inserted are
// set. A middleware that returns nil without calling next stores nothing,
// and the enqueue call fails with an error saying so. An error returned
// after next succeeded fails the enqueue call, though its jobs are stored.
type EnqueueMiddleware func(ctx context.Context, call *EnqueueCall, next func(ctx context.Context) error) error

// EnqueueCall describes one enqueue call to an EnqueueMiddleware.
type EnqueueCall struct {
	// Jobs are the call's jobs, in input order.
	Jobs []EnqueueJob
	// InTx is set for EnqueueTx and EnqueueManyTx, which insert in the
	// caller's transaction.
	InTx bool
}

// EnqueueJob is one job of an EnqueueCall.
type EnqueueJob struct {
	WireName string
	Queue    string
	// ScheduledAt is the due time asked for; zero means now, on the store's
	// clock.
	ScheduledAt time.Time
	// Tags are the job's Tags.
	Tags []Tag
	// TraceContext is the job's trace context: propagation fields (the
	// W3C traceparent and tracestate, or whatever propagator a middleware
	// uses) stored with the job in a field of its own, never a Tag, and
	// handed to every Attempt as AttemptInfo.TraceContext. A middleware may
	// set it; nil stores none. Keys and values are text, within
	// store.MaxTraceContextBytes in all.
	TraceContext map[string]string
	// ID and Inserted are set once next returned nil: the job's id, and
	// whether this call stored it (false when its unique key was held, and
	// ID is then the id of the job holding it).
	ID       JobID
	Inserted bool
}

// errNextNotCalled fails an enqueue call whose middleware never called
// next.
var errNextNotCalled = errors.New("an EnqueueMiddleware returned without calling next: nothing was stored")

// errNextTwice refuses a second insert of the same jobs.
var errNextTwice = errors.New("an EnqueueMiddleware called next a second time: the jobs were stored once")

// insertThrough runs insert, the store insert of jobs, inside the enqueue
// middleware, and reports the stored jobs to the Observers. where is "" or
// " in the caller's transaction", for errors.
func (c *Client) insertThrough(ctx context.Context, jobs []store.NewJob, inTx bool, where string,
	insert func(ctx context.Context) ([]store.InsertResult, error)) ([]store.InsertResult, error) {
	var res []store.InsertResult
	if len(c.enqueueMiddleware) == 0 {
		var err error
		if res, err = insert(ctx); err != nil {
			return nil, insertError(where, len(jobs), err)
		}
	} else {
		var err error
		if res, err = c.insertWrapped(ctx, jobs, inTx, insert); err != nil {
			return nil, insertError(where, len(jobs), err)
		}
	}
	if c.obs != nil {
		e := EnqueueEvent{Jobs: make([]EnqueuedJob, len(jobs)), InTx: inTx}
		for i, j := range jobs {
			e.Jobs[i] = EnqueuedJob{ID: res[i].ID, Queue: j.Queue, WireName: j.WireName, Inserted: res[i].Inserted}
		}
		c.obs.enqueued(ctx, e)
	}
	return res, nil
}

// insertWrapped runs insert inside the enqueue middleware chain, first
// listed outermost, carrying each job's TraceContext into its row.
func (c *Client) insertWrapped(ctx context.Context, jobs []store.NewJob, inTx bool,
	insert func(ctx context.Context) ([]store.InsertResult, error)) ([]store.InsertResult, error) {
	call := &EnqueueCall{Jobs: make([]EnqueueJob, len(jobs)), InTx: inTx}
	for i, j := range jobs {
		call.Jobs[i] = EnqueueJob{WireName: j.WireName, Queue: j.Queue, ScheduledAt: j.ScheduledAt, Tags: tagsOf(j.Tags)}
	}
	var (
		res    []store.InsertResult
		called bool
	)
	next := func(ctx context.Context) error {
		if called {
			return errNextTwice
		}
		called = true
		for i := range jobs {
			jobs[i].TraceContext = call.Jobs[i].TraceContext
		}
		var err error
		if res, err = insert(ctx); err != nil {
			return err
		}
		for i, r := range res {
			call.Jobs[i].ID, call.Jobs[i].Inserted = r.ID, r.Inserted
		}
		return nil
	}
	for i := len(c.enqueueMiddleware) - 1; i >= 0; i-- {
		m, inner := c.enqueueMiddleware[i], next
		next = func(ctx context.Context) error { return m(ctx, call, inner) }
	}
	if err := next(ctx); err != nil {
		return nil, err
	}
	if !called {
		return nil, errNextNotCalled
	}
	return res, nil
}

// insertedResults answers an insert that stores every job (one without
// unique keys, such as Transactional Enqueue's) in the shape of one that
// may not.
func insertedResults(ids []JobID) []store.InsertResult {
	if ids == nil {
		return nil
	}
	out := make([]store.InsertResult, len(ids))
	for i, id := range ids {
		out[i] = store.InsertResult{ID: id, Inserted: true}
	}
	return out
}
