package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// The Transition Observer walk, and the horizon that keeps it in commit
// order.
//
// A Transition Log entry's seq comes from an identity sequence, drawn when
// the row is inserted, long before its transaction commits: transaction A
// may draw seq 5, transaction B seq 6, and B commit first. A walk that
// delivered "seq > cursor" would deliver 6, move its cursor to 6, and never
// see 5. So every entry also records the id of the transaction that wrote
// it (the xid column, default pg_current_xact_id()), and the walk goes in
// (xid, seq) order and delivers only entries with
//
//	xid < pg_snapshot_xmin(pg_current_snapshot())
//
// the horizon. The rule holds because (1) every transaction with an xid
// below the horizon has ended, so each of its entries is committed and
// visible, or rolled back and never will be; and (2) every entry still to
// commit has an xid at or above the horizon — its transaction is running
// (so its xid is at or above the snapshot's xmin) or has not yet taken an
// xid (so it will get one above every xid handed out so far). An entry
// still to come therefore lies after every entry the walk delivered, and a
// cursor never passes one. The price is latency: while any transaction of
// the cluster that took an xid stays open, entries of younger transactions
// wait for it to end (a long-running transaction holds deliveries back,
// never loses one).
//
// Entries written before the xid column existed read as xid 0: all of them
// committed before the migration's ALTER took its lock.
const (
	// observerUpsertSQL registers $2 if new — at the beginning of the log,
	// or with $3 at its end: the last entry a walk could read now, below
	// the horizon — and stamps it seen.
	observerUpsertSQL = `WITH tail AS (
    SELECT coalesce(t.xid, '0'::xid8) AS xid, t.seq FROM backwave.job_transition t
    WHERE $3::boolean AND coalesce(t.xid, '0'::xid8) < pg_snapshot_xmin(pg_current_snapshot())
    ORDER BY coalesce(t.xid, '0'::xid8) DESC, t.seq DESC LIMIT 1)
INSERT INTO backwave.observer AS o (name, seen_at, cursor_xid, cursor_seq)
SELECT $2, coalesce($1::timestamptz, now()), coalesce((SELECT xid FROM tail), '0'::xid8), coalesce((SELECT seq FROM tail), 0)
ON CONFLICT (name) DO UPDATE SET seen_at = excluded.seen_at
RETURNING o.cursor_xid::text, o.cursor_seq, o.holder, o.token, o.lease_expires_at, o.seen_at`
	observerTakeSQL = `UPDATE backwave.observer SET holder = $2, token = $3,
    lease_expires_at = coalesce($1::timestamptz, now()) + $4::bigint * interval '1 microsecond'
WHERE name = $5`
	// observerWalkSQL reads the next $3 entries past the cursor below the
	// horizon; only those of a declared state ($4) are joined with their
	// job.
	observerWalkSQL = `WITH scan AS (
    SELECT coalesce(t.xid, '0'::xid8) AS xid, t.seq, t.job_id, t.at, t.from_state, t.state, t.via, t.attempt
    FROM backwave.job_transition t
    WHERE (coalesce(t.xid, '0'::xid8), t.seq) > ($1::text::xid8, $2::bigint)
      AND coalesce(t.xid, '0'::xid8) < pg_snapshot_xmin(pg_current_snapshot())
    ORDER BY coalesce(t.xid, '0'::xid8), t.seq
    LIMIT $3)
SELECT s.xid::text, s.seq, s.job_id, s.at, s.from_state, s.state, s.via, s.attempt, coalesce(j.wire_name, ''), coalesce(j.queue, '')
FROM scan s LEFT JOIN backwave.job j ON j.id = s.job_id AND s.state = ANY($4::text[])
ORDER BY s.xid, s.seq`
	observerLockSQL = `SELECT cursor_xid::text, cursor_seq, holder, token, lease_expires_at, coalesce($1::timestamptz, now())
FROM backwave.observer WHERE name = $2 FOR UPDATE`
	observerAdvanceSQL = `UPDATE backwave.observer SET cursor_xid = $3::text::xid8, cursor_seq = $4, holder = $5,
    lease_expires_at = CASE WHEN $5 = '' THEN NULL
        ELSE coalesce($1::timestamptz, now()) + $6::bigint * interval '1 microsecond' END,
    seen_at = coalesce($1::timestamptz, now())
WHERE name = $2`
	observerRemoveSQL = `DELETE FROM backwave.observer WHERE name = $1`
)

// ObserverClaim registers the observer if new, takes or renews the walk's
// Lease for p.Holder and reads up to p.Limit entries past the cursor below
// the horizon, in one transaction.
func (s *Store) ObserverClaim(ctx context.Context, p store.ObserverClaimParams) (store.ObserverClaimResult, error) {
	if err := s.enter(ctx); err != nil {
		return store.ObserverClaimResult{}, err
	}
	if err := p.Validate(); err != nil {
		return store.ObserverClaimResult{}, err
	}
	var res store.ObserverClaimResult
	err := s.db.inTx(ctx, func(q querier) error {
		res = store.ObserverClaimResult{}
		var (
			cxid, holder string
			cseq, token  int64
			expiry       *time.Time
			now          time.Time
		)
		err := q.query(ctx, s.sql(observerUpsertSQL), []any{s.nowArg(), p.Observer, p.StartAtEnd}, func(scan scanFunc) error {
			return scan(&cxid, &cseq, &holder, &token, &expiry, &now)
		})
		if err != nil {
			return err
		}
		live := expiry != nil && now.Before(*expiry)
		if holder != string(p.Holder) && holder != "" && live {
			return nil
		}
		if holder != string(p.Holder) || !live {
			token++
		}
		if _, err := q.exec(ctx, s.sql(observerTakeSQL), s.nowArg(), string(p.Holder), token, micros(p.LeaseDuration), p.Observer); err != nil {
			return err
		}
		commit, err := strconv.ParseUint(cxid, 10, 64)
		if err != nil {
			return fmt.Errorf("observer %q: cursor xid %q: %w", p.Observer, cxid, err)
		}
		res.Held, res.Token = true, token
		res.Cursor = store.ObserverPosition{Commit: commit, Seq: cseq}
		res.Through = res.Cursor
		states := make([]string, len(p.States))
		for i, st := range p.States {
			states[i] = st.String()
		}
		n := 0
		return q.query(ctx, s.sql(observerWalkSQL), []any{cxid, cseq, int32(p.Limit), states}, func(scan scanFunc) error {
			n++
			res.More = n == p.Limit
			var (
				xid, from, to, via string
				ot                 store.ObservedTransition
				id                 int64
			)
			if err := scan(&xid, &ot.Position.Seq, &id, &ot.At, &from, &to, &via, &ot.Attempt, &ot.WireName, &ot.Queue); err != nil {
				return err
			}
			if ot.Position.Commit, err = strconv.ParseUint(xid, 10, 64); err != nil {
				return fmt.Errorf("transition %d: xid %q: %w", ot.Position.Seq, xid, err)
			}
			res.Through = ot.Position
			if ot.State, err = job.ParseState(to); err != nil {
				return err
			}
			if !p.Declares(ot.State) {
				return nil
			}
			if from != job.StateUnknown.String() {
				if ot.From, err = job.ParseState(from); err != nil {
					return err
				}
			}
			if ot.Via, err = parseVia(via); err != nil {
				return err
			}
			ot.Job, ot.At = job.ID(id), ot.At.UTC()
			res.Transitions = append(res.Transitions, ot)
			return nil
		})
	})
	if err != nil {
		return store.ObserverClaimResult{}, s.wrap(fmt.Sprintf("claim the walk of observer %q", p.Observer), err)
	}
	return res, nil
}

// ObserverAdvance moves the cursor forward and renews or releases the
// walk's Lease, fenced by holder and Token, in one transaction.
func (s *Store) ObserverAdvance(ctx context.Context, p store.ObserverAdvanceParams) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	if err := p.Validate(); err != nil {
		return err
	}
	err := s.db.inTx(ctx, func(q querier) error {
		var (
			cxid, holder string
			cseq, token  int64
			expiry       *time.Time
			now          time.Time
			found        bool
		)
		err := q.query(ctx, s.sql(observerLockSQL), []any{s.nowArg(), p.Observer}, func(scan scanFunc) error {
			found = true
			return scan(&cxid, &cseq, &holder, &token, &expiry, &now)
		})
		if err != nil {
			return err
		}
		if !found {
			return store.ErrNotFound
		}
		if holder != string(p.Holder) || token != p.Token || expiry == nil || !now.Before(*expiry) {
			return fmt.Errorf("holder %s token %d: %w", p.Holder, p.Token, store.ErrStaleLease)
		}
		commit, err := strconv.ParseUint(cxid, 10, 64)
		if err != nil {
			return fmt.Errorf("cursor xid %q: %w", cxid, err)
		}
		to := store.ObserverPosition{Commit: commit, Seq: cseq}
		if to.Before(p.To) {
			to = p.To
		}
		if p.Release {
			holder = ""
		}
		_, err = q.exec(ctx, s.sql(observerAdvanceSQL), s.nowArg(), p.Observer, strconv.FormatUint(to.Commit, 10), to.Seq, holder, micros(p.LeaseDuration))
		return err
	})
	return s.wrap(fmt.Sprintf("advance the walk of observer %q", p.Observer), err)
}

// ObserverRemove forgets the registration.
func (s *Store) ObserverRemove(ctx context.Context, observer string) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	if err := store.ValidateObserverName(observer); err != nil {
		return err
	}
	n, err := s.db.exec(ctx, s.sql(observerRemoveSQL), observer)
	if err != nil {
		return s.wrap(fmt.Sprintf("remove observer %q", observer), err)
	}
	if n == 0 {
		return fmt.Errorf("postgres: observer %q: %w", observer, store.ErrNotFound)
	}
	return nil
}

// observedFloorSQL reads the lowest cursor of a live registration (one
// seen within $2 microseconds): retention keeps every job holding an entry
// past it.
const observedFloorSQL = `SELECT cursor_xid::text, cursor_seq FROM backwave.observer
WHERE seen_at > coalesce($1::timestamptz, now()) - $2::bigint * interval '1 microsecond'
ORDER BY cursor_xid, cursor_seq LIMIT 1`

// purgePickObservedSQL is purgePickSQL keeping, besides, every job holding
// an entry past the floor ($5, $6).
var purgePickObservedSQL = strings.Replace(purgePickSQL,
	"AND NOT EXISTS (SELECT 1 FROM backwave.job_dependency d WHERE d.parent_id = j.id)",
	`AND NOT EXISTS (SELECT 1 FROM backwave.job_dependency d WHERE d.parent_id = j.id)
      AND NOT EXISTS (SELECT 1 FROM backwave.job_transition t
                      WHERE t.job_id = j.id AND (coalesce(t.xid, '0'::xid8), t.seq) > ($5::text::xid8, $6::bigint))`, 1)

// purgePick returns the retention pick statement and its args: purgePickSQL
// while no Transition Observer registration is live, purgePickObservedSQL
// with the floor appended otherwise.
func (s *Store) purgePick(ctx context.Context, q querier, args []any) (string, []any, error) {
	var (
		xid   string
		seq   int64
		found bool
	)
	err := q.query(ctx, s.sql(observedFloorSQL), []any{s.nowArg(), store.ObserverRemoveAfter.Microseconds()}, func(scan scanFunc) error {
		found = true
		return scan(&xid, &seq)
	})
	if err != nil {
		return "", nil, fmt.Errorf("read the observers' floor: %w", err)
	}
	if !found {
		return s.sql(purgePickSQL), args, nil
	}
	return s.sql(purgePickObservedSQL), append(args, xid, seq), nil
}

// History returns the Job History Policy the store records under.
func (s *Store) History() store.HistoryPolicy { return s.opts.History }
