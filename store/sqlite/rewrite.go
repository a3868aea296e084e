package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

var _ store.Rewriter = (*Store)(nil)

// rawQueries are the statements of the raw rewrite capability, per
// channel: a keyset scan (after ?1, ?2, up to ?3 rows) and a
// compare-and-swap update (new ?1 where the key is ?2 and the value still
// equals ?3). A Failure Detail's entry key is the Transition Log row id.
var rawQueries = map[store.Channel]struct{ scan, swap string }{
	store.ChannelPayload: {
		scan: `SELECT job_id, 0, payload FROM backwave_job_payload WHERE job_id > ?1 + 0 * ?2 ORDER BY job_id LIMIT ?3`,
		swap: `UPDATE backwave_job_payload SET payload = ?1 WHERE job_id = ?2 AND payload = ?3`,
	},
	store.ChannelOutput: {
		scan: `SELECT job_id, 0, output FROM backwave_job_output WHERE job_id > ?1 + 0 * ?2 ORDER BY job_id LIMIT ?3`,
		swap: `UPDATE backwave_job_output SET output = ?1 WHERE job_id = ?2 AND output = ?3`,
	},
	store.ChannelFailureDetail: {
		scan: `SELECT job_id, id, CAST(failure_detail AS BLOB) FROM backwave_job_transition
WHERE (job_id, id) > (?1, ?2) AND failure_detail IS NOT NULL AND failure_detail <> ''
ORDER BY job_id, id LIMIT ?3`,
		swap: `UPDATE backwave_job_transition SET failure_detail = CAST(?1 AS TEXT) WHERE id = ?2 AND CAST(failure_detail AS BLOB) = ?3`,
	},
	store.ChannelTemplate: {
		scan: `SELECT name, payload FROM backwave_schedule WHERE name > ?1 AND payload IS NOT NULL ORDER BY name LIMIT ?2`,
		swap: `UPDATE backwave_schedule SET payload = ?1 WHERE name = ?2 AND payload = ?3`,
	},
}

// RawScan reads up to p.Limit stored values of p.Channel after p.After, in
// key order, in one read transaction.
func (s *Store) RawScan(ctx context.Context, p store.RawScanParams) ([]store.RawValue, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	q := s.schema.Rename(rawQueries[p.Channel].scan)
	var out []store.RawValue
	err := s.read(ctx, "raw scan "+p.Channel.String(), func(tx *sql.Tx) error {
		var rows *sql.Rows
		var err error
		if p.Channel == store.ChannelTemplate {
			rows, err = tx.QueryContext(ctx, q, p.After.Schedule, p.Limit)
		} else {
			rows, err = tx.QueryContext(ctx, q, int64(p.After.Job), p.After.Entry, p.Limit)
		}
		if err != nil {
			return err
		}
		for rows.Next() {
			var v store.RawValue
			if p.Channel == store.ChannelTemplate {
				err = rows.Scan(&v.Key.Schedule, &v.Value)
			} else {
				var id int64
				err = rows.Scan(&id, &v.Key.Entry, &v.Value)
				v.Key.Job = job.ID(id)
			}
			if err != nil {
				_ = rows.Close()
				return err
			}
			out = append(out, v)
		}
		return errors.Join(rows.Err(), rows.Close())
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RawRewrite applies each swap whose value still equals its Old, in one
// write transaction.
func (s *Store) RawRewrite(ctx context.Context, p store.RawRewriteParams) ([]bool, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	out := make([]bool, len(p.Swaps))
	if len(p.Swaps) == 0 {
		return out, s.ready(ctx)
	}
	q := s.schema.Rename(rawQueries[p.Channel].swap)
	err := s.write(ctx, "raw rewrite "+p.Channel.String(), func(tx *sql.Tx) error {
		st, err := tx.PrepareContext(ctx, q)
		if err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
		defer func() { _ = st.Close() }()
		for i, sw := range p.Swaps {
			var key any
			switch p.Channel {
			case store.ChannelTemplate:
				key = sw.Key.Schedule
			case store.ChannelFailureDetail:
				key = sw.Key.Entry
			default:
				key = int64(sw.Key.Job)
			}
			res, err := st.ExecContext(ctx, sw.New, key, sw.Old)
			if err != nil {
				return fmt.Errorf("swap %d: %w", i, err)
			}
			n, err := res.RowsAffected()
			if err != nil {
				return fmt.Errorf("swap %d: %w", i, err)
			}
			out[i] = n == 1
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
