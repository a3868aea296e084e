// Package sim is the Simulator: a single-threaded discrete-event world of N
// production Node Drivers (package node, unchanged) and one store on Virtual
// Time — the In-Memory Store (package memstore), or any implementation of
// the Storage Contract behind the Store interface (store.go) — with seeded
// fault injection and oracles that check the system's promises as the run
// goes. One 64-bit seed determines everything — topology, job mix, handler
// durations and results, every fault — and any failure replays exactly from
// its Plan.
//
// # Determinism boundary
//
// This package is below the determinism boundary: it reads no wall clock,
// arms no timer, starts no goroutine, uses no channel, does no I/O (no net,
// os or database driver) and draws no global randomness. Time and seeds
// arrive as values, so the same inputs give the same results on every run.
// The boundary test (internal/boundary) holds it to this.
//
// Every draw is a hash of the seed and the stable identity of what it is
// drawn for, never the next value of a shared stream (hash.go).
//
// # The world
//
// Each node is a production node.Driver plus the Simulator's pump, which
// carries out every Command the way the production pump (package shell)
// does: poll and heartbeat tickers, Wake-Up Hints from the store's
// SubscribeHints fed as Polls through a single pending slot, handlers as
// completion events whose duration and result are drawn per (job, Attempt),
// and each store result fed straight back into the Driver. A node's clock
// is Virtual Time plus its skew; the store's clock is Virtual Time. Events
// are ordered by (virtual time, sequence).
//
// # The fault model
//
// Every fault kind is a (probability, stability) pair on the Swarm, and every
// injected fault is recorded in the Plan's Fault Map under the stable
// identity of what it acts on:
//
//   - crash (node, episode): the Driver, its outcome buffer and its running
//     handlers are lost, requests not yet at the store never arrive; after
//     the episode's downtime the node restarts with a fresh Driver and a new
//     worker id. Under Adversarial a crash may be permanent.
//   - Node Isolation (node, episode): the node's store operations are
//     rejected with an error, or withheld and applied when the window heals;
//     it receives no hints; its handlers keep running and it keeps believing
//     it holds its Leases — so on heal it may report for jobs already
//     re-leased (the heal-into-stale-write race). Under Adversarial an
//     isolation may never heal.
//   - clock skew (node, episode): the node's clock jumps to an offset.
//   - Wake-Up Hint (receiving node incarnation, causing operation, Queue):
//     dropped, duplicated or delayed.
//   - store operation (node, incarnation, Driver op id): the request
//     reaches the store late (one node's operations still apply in the
//     order sent) and the response comes back late, so a later operation's
//     response may arrive first; or the outcome is unknown to the caller:
//     applied but answered with an error, or not applied and answered with
//     an error.
//   - store restart (episode): the store restarts (Store.Restart) and every
//     node's store operation fails until it is back.
//
// The world decides which fault an operation meets and when it is carried
// out (delays, and what an isolation withholds, are event timing); what the
// fault does to the call is package faultstore's, whose documentation is
// the fault model of a store call. Fault and oracles hook at the one point
// a node's StoreCommand reaches node.Caller.Call (checked.go): the fault
// decides first, the oracles (registered values, oracles.go) check the
// call that reaches the store, so they see what the store applied whatever
// the node is told.
//
// With no delay a store operation is a synchronous round trip, exactly as in
// the production pump. A delayed operation does not block its node: ticks,
// handler completions and further commands go on while it is in flight, as
// in a pump that overlaps its own round trips. The Driver pairs every result
// with its command by OpID and keeps per-operation state (one claim pass,
// one renewal, one expiry sweep, any number of reports in flight), so it
// must stay correct whatever order the results come back in.
//
// A discovery run (Plan.Discover) draws faults from the Swarm and records
// them; a replay consults the Fault Map at each site and applies no fault on
// a miss. Faults apply only inside the chaos window; at its end every
// healing fault heals.
//
// The workload — jobs in batches over the chaos window, some due later, a
// Concurrency Limit on some Queues, a Rate Limit on some (rate.go),
// operator cancels, pause/resume, set-limit and set-rate Operator Actions,
// graceful node restarts, Dependency graphs
// (chains, fan-outs, fan-ins, diamonds and random DAGs in both modes, some
// naming earlier jobs as parents, with operator cancels of waiting jobs and
// requeues of failed parents; graph.go) — is not a fault: it is the same at
// every level.
//
// # Fault Levels and oracles
//
// Pristine injects nothing; Recoverable injects only faults that heal;
// Adversarial adds faults that never heal, always sparing node 0, which
// serves every Queue. The safety oracles (oracle.go, and latch.go for the
// Dependency latch: each edge counted exactly once, every dependent settled
// in the store call that made its parent terminal, the cascade complete, no
// orphaned Awaiting Parent) run at every level;
// Drain-Liveness (liveness.go, where its bound is derived) only under
// Pristine and Recoverable. A tripped oracle ends the run with a *Failure
// naming the invariant's stable identity and its Class.
//
// # Around the Simulator
//
// Options.Store replays a Plan on another implementation of the Storage
// Contract (a SQL adapter, above the determinism boundary in cmd/vopr), and
// Options.StorePrecision quantizes the store's view of Virtual Time for a
// store that keeps coarser times than nanoseconds.
//
// NewSwarm draws the per-seed fault configuration; Minimize is the Seed
// Minimizer; ShrinkScenario is its coarse Scenario pass; Coverage counts
// state edges against core.Edges and named Situations; Mutate is the
// Coverage-Guided Swarm's step. The VOPR Runner (cmd/vopr) drives them.
package sim
