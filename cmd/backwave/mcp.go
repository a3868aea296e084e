package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/backwave/backwave/internal/hostpolicy"
	"github.com/backwave/backwave/mcp"
	"github.com/backwave/backwave/permission"
)

func mcpCommand() *cli.Command {
	return &cli.Command{
		Name:      "mcp",
		Usage:     "serve the MCP Server to an AI agent over standard input and output: read-only unless --allow grants writes",
		UsageText: "backwave mcp --db URI [--allow PERMISSION,…] [--actor WHO] [--http 127.0.0.1:PORT]",
		Description: "Serves BackWave's MCP tools — the Monitor reads and, where --allow grants them, the audited\n" +
			"Operator Actions — to one MCP client over standard input and output: configure the agent to run\n" +
			"this command. Standard output carries the protocol; logs go to standard error. Without --allow\n" +
			"only the reads are offered, without payloads, Failure Detail or Job Output. --allow grants, by\n" +
			"name (case-insensitive):\n" +
			"  " + strings.Join(grantable(), ", ") + "\n" +
			"and every write is recorded in the audit trail as the --actor. --http serves the streamable-HTTP\n" +
			"endpoint instead, on a loopback address only (it has no authentication of its own). The store is\n" +
			"opened as it is: never created or migrated.",
		Flags: []cli.Flag{
			dbFlag(),
			replicaFlag(),
			&cli.StringSliceFlag{Name: "allow", Usage: "grant these Permissions beyond View (repeatable or comma-separated): " + strings.Join(grantable(), ", ")},
			actorFlag(),
			&cli.StringFlag{Name: "http", Usage: "serve streamable HTTP on this loopback address (127.0.0.1:8765, [::1]:8765, localhost:0) instead of stdio"},
		},
		Action: mcpServe,
	}
}

// grantable are the Permissions --allow may grant: all but View, which
// every caller holds.
func grantable() []string {
	var out []string
	for _, p := range permission.All() {
		if p != permission.View {
			out = append(out, p.String())
		}
	}
	return out
}

// allowedOf parses --allow: Permission names, case-insensitive, "-" and
// "_" ignored (pause-queue is PauseQueue).
func allowedOf(cmd *cli.Command) ([]permission.Permission, error) {
	fold := func(s string) string {
		return strings.ToLower(strings.NewReplacer("-", "", "_", "").Replace(strings.TrimSpace(s)))
	}
	var out []permission.Permission
	for _, raw := range cmd.StringSlice("allow") {
		i := slices.IndexFunc(permission.All(), func(p permission.Permission) bool { return fold(p.String()) == fold(raw) })
		switch {
		case i < 0:
			return nil, usagef("--allow %q is not a Permission to grant (want %s)", raw, strings.Join(grantable(), ", "))
		case permission.All()[i] == permission.View:
			return nil, usagef("--allow %q: View is always granted; grant any of %s", raw, strings.Join(grantable(), ", "))
		}
		out = append(out, permission.All()[i])
	}
	return out, nil
}

// loopbackAddr checks that --http names a loopback host and a port.
func loopbackAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("--http %q is not HOST:PORT: %v", addr, err)
	}
	if isLoopbackHost(host) {
		return nil
	}
	return usagef("--http %q is not a loopback address (127.0.0.1, ::1 or localhost): the endpoint has no authentication of its own; "+
		"to serve others, mount mcp.Server.Handler in your application behind its own", addr)
}

func mcpServe(ctx context.Context, cmd *cli.Command) error {
	if err := noArgs(cmd); err != nil {
		return err
	}
	pol, err := grantPolicy(cmd)
	if err != nil {
		return err
	}
	addr := cmd.String("http")
	if addr != "" {
		if err := loopbackAddr(addr); err != nil {
			return err
		}
	}
	t, err := targetOf(cmd)
	if err != nil {
		return err
	}
	st, err := openExisting(ctx, t)
	if err != nil {
		return err
	}
	defer func() { _ = st.Close() }()
	replica, err := openReplica(ctx, cmd, t, st)
	if err != nil {
		return err
	}

	stderr := cmd.Root().ErrWriter
	opts := mcp.Options{Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})), Policy: pol}
	if replica != nil {
		defer func() { _ = replica.Close() }()
		opts.Replica = replica
	}
	srv, err := mcp.NewServer(st, opts)
	if err != nil {
		return err
	}
	if addr == "" {
		return srv.RunStdio(ctx)
	}
	return serveMCPHTTP(ctx, srv, addr, cmd)
}

// serveMCPHTTP serves srv's streamable-HTTP handler on addr until ctx is
// done, saying on stderr where.
func serveMCPHTTP(ctx context.Context, srv *mcp.Server, addr string, cmd *cli.Command) error {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("mcp: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle(srv.Prefix(), srv.Handler())
	mux.Handle(srv.Prefix()+"/", srv.Handler())
	allowed, err := allowedOf(cmd)
	if err != nil {
		_ = ln.Close()
		return err
	}
	fmt.Fprintf(cmd.Root().ErrWriter, "backwave mcp: serving http://%s%s until interrupted (%s)\n", ln.Addr(), srv.Prefix(), grantsText(allowed))
	var loopbackOnly hostpolicy.Policy // the dashboard's rule, on every path
	return serveOn(ctx, ln, loopbackOnly.Handler(mux))
}
