package backwave

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/shell"
	"github.com/backwave/backwave/store"
)

// Handler handles the jobs of one args type: their Wire Name routes to it,
// and each of its Attempts occupies one of a Worker Group's Workers (execution
// slots) while it runs. Work returns nil when the Attempt
// succeeded and an error to fail it; see FailPermanently. Work must return
// when ctx is cancelled; context.Cause(ctx) says why (ErrLeaseLost,
// ErrShutdown, ErrCancelRequested, ErrAttemptTimeout).
type Handler[T JobArgs] interface {
	Work(ctx context.Context, j *Job[T]) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc[T JobArgs] func(ctx context.Context, j *Job[T]) error

// Work calls f.
func (f HandlerFunc[T]) Work(ctx context.Context, j *Job[T]) error { return f(ctx, j) }

// HandlerOption adjusts one registration in AddHandler or AddHandlerFunc.
type HandlerOption func(*registration)

// WithRetryPolicy gives the handler's Wire Name its own retry policy instead
// of Config.RetryPolicy.
func WithRetryPolicy(p RetryPolicy) HandlerOption {
	return func(r *registration) { r.retry = &p }
}

// registration is one Wire Name's handler.
type registration struct {
	wireName string
	// queue is the default Queue of the args type.
	queue string
	// args is the args type, for the Job Manifest's JSON Schema
	// (manifest.go).
	args  reflect.Type
	retry *RetryPolicy
	// timeout is the Wire Name's own attempt timeout (WithAttemptTimeout).
	timeout *time.Duration
	// snoozeCap is the Wire Name's own snooze cap (WithSnoozeCap).
	snoozeCap *int
	// batch shapes the calls of a batch handler (AddBatchHandler); nil for
	// a handler of one job at a time.
	batch *BatchOptions
	// newBatch makes a batch handler's per-Client gathering of its calls.
	newBatch func() batchRunner
	// run decodes one claimed job and runs the handler inside the
	// executor's middleware.
	run func(ctx context.Context, j job.Job, e *executor) shell.Result
}

// Handlers is the registry of handlers by Wire Name. Create one with
// NewHandlers, add handlers with AddHandler or AddHandlerFunc, and pass it in
// Config.Handlers. It is safe for concurrent use; NewClient takes a snapshot.
type Handlers struct {
	mu     sync.Mutex
	byWire map[string]*registration
	// err is the first registration error, returned again by NewClient so
	// an ignored AddHandler error still stops startup.
	err error
}

// NewHandlers returns an empty registry.
func NewHandlers() *Handlers { return &Handlers{byWire: make(map[string]*registration)} }

// AddHandler registers h for the Wire Name of T. A second handler for a
// Wire Name, or an args type whose WireName is not a valid name, is an error
// wrapping ErrInvalidConfig.
func AddHandler[T JobArgs](w *Handlers, h Handler[T], opts ...HandlerOption) error {
	if w == nil || h == nil {
		return fmt.Errorf("%w: AddHandler needs a registry and a handler", ErrInvalidConfig)
	}
	r, err := newRegistration[T](w, opts)
	if err != nil {
		return err
	}
	r.run = func(ctx context.Context, sj job.Job, e *executor) shell.Result {
		j, bad, ok := decodeJob[T](ctx, sj, e)
		if !ok {
			return bad
		}
		var err error
		if len(e.middleware) == 0 {
			err = h.Work(ctx, j) // no chain to build: no closure per job
		} else {
			err = e.around(ctx, infoOf(sj), func(ctx context.Context) error { return h.Work(ctx, j) })
		}
		return resultOf(err, j.output, j.tags, e.maxOutput)
	}
	return w.add(r, zeroArgs[T]())
}

// newRegistration describes T's Wire Name and default Queue and applies
// opts; an args type whose WireName is not a valid name is an error the
// registry keeps for NewClient.
func newRegistration[T JobArgs](w *Handlers, opts []HandlerOption) (*registration, error) {
	wire, jo, err := describeArgs(zeroArgs[T]())
	if err != nil {
		return nil, w.fail(fmt.Errorf("%w: register %T: %w", ErrInvalidConfig, zeroArgs[T](), err))
	}
	r := &registration{wireName: wire, queue: jo.Queue, args: reflect.TypeFor[T]()}
	if r.queue == "" {
		r.queue = DefaultQueue
	}
	for _, o := range opts {
		o(r)
	}
	return r, nil
}

// decodeJob builds the Job a handler gets from one claimed job. A payload
// that does not decode into T is an Undecodable result, with ok false.
func decodeJob[T JobArgs](ctx context.Context, sj job.Job, e *executor) (j *Job[T], bad shell.Result, ok bool) {
	// The payload decodes straight into the Job the handler gets: one
	// allocation per Attempt, not one for the args and one for the Job.
	j = &Job[T]{
		ID:             sj.ID,
		Attempt:        sj.Attempt,
		AttemptCeiling: sj.Ceiling(),
		Queue:          sj.Queue,
		WireName:       sj.WireName,
		Tags:           tagsOf(sj.Tags),
		CreatedAt:      sj.CreatedAt,
		deps:           e.deps,
		progress:       shell.ProgressOf(ctx),
		cursorSink:     shell.CursorOf(ctx),
	}
	if sj.Cursor != nil {
		j.cursor = sj.Cursor.Value
	}
	if err := json.Unmarshal(sj.Payload, &j.Args); err != nil {
		return nil, shell.Result{
			Result:        core.ResultUndecodable,
			FailureDetail: fmt.Sprintf("payload of wire name %q does not decode into %T: %v", sj.WireName, j.Args, err),
		}, false
	}
	return j, shell.Result{}, true
}

// add puts r in the registry; a Wire Name registered twice is an error.
func (w *Handlers) add(r *registration, args any) error {
	wire := r.wireName
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.byWire == nil {
		w.byWire = make(map[string]*registration)
	}
	if _, dup := w.byWire[wire]; dup {
		err := fmt.Errorf("%w: wire name %q is registered twice (second: %T)", ErrInvalidConfig, wire, args)
		if w.err == nil {
			w.err = err
		}
		return err
	}
	w.byWire[wire] = r
	return nil
}

// AddHandlerFunc registers fn for the Wire Name of T; see AddHandler.
func AddHandlerFunc[T JobArgs](w *Handlers, fn func(ctx context.Context, j *Job[T]) error, opts ...HandlerOption) error {
	if fn == nil {
		return fmt.Errorf("%w: AddHandlerFunc needs a function", ErrInvalidConfig)
	}
	return AddHandler[T](w, HandlerFunc[T](fn), opts...)
}

// WireNames returns every registered Wire Name, sorted: what a Job Manifest
// snapshots.
func (w *Handlers) WireNames() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.byWire))
	for wire := range w.byWire {
		out = append(out, wire)
	}
	slices.Sort(out)
	return out
}

func (w *Handlers) fail(err error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
	return err
}

// snapshot returns a copy of the registrations and the first registration
// error.
func (w *Handlers) snapshot() (map[string]*registration, error) {
	if w == nil {
		return nil, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]*registration, len(w.byWire))
	for k, v := range w.byWire {
		out[k] = v
	}
	return out, w.err
}

// resultOf maps a handler's return to the Attempt's Result.
func resultOf(err error, output []byte, tags []job.Tag, maxOutput int) shell.Result {
	switch {
	case err == nil && maxOutput > 0 && len(output) > maxOutput:
		return shell.Result{
			Result:        core.ResultFailed,
			FailureDetail: fmt.Sprintf("job output of %d bytes exceeds the limit of %d bytes", len(output), maxOutput),
			TagDelta:      tags,
		}
	case err == nil:
		return shell.Result{Result: core.ResultSucceeded, Output: output, TagDelta: tags}
	case IsPermanent(err):
		return shell.Result{Result: core.ResultFailedPermanently, FailureDetail: err.Error(), TagDelta: tags}
	case isSnooze(err):
		d, _ := SnoozeDelay(err) // Pump refuses a bad delay (core.CheckSnoozeDelay)
		return shell.Result{Result: core.ResultSnoozed, Snooze: d, FailureDetail: err.Error(), TagDelta: tags}
	default:
		return shell.Result{Result: core.ResultFailed, FailureDetail: err.Error(), TagDelta: tags}
	}
}

// executor routes claimed jobs to their handlers by Wire Name. It is the
// shell.Executor of every Pump of a Client.
type executor struct {
	byWire     map[string]*registration
	log        *slog.Logger
	maxOutput  int
	middleware []Middleware
	// deps is the store, for Job.AncestorOutput.
	deps store.Dependencies
	// batches gathers the calls of each batch Wire Name.
	batches map[string]batchRunner
}

// newExecutor returns the executor of a Client's Pumps, with a gathering
// of its own for each batch Wire Name.
func newExecutor(regs map[string]*registration, cfg Config, deps store.Dependencies) *executor {
	e := &executor{byWire: regs, log: cfg.Logger, maxOutput: cfg.MaxOutputBytes, middleware: slices.Clone(cfg.Middleware), deps: deps}
	for wire, r := range regs {
		if r.newBatch != nil {
			if e.batches == nil {
				e.batches = make(map[string]batchRunner)
			}
			e.batches[wire] = r.newBatch()
		}
	}
	return e
}

// Middleware wraps every Attempt's handler call: it runs code around next
// and returns what the Attempt should return (usually next's error). The
// first Middleware in Config.Middleware is the outermost. It runs only for
// jobs that route and decode.
type Middleware func(ctx context.Context, a AttemptInfo, next func(ctx context.Context) error) error

// around runs h inside the middleware chain, first listed outermost.
func (e *executor) around(ctx context.Context, a AttemptInfo, h func(context.Context) error) error {
	for i := len(e.middleware) - 1; i >= 0; i-- {
		m, next := e.middleware[i], h
		h = func(ctx context.Context) error { return m(ctx, a, next) }
	}
	return h(ctx)
}

var errNoHandler = errors.New("no handler is registered for this wire name")

// Execute runs one Attempt. A job with no handler is Unroutable, one whose
// payload does not decode is Undecodable: the Driver makes either
// Quarantined, with Terminal Cause no handler or undecodable payload.
func (e *executor) Execute(ctx context.Context, j job.Job) shell.Result {
	r, ok := e.byWire[j.WireName]
	if !ok {
		e.log.Error("job cannot be routed: it will be quarantined",
			"job", int64(j.ID), "queue", j.Queue, "wire_name", j.WireName, "attempt", int(j.Attempt), "error", errNoHandler)
		return shell.Result{
			Result:        core.ResultUnroutable,
			FailureDetail: fmt.Sprintf("wire name %q: %v", j.WireName, errNoHandler),
		}
	}
	res := r.run(ctx, j, e)
	if res.Result == core.ResultUndecodable {
		e.log.Error("job payload does not decode: it will be quarantined",
			"job", int64(j.ID), "queue", j.Queue, "wire_name", j.WireName, "attempt", int(j.Attempt), "error", res.FailureDetail)
	}
	return res
}
