package postgres

import (
	"context"

	"github.com/backwave/backwave/store"
)

// purgeSQL is one retention batch in one statement: it picks up to $4
// terminal jobs per the partial index on (state, finalized_at), skipping
// rows another transaction holds, and deletes them with everything stored
// beside them. No ORDER BY: which qualifying jobs go first does not
// matter, and an ordered pick would sort every qualifying row each batch.
const purgeSQL = `WITH victim AS (
    SELECT j.id FROM backwave.job j
    WHERE j.state = ANY($2::text[])
      AND j.finalized_at <= coalesce($1::timestamptz, now()) - $3::bigint * interval '1 microsecond'
    LIMIT $4
    FOR UPDATE SKIP LOCKED
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
