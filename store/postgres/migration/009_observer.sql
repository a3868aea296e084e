-- compat: n-1
-- The Transition Observer walk. Additive: a nullable column on the
-- Transition Log with a default (adding it rewrites nothing; the default
-- applies to new rows only), a new table, and an index built CONCURRENTLY
-- after the transaction. Code one release behind never names the column:
-- its inserts list their columns, so each of its entries gets the default
-- and is walked like any other; it never reads the new table.
--
-- xid is the id of the transaction that wrote the entry. Sequence numbers
-- are allocated before commit, so a lower seq may commit after a higher
-- one; the walk therefore goes in (xid, seq) order and delivers only
-- entries whose transaction is older than the oldest one still running
-- (store/postgres/observer.go). Entries written before this migration have
-- no xid: every one of them committed before the ALTER took its lock, so
-- the walk reads them as xid 0, before every later entry.
ALTER TABLE backwave.job_transition ADD COLUMN xid xid8;
ALTER TABLE backwave.job_transition ALTER COLUMN xid SET DEFAULT pg_current_xact_id();

-- One row per observer name: the durable cursor (cursor_xid, cursor_seq:
-- the position of the last entry delivered or walked past), the walk's
-- Lease and its fence (holder, token, lease_expires_at), and seen_at, the
-- last claim or advance under the name (a registration unseen for
-- store.ObserverRemoveAfter holds retention back no more).
CREATE TABLE backwave.observer (
    name             text PRIMARY KEY,
    cursor_xid       xid8 NOT NULL DEFAULT '0',
    cursor_seq       bigint NOT NULL DEFAULT 0,
    holder           text NOT NULL DEFAULT '',
    token            bigint NOT NULL DEFAULT 0,
    lease_expires_at timestamptz,
    seen_at          timestamptz NOT NULL
);

-- Index steps: built after the transaction commits, CONCURRENTLY.

-- The walk reads the log in (xid, seq) order from the cursor.
CREATE INDEX CONCURRENTLY IF NOT EXISTS job_transition_walk ON backwave.job_transition ((coalesce(xid, '0'::xid8)), seq);
