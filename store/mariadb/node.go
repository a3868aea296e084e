package mariadb

import (
	"context"
	"fmt"
	"time"

	"github.com/backwave/backwave/store"
)

// The node registry's statements (store.Nodes).
const (
	// nodeStampSQL writes a node's row; a first stamp also sets
	// started_at to the heartbeat.
	nodeStampSQL = `INSERT INTO backwave_node (id, host, pid, version, worker_groups, running, beat, started_at, heartbeat_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
ON DUPLICATE KEY UPDATE host = VALUES(host), pid = VALUES(pid), version = VALUES(version),
	worker_groups = VALUES(worker_groups), running = VALUES(running), beat = VALUES(beat),
	heartbeat_at = VALUES(heartbeat_at)`
	// nodeListSQL reads the registry in id order.
	nodeListSQL = `SELECT id, host, pid, version, worker_groups, running, beat, started_at, heartbeat_at
FROM backwave_node ORDER BY id`
)

// NodeStamp writes p.ID's row with a heartbeat of the store's now, removes
// the rows older than p.Forget and returns that now, in one write
// transaction.
func (s *Store) NodeStamp(ctx context.Context, p store.NodeStampParams) (time.Time, error) {
	if err := p.Validate(); err != nil {
		return time.Time{}, err
	}
	groups, err := store.EncodeNodeGroups(p.Groups)
	if err != nil {
		return time.Time{}, fmt.Errorf("mariadb: node stamp: %w", err)
	}
	var now time.Time
	err = s.write(ctx, "node stamp", func(w *wtx) error {
		now = w.now
		at := micros(w.now)
		if _, err := w.exec(nodeStampSQL, p.ID, p.Host, p.PID, p.Version, groups, p.Running, p.Beat.Microseconds(), at, at); err != nil {
			return fmt.Errorf("stamp: %w", err)
		}
		if _, err := w.exec(`DELETE FROM backwave_node WHERE heartbeat_at < ?`, micros(w.now.Add(-p.Forget))); err != nil {
			return fmt.Errorf("prune: %w", err)
		}
		return nil
	})
	if err != nil {
		return time.Time{}, err
	}
	return now, nil
}

// NodeRemove removes node id's row.
func (s *Store) NodeRemove(ctx context.Context, id string) error {
	if err := store.ValidateNodeID(id); err != nil {
		return err
	}
	return s.write(ctx, "node remove", func(w *wtx) error {
		_, err := w.exec(`DELETE FROM backwave_node WHERE id = ?`, id)
		return err
	})
}

// NodeList reads the node registry with the store's now, in one read
// transaction.
func (s *Store) NodeList(ctx context.Context) (store.NodeView, error) {
	var v store.NodeView
	err := s.read(ctx, "node list", func(q querier, now time.Time) error {
		v = store.NodeView{Now: now}
		rows, err := q.QueryContext(ctx, nodeListSQL)
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			r, err := store.ScanNodeMicros(rows.Scan)
			if err != nil {
				return err
			}
			v.Nodes = append(v.Nodes, r)
		}
		return rows.Err()
	})
	if err != nil {
		return store.NodeView{}, err
	}
	return v, nil
}
