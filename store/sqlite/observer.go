package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// The Transition Observer walk. The file has one writer at a time (every
// write transaction holds its write lock), so Transition Log ids commit in
// id order and the walk's order is the id order: Commit is always zero.
//
// Ids are the table's rowid without AUTOINCREMENT, so the engine gives a
// new entry the largest id plus one, and would hand out again the id of a
// deleted newest entry. Retention therefore keeps every job holding an
// entry at or past (not only past) the lowest live cursor: the entry a
// cursor stands on stays, and no new entry can be given an id at or
// before a live cursor. A registration back after being considered
// removed (store.ObserverRemoveAfter) has no such promise for the time it
// was away.
const (
	sqlObserverGet = `SELECT cursor_seq, holder, token, lease_expires_at FROM backwave_observer WHERE name = ?1`
	sqlObserverNew = `INSERT INTO backwave_observer (name, seen_at, cursor_seq) VALUES (?1, ?2, ?3)`
	// sqlObserverEnd is where a registration that starts at the end of the
	// log puts its cursor: the newest entry.
	sqlObserverEnd = `SELECT coalesce(max(id), 0) FROM backwave_job_transition`
	sqlObserverSet = `UPDATE backwave_observer
	SET cursor_seq = ?2, holder = ?3, token = ?4, lease_expires_at = ?5, seen_at = ?6 WHERE name = ?1`
	sqlObserverSeen   = `UPDATE backwave_observer SET seen_at = ?2 WHERE name = ?1`
	sqlObserverRemove = `DELETE FROM backwave_observer WHERE name = ?1`
	// sqlObserverWalk reads the next ?2 entries past ?1; only those of a
	// declared state (?3, a JSON array of state codes) are joined with
	// their job.
	sqlObserverWalk = `WITH scan AS (
		SELECT id, job_id, at, from_state, state, via, attempt FROM backwave_job_transition
		WHERE id > ?1 ORDER BY id LIMIT ?2)
	SELECT s.id, s.job_id, s.at, s.from_state, s.state, s.via, s.attempt, coalesce(j.wire_name, ''), coalesce(j.queue, '')
	FROM scan s LEFT JOIN backwave_job j ON j.id = s.job_id AND s.state IN (SELECT value FROM json_each(?3))
	ORDER BY s.id`
	// sqlObservedFloor is the lowest cursor of a live registration, NULL
	// when none is live.
	sqlObservedFloor = `SELECT MIN(cursor_seq) FROM backwave_observer WHERE seen_at > ?1`
)

type observerRow struct {
	cursor      int64
	holder      string
	token       int64
	leaseExpiry int64
}

func (s *Store) observerRow(ctx context.Context, tx *sql.Tx, name string) (observerRow, bool, error) {
	var o observerRow
	err := tx.QueryRowContext(ctx, s.schema.Rename(sqlObserverGet), name).Scan(&o.cursor, &o.holder, &o.token, &o.leaseExpiry)
	if errors.Is(err, sql.ErrNoRows) {
		return o, false, nil
	}
	return o, err == nil, err
}

// ObserverClaim registers the observer if new and takes or renews the
// walk's Lease for p.Holder in one write transaction, then reads up to
// p.Limit entries past the cursor in id order in a read transaction, off
// the write lock: ids commit in order, so what the read finds past the
// cursor is final, and the advance that follows is fenced anyway.
func (s *Store) ObserverClaim(ctx context.Context, p store.ObserverClaimParams) (store.ObserverClaimResult, error) {
	if err := p.Validate(); err != nil {
		return store.ObserverClaimResult{}, err
	}
	var res store.ObserverClaimResult
	err := s.write(ctx, "claim the observer walk", func(tx *sql.Tx) error {
		res = store.ObserverClaimResult{}
		now := micros(s.clock.Now())
		o, ok, err := s.observerRow(ctx, tx, p.Observer)
		if err != nil {
			return err
		}
		if !ok {
			if p.StartAtEnd {
				if err := tx.QueryRowContext(ctx, s.schema.Rename(sqlObserverEnd)).Scan(&o.cursor); err != nil {
					return fmt.Errorf("find the end of the transition log: %w", err)
				}
			}
			if _, err := tx.ExecContext(ctx, s.schema.Rename(sqlObserverNew), p.Observer, now, o.cursor); err != nil {
				return err
			}
		}
		if o.holder != string(p.Holder) && o.holder != "" && now < o.leaseExpiry {
			_, err := tx.ExecContext(ctx, s.schema.Rename(sqlObserverSeen), p.Observer, now)
			return err
		}
		if o.holder != string(p.Holder) || now >= o.leaseExpiry {
			o.token++
		}
		expiry := micros(s.clock.Now().Add(p.LeaseDuration))
		if _, err := tx.ExecContext(ctx, s.schema.Rename(sqlObserverSet), p.Observer, o.cursor, string(p.Holder), o.token, expiry, now); err != nil {
			return err
		}
		res.Held, res.Token = true, o.token
		res.Cursor = store.ObserverPosition{Seq: o.cursor}
		res.Through = res.Cursor
		return nil
	})
	if err != nil || !res.Held {
		return res, err
	}
	codes := make([]int64, len(p.States))
	for i, st := range p.States {
		codes[i] = stateCode(st)
	}
	err = s.read(ctx, "walk the transition log", func(tx *sql.Tx) error {
		res.Transitions = nil
		rows, err := tx.QueryContext(ctx, s.schema.Rename(sqlObserverWalk), res.Cursor.Seq, p.Limit, jsonArray(codes))
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		n := 0
		for rows.Next() {
			n++
			res.More = n == p.Limit
			var seq, id, at, from, to, via, attempt int64
			var ot store.ObservedTransition
			if err := rows.Scan(&seq, &id, &at, &from, &to, &via, &attempt, &ot.WireName, &ot.Queue); err != nil {
				return err
			}
			res.Through.Seq = seq
			if ot.State, err = decode(stateCodes, "state", to); err != nil {
				return err
			}
			if !p.Declares(ot.State) {
				continue
			}
			if ot.From, err = decode(stateCodes, "state", from); err != nil {
				return err
			}
			if ot.Via, err = decode(viaCodes, "via", via); err != nil {
				return err
			}
			ot.Position, ot.Job = store.ObserverPosition{Seq: seq}, job.ID(id)
			ot.At, ot.Attempt = fromMicros(at), job.Attempt(attempt)
			res.Transitions = append(res.Transitions, ot)
		}
		return rows.Err()
	})
	if err != nil {
		return store.ObserverClaimResult{}, err
	}
	return res, nil
}

// ObserverAdvance moves the cursor forward and renews or releases the
// walk's Lease, fenced by holder and Token.
func (s *Store) ObserverAdvance(ctx context.Context, p store.ObserverAdvanceParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return s.write(ctx, "advance the observer walk", func(tx *sql.Tx) error {
		now := s.clock.Now()
		o, ok, err := s.observerRow(ctx, tx, p.Observer)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("observer %q: %w", p.Observer, store.ErrNotFound)
		}
		if o.holder != string(p.Holder) || o.token != p.Token || micros(now) >= o.leaseExpiry {
			return fmt.Errorf("observer %q: holder %s token %d: %w", p.Observer, p.Holder, p.Token, store.ErrStaleLease)
		}
		holder, expiry := o.holder, micros(now.Add(p.LeaseDuration))
		if p.Release {
			holder, expiry = "", 0
		}
		_, err = tx.ExecContext(ctx, s.schema.Rename(sqlObserverSet), p.Observer, max(o.cursor, p.To.Seq), holder, o.token, expiry, micros(now))
		return err
	})
}

// ObserverRemove forgets the registration.
func (s *Store) ObserverRemove(ctx context.Context, observer string) error {
	if err := store.ValidateObserverName(observer); err != nil {
		return err
	}
	return s.write(ctx, "remove an observer", func(tx *sql.Tx) error {
		r, err := tx.ExecContext(ctx, s.schema.Rename(sqlObserverRemove), observer)
		if err != nil {
			return err
		}
		if n, err := r.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("observer %q: %w", observer, store.ErrNotFound)
		}
		return nil
	})
}

// observedFloor reads the lowest cursor of a live registration; ok is false
// when none is live.
func (s *Store) observedFloor(ctx context.Context, tx *sql.Tx, now int64) (floor int64, ok bool, err error) {
	var f sql.NullInt64
	if err := tx.QueryRowContext(ctx, s.schema.Rename(sqlObservedFloor), now-store.ObserverRemoveAfter.Microseconds()).Scan(&f); err != nil {
		return 0, false, fmt.Errorf("read the observers' floor: %w", err)
	}
	return f.Int64, f.Valid, nil
}

// History returns the Job History Policy the store records under.
func (s *Store) History() store.HistoryPolicy { return s.opts.History }
