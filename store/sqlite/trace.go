package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// Trace contexts live in backwave_job_trace (migrations/0007_trace_progress.sql),
// one row per job that has one, written at insert and read with the job.
const (
	// sqlTracesIn stores trace contexts from ?1: job id → the context's
	// JSON text (a jsonObject).
	sqlTracesIn = `INSERT INTO backwave_job_trace (job_id, trace_context)
	SELECT CAST(key AS INTEGER), value FROM json_each(?1)`
	// sqlTracesOf reads the trace contexts of the jobs in the JSON array ?.
	sqlTracesOf = `SELECT job_id, trace_context FROM backwave_job_trace WHERE job_id IN (SELECT value FROM json_each(?))`
)

// insertResults writes the jobs in tx (insertJobs) and then the trace
// contexts of those inserted, in one statement when any has one.
func (s *Store) insertResults(ctx context.Context, tx *sql.Tx, own bool, p store.InsertManyParams) ([]store.InsertResult, []string, error) {
	if err := s.liftSequence(ctx, tx, own); err != nil {
		return nil, nil, err
	}
	res, due, err := s.insertJobs(ctx, tx, own, p)
	if err != nil {
		return nil, nil, err
	}
	if !own {
		s.idFloor.Raise(store.ResultIDs(res)...)
	}
	if p.Actor != "" {
		// An operator's enqueue: each job inserted is audited with it.
		at := s.clock.Now()
		for i, r := range res {
			if r.Inserted {
				if err := s.audit(ctx, tx, at, p.Actor, store.AuditEnqueue, r.ID, p.Jobs[i].Queue, store.EnqueueDetail(p.Jobs[i].WireName)); err != nil {
					return nil, nil, err
				}
			}
		}
	}
	var traces jsonObject
	for i, nj := range p.Jobs {
		if len(nj.TraceContext) > 0 && res[i].Inserted {
			traces.str(int64(res[i].ID), store.EncodeTraceContext(nj.TraceContext))
		}
	}
	if traces.len() == 0 {
		return res, due, nil
	}
	query := s.schema.Rename(sqlTracesIn)
	if own {
		_, err = s.exec(ctx, tx, query, traces.String())
	} else {
		_, err = tx.ExecContext(ctx, query, traces.String())
	}
	if err != nil {
		return nil, nil, fmt.Errorf("trace contexts: %w", err)
	}
	return res, due, nil
}

// attachTraces reads the trace contexts of jobs, whose ids ids encodes as a
// JSON array and index maps to their place in jobs.
func (s *Store) attachTraces(ctx context.Context, tx *sql.Tx, jobs []job.Job, index map[job.ID]int, ids string) error {
	rows, err := tx.QueryContext(ctx, s.schema.Rename(sqlTracesOf), ids)
	if err != nil {
		return fmt.Errorf("read trace contexts: %w", err)
	}
	for rows.Next() {
		var id int64
		var text string
		if err := rows.Scan(&id, &text); err != nil {
			_ = rows.Close()
			return fmt.Errorf("read trace contexts: %w", err)
		}
		if jobs[index[job.ID(id)]].TraceContext, err = store.DecodeTraceContext(text); err != nil {
			_ = rows.Close()
			return fmt.Errorf("job %d: %w", id, err)
		}
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return fmt.Errorf("read trace contexts: %w", err)
	}
	return nil
}

// traceOf decodes the trace context a claim read beside a job.
func traceOf(id int64, text sql.NullString) (map[string]string, error) {
	if !text.Valid {
		return nil, nil
	}
	tc, err := store.DecodeTraceContext(text.String)
	if err != nil {
		return nil, fmt.Errorf("job %d: %w", id, err)
	}
	return tc, nil
}

// str adds id → s as a JSON string, read back as the text value.
func (o *jsonObject) str(id int64, s string) {
	o.key(id)
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("sqlite: encode %q: %v", s, err))
	}
	o.b = append(o.b, b...)
}
