package mcp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"

	"github.com/backwave/backwave/mcp"
	"github.com/backwave/backwave/permission"
	"github.com/backwave/backwave/store/memstore"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Mount the MCP Server in a host application's mux. The host's Policy
// decides per request: here a request carrying the operator's header may
// requeue and reschedule, recorded as "ops:ada"; any other caller gets
// the reads only.
func ExampleNewServer() {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	isOperator := func(ctx context.Context) bool {
		r := permission.Request(ctx)
		return r != nil && r.Header.Get("X-Operator") == "ada"
	}
	srv, err := mcp.NewServer(st, mcp.Options{Policy: permission.Policy{
		Allow: func(ctx context.Context, p permission.Permission) bool {
			return p == permission.View || (p == permission.Requeue && isOperator(ctx))
		},
		ResolveActor: func(ctx context.Context) (string, error) {
			if !isOperator(ctx) {
				return "", fmt.Errorf("not an operator")
			}
			return "ops:ada", nil
		},
	}})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle(srv.Prefix(), srv.Handler())
	ts := httptest.NewServer(mux)
	defer ts.Close()

	// An MCP client connects to the prefix; this one is not the operator.
	client := sdk.NewClient(&sdk.Implementation{Name: "example", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: ts.URL + srv.Prefix()}, nil)
	if err != nil {
		panic(err)
	}
	defer cs.Close()
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			panic(err)
		}
		names = append(names, tool.Name)
	}
	fmt.Println(srv.Prefix(), len(srv.Tools()), "tools,", len(names), "offered")
	fmt.Println("job_requeue offered:", slices.Contains(names, "job_requeue"))
	// Output:
	// /backwave-mcp 39 tools, 17 offered
	// job_requeue offered: false
}
