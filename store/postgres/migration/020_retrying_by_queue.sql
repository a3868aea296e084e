-- compat: n-1
-- A Queue's Retrying count (QueueBacklog: the Overview, the Queues page,
-- /metrics) reads that Queue's Retrying jobs from an index alone. The
-- older job_retrying index holds only the id, so each Queue's count read
-- the row of every Retrying job it counted: at 10,000,000 jobs, 10 Queues
-- and 100,000 Retrying jobs, 4 s of a 4.7 s backlog read
-- (docs/dashboard.md). Additive: code one release behind never reads the
-- index, and maintaining it touches only the Retrying rows.
CREATE INDEX CONCURRENTLY IF NOT EXISTS job_retrying_queue ON backwave.job (queue, id) WHERE state = 'scheduled' AND retry_cause <> '';
