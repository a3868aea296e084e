package postgres

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// renewProgressSQL is renewSQL for a renewal that carries progress: the
// renewed Leases' progress ($6 ids, $7 Attempts, $8 fractions, $9 notes)
// goes into job_progress (migration/007_trace_progress.sql) in the same
// statement, stamped with the store's now. A Lease the UPDATE did not renew
// (lost) is not among renewed, so its progress is kept out by the same
// fence. A renewal without progress runs renewSQL unchanged.
const renewProgressSQL = `WITH now AS (SELECT coalesce($1::timestamptz, now()) AS t),
renewed AS (
    UPDATE backwave.job j
    SET lease_expires_at = now.t + $5::bigint * interval '1 microsecond'
    FROM (SELECT DISTINCT * FROM unnest($2::bigint[], $3::int[]) AS u(id, attempt)) l, now
    WHERE j.id = ANY ($2::bigint[]) AND j.id = l.id AND j.attempt = l.attempt
      AND j.worker = $4::text AND j.lease_expires_at IS NOT NULL
    RETURNING j.id, j.attempt, j.cancel_requested, now.t AS at
),
progress AS (
    INSERT INTO backwave.job_progress (job_id, attempt, fraction, note, at)
    SELECT r.id, r.attempt, g.fraction, g.note, r.at
    FROM renewed r JOIN unnest($6::bigint[], $7::int[], $8::float8[], $9::text[]) AS g(id, attempt, fraction, note)
        ON g.id = r.id AND g.attempt = r.attempt
    ON CONFLICT (job_id) DO UPDATE SET attempt = excluded.attempt, fraction = excluded.fraction,
        note = excluded.note, at = excluded.at
)
SELECT r.id, r.attempt, r.cancel_requested FROM renewed r`

// renewStatement returns the renewal statement for p and its arguments
// beyond renewSQL's: renewProgressSQL and the progress arrays when p carries
// progress, renewSQL and none otherwise.
func renewStatement(p store.RenewParams) (string, []any) {
	if len(p.Progress) == 0 {
		return renewSQL, nil
	}
	n := len(p.Progress)
	ids, attempts := make([]int64, n), make([]int32, n)
	fractions, notes := make([]float64, n), make([]string, n)
	for i, pr := range p.Progress {
		ids[i], attempts[i] = int64(pr.Lease.ID), int32(pr.Lease.Attempt)
		fractions[i], notes[i] = pr.Fraction, pgText(pr.Note)
	}
	return renewProgressSQL, []any{ids, attempts, fractions, notes}
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
