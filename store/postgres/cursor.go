package postgres

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/backwave/backwave/job"
)

// renewCursorCTE stores the renewed Leases' Cursors (%[1]s ids, %[2]s
// Attempts, %[3]s values) in job_cursor (migration/015_cursor.sql),
// stamped with the store's now; a part of renewWithSQL.
const renewCursorCTE = `,
cursored AS (
    INSERT INTO backwave.job_cursor (job_id, attempt, value, at)
    SELECT r.id, r.attempt, c.value, r.at
    FROM renewed r JOIN unnest(%[1]s::bigint[], %[2]s::int[], %[3]s::bytea[]) AS c(id, attempt, value)
        ON c.id = r.id AND c.attempt = r.attempt
    ON CONFLICT (job_id) DO UPDATE SET attempt = excluded.attempt, value = excluded.value, at = excluded.at
)`

// reportCursorCTE stores the Cursors the applied outcomes of reportSQL
// carry ($19 ordinals, $20 values), under the report's fence: an outcome
// that did not apply is not in applied.
const reportCursorCTE = `cursored AS (
    INSERT INTO backwave.job_cursor (job_id, attempt, value, at)
    SELECT a.id, a.attempt, c.value, a.now
    FROM unnest($19::int[], $20::bytea[]) AS c(ord, value) JOIN applied a ON a.ord = c.ord
    ON CONFLICT (job_id) DO UPDATE SET attempt = excluded.attempt, value = excluded.value, at = excluded.at
),`

// cursorColumn reads a job's Cursor as a JSON array text [attempt, value
// in base64, at in Unix microseconds]; it follows the progress in
// jobColumns.
const cursorColumn = `(SELECT json_build_array(c.attempt, translate(encode(c.value, 'base64'), E'\n', ''), (extract(epoch FROM c.at) * 1000000)::bigint)::text FROM backwave.job_cursor c WHERE c.job_id = j.id)`

// decodeCursor reads cursorColumn's text.
func decodeCursor(s string) (*job.Cursor, error) {
	var row [3]json.RawMessage
	if err := json.Unmarshal([]byte(s), &row); err != nil {
		return nil, fmt.Errorf("decode cursor: %w", err)
	}
	var c job.Cursor
	var at int64
	for i, dst := range []any{&c.Attempt, &c.Value, &at} {
		if err := json.Unmarshal(row[i], dst); err != nil {
			return nil, fmt.Errorf("decode cursor: %w", err)
		}
	}
	if c.Value == nil {
		c.Value = []byte{}
	}
	c.At = time.UnixMicro(at).UTC()
	return &c, nil
}
