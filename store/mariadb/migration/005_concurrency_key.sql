-- compat: n-1
-- BackWave MariaDB adapter schema, version 2: Concurrency Keys. Additive: a
-- column with a constant default on the job table and on the Queue
-- settings table, one index, two new tables. Code one release behind never
-- sets a key and never reads the key settings: its inserts get no key, and
-- its claims take from a keyed Queue as from any other (a node of the older
-- release enforces no Key Limit, Key Rate or Fair Claim on its own claims,
-- and keeps no key counts for the keyed jobs it moves).
--
-- Every statement is one ALTER or CREATE guarded by IF NOT EXISTS: MariaDB
-- commits each DDL statement on its own, so a migration cut short is run
-- again from its first statement and finds done what was done.

-- concurrency_key is the job's Concurrency Key; '' is none (an empty key is
-- refused at insert). backwave_job_key serves a keyed Queue's claim: its keys
-- one at a time, each key's due jobs in due order, and each key's Running
-- jobs (the Key Limit's count).
ALTER TABLE backwave_job
	ADD COLUMN IF NOT EXISTS concurrency_key VARBINARY(128) NOT NULL DEFAULT '',
	ADD KEY IF NOT EXISTS backwave_job_key (queue, concurrency_key, state, scheduled_at, id);

-- key_limit: at most that many Running jobs per key (0: none);
-- key_rate_limit per key_rate_period µs: at most that many starts per key
-- per window (0 and 0: none); fair_claim: a claim batch takes round-robin
-- across keys, and fair_turn is the Queue's last Fair Claim turn
-- (store.KeyPolicy.Pick). A claim reads them with the Queue's row locked FOR UPDATE,
-- under the writer row, so the per-key counts are exact (claim.go).
ALTER TABLE backwave_queue
	ADD COLUMN IF NOT EXISTS key_limit INT NOT NULL DEFAULT 0,
	ADD COLUMN IF NOT EXISTS key_rate_limit INT NOT NULL DEFAULT 0,
	ADD COLUMN IF NOT EXISTS key_rate_period BIGINT NOT NULL DEFAULT 0,
	ADD COLUMN IF NOT EXISTS fair_claim TINYINT NOT NULL DEFAULT 0,
	ADD COLUMN IF NOT EXISTS fair_turn BIGINT NOT NULL DEFAULT 0;

-- What a claim keeps per key (store.KeyStanding, less the Running count):
-- the start (µs since the Unix epoch) of the Key Rate window rate_count
-- counted claims in (0: none), and the Fair Claim turn of the last claim
-- that took one of the key's jobs. concurrency_key '' is the jobs without a
-- key (one key of their own for Fair Claim).
CREATE TABLE IF NOT EXISTS backwave_queue_key (
	queue           VARBINARY(128) NOT NULL,
	concurrency_key VARBINARY(128) NOT NULL,
	rate_window     BIGINT         NOT NULL DEFAULT 0,
	rate_count      INT            NOT NULL DEFAULT 0,
	turn            BIGINT         NOT NULL DEFAULT 0,
	PRIMARY KEY (queue, concurrency_key)
) ENGINE=InnoDB;

-- Keyed jobs by Queue, key and state, kept as jobs move; the Monitor's top
-- keys read it through backwave_job_key_count_top, never the job table.
CREATE TABLE IF NOT EXISTS backwave_job_key_count (
	queue           VARBINARY(128) NOT NULL,
	concurrency_key VARBINARY(128) NOT NULL,
	state           TINYINT        NOT NULL,
	n               BIGINT         NOT NULL,
	PRIMARY KEY (queue, concurrency_key, state),
	KEY backwave_job_key_count_top (queue, state, n)
) ENGINE=InnoDB;
