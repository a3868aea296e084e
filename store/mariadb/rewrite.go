package mariadb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

var _ store.Rewriter = (*Store)(nil)

// RawScan reads stored values of one channel in key order, for Encryption
// at Rest's rewrite (store.Rewriter). A Failure Detail's Entry is its
// Transition Log sequence number.
func (s *Store) RawScan(ctx context.Context, p store.RawScanParams) ([]store.RawValue, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var out []store.RawValue
	err := s.read(ctx, "raw scan", func(q querier, _ time.Time) error {
		out = nil
		var rows *sql.Rows
		var err error
		switch p.Channel {
		case store.ChannelTemplate:
			rows, err = q.QueryContext(ctx, `SELECT name, def FROM backwave_schedule WHERE name > ? ORDER BY name`, p.After.Schedule)
			if err != nil {
				return err
			}
			defer func() { _ = rows.Close() }()
			for rows.Next() && len(out) < p.Limit {
				var name, def string
				if err := rows.Scan(&name, &def); err != nil {
					return err
				}
				var d store.ScheduleDef
				if err := json.Unmarshal([]byte(def), &d); err != nil {
					return err
				}
				if d.Template.Payload != nil {
					out = append(out, store.RawValue{Key: store.RawKey{Schedule: name}, Value: d.Template.Payload})
				}
			}
			return rows.Err()
		case store.ChannelPayload, store.ChannelOutput:
			col := "payload"
			if p.Channel == store.ChannelOutput {
				col = "output"
			}
			rows, err = q.QueryContext(ctx, `SELECT id, `+col+` FROM backwave_job WHERE id > ? AND `+col+` IS NOT NULL ORDER BY id LIMIT ?`,
				int64(p.After.Job), p.Limit)
		case store.ChannelFailureDetail:
			rows, err = q.QueryContext(ctx, `SELECT job_id, seq, failure_detail FROM backwave_transition
				WHERE job_id >= ? AND failure_detail IS NOT NULL AND failure_detail <> '' AND (job_id > ? OR seq > ?)
				ORDER BY job_id, seq LIMIT ?`, int64(p.After.Job), int64(p.After.Job), p.After.Entry, p.Limit)
		default:
			return nil
		}
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var v store.RawValue
			var id int64
			var b []byte
			if p.Channel == store.ChannelFailureDetail {
				err = rows.Scan(&id, &v.Key.Entry, &b)
			} else {
				err = rows.Scan(&id, &b)
			}
			if err != nil {
				return err
			}
			if b == nil {
				b = []byte{}
			}
			v.Key.Job, v.Value = job.ID(id), b
			out = append(out, v)
		}
		return rows.Err()
	})
	return out, err
}

// RawRewrite swaps stored values, each only if it still holds its Old
// value (store.Rewriter).
func (s *Store) RawRewrite(ctx context.Context, p store.RawRewriteParams) ([]bool, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var out []bool
	err := s.write(ctx, "raw rewrite", func(w *wtx) error {
		out = make([]bool, len(p.Swaps))
		for i, sw := range p.Swaps {
			ok, err := w.swap(p.Channel, sw)
			if err != nil {
				return err
			}
			out[i] = ok
		}
		return nil
	})
	return out, err
}

func (w *wtx) swap(c store.Channel, sw store.RawSwap) (bool, error) {
	switch c {
	case store.ChannelTemplate:
		r, err := w.schedule(sw.Key.Schedule)
		if err != nil || r == nil || r.s.Template.Payload == nil || !sameBytes(r.s.Template.Payload, sw.Old) {
			return false, err
		}
		r.s.Template.Payload = cloneBytes(sw.New)
		if r.s.Template.Payload == nil {
			r.s.Template.Payload = []byte{}
		}
		return true, w.saveSchedule(r)
	case store.ChannelPayload, store.ChannelOutput:
		col := "payload"
		if c == store.ChannelOutput {
			col = "output"
		}
		var cur []byte
		var present bool
		err := w.row(`SELECT `+col+`, `+col+` IS NOT NULL FROM backwave_job WHERE id = ? FOR UPDATE`, int64(sw.Key.Job)).Scan(&cur, &present)
		if errors.Is(err, sql.ErrNoRows) || err == nil && (!present || !sameBytes(cur, sw.Old)) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		_, err = w.exec(`UPDATE backwave_job SET `+col+` = ? WHERE id = ?`, nonNil(sw.New), int64(sw.Key.Job))
		return err == nil, err
	case store.ChannelFailureDetail:
		var cur sql.NullString
		err := w.row(`SELECT failure_detail FROM backwave_transition WHERE job_id = ? AND seq = ? FOR UPDATE`, int64(sw.Key.Job), sw.Key.Entry).Scan(&cur)
		if errors.Is(err, sql.ErrNoRows) || err == nil && (cur.String == "" || cur.String != string(sw.Old)) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		_, err = w.exec(`UPDATE backwave_transition SET failure_detail = ? WHERE job_id = ? AND seq = ?`, string(sw.New), int64(sw.Key.Job), sw.Key.Entry)
		return err == nil, err
	}
	return false, errors.New("unknown channel")
}

// nonNil binds an empty value as an empty string, never NULL.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
