package main

import (
	"context"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/backwave/backwave/permission"
)

// Timeouts of the HTTP servers the command runs.
const (
	readHeaderTimeout = 10 * time.Second
	shutdownTimeout   = 5 * time.Second
)

// grantPolicy builds the Policy of an operator surface from --allow (the
// Dashboard Permissions granted to every caller, beside View) and
// --actor (the Actor every write is audited as). No --allow leaves
// Allow nil, so the surface keeps its own read-only default.
func grantPolicy(cmd *cli.Command) (permission.Policy, error) {
	var granted []permission.Permission
	for _, item := range cmd.StringSlice("allow") {
		for name := range strings.SplitSeq(item, ",") {
			name = strings.TrimSpace(name)
			if name == "" {
				continue
			}
			p, err := permission.Parse(name)
			if err != nil {
				return permission.Policy{}, usagef("--allow %q: not a Dashboard Permission (want ViewSensitiveData, Requeue, Cancel, TriggerSchedule or PauseQueue)", name)
			}
			granted = append(granted, p)
		}
	}
	if len(granted) == 0 {
		return permission.Policy{}, nil
	}
	actor, err := actorOf(cmd)
	if err != nil {
		return permission.Policy{}, err
	}
	return permission.Policy{
		Allow: func(_ context.Context, p permission.Permission) bool {
			if p == permission.View {
				return true
			}
			for _, g := range granted {
				if g == p {
					return true
				}
			}
			return false
		},
		ResolveActor: func(context.Context) (string, error) { return string(actor), nil },
	}, nil
}
