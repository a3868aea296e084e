package postgres

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// renewWithSQL is renewSQL for a renewal that carries progress or Cursors:
// the renewed Leases come back from the UPDATE as renewed, with the store's
// now, and the side writes that follow (renewProgressCTE,
// renewCursorCTE) join them, so a Lease the UPDATE did not renew (lost)
// keeps its progress and its Cursor out by the same fence. A renewal
// carrying neither runs renewSQL unchanged.
const renewWithSQL = `WITH now AS (SELECT coalesce($1::timestamptz, now()) AS t),
renewed AS (
    UPDATE backwave.job j
    SET lease_expires_at = now.t + $5::bigint * interval '1 microsecond'
    FROM (SELECT DISTINCT * FROM unnest($2::bigint[], $3::int[]) AS u(id, attempt)) l, now
    WHERE j.id = ANY ($2::bigint[]) AND j.id = l.id AND j.attempt = l.attempt
      AND j.worker = $4::text AND j.lease_expires_at IS NOT NULL
    RETURNING j.id, j.attempt, j.cancel_requested, now.t AS at
)`

// renewProgressCTE stores the renewed Leases' progress (%[1]s ids, %[2]s
// Attempts, %[3]s fractions, %[4]s notes) in job_progress
// (migration/007_trace_progress.sql), stamped with the store's now.
const renewProgressCTE = `,
progress AS (
    INSERT INTO backwave.job_progress (job_id, attempt, fraction, note, at)
    SELECT r.id, r.attempt, g.fraction, g.note, r.at
    FROM renewed r JOIN unnest(%[1]s::bigint[], %[2]s::int[], %[3]s::float8[], %[4]s::text[]) AS g(id, attempt, fraction, note)
        ON g.id = r.id AND g.attempt = r.attempt
    ON CONFLICT (job_id) DO UPDATE SET attempt = excluded.attempt, fraction = excluded.fraction,
        note = excluded.note, at = excluded.at
)`

// renewStatement returns the renewal statement for p and its arguments
// beyond renewSQL's: renewWithSQL and the progress and Cursor arrays when p
// carries some, renewSQL and none otherwise.
func renewStatement(p store.RenewParams) (string, []any) {
	if len(p.Progress) == 0 && len(p.Cursors) == 0 {
		return renewSQL, nil
	}
	query := renewWithSQL
	var args []any
	// add appends a CTE whose placeholders number the arrays it takes.
	add := func(cte string, arrays ...any) {
		refs := make([]any, len(arrays))
		for i := range arrays {
			refs[i] = fmt.Sprintf("$%d", 6+len(args)+i)
		}
		query += fmt.Sprintf(cte, refs...)
		args = append(args, arrays...)
	}
	if n := len(p.Progress); n > 0 {
		ids, attempts := make([]int64, n), make([]int32, n)
		fractions, notes := make([]float64, n), make([]string, n)
		for i, pr := range p.Progress {
			ids[i], attempts[i] = int64(pr.Lease.ID), int32(pr.Lease.Attempt)
			fractions[i], notes[i] = pr.Fraction, pgText(pr.Note)
		}
		add(renewProgressCTE, ids, attempts, fractions, notes)
	}
	if n := len(p.Cursors); n > 0 {
		ids, attempts, values := make([]int64, n), make([]int32, n), make([][]byte, n)
		for i, c := range p.Cursors {
			ids[i], attempts[i], values[i] = int64(c.Lease.ID), int32(c.Lease.Attempt), c.Value
		}
		add(renewCursorCTE, ids, attempts, values)
	}
	return query + "\nSELECT r.id, r.attempt, r.cancel_requested FROM renewed r", args
}

// progressColumn reads a job's progress as a JSON array text [attempt,
// fraction, note, at in Unix microseconds]; it follows the trace context in
// jobColumns.
const progressColumn = `(SELECT json_build_array(g.attempt, g.fraction, g.note, (extract(epoch FROM g.at) * 1000000)::bigint)::text FROM backwave.job_progress g WHERE g.job_id = j.id)`

// decodeProgress reads progressColumn's text.
func decodeProgress(s string) (*job.Progress, error) {
	var row [4]json.RawMessage
	if err := json.Unmarshal([]byte(s), &row); err != nil {
		return nil, fmt.Errorf("decode progress: %w", err)
	}
	var p job.Progress
	var at int64
	for i, dst := range []any{&p.Attempt, &p.Fraction, &p.Note, &at} {
		if err := json.Unmarshal(row[i], dst); err != nil {
			return nil, fmt.Errorf("decode progress: %w", err)
		}
	}
	p.At = time.UnixMicro(at).UTC()
	return &p, nil
}
