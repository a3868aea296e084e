package postgres

import (
	"context"

	"github.com/backwave/backwave/store"
)

// purgeSQL is one retention batch in one statement: it picks up to $4
// terminal jobs, oldest first within each state, through the partial index
// on (state, finalized_at) — an index walk, so the dead rows of earlier
// batches are not scanned again the way a sequential scan would, before
// vacuum, rescan them — skipping rows another transaction holds, and deletes
// them with everything stored beside them.
const purgeSQL = `WITH victim AS (
    SELECT v.id FROM unnest($2::text[]) AS s(state)
    CROSS JOIN LATERAL (
        SELECT j.id FROM backwave.job j
        WHERE j.state = s.state
          AND j.finalized_at <= coalesce($1::timestamptz, now()) - $3::bigint * interval '1 microsecond'
        ORDER BY j.finalized_at
        LIMIT $4
        FOR UPDATE OF j SKIP LOCKED
    ) v
    LIMIT $4
),
payload AS (DELETE FROM backwave.job_payload p USING victim v WHERE p.job_id = v.id),
tag AS (DELETE FROM backwave.job_tag t USING victim v WHERE t.job_id = v.id),
transition AS (DELETE FROM backwave.job_transition t USING victim v WHERE t.job_id = v.id),
occurrence AS (DELETE FROM backwave.schedule_occurrence o USING victim v WHERE o.job_id = v.id),
purged AS (DELETE FROM backwave.job j USING victim v WHERE j.id = v.id RETURNING 1)
SELECT count(*) FROM purged`

// JobPurge deletes up to p.Limit jobs in p.States finalized at or before the
// store's now minus p.KeepFor, with their payloads, Job Output (a column of
// the job row), Tags, Transition Logs and occurrence records, in one
// statement.
func (s *Store) JobPurge(ctx context.Context, p store.PurgeParams) (store.PurgeResult, error) {
	if err := s.enter(ctx); err != nil {
		return store.PurgeResult{}, err
	}
	if err := p.Validate(); err != nil {
		return store.PurgeResult{}, err
	}
	states := make([]string, len(p.States))
	for i, st := range p.States {
		states[i] = st.String()
	}
	var n int64
	err := s.db.query(ctx, s.sql(purgeSQL), []any{s.nowArg(), states, micros(p.KeepFor), int32(p.Limit)},
		func(scan scanFunc) error { return scan(&n) })
	if err != nil {
		return store.PurgeResult{}, s.wrap("purge jobs", err)
	}
	return store.PurgeResult{Purged: int(n)}, nil
}
