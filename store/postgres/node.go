package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/backwave/backwave/store"
)

// The node registry (store.Nodes): a stamp is one statement.
const (
	// nodeStampSQL writes node $2's row with a heartbeat of the store's
	// now (a first stamp also sets started_at), removes every other row
	// whose heartbeat is before now − $9 µs that no concurrent stamp holds
	// (SKIP LOCKED: two stamps never wait for each other's rows, and a row
	// skipped now goes at a later stamp), and answers that now.
	nodeStampSQL = `WITH now AS (SELECT coalesce($1::timestamptz, now()) AS t),
up AS (
    INSERT INTO backwave.node (id, host, pid, version, worker_groups, running, beat, started_at, heartbeat_at)
    SELECT $2::text, $3::text, $4::bigint, $5::text, $6::text, $7::bigint, $8::bigint, now.t, now.t FROM now
    ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid, version = excluded.version,
        worker_groups = excluded.worker_groups, running = excluded.running, beat = excluded.beat,
        heartbeat_at = excluded.heartbeat_at),
gone AS (
    DELETE FROM backwave.node n
    WHERE n.id IN (SELECT o.id FROM backwave.node o, now
                   WHERE o.id <> $2::text AND o.heartbeat_at < now.t - $9::bigint * interval '1 microsecond'
                   FOR UPDATE OF o SKIP LOCKED))
SELECT t FROM now`
	// nodeRemoveSQL removes node $1's row.
	nodeRemoveSQL = `DELETE FROM backwave.node WHERE id = $1::text`
	// nodeListSQL reads the registry in id order, with the store's now.
	nodeListSQL = `SELECT n.id, n.host, n.pid, n.version, n.worker_groups, n.running, n.beat, n.started_at, n.heartbeat_at
FROM backwave.node n ORDER BY n.id COLLATE "C"`
	// nodeNowSQL reads the store's now.
	nodeNowSQL = `SELECT coalesce($1::timestamptz, now())`
)

// NodeStamp writes p.ID's row with a heartbeat of the store's now, removes
// the rows older than p.Forget and returns that now, in one statement.
func (s *Store) NodeStamp(ctx context.Context, p store.NodeStampParams) (time.Time, error) {
	if err := p.Validate(); err != nil {
		return time.Time{}, err
	}
	groups, err := store.EncodeNodeGroups(p.Groups)
	if err != nil {
		return time.Time{}, fmt.Errorf("postgres: node stamp: %w", err)
	}
	if err := s.enter(ctx); err != nil {
		return time.Time{}, err
	}
	var now time.Time
	err = s.db.query(ctx, s.sql(nodeStampSQL), []any{s.nowArg(), p.ID, p.Host, int64(p.PID), p.Version, groups,
		int64(p.Running), p.Beat.Microseconds(), micros(p.Forget)}, func(scan scanFunc) error {
		return scan(&now)
	})
	if err != nil {
		return time.Time{}, s.wrap("node stamp for "+p.ID, err)
	}
	return now.UTC(), nil
}

// NodeRemove removes node id's row.
func (s *Store) NodeRemove(ctx context.Context, id string) error {
	if err := store.ValidateNodeID(id); err != nil {
		return err
	}
	if err := s.enter(ctx); err != nil {
		return err
	}
	if _, err := s.db.exec(ctx, s.sql(nodeRemoveSQL), id); err != nil {
		return s.wrap("node remove "+id, err)
	}
	return nil
}

// NodeList reads the node registry and then the store's now, in one batch:
// read in that order, no heartbeat listed is after the now (a stamp that
// commits between the two reads is not listed).
func (s *Store) NodeList(ctx context.Context) (store.NodeView, error) {
	if err := s.enter(ctx); err != nil {
		return store.NodeView{}, err
	}
	var v store.NodeView
	err := s.db.batch(ctx,
		stmt{sql: s.sql(nodeListSQL), each: func(scan scanFunc) error {
			var r store.NodeRecord
			var groups string
			var pid, running, beat int64
			if err := scan(&r.ID, &r.Host, &pid, &r.Version, &groups, &running, &beat, &r.StartedAt, &r.HeartbeatAt); err != nil {
				return err
			}
			gs, err := store.DecodeNodeGroups(groups)
			if err != nil {
				return fmt.Errorf("node %s: %w", r.ID, err)
			}
			r.Groups, r.PID, r.Running, r.Beat = gs, int(pid), int(running), time.Duration(beat)*time.Microsecond
			r.StartedAt, r.HeartbeatAt = r.StartedAt.UTC(), r.HeartbeatAt.UTC()
			v.Nodes = append(v.Nodes, r)
			return nil
		}},
		stmt{sql: nodeNowSQL, args: []any{s.nowArg()}, each: func(scan scanFunc) error {
			if err := scan(&v.Now); err != nil {
				return err
			}
			v.Now = v.Now.UTC()
			return nil
		}},
	)
	if err != nil {
		return store.NodeView{}, s.wrap("node list", err)
	}
	return v, nil
}
