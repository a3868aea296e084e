// Package permission names the Dashboard Permissions and the host
// callbacks that grant them, shared by every operator surface (the
// dashboard and the MCP Server) so each gates the same Operator Action
// the same way.
//
// BackWave never owns users or roles: a Policy delegates each decision to
// the host application's own authorization, and names the Actor recorded
// on every write. The surfaces attach the incoming *http.Request to the
// context they pass to the callbacks (see Request), so a host callback can
// read its session, its headers or the user its middleware placed in the
// request's context.
package permission

import (
	"context"
	"fmt"
	"net/http"
)

// Permission is one of the fixed set of Dashboard Permissions.
type Permission uint8

// The Dashboard Permissions (glossary, Dashboard Permission).
const (
	// View allows the Monitor reads: jobs, counts, Queues, schedules, the
	// audit trail, without the raw content ViewSensitiveData gates.
	View Permission = iota + 1
	// ViewSensitiveData allows reading job payload bytes, Failure Detail
	// and Job Output, which may carry secrets or personal data.
	ViewSensitiveData
	// Requeue allows requeuing a Dead-Lettered or Quarantined job, and
	// rescheduling a waiting one.
	Requeue
	// Cancel allows cancelling a live job.
	Cancel
	// TriggerSchedule allows triggering a Recurring Schedule now,
	// pausing, resuming and removing it.
	TriggerSchedule
	// PauseQueue allows pausing and resuming a Queue, changing its
	// settings (Concurrency Limit, key policy) and removing an empty one.
	PauseQueue
	// Enqueue allows an operator to enqueue a job by hand (Wire Name,
	// Queue, JSON payload, due time): new work of the operator's choosing,
	// which none of the other Permissions grants. Beyond the glossary's
	// six, as the operator-experience work asks.
	Enqueue
	// Delete allows removing a terminal job, with everything stored beside
	// it, before retention would: the one Operator Action that destroys
	// data, which none of the other Permissions grants.
	Delete
)

var permissionNames = [...]string{
	View:              "View",
	ViewSensitiveData: "ViewSensitiveData",
	Requeue:           "Requeue",
	Cancel:            "Cancel",
	TriggerSchedule:   "TriggerSchedule",
	PauseQueue:        "PauseQueue",
	Enqueue:           "Enqueue",
	Delete:            "Delete",
}

// All returns every Permission, in declaration order.
func All() []Permission {
	return []Permission{View, ViewSensitiveData, Requeue, Cancel, TriggerSchedule, PauseQueue, Enqueue, Delete}
}

// String returns the Permission's glossary name.
func (p Permission) String() string {
	if p >= View && int(p) < len(permissionNames) {
		return permissionNames[p]
	}
	return fmt.Sprintf("Permission(%d)", uint8(p))
}

// Parse returns the Permission its glossary name names.
func Parse(s string) (Permission, error) {
	for _, p := range All() {
		if p.String() == s {
			return p, nil
		}
	}
	return 0, fmt.Errorf("permission: unknown permission %q", s)
}

// Action is one audited Operator Action an operator surface can take.
type Action uint8

// The Operator Actions, each gated by exactly one Permission (see
// Action.Permission).
const (
	ActionRequeue Action = iota + 1
	ActionCancel
	ActionReschedule
	ActionTriggerSchedule
	ActionPauseSchedule
	ActionResumeSchedule
	ActionRemoveSchedule
	ActionPauseQueue
	ActionResumeQueue
	ActionSetQueueLimit
	// ActionCancelWorkflow cancels every live member of a Workflow; gated
	// by Cancel, as cancelling one job is.
	ActionCancelWorkflow
	// ActionRestartWorkflow creates a Workflow Restart; gated by Requeue:
	// like a requeue it makes failed work run again, and it creates jobs
	// only from a stored definition, never new work of the caller's.
	ActionRestartWorkflow
	// ActionRetryWorkflow reanimates a Workflow's terminal members in
	// place; gated by Requeue, being a requeue of many members at once.
	ActionRetryWorkflow
	// ActionSetKeyLimit sets or removes a Queue's Key Limit; gated by
	// PauseQueue, as the Queue's own limit is.
	ActionSetKeyLimit
	// ActionSetKeyRate sets or removes a Queue's Key Rate; gated by
	// PauseQueue.
	ActionSetKeyRate
	// ActionSetFairClaim turns a Queue's Fair Claim on or off; gated by
	// PauseQueue.
	ActionSetFairClaim
	// ActionRemoveQueue removes an empty Queue with its settings; gated by
	// PauseQueue, the Queue-management Permission.
	ActionRemoveQueue
	// ActionEnqueue enqueues a job by hand; gated by Enqueue.
	ActionEnqueue
	// ActionDelete removes a terminal job; gated by Delete.
	ActionDelete
	// ActionRequeueMatching requeues every job a filter matches, one
	// audited requeue each; gated by Requeue, once per request.
	ActionRequeueMatching
	// ActionCancelMatching cancels every job a filter matches; gated by
	// Cancel, once per request.
	ActionCancelMatching
	// ActionDeleteMatching deletes every job a filter matches; gated by
	// Delete, once per request.
	ActionDeleteMatching
)

var actionInfo = [...]struct {
	name string
	perm Permission
}{
	ActionRequeue:         {"requeue", Requeue},
	ActionCancel:          {"cancel", Cancel},
	ActionReschedule:      {"reschedule", Requeue},
	ActionTriggerSchedule: {"trigger_schedule", TriggerSchedule},
	ActionPauseSchedule:   {"pause_schedule", TriggerSchedule},
	ActionResumeSchedule:  {"resume_schedule", TriggerSchedule},
	ActionRemoveSchedule:  {"remove_schedule", TriggerSchedule},
	ActionPauseQueue:      {"pause_queue", PauseQueue},
	ActionResumeQueue:     {"resume_queue", PauseQueue},
	ActionSetQueueLimit:   {"set_queue_limit", PauseQueue},
	ActionCancelWorkflow:  {"cancel_workflow", Cancel},
	ActionRestartWorkflow: {"restart_workflow", Requeue},
	ActionRetryWorkflow:   {"retry_workflow", Requeue},
	ActionSetKeyLimit:     {"set_key_limit", PauseQueue},
	ActionSetKeyRate:      {"set_key_rate", PauseQueue},
	ActionSetFairClaim:    {"set_fair_claim", PauseQueue},
	ActionRemoveQueue:     {"remove_queue", PauseQueue},
	ActionEnqueue:         {"enqueue", Enqueue},
	ActionDelete:          {"delete", Delete},
	ActionRequeueMatching: {"requeue_matching", Requeue},
	ActionCancelMatching:  {"cancel_matching", Cancel},
	ActionDeleteMatching:  {"delete_matching", Delete},
}

// Actions returns every Action, in declaration order.
func Actions() []Action {
	out := make([]Action, 0, len(actionInfo)-1)
	for a := ActionRequeue; int(a) < len(actionInfo); a++ {
		out = append(out, a)
	}
	return out
}

func (a Action) valid() bool { return a >= ActionRequeue && int(a) < len(actionInfo) }

// String returns the Action's snake_case name.
func (a Action) String() string {
	if a.valid() {
		return actionInfo[a].name
	}
	return fmt.Sprintf("Action(%d)", uint8(a))
}

// Permission returns the Permission that gates the Action; an Action
// outside the declared set returns 0, which no Policy grants.
func (a Action) Permission() Permission {
	if a.valid() {
		return actionInfo[a].perm
	}
	return 0
}

// Policy is the host application's authorization for an operator surface.
// Its zero value grants View and denies everything else, and records no
// Actor, so every write is refused until the host names one.
type Policy struct {
	// Allow reports whether the caller behind ctx holds p. Nil grants
	// View only. A surface may narrow its own default further (the
	// dashboard grants View only to loopback clients when Allow is nil).
	Allow func(ctx context.Context, p Permission) bool
	// ResolveActor names the Actor recorded on a write by the caller
	// behind ctx. An error or an empty name refuses the write. Nil refuses
	// every write.
	ResolveActor func(ctx context.Context) (string, error)
	// ReadOnly denies every write whatever Allow says, and hides the
	// controls for them.
	ReadOnly bool
}

// Allowed reports whether the caller behind ctx holds p under the Policy.
// A Permission outside the declared set is never allowed.
func (pol Policy) Allowed(ctx context.Context, p Permission) bool {
	switch {
	case p < View || int(p) >= len(permissionNames):
		return false
	case pol.ReadOnly && p != View && p != ViewSensitiveData:
		return false
	case pol.Allow == nil:
		return p == View
	}
	return pol.Allow(ctx, p)
}

// Actor names the Actor for a write by the caller behind ctx, or says why
// there is none.
func (pol Policy) Actor(ctx context.Context) (string, error) {
	if pol.ResolveActor == nil {
		return "", fmt.Errorf("permission: no ResolveActor configured: writes need an Actor")
	}
	name, err := pol.ResolveActor(ctx)
	if err != nil {
		return "", fmt.Errorf("permission: resolve actor: %w", err)
	}
	if name == "" {
		return "", fmt.Errorf("permission: ResolveActor named no Actor")
	}
	return name, nil
}

type requestKey struct{}

// WithRequest returns ctx carrying r, for the Policy callbacks; the
// operator surfaces call it on every HTTP request they serve.
func WithRequest(ctx context.Context, r *http.Request) context.Context {
	return context.WithValue(ctx, requestKey{}, r)
}

// Request returns the *http.Request a surface attached to ctx, or nil when
// the call did not come over HTTP (the MCP Server on stdio).
func Request(ctx context.Context) *http.Request {
	r, _ := ctx.Value(requestKey{}).(*http.Request)
	return r
}
