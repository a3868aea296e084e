// Package memstore is the In-Memory Store: a complete, deterministic
// implementation of the Storage Contract (package store) on Virtual Time.
//
// It is the executable reference the SQL adapters are checked against and
// the store the Simulator drives and injects faults around. It is for tests
// and local development only, never a production target: nothing survives
// the process.
//
// # Determinism boundary
//
// This package is below the determinism boundary: it reads no wall clock,
// arms no timer, starts no goroutine, uses no channel, does no I/O (no net,
// os or database driver) and draws no global randomness. Time and seeds
// arrive as values, so the same inputs give the same results on every run.
// The boundary test (internal/boundary) holds it to this.
//
// # Determinism
//
// A Store reads time only through its vtime.Clock, starts no goroutines,
// does no I/O and draws no random numbers. A backwave.Client over a Store
// uses the same clock (Store.Clock, store.ClockSource) unless its
// Config.Clock says otherwise, and refuses any other clock when the Store's
// is a vtime.Manual: with Options{} both follow Virtual Time and nothing
// comes due until the Manual is advanced. Options{Clock:
// backwave.WallClock{}} runs the Store, and the Client with it, in real
// time. Job ids are assigned
// sequentially from 1. Everything observable is ordered by id, by due time
// or by name, never by map iteration, so the same calls at the same virtual
// times give the same results, ids and Transition Logs on every run.
//
// # Concurrency
//
// A Store is safe for concurrent use. One mutex serializes every call, which
// gives each call the atomicity the Storage Contract asks for: a claim
// charges the Attempt, leases the job and takes the Concurrency-Limit slot in
// one step, and concurrent claimers never lease one job twice.
//
// # Choices the contract leaves open
//
//   - A Lease has lapsed once the store's clock reaches its expiry time
//     (LeaseExpiresAt ≤ now). Until LeaseExpire ends it, a lapsed Lease is
//     still held: renew, report and Relinquish from its worker apply.
//   - LeaseExpire with a Limit ends the lapsed Leases with the smallest job
//     ids first.
//   - JobCountByState omits states with no jobs.
//   - A job whose operator cancel was requested while it ran ends
//     Cancelled however its Attempt ends (core.UnderCancel,
//     core.LeaseLoss); it never returns to Scheduled with the request
//     pending.
//   - OutcomeReport rejects, with store.ErrInvalidParams and nothing
//     written, an outcome whose (State, Via) is not a legal edge out of
//     Running for an outcome, or that carries a Retry Cause on anything but
//     a retry.
//   - A job that reaches a terminal state settles its dependents' latches
//     one edge at a time, dependents in ascending id order, and a
//     parent-failure cascade goes breadth first; every Transition Log
//     entry of a settle lands in the same call as the parent's.
//
// # Beyond the contract
//
// A Store also offers what tests and the Simulator need and the contract does
// not say: RequestCancel (JobCancel by store.ActorSystem), an observer of
// every state change
// (Options.OnTransition), a deep copy for crash-cloning (Clone) and Wake-Up
// Hints (SubscribeHints).
//
// # Opening by URI
//
// Importing the package registers the scheme "mem" (OpenURI):
// store.Open(ctx, "mem://") returns a fresh, empty Store on a real clock,
// so a Client over it sees retries, delays and schedules come due. This
// package cannot read the wall clock (it is below the determinism
// boundary), so the root package backwave registers the scheme again with
// its WallClock; a program that imports only this package gets an error
// wrapping ErrNoRealClock for "mem://". "mem://?clock=manual" asks for a
// vtime.Manual standing at vtime.Epoch instead, a clock that moves only
// when told to (see Store.Clock): for tests that step time themselves.
package memstore
