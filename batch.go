package backwave

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/node"
	"github.com/backwave/backwave/shell"
)

// DefaultBatchLinger is the BatchOptions.Linger used when it is 0.
const DefaultBatchLinger = node.DefaultBatchLinger

// BatchHandler handles the jobs of one args type several at a time: one
// call of WorkBatch gets up to BatchOptions.Size due jobs of its Wire Name
// (bulk email, bulk indexing, one API call for many rows).
//
// A batch is a way of delivering jobs, never a stored thing. Every job in
// a call was claimed on its own and keeps its own Attempt, Lease, fence,
// outcome, Failure Detail, Job Output, Progress and Cursor; each holds one
// Worker of its Worker Group until the call returns, and the Concurrency
// Limits, Rate Limits and Key Limits count the jobs, not the calls.
// Heartbeats renew every job of a running call, as they renew any
// executing Attempt.
//
// WorkBatch returns one error per job, in the order of jobs: nil for a job
// that succeeded, and for one that did not, what Work would return (an
// error, FailPermanently, Snooze). A nil slice means every job succeeded.
// A slice of another length fails every job of the call with a Failure
// Detail that says so, and a panic fails every job with the panic's value
// and stack: no job ever takes another job's result.
//
// ctx ends when the context of every job in the call has ended (each ends
// for the reasons a Handler's does: shutdown, a lost Lease, an attempt
// timeout, a cancel request; context.Cause says which, for the last of
// them). A job whose own context ended still waits for the call and gets
// the result WorkBatch returns for it; its outcome follows that result as
// a single handler's would (a cancel-requested job that then fails is
// Cancelled, a lost Lease's report is fenced out).
type BatchHandler[T JobArgs] interface {
	WorkBatch(ctx context.Context, jobs []*Job[T]) []error
}

// BatchHandlerFunc adapts a function to BatchHandler.
type BatchHandlerFunc[T JobArgs] func(ctx context.Context, jobs []*Job[T]) []error

// WorkBatch calls f.
func (f BatchHandlerFunc[T]) WorkBatch(ctx context.Context, jobs []*Job[T]) []error {
	return f(ctx, jobs)
}

// BatchOptions shapes the calls of a BatchHandler.
type BatchOptions struct {
	// Size is the most jobs one call gets; required, at least 1. It may not
	// exceed the MaxClaimBatch or the PoolSize of any Worker Group of a
	// Client that runs the handler (NewClient refuses it): a call gathers
	// jobs its node is running at once, so a larger one could never fill.
	Size int
	// Linger is how long the first job of a call waits for others to
	// join it before the call goes ahead with the jobs it has
	// (DefaultBatchLinger if 0). A call whose Size jobs are there goes at
	// once. Negative is an error.
	Linger time.Duration
}

// AddBatchHandler registers h for the Wire Name of T, to take its jobs in
// calls shaped by b (see BatchHandler). The errors are AddHandler's, and a
// Size below 1 or a negative Linger, wrapping ErrInvalidConfig.
func AddBatchHandler[T JobArgs](w *Handlers, b BatchOptions, h BatchHandler[T], opts ...HandlerOption) error {
	if w == nil || h == nil {
		return fmt.Errorf("%w: AddBatchHandler needs a registry and a handler", ErrInvalidConfig)
	}
	if _, err := node.NewGather(b.Size, b.Linger); err != nil {
		return w.fail(fmt.Errorf("register batch handler %T: %w", zeroArgs[T](), err))
	}
	r, err := newRegistration[T](w, opts)
	if err != nil {
		return err
	}
	r.batch = &b
	r.newBatch = func() batchRunner {
		g, _ := node.NewGather(b.Size, b.Linger) // checked above
		return &gatherer[T]{h: h, g: g, waiting: make(map[job.Lease]*batchMember[T])}
	}
	r.run = func(ctx context.Context, sj job.Job, e *executor) shell.Result {
		return e.batches[sj.WireName].run(ctx, sj, e)
	}
	return w.add(r, zeroArgs[T]())
}

// AddBatchHandlerFunc registers fn for the Wire Name of T; see
// AddBatchHandler.
func AddBatchHandlerFunc[T JobArgs](w *Handlers, b BatchOptions, fn func(ctx context.Context, jobs []*Job[T]) []error, opts ...HandlerOption) error {
	if fn == nil {
		return fmt.Errorf("%w: AddBatchHandlerFunc needs a function", ErrInvalidConfig)
	}
	return AddBatchHandler[T](w, b, BatchHandlerFunc[T](fn), opts...)
}

// checkBatches refuses a batch Size that no Worker Group could fill.
func checkBatches(regs map[string]*registration, groups []WorkerGroupOptions) error {
	for wire, r := range regs {
		if r.batch == nil {
			continue
		}
		for _, g := range groups {
			claim, pool := g.MaxClaimBatch, g.PoolSize
			if claim == 0 {
				claim = DefaultMaxClaimBatch
			}
			if pool == 0 {
				pool = DefaultPoolSize
			}
			switch {
			case r.batch.Size > claim:
				return fmt.Errorf("%w: batch handler of wire name %q: batch size %d is above worker group %q's claim batch of %d (MaxClaimBatch)",
					ErrInvalidConfig, wire, r.batch.Size, g.Name, claim)
			case r.batch.Size > pool:
				return fmt.Errorf("%w: batch handler of wire name %q: batch size %d is above worker group %q's %d Workers (PoolSize): a call holds one Worker per job",
					ErrInvalidConfig, wire, r.batch.Size, g.Name, pool)
			}
		}
	}
	return nil
}

// batchRunner runs one claimed job of a batch Wire Name inside a call.
type batchRunner interface {
	run(ctx context.Context, sj job.Job, e *executor) shell.Result
}

// gatherer is one Client's calls of one batch Wire Name: the jobs its Pumps
// run wait here, each on its own handler goroutine, until their call
// forms; the goroutine that forms a call runs it.
type gatherer[T JobArgs] struct {
	h BatchHandler[T]

	mu      sync.Mutex
	g       *node.Gather
	waiting map[job.Lease]*batchMember[T]
}

// batchMember is one job of a call.
type batchMember[T JobArgs] struct {
	ctx   context.Context
	job   *Job[T]
	lease job.Lease
	// res gets the job's result once, from the goroutine that ran the call.
	res chan error
}

func (b *gatherer[T]) run(ctx context.Context, sj job.Job, e *executor) shell.Result {
	j, bad, ok := decodeJob[T](ctx, sj, e)
	if !ok {
		return bad
	}
	var err error
	if len(e.middleware) == 0 {
		err = b.join(ctx, j, sj.Lease())
	} else {
		err = e.around(ctx, infoOf(sj), func(ctx context.Context) error { return b.join(ctx, j, sj.Lease()) })
	}
	return resultOf(err, j.output, j.tags, e.maxOutput)
}

// join waits for j's call, runs it if j's arrival or wait forms it, and
// returns j's result.
func (b *gatherer[T]) join(ctx context.Context, j *Job[T], l job.Lease) error {
	m := &batchMember[T]{ctx: ctx, job: j, lease: l, res: make(chan error, 1)}
	b.mu.Lock()
	if _, dup := b.waiting[l]; dup {
		b.mu.Unlock()
		return fmt.Errorf("job %d attempt %d is already waiting for its batch call: a middleware called next twice", l.ID, l.Attempt)
	}
	b.waiting[l] = m
	call := b.take(b.g.Add(shell.Now(ctx), l))
	b.mu.Unlock()
	if call != nil {
		b.call(ctx, call)
	}
	return b.await(ctx, m)
}

// await returns m's result: it waits while m's call gathers, forms the call
// itself when the linger is over, and leaves it if m's context ends before
// the call forms.
func (b *gatherer[T]) await(ctx context.Context, m *batchMember[T]) error {
	manual := shell.ByHand(ctx)
	for {
		select {
		case err := <-m.res:
			return err
		default:
		}
		b.mu.Lock()
		_, waiting := b.waiting[m.lease]
		if waiting && ctx.Err() != nil && b.g.Remove(m.lease) {
			delete(b.waiting, m.lease)
			b.mu.Unlock()
			return fmt.Errorf("left its batch before the call: %w", context.Cause(ctx))
		}
		now := shell.Now(ctx)
		call := b.take(b.g.Due(now))
		at, _ := b.g.Deadline()
		b.mu.Unlock()
		if call != nil {
			b.call(ctx, call)
			continue
		}
		switch {
		case !waiting && !manual:
			return <-m.res // in a call another goroutine runs
		case !waiting:
			// In a call another handler of the Manual runs, parked: wait
			// on the Manual's clock, whatever m's own context says.
			_ = shell.Sleep(context.WithoutCancel(ctx), b.g.Linger())
		case manual:
			_ = shell.Sleep(ctx, at.Sub(now))
		default:
			t := time.NewTimer(at.Sub(now))
			select {
			case err := <-m.res:
				t.Stop()
				return err
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
		}
	}
}

// take removes a formed call's members from waiting; nil for no call.
// b.mu is held.
func (b *gatherer[T]) take(call []job.Lease) []*batchMember[T] {
	if call == nil {
		return nil
	}
	ms := make([]*batchMember[T], len(call))
	for i, l := range call {
		ms[i] = b.waiting[l]
		delete(b.waiting, l)
	}
	return ms
}

// call runs the handler for ms on the calling goroutine, whose job's
// context is lead, and gives each member its result.
func (b *gatherer[T]) call(lead context.Context, ms []*batchMember[T]) {
	jobs := make([]*Job[T], len(ms))
	leases := make([]job.Lease, len(ms))
	for i, m := range ms {
		jobs[i], leases[i] = m.job, m.lease
	}
	ctx, done := callContext(lead, ms)
	errs, failed := b.invoke(ctx, jobs)
	done()
	if failed == nil && errs == nil {
		errs = make([]error, len(ms)) // every job succeeded
	}
	var idx []int
	if failed == nil {
		var err error
		if idx, err = b.g.Deal(leases, len(errs)); err != nil {
			failed = fmt.Errorf("batch handler of wire name %q: %w", ms[0].job.WireName, err)
		}
	}
	for i, m := range ms {
		if failed != nil {
			m.res <- failed
			continue
		}
		m.res <- errs[idx[i]]
	}
}

// invoke calls the handler, turning a panic into an error for every job.
func (b *gatherer[T]) invoke(ctx context.Context, jobs []*Job[T]) (errs []error, failed error) {
	defer func() {
		if v := recover(); v != nil {
			failed = errors.New(shell.PanicDetail(v))
		}
	}()
	return b.h.WorkBatch(ctx, jobs), nil
}

// callContext returns the context of a call of ms: it keeps lead's values
// (the running handler's, so a Manual's Sleep parks the right goroutine)
// and ends once every member's context has ended, with the cause of the
// last. done releases it.
func callContext[T JobArgs](lead context.Context, ms []*batchMember[T]) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(lead))
	left := int32(len(ms))
	stops := make([]func() bool, len(ms))
	for i, m := range ms {
		mctx := m.ctx
		stops[i] = context.AfterFunc(mctx, func() {
			if atomic.AddInt32(&left, -1) == 0 {
				cancel(context.Cause(mctx))
			}
		})
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel(nil)
	}
}
