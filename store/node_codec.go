package store

import (
	"encoding/json"
	"fmt"
	"time"
)

// EncodeNodeGroups is the stored form of a node's Worker Groups, the one
// every SQL adapter writes: a JSON array of {"name","queues"}, never null.
func EncodeNodeGroups(gs []NodeGroup) (string, error) {
	if gs == nil {
		gs = []NodeGroup{}
	}
	b, err := json.Marshal(gs)
	if err != nil {
		return "", fmt.Errorf("encode worker groups: %w", err)
	}
	return string(b), nil
}

// DecodeNodeGroups reads what EncodeNodeGroups wrote.
func DecodeNodeGroups(s string) ([]NodeGroup, error) {
	var gs []NodeGroup
	if err := json.Unmarshal([]byte(s), &gs); err != nil {
		return nil, fmt.Errorf("decode worker groups %s: %w", Echo(s), err)
	}
	if len(gs) == 0 {
		return nil, nil
	}
	return gs, nil
}

// ScanNodeMicros reads one node registry row as the adapters that keep
// times and the beat as µs since the Unix epoch store it (SQLite, MariaDB):
// scan fills id, host, pid, version, worker_groups, running, beat,
// started_at and heartbeat_at, in that order.
func ScanNodeMicros(scan func(dest ...any) error) (NodeRecord, error) {
	var r NodeRecord
	var groups string
	var beat, started, beatAt int64
	if err := scan(&r.ID, &r.Host, &r.PID, &r.Version, &groups, &r.Running, &beat, &started, &beatAt); err != nil {
		return NodeRecord{}, err
	}
	gs, err := DecodeNodeGroups(groups)
	if err != nil {
		return NodeRecord{}, fmt.Errorf("node %s: %w", r.ID, err)
	}
	r.Groups, r.Beat = gs, time.Duration(beat)*time.Microsecond
	r.StartedAt, r.HeartbeatAt = time.UnixMicro(started).UTC(), time.UnixMicro(beatAt).UTC()
	return r, nil
}
