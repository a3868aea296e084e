-- compat: n-1
-- BackWave Embedded Adapter schema, version 5: the claim and outcome
-- statements keep the Monitor's counts themselves. Additive and safe on a
-- live file: a new column with a default, and the count trigger replaced
-- in the same transaction, so no write ever sees the file without one.

-- count_flip changes (0 to 1 or back) in the rows of a statement that
-- counts its own state changes: the claim and the outcome writes, which
-- add their deltas to backwave_job_count in one statement per call
-- instead of two per row. A bulk insert that counts its jobs itself
-- writes them with count_flip 1. Every other statement, a node one
-- release behind included, leaves it alone (an insert: at 0), and the
-- triggers count for it as before.
ALTER TABLE backwave_job ADD COLUMN count_flip INTEGER NOT NULL DEFAULT 0;

DROP TRIGGER backwave_job_count_insert;

CREATE TRIGGER backwave_job_count_insert AFTER INSERT ON backwave_job
WHEN NEW.count_flip = 0
BEGIN
	INSERT INTO backwave_job_count (queue, state, n) VALUES (NEW.queue, NEW.state, 1)
	ON CONFLICT (queue, state) DO UPDATE SET n = n + 1;
END;

DROP TRIGGER backwave_job_count_update;

CREATE TRIGGER backwave_job_count_update AFTER UPDATE OF state ON backwave_job
WHEN OLD.state <> NEW.state AND NEW.count_flip = OLD.count_flip
BEGIN
	UPDATE backwave_job_count SET n = n - 1 WHERE queue = OLD.queue AND state = OLD.state;
	INSERT INTO backwave_job_count (queue, state, n) VALUES (NEW.queue, NEW.state, 1)
	ON CONFLICT (queue, state) DO UPDATE SET n = n + 1;
END;
