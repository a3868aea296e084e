package mcp

import (
	"context"
	"fmt"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/permission"
)

// The Concurrency Key tools: a Queue's top keys, and its Key Limit and
// Fair Claim.

type queueKeysInput struct {
	Queue nonEmpty `json:"queue" jsonschema:"the Queue's name, as queue_list shows it"`
	Limit topLimit `json:"limit,omitempty" jsonschema:"how many keys to return (10 if absent, at most 100)"`
}

type keyView struct {
	Key       string `json:"key" jsonschema:"the Concurrency Key; empty for the Queue's jobs without one"`
	Scheduled int    `json:"scheduled" jsonschema:"the key's Scheduled jobs, due or not yet due"`
	Running   int    `json:"running" jsonschema:"the key's Running jobs"`
}

type queueKeysResult struct {
	Keys []keyView `json:"keys" jsonschema:"the keys with the most Scheduled and Running jobs together, most first"`
}

type keyLimitInput struct {
	Queue nonEmpty    `json:"queue" jsonschema:"the Queue's name, as queue_list shows it"`
	Limit nonNegative `json:"limit" jsonschema:"the Key Limit: at most this many jobs of one Concurrency Key Running at once, not above the Queue's Concurrency Limit; 0 removes it"`
}

type keyRateInput struct {
	Queue  nonEmpty    `json:"queue" jsonschema:"the Queue's name, as queue_list shows it"`
	Limit  nonNegative `json:"limit" jsonschema:"the most starts of one Concurrency Key per window; 0 with no period removes the Key Rate"`
	Period string      `json:"period,omitempty" jsonschema:"the window's length as a Go duration, e.g. 1s or 1m"`
}

type fairClaimInput struct {
	Queue nonEmpty `json:"queue" jsonschema:"the Queue's name, as queue_list shows it"`
	On    bool     `json:"on" jsonschema:"true turns Fair Claim on, false off"`
}

type keyActionResult struct {
	Queue  string `json:"queue"`
	Action string `json:"action" jsonschema:"the Operator Action taken"`
	Keys   string `json:"key_policy" jsonschema:"the Queue's key policy after the action, e.g. key limit 2, fair"`
	Actor  string `json:"actor" jsonschema:"the Actor the audit trail recorded for this action"`
}

func addKeyReads(b *builder) {
	addRead(b, "queue_keys", "List a Queue's top Concurrency Keys",
		"The Concurrency Keys of one Queue with the most Scheduled and Running jobs together, most first (ties by key); jobs without a key count as the empty key. Read from counters the store keeps, cheap at any size.",
		func(ctx context.Context, r reading, in queueKeysInput) (queueKeysResult, error) {
			keys, err := r.admin.QueueKeys(ctx, string(in.Queue), int(in.Limit))
			if err != nil {
				return queueKeysResult{}, err
			}
			out := queueKeysResult{Keys: make([]keyView, len(keys))}
			for i, k := range keys {
				out.Keys[i] = keyView(k)
			}
			return out, nil
		})
}

func addKeyWrites(b *builder) {
	addWrite(b, "queue_set_key_limit", "Set a Queue's Key Limit",
		"Sets the Queue's Key Limit: at most this many jobs of one Concurrency Key Running at once, cluster-wide, beside its Concurrency Limit (0 removes it; above the Concurrency Limit is refused). It never revokes a Lease. Audited; needs the PauseQueue permission.",
		permission.ActionSetKeyLimit, writeHints{idempotent: true},
		func(ctx context.Context, a acting, in keyLimitInput) (keyActionResult, error) {
			q, n := string(in.Queue), int(in.Limit)
			var err error
			if n == 0 {
				err = a.admin.RemoveKeyLimit(ctx, q)
			} else {
				err = a.admin.SetKeyLimit(ctx, q, n)
			}
			if err != nil {
				return keyActionResult{}, err
			}
			return keyResult(ctx, a, q, permission.ActionSetKeyLimit)
		})
	addWrite(b, "queue_set_key_rate", "Set a Queue's Key Rate",
		"Sets the Queue's Key Rate: at most limit jobs of one Concurrency Key start per window of period (a Go duration such as 1s or 1m), by the Rate Limit's window rule kept per key; a limit of 0 with no period removes it. It never revokes a Lease. Audited; needs the PauseQueue permission.",
		permission.ActionSetKeyRate, writeHints{idempotent: true},
		func(ctx context.Context, a acting, in keyRateInput) (keyActionResult, error) {
			var rate backwave.QueueRate
			if in.Limit != 0 || in.Period != "" {
				d, err := time.ParseDuration(in.Period)
				if err != nil {
					return keyActionResult{}, fmt.Errorf("%w: key rate period %q is not a duration such as 1s or 1m", backwave.ErrInvalidParams, in.Period)
				}
				rate = backwave.QueueRate{Limit: int(in.Limit), Period: d}
			}
			if err := a.admin.SetKeyRate(ctx, string(in.Queue), rate); err != nil {
				return keyActionResult{}, err
			}
			return keyResult(ctx, a, string(in.Queue), permission.ActionSetKeyRate)
		})
	addWrite(b, "queue_set_fair_claim", "Turn a Queue's Fair Claim on or off",
		"With Fair Claim on, claims take the Queue's due jobs round-robin across Concurrency Keys, least recently served key first, so one key's flood does not hold up the others. Audited; needs the PauseQueue permission.",
		permission.ActionSetFairClaim, writeHints{idempotent: true},
		func(ctx context.Context, a acting, in fairClaimInput) (keyActionResult, error) {
			if err := a.admin.SetFairClaim(ctx, string(in.Queue), in.On); err != nil {
				return keyActionResult{}, err
			}
			return keyResult(ctx, a, string(in.Queue), permission.ActionSetFairClaim)
		})
}

// keyResult answers a key action with the Queue's policy as it now stands.
func keyResult(ctx context.Context, a acting, queue string, action permission.Action) (keyActionResult, error) {
	qs, err := a.admin.Queues(ctx)
	if err != nil {
		return keyActionResult{}, err
	}
	var p backwave.KeyPolicy
	for _, q := range qs {
		if q.Name == queue {
			p = q.Keys
		}
	}
	return keyActionResult{Queue: queue, Action: action.String(), Keys: p.String(), Actor: string(a.actor)}, nil
}
