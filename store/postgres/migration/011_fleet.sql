-- compat: n-1
-- The fleet registry (store.Fleet). Additive: one new table, which code
-- one release behind never reads nor writes; it claims as it always did,
-- every job of its Queues, and a newer node's claims go on working beside
-- it.
--
-- Each row says that Pump worker handled wire_name when the store's clock
-- read stamped_at. A Pump rewrites its own rows on its maintenance beat,
-- and every stamp removes the rows grown older than its horizon, so the
-- table holds about one row per live Pump and Wire Name
-- (store/postgres/fleet.go).
CREATE TABLE backwave.fleet_handler (
    worker     text        NOT NULL,
    wire_name  text        NOT NULL,
    stamped_at timestamptz NOT NULL,
    PRIMARY KEY (worker, wire_name)
);
