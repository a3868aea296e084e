-- compat: n-1
-- The uncounted edges: settleSQL runs after every write that makes jobs
-- terminal and has work only where an edge is still uncounted. This index
-- holds just those edges (an edge is counted once and stays counted), so the
-- statement can ask in one probe whether any exist at all, and skip its
-- per-job lookups when none do — the common case of jobs without
-- Dependencies. Additive: one new index, an index step (see
-- 002_monitor_operator.sql).
CREATE INDEX CONCURRENTLY IF NOT EXISTS job_dependency_uncounted ON backwave.job_dependency (parent_id) WHERE NOT counted;
