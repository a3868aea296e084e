// Package shell is the production pump: the imperative loop above the
// determinism boundary that drives one node.Driver against a store.Worker
// under the real clock.
//
// A Pump owns one Driver and one loop goroutine. The loop selects on a poll
// ticker, a heartbeat ticker, a single pending wake slot (Wake-Up Hints,
// coalesced: a full slot drops the hint, which costs at most one poll
// interval), one pending re-poll timer (node.PollAfter: the instant a
// spent Rate Limit's window reopens), a wake-up for handler results (results queue in finishing order
// and a burst of them is taken in one wake-up) and stop. On every event it calls
// Driver.Step and carries out the returned commands in order. Store commands
// run synchronously in the loop — one round trip in flight per Pump —
// through the Driver's node.Caller (the one Command → store call → Event
// mapping, which the Simulator runs too), and their results are fed straight
// back as the matching ...Done event, until no command remains.
//
// The Driver and a Transition Observer's Walker are both node.Machines,
// and both run on the one Shell loop (runner.go, on its loop body in
// loop.go): one goroutine that owns the machine, the same stop, drain and
// final step for both, the host's own parts (a Pump's handlers and tickers,
// a WalkPump's deliveries and walk ticker) behind one small interface. The
// Pump drives its Driver on it, a WalkPump its Walker, and Manual and
// WalkManual drive each by hand, on the loop body, on Virtual Time
// (package jobtest). Every store call of every
// machine has the one deadline rule (node.Pacing.CallTimeout): a third of
// the machine's Lease, so a call slower than that is counted as failed,
// since a renewal that lands after the Lease is worthless. Stop is bounded whatever the store does: the drain clock starts
// at Stop, and when it runs out the call in flight is cancelled and the last
// report and the Relinquish share one RelinquishTimeout.
//
// Handlers run outside the loop, one goroutine per running Attempt, through
// an Executor; a goroutine whose handler returned waits for the next Attempt
// rather than exiting, so a busy Pump does not start one per job. Each Attempt gets its own context, cancelled with a cause when
// the Driver abandons the Attempt (ErrLeaseLost, ErrShutdown), an operator
// asks the job to stop (ErrCancelRequested) or the Attempt's timeout is over
// (ErrAttemptTimeout). A handler panic is recovered and
// becomes a failed Attempt with the panic value and stack as Failure Detail.
//
// Failure Detail, Job Output and Tag deltas stay here, keyed by the Attempt's
// Lease: only the core.Result crosses into the Driver. The Pump joins them
// onto the outcomes of a Report and drops them when the Driver says it is done
// with the Attempt (a node.Forget after the report's answer, or a node.Abandon).
//
// The Pump holds no scheduling judgment and infers no Driver decision: when to
// claim, how much, when to renew, flush or expire, whether a Wake-Up Hint is
// worth a claim pass (node.Hint) and when an Attempt's data may go are the
// Driver's calls.
package shell
