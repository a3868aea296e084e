-- compat: n-1
-- The node registry (store.Nodes). Additive: one new table, which code one
-- release behind never reads nor writes; its nodes simply do not appear in
-- it.
--
-- Each row is one running Client: its host, pid, version, Worker Groups
-- with their Queues (worker_groups, a JSON array of {"name","queues"}), the
-- jobs it held at its last stamp (running), its beat (µs), and the store's
-- clock at its first (started_at) and last (heartbeat_at) stamp. A Client
-- rewrites its row on its beat and deletes it when it stops; every stamp
-- removes the rows grown older than its horizon, so the table holds about
-- one row per running Client (store/postgres/node.go).
CREATE TABLE backwave.node (
    id            text        NOT NULL PRIMARY KEY,
    host          text        NOT NULL,
    pid           bigint      NOT NULL,
    version       text        NOT NULL,
    worker_groups text        NOT NULL,
    running       bigint      NOT NULL,
    beat          bigint      NOT NULL,
    started_at    timestamptz NOT NULL,
    heartbeat_at  timestamptz NOT NULL
);
