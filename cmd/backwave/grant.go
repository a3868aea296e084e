package main

import (
	"context"
	"slices"
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

// grantPolicy builds the Policy of an operator surface (the dashboard, the
// MCP Server) from --allow, the Dashboard Permissions granted to every
// caller beside View (see allowedOf), and --actor, the Actor every write
// is audited as. No --allow leaves Allow nil, so the surface keeps its
// own read-only default.
func grantPolicy(cmd *cli.Command) (permission.Policy, error) {
	allowed, err := allowedOf(cmd)
	if err != nil || len(allowed) == 0 {
		return permission.Policy{}, err
	}
	actor, err := actorOf(cmd)
	if err != nil {
		return permission.Policy{}, err
	}
	return permission.Policy{
		Allow: func(_ context.Context, p permission.Permission) bool {
			return p == permission.View || slices.Contains(allowed, p)
		},
		ResolveActor: func(context.Context) (string, error) { return string(actor), nil },
	}, nil
}

// grantsText says what a surface started with these --allow Permissions
// grants its callers, and how to grant what it does not: the dashboard's
// and the MCP Server's start lines print it.
func grantsText(allowed []permission.Permission) string {
	granted := []string{permission.View.String()}
	var missing []string
	for _, p := range permission.All() {
		switch {
		case p == permission.View:
		case slices.Contains(allowed, p):
			granted = append(granted, p.String())
		default:
			missing = append(missing, p.String())
		}
	}
	s := "grants " + strings.Join(granted, ", ")
	if len(missing) > 0 {
		s += "; restart with --allow " + strings.Join(missing, ",") + " to grant the rest"
	}
	return s
}
