package mariadb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// ObserverClaim registers the observer if new, takes or renews the walk's
// Lease and reads up to p.Limit Transition Log entries past its cursor in
// commit order (store.Observers). Every writing transaction allocates its
// entries' sequence numbers while it holds the writer row, which it keeps
// to its commit, so sequence order is commit order: no entry still to
// commit can take a number below one a walk has read, and the walk needs
// no horizon (ObserverPosition.Commit is always 0).
func (s *Store) ObserverClaim(ctx context.Context, p store.ObserverClaimParams) (store.ObserverClaimResult, error) {
	if err := p.Validate(); err != nil {
		return store.ObserverClaimResult{}, err
	}
	var res store.ObserverClaimResult
	err := s.write(ctx, "observer claim", func(w *wtx) error {
		res = store.ObserverClaimResult{}
		var start int64 // a new registration's cursor
		if p.StartAtEnd {
			start = w.seq // the newest entry: sequence numbers are commit order
		}
		if _, err := w.exec(`INSERT IGNORE INTO backwave_observer (name, seen_at, cursor_seq) VALUES (?, ?, ?)`, p.Observer, micros(w.now), start); err != nil {
			return err
		}
		var cursor, token, until int64
		var holder string
		if err := w.row(`SELECT cursor_seq, holder, token, lease_until FROM backwave_observer WHERE name = ? FOR UPDATE`, p.Observer).
			Scan(&cursor, &holder, &token, &until); err != nil {
			return err
		}
		now := micros(w.now)
		if _, err := w.exec(`UPDATE backwave_observer SET seen_at = ? WHERE name = ?`, now, p.Observer); err != nil {
			return err
		}
		if holder != string(p.Holder) && holder != "" && now < until {
			return nil
		}
		if holder != string(p.Holder) || now >= until {
			token++
		}
		until = micros(w.now.Add(p.LeaseDuration))
		if _, err := w.exec(`UPDATE backwave_observer SET holder = ?, token = ?, lease_until = ? WHERE name = ?`,
			string(p.Holder), token, until, p.Observer); err != nil {
			return err
		}
		res = store.ObserverClaimResult{Held: true, Token: token,
			Cursor: store.ObserverPosition{Seq: cursor}, Through: store.ObserverPosition{Seq: cursor}}
		rows, err := w.query(`SELECT t.seq, t.job_id, j.wire_name, j.queue, t.at, t.from_state, t.state, t.via, t.attempt
			FROM backwave_transition t JOIN backwave_job j ON j.id = t.job_id
			WHERE t.seq > ? ORDER BY t.seq LIMIT ?`, cursor, p.Limit)
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		n := 0
		for rows.Next() {
			var o store.ObservedTransition
			var seq, jid, at, from, st, via, attempt int64
			if err := rows.Scan(&seq, &jid, &o.WireName, &o.Queue, &at, &from, &st, &via, &attempt); err != nil {
				return err
			}
			n++
			res.Through.Seq = seq
			if o.State, err = decode(stateCodes, "state", st); err != nil {
				return err
			}
			if !p.Declares(o.State) {
				continue
			}
			if o.From, err = decode(stateCodes, "state", from); err != nil {
				return err
			}
			if o.Via, err = decode(viaCodes, "via", via); err != nil {
				return err
			}
			o.Position, o.Job, o.At, o.Attempt = store.ObserverPosition{Seq: seq}, job.ID(jid), fromMicros(at), job.Attempt(attempt)
			res.Transitions = append(res.Transitions, o)
		}
		res.More = n == p.Limit
		return rows.Err()
	})
	return res, err
}

// ObserverAdvance moves the cursor and renews or releases the walk's
// Lease, fenced by holder and Token (store.Observers).
func (s *Store) ObserverAdvance(ctx context.Context, p store.ObserverAdvanceParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return s.write(ctx, "observer advance", func(w *wtx) error {
		var cursor, token, until int64
		var holder string
		err := w.row(`SELECT cursor_seq, holder, token, lease_until FROM backwave_observer WHERE name = ? FOR UPDATE`, p.Observer).
			Scan(&cursor, &holder, &token, &until)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("observer %q: %w", p.Observer, store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		now := micros(w.now)
		if holder != string(p.Holder) || token != p.Token || now >= until {
			return fmt.Errorf("observer %q: holder %s token %d: %w", p.Observer, p.Holder, p.Token, store.ErrStaleLease)
		}
		cursor = max(cursor, p.To.Seq)
		if p.Release {
			holder, until = "", 0
		} else {
			until = micros(w.now.Add(p.LeaseDuration))
		}
		_, err = w.exec(`UPDATE backwave_observer SET cursor_seq = ?, holder = ?, lease_until = ?, seen_at = ? WHERE name = ?`,
			cursor, holder, until, now, p.Observer)
		return err
	})
}

// ObserverRemove forgets the registration (store.Observers).
func (s *Store) ObserverRemove(ctx context.Context, observer string) error {
	if err := store.ValidateObserverName(observer); err != nil {
		return err
	}
	return s.write(ctx, "observer remove", func(w *wtx) error {
		res, err := w.exec(`DELETE FROM backwave_observer WHERE name = ?`, observer)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("observer %q: %w", observer, store.ErrNotFound)
		}
		return nil
	})
}
