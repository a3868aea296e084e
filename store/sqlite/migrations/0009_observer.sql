-- compat: n-1
-- BackWave Embedded Adapter schema: the Transition Observer walk's
-- registrations. Additive: one new table, which code one release behind
-- never reads or writes; it keeps inserting Transition Log entries as it
-- always did, and each is walked like any other.
--
-- One row per observer name: cursor_seq is the durable cursor (the id of
-- the last Transition Log entry the walk delivered or walked past, 0 before
-- the first), holder, token and lease_expires_at (microseconds since the
-- Unix epoch) the walk's Lease and its fence, seen_at the last claim or
-- advance under the name (a registration unseen for
-- store.ObserverRemoveAfter holds retention back no more).
CREATE TABLE backwave_observer (
	name             TEXT    PRIMARY KEY,
	cursor_seq       INTEGER NOT NULL DEFAULT 0,
	holder           TEXT    NOT NULL DEFAULT '',
	token            INTEGER NOT NULL DEFAULT 0,
	lease_expires_at INTEGER NOT NULL DEFAULT 0,
	seen_at          INTEGER NOT NULL
) WITHOUT ROWID;
