// Package shell is the production pump: the imperative loop above the
// determinism boundary that drives one node.Driver against a store.Worker
// under the real clock.
//
// A Pump owns one Driver and one loop goroutine. The loop selects on a poll
// ticker, a heartbeat ticker, a single pending wake slot (Wake-Up Hints,
// coalesced: a full slot drops the hint, which costs at most one poll
// interval), a wake-up for handler results (results queue in finishing order
// and a burst of them is taken in one wake-up) and stop. On every event it calls
// Driver.Step and carries out the returned commands in order. Store commands
// run synchronously in the loop — one round trip in flight per Pump — and
// their results are fed straight back as the matching ...Done event, until no
// command remains.
//
// Handlers run outside the loop, one goroutine per running Attempt, through
// an Executor; a goroutine whose handler returned waits for the next Attempt
// rather than exiting, so a busy Pump does not start one per job. Each Attempt gets its own context, cancelled with a cause when
// the Driver abandons the Attempt (ErrLeaseLost, ErrShutdown) or an operator
// asks the job to stop (ErrCancelRequested). A handler panic is recovered and
// becomes a failed Attempt with the panic value and stack as Failure Detail.
//
// Failure Detail, Job Output and Tag deltas stay here, keyed by the Attempt's
// Lease: only the core.Result crosses into the Driver. The Pump joins them
// onto the outcomes of a Report and forgets them once the store has answered
// (or when the Attempt is abandoned).
//
// The Pump holds no scheduling judgment: when to claim, how much, when to
// renew, flush or expire is the Driver's call. The one guard it keeps is
// coarse: a Wake-Up Hint is dropped while the Driver has no free capacity.
package shell
