package postgres

import "github.com/backwave/backwave/store"

// traceSideSQL is the CTE of insertSQL that stores the trace contexts of its
// jobs in job_trace (migration/007_trace_progress.sql), from $17 (input
// ordinals) and $18 (their contexts, store.EncodeTraceContext). Only jobs
// the statement inserts (its input CTE) get a row, so a job whose unique
// key is held stores none.
const traceSideSQL = `new_trace AS (
    INSERT INTO backwave.job_trace (job_id, trace_context)
    SELECT i.id, c.trace_context
    FROM unnest($17::int[], $18::text[]) AS c(ord, trace_context)
    JOIN input i ON i.ord = c.ord
)`

// traceGraphSQL is traceSideSQL for insertGraphSQL, from $24 and $25.
const traceGraphSQL = `new_trace AS (
    INSERT INTO backwave.job_trace (job_id, trace_context)
    SELECT i.id, c.trace_context
    FROM unnest($24::int[], $25::text[]) AS c(ord, trace_context)
    JOIN input i ON i.ord = c.ord
)`

// traceArrays returns the input ordinals (from 1) of the jobs with a trace
// context and their encoded contexts, for traceSideSQL and traceGraphSQL.
func traceArrays(jobs []store.NewJob) (ords []int32, texts []string) {
	ords, texts = []int32{}, []string{}
	for i, nj := range jobs {
		if len(nj.TraceContext) > 0 {
			ords = append(ords, int32(i+1))
			texts = append(texts, pgText(store.EncodeTraceContext(nj.TraceContext)))
		}
	}
	return ords, texts
}
