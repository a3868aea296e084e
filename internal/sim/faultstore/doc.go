// Package faultstore is the Simulator's fault injection: the one point
// around the store calls a node makes (each StoreCommand a node.Caller
// carries out: claims, renewals, outcome reports, expiry sweeps,
// Relinquish, schedule loads, mints, purges, walks, fleet stamps) that
// decides what happens to each call given the Fault the world chose for
// it (Call). Faults live here, around the Storage Contract, never inside
// an implementation, so the same faults apply to whichever store a run
// drives (the In-Memory Store, or a SQL adapter replaying a Plan).
//
// # Determinism boundary
//
// This package is below the determinism boundary: it reads no wall clock,
// arms no timer, starts no goroutine, uses no channel, does no I/O (no net,
// os or database driver) and draws no global randomness. Time and seeds
// arrive as values, so the same inputs give the same results on every run.
// The boundary test (internal/boundary) holds it to this.
//
// # The fault model
//
// Call applies one Fault to one call; the Simulator decides a Fault per
// node operation. What each Fault does to a call:
//
//   - None: the call reaches the store and the store's answer — result or
//     error — comes back unchanged.
//   - Rejected: Node Isolation that rejects. The call never reaches the
//     store: nothing is applied, and the caller gets ErrIsolated.
//   - Down: the store is restarting. The call never reaches it: nothing is
//     applied, and the caller gets ErrDown.
//   - Lost: the outcome is unknown to the caller, and the call was not
//     applied (the request was lost on its way). The caller gets
//     ErrUnknown.
//   - Applied: the outcome is unknown to the caller, yet the call was
//     applied (the answer was lost on its way back). The store applies the
//     call in full; the caller gets ErrUnknown in place of its answer. If
//     the store itself failed the call, that error comes back as it is.
//
// Lost and Applied answer with the same error, so a caller cannot tell them
// apart: it must retry in a way that is harmless either way, which the
// fence makes true of every write a node makes (store.Worker).
//
// # What is not modelled
//
//   - Timing. A call through a Store is instantaneous; request and
//     response delays, and the operations an isolation withholds until it
//     heals, are the world's scheduling of when a call is made and when its
//     answer is delivered, not a fault of the call.
//   - Partial application. The Storage Contract makes every call atomic, so
//     a call is applied in full or not at all; a batch never half-applies.
//   - Wrong answers. A store that answers is believed: no corrupted,
//     truncated or reordered results, and no answer for a call never made.
//   - Duplicated requests. A call is applied at most once; a retry is a new
//     call the Driver chose to make.
//   - The workload's calls. Inserts, Operator Actions and the oracles'
//     reads go to the store directly: they stand for an application that
//     retries its own calls until they land.
//   - Durability loss. A store restart keeps every committed write (the
//     Simulator's Store.Restart); a store that loses the last commits
//     before a power failure is outside the model.
package faultstore
