-- compat: n-1
-- BackWave Embedded Adapter schema, version 9: the fleet registry
-- (store.Fleet). Additive: one new table, which code one release behind
-- never reads nor writes; it claims as it always did, every job of its
-- Queues, and a newer node's claims go on working beside it.
--
-- Each row says that Pump worker handled wire_name when the store's clock
-- read stamped_at (µs since the Unix epoch). A Pump rewrites its own rows
-- on its maintenance beat, and every stamp removes the rows grown older
-- than its horizon, so the table holds about one row per live Pump and
-- Wire Name (store/sqlite/fleet.go).
CREATE TABLE backwave_fleet_handler (
	worker     TEXT    NOT NULL,
	wire_name  TEXT    NOT NULL,
	stamped_at INTEGER NOT NULL,
	PRIMARY KEY (worker, wire_name)
) WITHOUT ROWID;
