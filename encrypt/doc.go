// Package encrypt is Encryption at Rest: a store decorator that keeps the
// opaque user-data channels — job payloads, Job Output, Recurring Schedule
// templates and Failure Detail — as AES-256-GCM ciphertext in the
// database, so a stolen dump, a replica or raw table access yields no
// plaintext. It lives above the determinism boundary: the Core, the Node
// Driver and the Simulator only ever move the bytes, and do not change.
//
// # Use
//
//	keys, err := encrypt.ParseKeyRing(os.Getenv("BACKWAVE_KEYS"))
//	…
//	raw, err := store.Open(ctx, "sqlite:///var/lib/app/jobs.db")
//	…
//	s, err := encrypt.Wrap(ctx, raw, keys) // fails closed: no keys, no store
//	…
//	client, err := backwave.NewClient(s, cfg) // and NewAdmin(s, …)
//
// Everything that reads or writes jobs — the Client, Admin, the dashboard,
// the CLI — goes through the wrapped store, and sees plaintext: this is
// not operator-blind encryption (glossary, Encryption at Rest).
//
// # What stays plaintext
//
// Tags, the Wire Name, the Queue, the state, the due time and every other
// routing or observability column: they must stay searchable, and claim
// ordering reads them. Regulated data must never be placed in a Tag.
//
// # Binding
//
// Each envelope authenticates, besides its value, its own header (key id
// included), the column and the row: the job id, or for a schedule
// template the schedule's name. A ciphertext copied to another row or
// column does not open. A job's id is assigned by the store inside the
// insert, so the payload is sealed there, through the Storage Contract's
// InsertManyParams.PayloadFor: no round trip is added and no plaintext is
// ever handed to the store. A job minted from a template carries the
// template's ciphertext and opens it with its schedule Tag; Rotate rebinds
// it to the job.
//
// # Failing closed
//
// Wrap without a key provider, or with one whose current key is missing,
// returns an error and no store. A job whose payload does not open (its
// key purged, its bytes tampered with or swapped) is Quarantined at its
// claim with a Failure Detail saying why, never retried. Values written
// before encryption was turned on carry no envelope marker and read as
// they are, so turning it on for a live database needs no migration;
// Rotate seals them too.
//
// # Rotation
//
// A KeyProvider names a current key and looks keys up by id. New writes
// use the current key; an old row stays readable while the provider holds
// its key; Rotate rewrites old rows under the current key in bounded
// batches while jobs run.
package encrypt
