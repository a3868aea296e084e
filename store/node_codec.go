package store

import (
	"encoding/json"
	"fmt"
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
