package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// The fleet registry (store.Fleet): one FleetStamp is four statements sent
// as one batch, one round trip, in one transaction.
const (
	// fleetNowSQL reads the store's now, the stamp of the rows it writes.
	fleetNowSQL = `SELECT coalesce($1::timestamptz, now())`
	// fleetStampSQL stamps Pump $2 as handling each Wire Name of $3.
	fleetStampSQL = `INSERT INTO backwave.fleet_handler (worker, wire_name, stamped_at)
SELECT $2::text, n, coalesce($1::timestamptz, now()) FROM unnest($3::text[]) AS n
ON CONFLICT (worker, wire_name) DO UPDATE SET stamped_at = excluded.stamped_at`
	// fleetPruneSQL removes the Pump's rows of Wire Names it no longer
	// lists, and every other Pump's rows stamped before now − $4 µs that no
	// concurrent stamp holds (SKIP LOCKED: two stamps never wait for each
	// other's rows, and a row skipped now goes at a later stamp).
	fleetPruneSQL = `DELETE FROM backwave.fleet_handler f
WHERE (f.worker = $2::text AND f.wire_name <> ALL($3::text[]))
   OR f.ctid IN (SELECT o.ctid FROM backwave.fleet_handler o
                 WHERE o.worker <> $2::text
                   AND o.stamped_at < coalesce($1::timestamptz, now()) - $4::bigint * interval '1 microsecond'
                 FOR UPDATE SKIP LOCKED)`
	// fleetReadSQL reads the registry in Wire Name, then Pump order.
	fleetReadSQL = `SELECT worker, wire_name, stamped_at FROM backwave.fleet_handler
ORDER BY wire_name COLLATE "C", worker COLLATE "C"`
)

// FleetStamp records that p.Worker handles exactly p.WireNames, stamped
// with the store's now, removes every row stamped before now − p.Forget
// and returns the registry, in one transaction.
func (s *Store) FleetStamp(ctx context.Context, p store.FleetStampParams) (store.FleetView, error) {
	if err := p.Validate(); err != nil {
		return store.FleetView{}, err
	}
	if err := s.enter(ctx); err != nil {
		return store.FleetView{}, err
	}
	names := p.WireNames
	if names == nil {
		names = []string{}
	}
	var view store.FleetView
	now := s.nowArg()
	err := s.db.batch(ctx,
		stmt{sql: fleetNowSQL, args: []any{now}, each: func(scan scanFunc) error {
			var t time.Time
			if err := scan(&t); err != nil {
				return err
			}
			view.Now = t.UTC()
			return nil
		}},
		stmt{sql: s.sql(fleetStampSQL), args: []any{now, string(p.Worker), names}},
		stmt{sql: s.sql(fleetPruneSQL), args: []any{now, string(p.Worker), names, micros(p.Forget)}},
		stmt{sql: s.sql(fleetReadSQL), each: func(scan scanFunc) error {
			var h core.HandlerStamp
			var worker string
			if err := scan(&worker, &h.WireName, &h.StampedAt); err != nil {
				return err
			}
			h.Worker, h.StampedAt = job.WorkerID(worker), h.StampedAt.UTC()
			view.Handlers = append(view.Handlers, h)
			return nil
		}},
	)
	if err != nil {
		return store.FleetView{}, s.wrap(fmt.Sprintf("fleet stamp for %s", p.Worker), err)
	}
	return view, nil
}

// claimSkipSQL is claimSQL passing over the jobs of the Wire Names $7, in
// the due count and in the pick alike: the claim a non-empty
// store.ClaimParams.Skip runs. An empty Skip runs claimSQL itself.
var claimSkipSQL = withClaimSkip(claimSQL)

// withClaimSkip returns claim with the Skip filter added to its four
// due-job predicates. It panics if claim no longer has exactly those
// two: a broken invariant between two statements of this package, which
// the package's first test (or any program that imports it) reports.
func withClaimSkip(claim string) string {
	for _, p := range [...]string{
		`AND d.scheduled_at <= coalesce($1::timestamptz, now())`,
		`AND j.scheduled_at <= now.t`,
		`AND k.scheduled_at <= now.t`,
		`AND n.scheduled_at <= now.t`,
	} {
		if strings.Count(claim, p) != 1 {
			panic("postgres: the claim statement lost the due-job predicate the Skip filter extends: " + p)
		}
		alias := p[4:5]
		claim = strings.Replace(claim, p, p+" AND "+alias+".wire_name <> ALL($7::text[])", 1)
	}
	return claim
}

// claimStatement returns the claim statement for skip and its arguments:
// args as they are for an empty skip, else with skip as $7.
func claimStatement(skip []string, args []any) (string, []any) {
	if len(skip) == 0 {
		return claimSQL, args
	}
	return claimSkipSQL, append(args, skip)
}
