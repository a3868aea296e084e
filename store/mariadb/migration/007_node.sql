-- compat: n-1
-- BackWave MariaDB adapter schema, version 7: the node registry
-- (store.Nodes). Additive: one new table, which code one release behind
-- never reads nor writes; its nodes simply do not appear in it.
--
-- Each row is one running Client: its host, pid, version, Worker Groups
-- with their Queues (worker_groups, a JSON array of {"name","queues"}), the
-- jobs it held at its last stamp (running), its beat (µs), and the store's
-- clock at its first (started_at) and last (heartbeat_at) stamp, µs since
-- the Unix epoch. A Client rewrites its row on its beat and deletes it when
-- it stops; every stamp removes the rows grown older than its horizon, so
-- the table holds about one row per running Client (store/mariadb/node.go).
--
-- One CREATE guarded by IF NOT EXISTS: a migration cut short is run again
-- and finds done what was done.
CREATE TABLE IF NOT EXISTS backwave_node (
	id            VARBINARY(128) NOT NULL PRIMARY KEY,
	host          VARBINARY(255) NOT NULL,
	pid           BIGINT         NOT NULL,
	version       VARBINARY(64)  NOT NULL,
	worker_groups LONGTEXT       NOT NULL,
	running       BIGINT         NOT NULL,
	beat          BIGINT         NOT NULL,
	started_at    BIGINT         NOT NULL,
	heartbeat_at  BIGINT         NOT NULL
) ENGINE=InnoDB;
