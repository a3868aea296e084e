package mariadb

import (
	"context"
	"fmt"

	"github.com/backwave/backwave/core"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// FleetStamp records the Wire Names p.Worker handles, forgets rows older
// than p.Forget, and returns the registry (store.Fleet).
func (s *Store) FleetStamp(ctx context.Context, p store.FleetStampParams) (store.FleetView, error) {
	if err := p.Validate(); err != nil {
		return store.FleetView{}, err
	}
	var view store.FleetView
	err := s.write(ctx, "fleet stamp", func(w *wtx) error {
		view = store.FleetView{Now: w.now}
		if _, err := w.exec(`DELETE FROM backwave_fleet WHERE worker = ?`, string(p.Worker)); err != nil {
			return err
		}
		for _, name := range p.WireNames {
			if _, err := w.exec(`INSERT INTO backwave_fleet (worker, wire_name, at) VALUES (?, ?, ?)`, string(p.Worker), name, micros(w.now)); err != nil {
				return fmt.Errorf("stamp %q: %w", name, err)
			}
		}
		if _, err := w.exec(`DELETE FROM backwave_fleet WHERE at < ?`, micros(w.now.Add(-p.Forget))); err != nil {
			return err
		}
		rows, err := w.query(`SELECT worker, wire_name, at FROM backwave_fleet ORDER BY wire_name, worker`)
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var h core.HandlerStamp
			var worker string
			var at int64
			if err := rows.Scan(&worker, &h.WireName, &at); err != nil {
				return err
			}
			h.Worker, h.StampedAt = job.WorkerID(worker), fromMicros(at)
			view.Handlers = append(view.Handlers, h)
		}
		return rows.Err()
	})
	return view, err
}
