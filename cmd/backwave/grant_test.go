package main

import (
	"testing"

	"github.com/backwave/backwave/permission"
)

// TestGrantsText: the start line of the dashboard and the MCP Server says
// what they grant and names, ready to paste, the --allow that grants the
// rest.
func TestGrantsText(t *testing.T) {
	t.Parallel()
	var all []permission.Permission
	for _, p := range permission.All() {
		if p != permission.View {
			all = append(all, p)
		}
	}
	for _, tc := range []struct {
		name    string
		allowed []permission.Permission
		want    string
	}{
		{"read-only", nil, "grants View; restart with --allow ViewSensitiveData,Requeue,Cancel,TriggerSchedule,PauseQueue,Enqueue,Delete to grant the rest"},
		{"some", []permission.Permission{permission.Cancel, permission.Requeue}, "grants View, Requeue, Cancel; restart with --allow ViewSensitiveData,TriggerSchedule,PauseQueue,Enqueue,Delete to grant the rest"},
		{"all", all, "grants View, ViewSensitiveData, Requeue, Cancel, TriggerSchedule, PauseQueue, Enqueue, Delete"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := grantsText(tc.allowed); got != tc.want {
				t.Errorf("grantsText(%v)\n got %q\nwant %q", tc.allowed, got, tc.want)
			}
		})
	}
}
