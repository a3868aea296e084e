// Package jobtest runs a BackWave Client on Virtual Time inside a test, so
// the test can move the clock through retries, backoff, attempt timeouts,
// Dependencies and years of Recurring Schedules, and assert on what the
// store recorded, without waiting for any of it and the same way on every
// run.
//
//	c := jobtest.New(t, backwave.Config{Handlers: handlers})
//	id, err := c.Enqueue(ctx, ChargeCard{Order: "A-1"})
//	…
//	c.RunUntilIdle() // every Attempt and backoff, in Virtual Time
//	jobtest.RequireState(t, c, id, backwave.StateSucceeded)
//	jobtest.RequireTransitions(t, c, id, jobtest.Step{…}, …)
//
// # What runs
//
// New builds a real backwave.Client from the test's Config over the
// In-Memory Store, on a vtime.Manual clock, and takes its Pumps over
// (shell.Manual): the same Node Driver, the same Command → store call →
// Event mapping, the same Shell code for handler results, Failure Detail
// (bounded, or off), Job Output (bounded), Tag deltas, panic recovery,
// attempt timeouts, Lease renewal, cancel requests, Dependency release,
// schedule minting and retention. Handlers run through the Client's own
// execution path: Wire Name routing, args decoding, Middleware, retry
// policies, FailPermanently.
//
// Nothing runs until the test moves Virtual Time: Client.Advance and
// Client.AdvanceTo run everything that comes due up to the new time, each at
// its own instant; Client.RunUntilIdle goes on until no work is left. A
// handler takes Virtual Time only through Sleep: it parks, and the Client
// carries on with heartbeats, other Attempts and timeouts meanwhile.
//
// # What differs from production
//
//   - One handler runs at a time, and Virtual Time stands still while it
//     runs. Attempts overlap only while parked in Sleep. A test of real
//     concurrency between handlers needs the Client started for real (see
//     below).
//   - A handler must not block on anything that only the passage of Virtual
//     Time or another Attempt would release: reading ctx.Done() directly, a
//     channel another handler fills, a timer of the host. The test would
//     wait for it for ever. Take time with Sleep, which ends early when the
//     context is cancelled.
//   - An attempt timeout cancels the handler's context on Virtual Time (with
//     cause backwave.ErrAttemptTimeout); the context carries no deadline,
//     since a deadline on Virtual Time would mislead code that compares it
//     with the host's clock.
//   - A job runs at the instant it comes due: the Client wakes the Pumps
//     then, as a Wake-Up Hint would, instead of at the next poll tick.
//     Poll and heartbeat ticks of an idle Pump are skipped, so a year with
//     nothing due costs nothing; each instant the Client visits runs a
//     poll, and with it the maintenance beat when its interval has passed.
//     Retention therefore purges at visited instants, and at the end of
//     every Advance.
//   - Timers of the host inside a handler (time.Sleep, time.After,
//     context.WithTimeout) run on the host's clock, not on Virtual Time.
//   - Config.NodeID defaults to DefaultNodeID and Config.Logger to warnings
//     on the test's output, so Worker ids and logs read the same every run.
//     Without Config.Groups, one group (DefaultGroup) serves
//     backwave.DefaultQueue.
//   - Config.TransitionObservers run too, on the same walk machine as in
//     production, driven by hand like the Pumps: each delivers at its
//     walk's next tick (within its Interval) after a transition, its
//     callback called on the test's goroutine inside Advance or
//     RunUntilIdle, and a failed delivery is delivered again after its
//     backoff in Virtual Time. RunUntilIdle is idle only once every walk
//     has caught up with the Transition Log.
//
// # jobtest, testing/synctest, or both
//
// Use jobtest for what a job does over time: retries and their backoff,
// dead-lettering, timeouts, Dependency chains, Recurring Schedules across
// daylight saving changes and months or years, Job Output and Failure
// Detail. Runs are exact to the nanosecond and replay the same way.
//
// Use testing/synctest with the real Client (backwave.NewClient over
// memstore.New(memstore.Options{Clock: backwave.WallClock{}}), Start, Stop)
// for what depends on the Shell's goroutines: handlers running at once,
// graceful shutdown and drain, handlers that block on channels or timers.
// The bubble's fake clock makes their waits instant, but every poll tick
// runs, so spans of days are slow, and which of two runnable handlers goes
// first is the Go scheduler's choice.
//
// Use both — a jobtest Client inside synctest.Test — when the code a
// handler calls keeps time of its own (a client with retries, a
// time.Sleep): it then runs on the bubble's clock, instantly, while the
// Client's Virtual Time moves only with Advance, RunUntilIdle and Sleep.
// The two clocks are separate.
//
// # Assertions
//
// RequireEnqueued, RequireState, RequireOutput and RequireTransitions read
// the store as the Monitor does and fail the test, saying what they found,
// when it is not what the test wants. Client embeds the backwave.Client,
// so Admin gives every other Monitor read and Operator Action.
package jobtest
