// Package mcp is the MCP Server: the Monitor reads and the audited
// Operator Actions of package backwave, offered to AI agents as tools over
// the Model Context Protocol (the official Go SDK,
// github.com/modelcontextprotocol/go-sdk). It is a new surface, never a
// new capability: every tool wraps one Admin method, and no tool creates a
// job (applications enqueue through their own code).
//
// # Serving
//
// NewServer opens the server over a store. Handler serves it over
// streamable HTTP under a path prefix (DefaultPrefix unless
// Options.Prefix says otherwise), to mount in the host application:
//
//	srv, err := mcp.NewServer(store, mcp.Options{Policy: policy})
//	if err != nil {
//		return err
//	}
//	mux.Handle(srv.Prefix(), srv.Handler())
//
// RunStdio serves one client over standard input and output, for a
// command-line tool (backwave mcp --db URI); Run serves one client over
// any SDK transport.
//
// # Authorization
//
// Authorization is the dashboard's: a permission.Policy of host
// callbacks. Every read tool needs the View permission; each write tool
// needs the Permission its permission.Action names, so the dashboard and
// the MCP Server gate an Operator Action identically. The zero Policy
// grants View only: reads are allowed, writes and sensitive data denied.
// Payload bytes, Failure Detail and Job Output appear in results only for
// a caller holding ViewSensitiveData; otherwise they are absent and the
// result's "withheld" field names them. Every write is recorded in the
// audit trail with the Actor Policy.ResolveActor names for the caller;
// without ResolveActor no write is offered.
//
// A tool the caller may not use is absent from its tool list. Over HTTP
// the server runs stateless: each request is served by a server built for
// the caller behind that very request, with the *http.Request attached to
// the context the Policy callbacks see (permission.Request). Over stdio
// there is no request; the callbacks see the context given to Run. Each
// call checks its permission again when it runs, so a caller whose rights
// changed since it listed the tools is refused, and a refused write changes
// nothing and writes no audit record.
package mcp
