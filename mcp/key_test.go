package mcp

import (
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/backwave/backwave"
)

// callKeyTools calls the Concurrency Key tools of TestCallEveryTool: each
// write audited under the caller's Actor, and the Queue's policy after it.
func callKeyTools(t *testing.T, cs *sdk.ClientSession, do func(string) string, actor string, auditHas func(backwave.AuditAction, backwave.JobID)) {
	t.Helper()
	for _, tc := range []struct {
		tool   string
		args   map[string]any
		action backwave.AuditAction
		policy string
	}{
		{"queue_set_key_limit", map[string]any{"queue": mailQueue, "limit": 2}, backwave.AuditQueueSetKeyLimit, "key limit 2"},
		{"queue_set_key_rate", map[string]any{"queue": mailQueue, "limit": 5, "period": "1m"}, backwave.AuditQueueSetKeyRate, "key limit 2, key rate 5/1m0s"},
		{"queue_set_fair_claim", map[string]any{"queue": mailQueue, "on": true}, backwave.AuditQueueSetFairClaim, "key limit 2, key rate 5/1m0s, fair"},
		{"queue_set_key_rate", map[string]any{"queue": mailQueue, "limit": 0}, backwave.AuditQueueSetKeyRate, "key limit 2, fair"},
		{"queue_set_key_limit", map[string]any{"queue": mailQueue, "limit": 0}, backwave.AuditQueueSetKeyLimit, "fair"},
	} {
		r := mustCall[keyActionResult](t, cs, do(tc.tool), tc.args)
		if r.Actor != actor || r.Queue != mailQueue || r.Keys != tc.policy {
			t.Errorf("%s %v: %+v, want policy %q", tc.tool, tc.args, r, tc.policy)
		}
		auditHas(tc.action, 0)
	}
	keys := mustCall[queueKeysResult](t, cs, do("queue_keys"), map[string]any{"queue": mailQueue})
	if len(keys.Keys) == 0 {
		t.Errorf("queue_keys of %s: %+v", mailQueue, keys)
	}
}
