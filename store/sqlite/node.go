package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/backwave/backwave/store"
)

// The node registry's statements (store.Nodes).
const (
	// sqlNodeStamp writes node ?1's row with heartbeat ?9 (µs); a first
	// stamp also sets started_at to ?9.
	sqlNodeStamp = `INSERT INTO backwave_node (id, host, pid, version, worker_groups, running, beat, started_at, heartbeat_at)
	VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)
	ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid, version = excluded.version,
		worker_groups = excluded.worker_groups, running = excluded.running, beat = excluded.beat,
		heartbeat_at = excluded.heartbeat_at`
	// sqlNodePrune removes every row whose heartbeat is before ?1 (µs).
	sqlNodePrune = `DELETE FROM backwave_node WHERE heartbeat_at < ?1`
	// sqlNodeRemove removes node ?1's row.
	sqlNodeRemove = `DELETE FROM backwave_node WHERE id = ?1`
	// sqlNodeList reads the registry in id order.
	sqlNodeList = `SELECT id, host, pid, version, worker_groups, running, beat, started_at, heartbeat_at
	FROM backwave_node ORDER BY id`
)

// nodeQueries are the node registry's statements renamed to one Schema
// Name.
type nodeQueries struct {
	stamp, prune, remove, list string
}

func newNodeQueries(n schemaName) nodeQueries {
	r := n.Rename
	return nodeQueries{stamp: r(sqlNodeStamp), prune: r(sqlNodePrune), remove: r(sqlNodeRemove), list: r(sqlNodeList)}
}

// NodeStamp writes p.ID's row with a heartbeat of the store's now, removes
// the rows older than p.Forget and returns that now, in one write
// transaction.
func (s *Store) NodeStamp(ctx context.Context, p store.NodeStampParams) (time.Time, error) {
	if err := p.Validate(); err != nil {
		return time.Time{}, err
	}
	groups, err := store.EncodeNodeGroups(p.Groups)
	if err != nil {
		return time.Time{}, fmt.Errorf("sqlite: node stamp: %w", err)
	}
	var now time.Time
	err = s.write(ctx, "node stamp", func(tx *sql.Tx) error {
		now = s.clock.Now()
		if _, err := s.exec(ctx, tx, s.q.node.stamp, p.ID, p.Host, p.PID, p.Version, groups, p.Running,
			p.Beat.Microseconds(), micros(now)); err != nil {
			return fmt.Errorf("stamp: %w", err)
		}
		if _, err := s.exec(ctx, tx, s.q.node.prune, micros(now.Add(-p.Forget))); err != nil {
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
	return s.write(ctx, "node remove", func(tx *sql.Tx) error {
		_, err := s.exec(ctx, tx, s.q.node.remove, id)
		return err
	})
}

// NodeList reads the node registry, with the store's now, in one read
// transaction.
func (s *Store) NodeList(ctx context.Context) (store.NodeView, error) {
	var v store.NodeView
	err := s.read(ctx, "node list", func(tx *sql.Tx) error {
		v = store.NodeView{Now: s.clock.Now()}
		rows, err := s.query(ctx, tx, s.q.node.list)
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
