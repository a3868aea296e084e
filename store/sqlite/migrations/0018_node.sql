-- compat: n-1
-- BackWave Embedded Adapter schema, version 18: the node registry
-- (store.Nodes). Additive: one new table, which code one release behind
-- never reads nor writes; its nodes simply do not appear in it.
--
-- Each row is one running Client: its host, pid, version, Worker Groups
-- with their Queues (worker_groups, a JSON array of {"name","queues"}), the jobs it
-- held at its last stamp (running), its beat (µs), and the store's clock at
-- its first (started_at) and last (heartbeat_at) stamp, µs since the Unix
-- epoch. A Client rewrites its row on its beat and deletes it when it stops;
-- every stamp removes the rows grown older than its horizon, so the table
-- holds about one row per running Client (store/sqlite/node.go).
CREATE TABLE backwave_node (
	id           TEXT    NOT NULL PRIMARY KEY,
	host         TEXT    NOT NULL,
	pid          INTEGER NOT NULL,
	version      TEXT    NOT NULL,
	worker_groups TEXT   NOT NULL,
	running      INTEGER NOT NULL,
	beat         INTEGER NOT NULL,
	started_at   INTEGER NOT NULL,
	heartbeat_at INTEGER NOT NULL
) WITHOUT ROWID;
