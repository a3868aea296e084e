package mcp

import (
	"context"
	"errors"
	"fmt"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/permission"
	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ErrDenied is wrapped by the error of a tool call the Policy refuses: the
// caller does not hold the tool's Permission, or no Actor can be named for
// a write. A refused call changes nothing and writes no audit record.
var ErrDenied = errors.New("mcp: permission denied")

// toolDef is one tool of the catalogue, independent of any caller.
type toolDef struct {
	name        string
	title       string
	description string
	// action is the Operator Action of a write tool; zero for a read.
	action      permission.Action
	annotations *sdk.ToolAnnotations
	in, out     *jsonschema.Schema
	// bind adds the tool to srv, its calls checked against s's Policy for
	// caller c.
	bind func(srv *sdk.Server, s *Server, c caller)
}

func (d toolDef) write() bool { return d.action != 0 }

// permission is the Dashboard Permission that gates the tool: View for a
// read, the Action's own for a write (shared with the dashboard).
func (d toolDef) permission() permission.Permission {
	if d.write() {
		return d.action.Permission()
	}
	return permission.View
}

func (d toolDef) sdkTool() *sdk.Tool {
	return &sdk.Tool{
		Name:         d.name,
		Title:        d.title,
		Description:  d.description,
		Annotations:  d.annotations,
		InputSchema:  d.in,
		OutputSchema: d.out,
	}
}

// reading is what a read tool runs with.
type reading struct {
	admin *backwave.Admin
	// sensitive says the caller holds ViewSensitiveData: payloads, Failure
	// Detail and Job Output may appear in the result.
	sensitive bool
}

// acting is what a write tool runs with.
type acting struct {
	// admin acts as the caller's Actor: every action it takes is audited
	// under that name.
	admin     *backwave.Admin
	actor     backwave.Actor
	sensitive bool
}

// builder collects the catalogue, keeping the first error.
type builder struct {
	tools []toolDef
	seen  map[string]bool
	err   error
}

func (b *builder) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// schemas infers and resolves the input and output schemas of a tool, so
// that a broken schema is NewServer's error and never the SDK's panic.
func schemas[In, Out any](name string) (in, out *jsonschema.Schema, err error) {
	opts := &jsonschema.ForOptions{TypeSchemas: typeSchemas()}
	if in, err = jsonschema.For[In](opts); err != nil {
		return nil, nil, fmt.Errorf("tool %s: input schema: %w", name, err)
	}
	if out, err = jsonschema.For[Out](opts); err != nil {
		return nil, nil, fmt.Errorf("tool %s: output schema: %w", name, err)
	}
	if in.Type != "object" {
		return nil, nil, fmt.Errorf("tool %s: input schema is %q, not an object", name, in.Type)
	}
	for what, sch := range map[string]*jsonschema.Schema{"input": in, "output": out} {
		if _, err := sch.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true}); err != nil {
			return nil, nil, fmt.Errorf("tool %s: %s schema: %w", name, what, err)
		}
	}
	return in, out, nil
}

func (b *builder) add(d toolDef) {
	if b.seen == nil {
		b.seen = map[string]bool{}
	}
	if b.seen[d.name] {
		b.fail(fmt.Errorf("tool %s: defined twice", d.name))
		return
	}
	b.seen[d.name] = true
	b.tools = append(b.tools, d)
}

// addRead adds a Monitor read, gated by View.
func addRead[In, Out any](b *builder, name, title, description string, run func(ctx context.Context, r reading, in In) (Out, error)) {
	in, out, err := schemas[In, Out](name)
	if err != nil {
		b.fail(err)
		return
	}
	d := toolDef{
		name: name, title: title, description: description,
		annotations: &sdk.ToolAnnotations{Title: title, ReadOnlyHint: true, OpenWorldHint: new(false)},
		in:          in, out: out,
	}
	d.bind = func(srv *sdk.Server, s *Server, c caller) {
		sdk.AddTool(srv, d.sdkTool(), func(ctx context.Context, _ *sdk.CallToolRequest, in In) (*sdk.CallToolResult, Out, error) {
			var zero Out
			ctx = c.context(ctx)
			if !s.policy.Allowed(ctx, permission.View) {
				return nil, zero, fmt.Errorf("%s: %w: the caller does not hold %s", name, ErrDenied, permission.View)
			}
			r := reading{admin: s.reader, sensitive: s.policy.Allowed(ctx, permission.ViewSensitiveData)}
			o, err := run(ctx, r, in)
			if err != nil {
				return nil, zero, fmt.Errorf("%s: %w", name, err)
			}
			return nil, o, nil
		})
	}
	b.add(d)
}

// writeHints are the MCP hints of an Operator Action.
type writeHints struct {
	destructive bool
	idempotent  bool
}

// addWrite adds an audited Operator Action, gated by action's Permission
// and recorded under the Actor the Policy names for the caller.
func addWrite[In, Out any](b *builder, name, title, description string, action permission.Action, h writeHints, run func(ctx context.Context, a acting, in In) (Out, error)) {
	if action.Permission() == 0 {
		b.fail(fmt.Errorf("tool %s: %s is not a declared Operator Action", name, action))
		return
	}
	in, out, err := schemas[In, Out](name)
	if err != nil {
		b.fail(err)
		return
	}
	d := toolDef{
		name: name, title: title, description: description, action: action,
		annotations: &sdk.ToolAnnotations{
			Title:           title,
			DestructiveHint: new(h.destructive),
			IdempotentHint:  h.idempotent,
			OpenWorldHint:   new(false),
		},
		in: in, out: out,
	}
	d.bind = func(srv *sdk.Server, s *Server, c caller) {
		sdk.AddTool(srv, d.sdkTool(), func(ctx context.Context, _ *sdk.CallToolRequest, in In) (*sdk.CallToolResult, Out, error) {
			var zero Out
			ctx = c.context(ctx)
			a, err := s.authorize(ctx, action)
			if err != nil {
				return nil, zero, fmt.Errorf("%s: %w", name, err)
			}
			o, err := run(ctx, a, in)
			if err != nil {
				return nil, zero, fmt.Errorf("%s: %w", name, err)
			}
			return nil, o, nil
		})
	}
	b.add(d)
}

// authorize checks that the caller behind ctx may take action and returns
// an Admin acting as its Actor; an error wraps ErrDenied and nothing has
// been written.
func (s *Server) authorize(ctx context.Context, action permission.Action) (acting, error) {
	p := action.Permission()
	if !s.policy.Allowed(ctx, p) {
		return acting{}, fmt.Errorf("%w: %s needs %s, which the caller does not hold", ErrDenied, action, p)
	}
	name, err := s.policy.Actor(ctx)
	if err != nil {
		return acting{}, fmt.Errorf("%w: %s needs an Actor: %w", ErrDenied, action, err)
	}
	admin, err := backwave.NewAdmin(s.store, backwave.Actor(name))
	if err != nil {
		return acting{}, fmt.Errorf("%w: %s: %w", ErrDenied, action, err)
	}
	return acting{admin: admin, actor: backwave.Actor(name), sensitive: s.policy.Allowed(ctx, permission.ViewSensitiveData)}, nil
}
