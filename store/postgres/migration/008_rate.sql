-- compat: n-1
-- The per-Queue Rate Limit. Additive: four columns on the Queue settings
-- table, each with a constant default (or NULL), so adding them rewrites
-- nothing and every insert of the previous release still fits. Code one
-- release behind ignores them: it claims without the Rate Limit, as it
-- always did, and leaves the window's count alone.
--
-- rate_limit and rate_period (microseconds) are the Rate (0 and 0: none);
-- rate_window is the start, in microseconds since the Unix epoch, of the
-- fixed window the claims in rate_count were counted in (NULL: none yet).
-- A claim of a rated Queue holds the Queue's row locked (claimLockSQL), so
-- the count is exact under concurrent claimers (store/postgres/rate.go).
ALTER TABLE backwave.queue
    ADD COLUMN rate_limit integer NOT NULL DEFAULT 0,
    ADD COLUMN rate_period bigint NOT NULL DEFAULT 0,
    ADD COLUMN rate_window bigint,
    ADD COLUMN rate_count integer NOT NULL DEFAULT 0;
