-- compat: n-1
-- BackWave Embedded Adapter schema, version 13: Concurrency Keys. Additive:
-- a nullable column on the job table (no row is rewritten), constant
-- defaults on the Queue settings table, two new tables, two partial
-- indexes and three triggers that fire only for keyed jobs. Code one
-- release behind never sets a key and never reads the key settings: its
-- inserts get no key, and its claims take from a keyed Queue as from any
-- other (a process of the older release enforces no Key Limit, Key Rate or
-- Fair Claim on its own claims). When it moves a keyed job a newer process
-- inserted, the triggers keep the key counts right for it.
--
-- concurrency_key is the job's Concurrency Key; NULL is none (an empty key
-- is refused at insert). Jobs without a key are in no new index and fire no
-- new trigger, so they cost what they cost before (testdata/ledger.txt).
ALTER TABLE backwave_job ADD COLUMN concurrency_key TEXT;

-- key_limit: at most that many Running jobs per key (0: none);
-- key_rate_limit per key_rate_period µs: at most that many starts per key
-- per window (0 and 0: none); fair_claim: a claim batch takes round-robin
-- across keys, and fair_turn is the Queue's last Fair Claim turn
-- (store.KeyPolicy.Pick). A claim reads and writes them in its write transaction,
-- under the file's write lock, so the per-key counts are exact across
-- processes (store/sqlite/key.go).
ALTER TABLE backwave_queue ADD COLUMN key_limit INTEGER NOT NULL DEFAULT 0;
ALTER TABLE backwave_queue ADD COLUMN key_rate_limit INTEGER NOT NULL DEFAULT 0;
ALTER TABLE backwave_queue ADD COLUMN key_rate_period INTEGER NOT NULL DEFAULT 0;
ALTER TABLE backwave_queue ADD COLUMN fair_claim INTEGER NOT NULL DEFAULT 0;
ALTER TABLE backwave_queue ADD COLUMN fair_turn INTEGER NOT NULL DEFAULT 0;

-- What a claim keeps per key (store.KeyStanding, less the Running count):
-- the start (µs since the Unix epoch) of the Key Rate window rate_count
-- counted claims in (NULL: none), and the Fair Claim turn of the last claim
-- that took one of the key's jobs. concurrency_key '' is the jobs without a
-- key (one key of their own for Fair Claim).
CREATE TABLE backwave_queue_key (
	queue           TEXT    NOT NULL,
	concurrency_key TEXT    NOT NULL,
	rate_window     INTEGER,
	rate_count      INTEGER NOT NULL DEFAULT 0,
	turn            INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (queue, concurrency_key)
) WITHOUT ROWID;

-- Keyed jobs by Queue, key and state, kept by the triggers below; the
-- Monitor's top keys read it through backwave_job_key_count_top, never the
-- job table.
CREATE TABLE backwave_job_key_count (
	queue           TEXT    NOT NULL,
	concurrency_key TEXT    NOT NULL,
	state           INTEGER NOT NULL,
	n               INTEGER NOT NULL,
	PRIMARY KEY (queue, concurrency_key, state)
) WITHOUT ROWID;

CREATE INDEX backwave_job_key_count_top ON backwave_job_key_count (queue, state, n);

CREATE TRIGGER backwave_job_key_count_insert AFTER INSERT ON backwave_job
WHEN NEW.concurrency_key IS NOT NULL
BEGIN
	INSERT INTO backwave_job_key_count (queue, concurrency_key, state, n) VALUES (NEW.queue, NEW.concurrency_key, NEW.state, 1)
	ON CONFLICT (queue, concurrency_key, state) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER backwave_job_key_count_update AFTER UPDATE OF state ON backwave_job
WHEN OLD.state <> NEW.state AND NEW.concurrency_key IS NOT NULL
BEGIN
	UPDATE backwave_job_key_count SET n = n - 1
	WHERE queue = OLD.queue AND concurrency_key = OLD.concurrency_key AND state = OLD.state;
	INSERT INTO backwave_job_key_count (queue, concurrency_key, state, n) VALUES (NEW.queue, NEW.concurrency_key, NEW.state, 1)
	ON CONFLICT (queue, concurrency_key, state) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER backwave_job_key_count_delete AFTER DELETE ON backwave_job
WHEN OLD.concurrency_key IS NOT NULL
BEGIN
	UPDATE backwave_job_key_count SET n = n - 1
	WHERE queue = OLD.queue AND concurrency_key = OLD.concurrency_key AND state = OLD.state;
END;

-- A keyed Queue's claim finds its keys by skipping through this index one
-- key at a time, and each key's due jobs in due order.
CREATE INDEX backwave_job_key_due ON backwave_job (queue, concurrency_key, scheduled_at, id)
WHERE state = 1 AND concurrency_key IS NOT NULL;

-- Running jobs per key: the Key Limit's count.
CREATE INDEX backwave_job_key_running ON backwave_job (queue, concurrency_key)
WHERE state = 3 AND concurrency_key IS NOT NULL;
