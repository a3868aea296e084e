package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// The fleet registry's statements (store.Fleet), and the claim's variant
// that skips Wire Names (store.ClaimParams.Skip).
const (
	// sqlFleetForget removes Pump ?1's rows.
	sqlFleetForget = `DELETE FROM backwave_fleet_handler WHERE worker = ?1`
	// sqlFleetStamp stamps Pump ?1 as handling each Wire Name of the JSON
	// array ?3 at ?2 (µs).
	sqlFleetStamp = `INSERT INTO backwave_fleet_handler (worker, wire_name, stamped_at)
	SELECT ?1, value, ?2 FROM json_each(?3)`
	// sqlFleetPrune removes every row stamped before ?1 (µs).
	sqlFleetPrune = `DELETE FROM backwave_fleet_handler WHERE stamped_at < ?1`
	// sqlFleetRead reads the registry in Wire Name, then Pump order.
	sqlFleetRead = `SELECT worker, wire_name, stamped_at FROM backwave_fleet_handler ORDER BY wire_name, worker`
	// sqlClaimSkip is the one change a claim with a Skip list makes to
	// sqlClaimDue: jobs of the Wire Names of the JSON array ?4 are passed
	// over.
	sqlClaimSkip = ` AND j.wire_name NOT IN (SELECT value FROM json_each(?4))`
)

// fleetQueries are the fleet registry's statements renamed to one Schema
// Name, with the skipping claim.
type fleetQueries struct {
	forget, stamp, prune, read, claimDueSkip string
}

func newFleetQueries(n schemaName) fleetQueries {
	r := n.Rename
	return fleetQueries{
		forget: r(sqlFleetForget), stamp: r(sqlFleetStamp), prune: r(sqlFleetPrune), read: r(sqlFleetRead),
		claimDueSkip: r(withClaimSkip(sqlClaimDue)),
	}
}

// withClaimSkip returns the due-jobs query claimDue with the Skip filter
// added to its WHERE clause. It panics if claimDue no longer has the
// clause it extends: a broken invariant between two constants of this
// package, which every test run catches at Open.
func withClaimSkip(claimDue string) string {
	const where = `AND j.scheduled_at <= ?2`
	i := strings.Index(claimDue, where)
	if i < 0 || strings.Count(claimDue, where) != 1 {
		panic("sqlite: the claim's due-jobs query has no single scheduled_at clause to extend with Skip")
	}
	i += len(where)
	return claimDue[:i] + sqlClaimSkip + claimDue[i:]
}

// claimDueRows reads up to room due jobs of Queue name at now, passing over
// the Wire Names of skip: the claim's statement of old when skip is empty.
func (s *Store) claimDueRows(ctx context.Context, tx *sql.Tx, name string, now time.Time, room int, skip []string) (*sql.Rows, error) {
	if len(skip) == 0 {
		return s.query(ctx, tx, s.q.claimDue, name, micros(now), room)
	}
	names, err := json.Marshal(skip)
	if err != nil {
		return nil, fmt.Errorf("encode skipped wire names: %w", err)
	}
	return s.query(ctx, tx, s.q.fleet.claimDueSkip, name, micros(now), room, string(names))
}

// FleetStamp records that p.Worker handles exactly p.WireNames, stamped
// with the store's now, removes every row stamped before now − p.Forget
// and returns the registry, in one write transaction.
func (s *Store) FleetStamp(ctx context.Context, p store.FleetStampParams) (store.FleetView, error) {
	if err := p.Validate(); err != nil {
		return store.FleetView{}, err
	}
	names, err := json.Marshal(append([]string{}, p.WireNames...)) // never null
	if err != nil {
		return store.FleetView{}, fmt.Errorf("sqlite: fleet stamp: encode wire names: %w", err)
	}
	var view store.FleetView
	err = s.write(ctx, "fleet stamp", func(tx *sql.Tx) error {
		now := s.clock.Now()
		view = store.FleetView{Now: now}
		if _, err := s.exec(ctx, tx, s.q.fleet.forget, string(p.Worker)); err != nil {
			return fmt.Errorf("forget the worker's stamps: %w", err)
		}
		if _, err := s.exec(ctx, tx, s.q.fleet.stamp, string(p.Worker), micros(now), string(names)); err != nil {
			return fmt.Errorf("stamp: %w", err)
		}
		if _, err := s.exec(ctx, tx, s.q.fleet.prune, micros(now.Add(-p.Forget))); err != nil {
			return fmt.Errorf("prune: %w", err)
		}
		rows, err := s.query(ctx, tx, s.q.fleet.read)
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var worker, wire string
			var at int64
			if err := rows.Scan(&worker, &wire, &at); err != nil {
				return fmt.Errorf("read: %w", err)
			}
			view.Handlers = append(view.Handlers, core.HandlerStamp{Worker: job.WorkerID(worker), WireName: wire, StampedAt: fromMicros(at)})
		}
		return rows.Err()
	})
	if err != nil {
		return store.FleetView{}, err
	}
	return view, nil
}
