-- compat: n-1
-- BackWave Embedded Adapter schema, version 8: the per-Queue Rate Limit.
-- Additive: four columns on the Queue settings table, each with a default
-- (or NULL), so every insert of the previous release still fits. Code one
-- release behind ignores the columns: it claims without the Rate Limit, as
-- it always did, and leaves the window's count alone.
--
-- rate_limit and rate_period (microseconds) are the Rate (0 and 0: none);
-- rate_window is the start, in microseconds since the Unix epoch, of the
-- fixed window the claims in rate_count were counted in (NULL: none yet).
-- A claim reads and updates them in its write transaction, under the
-- file's write lock, so the count is exact across processes
-- (store/sqlite/rate.go).
ALTER TABLE backwave_queue ADD COLUMN rate_limit INTEGER NOT NULL DEFAULT 0;
ALTER TABLE backwave_queue ADD COLUMN rate_period INTEGER NOT NULL DEFAULT 0;
ALTER TABLE backwave_queue ADD COLUMN rate_window INTEGER;
ALTER TABLE backwave_queue ADD COLUMN rate_count INTEGER NOT NULL DEFAULT 0;
