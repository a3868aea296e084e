package mcp

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/internal/hostpolicy"
	"github.com/backwave/backwave/permission"
	"github.com/backwave/backwave/store"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultPrefix is the path the HTTP handler serves when Options.Prefix is
// empty, like the dashboard's own default prefix.
const DefaultPrefix = "/backwave-mcp"

// implementationName is the server name announced to MCP clients.
const implementationName = "backwave"

// readActor is the Actor of the Admin that serves the read tools. Reads
// record nothing, so it never appears in the audit trail; every write runs
// on an Admin of its own, acting as the caller's resolved Actor.
const readActor backwave.Actor = "mcp:read"

// instructions tell a connecting agent what the tools are for.
const instructions = `BackWave is a background job system. These tools read its Monitor ` +
	`(jobs, their Transition Log, counts, Queues, Recurring Schedules, the audit trail) and, ` +
	`where you are allowed, take audited Operator Actions (requeue, cancel, reschedule, ` +
	`trigger or pause a schedule, pause a Queue or set its Concurrency Limit). Every action ` +
	`is recorded with your identity. No tool creates jobs. Lists run newest first: pass a ` +
	`result's "next" as "before" to read the following page.`

// Options configure a Server.
type Options struct {
	// Policy authorizes each caller, exactly as it does for the dashboard:
	// View for every read tool, the Permission of each Operator Action for
	// its write tool, ViewSensitiveData for payloads, Failure Detail and
	// Job Output, and ResolveActor for the Actor every write records. The
	// zero Policy grants View only.
	Policy permission.Policy
	// Replica, if set, serves the read tools from a read replica of the
	// store (backwave.WithReplica; for PostgreSQL postgres.OpenReplica);
	// every write tool goes to the store.
	Replica store.Monitor
	// Prefix is the URL path Handler serves: it must start with "/" and
	// not end with one (DefaultPrefix if empty).
	Prefix string
	// AllowedHosts are the Host header values Handler accepts besides the
	// loopback names (localhost, 127.0.0.1 and [::1], always accepted): the
	// public names a reverse proxy forwards under. A request with any
	// other Host is refused with 403, which defeats DNS rebinding; it is
	// the dashboard's rule (dashboard.Options.AllowedHosts), one policy for
	// everything a process serves. A Host may carry a port
	// ("jobs.example.com:8443"); one without a port matches any port.
	AllowedHosts []string
	// AnyHost turns the Host check off, for a Handler behind a proxy that
	// checks the Host itself; AllowedHosts must then be empty.
	AnyHost bool
	// Logger receives the SDK's diagnostics; nil logs nothing.
	Logger *slog.Logger
}

// Server is the MCP Server over one store. Its methods are safe for
// concurrent use; Handler may serve any number of callers at once.
type Server struct {
	store   backwave.Store
	reader  *backwave.Admin
	policy  permission.Policy
	prefix  string
	logger  *slog.Logger
	version string
	tools   []toolDef
	cache   *sdk.SchemaCache
	hosts   *hostpolicy.Policy
	handler http.Handler
}

// NewServer returns the MCP Server over st, a store as an adapter opens it
// (the Server does not close it). A nil store or an invalid Prefix is an
// error wrapping backwave.ErrInvalidConfig.
func NewServer(st backwave.Store, opts Options) (*Server, error) {
	reader, err := backwave.NewAdmin(st, readActor, backwave.WithReplica(opts.Replica))
	if err != nil {
		return nil, fmt.Errorf("mcp: %w", err)
	}
	prefix, err := checkPrefix(opts.Prefix)
	if err != nil {
		return nil, err
	}
	hosts, err := hostpolicy.New(opts.AllowedHosts, opts.AnyHost)
	if err != nil {
		return nil, fmt.Errorf("%w: mcp: %w", backwave.ErrInvalidConfig, err)
	}
	tools, err := catalogue()
	if err != nil {
		return nil, fmt.Errorf("mcp: tool catalogue: %w", err)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		store:   st,
		reader:  reader,
		policy:  opts.Policy,
		prefix:  prefix,
		logger:  logger,
		version: moduleVersion(),
		tools:   tools,
		cache:   sdk.NewSchemaCache(),
		hosts:   hosts,
	}
	// One server with every tool resolves each schema once, into the cache
	// every per-caller server then reads.
	s.build(caller{}, func(toolDef) bool { return true })
	s.handler = s.newHandler()
	return s, nil
}

func checkPrefix(p string) (string, error) {
	switch {
	case p == "":
		return DefaultPrefix, nil
	case !strings.HasPrefix(p, "/"):
		return "", fmt.Errorf("%w: mcp: Prefix %q must start with /", backwave.ErrInvalidConfig, p)
	case strings.HasSuffix(p, "/"):
		return "", fmt.Errorf("%w: mcp: Prefix %q must not end with /", backwave.ErrInvalidConfig, p)
	case strings.ContainsAny(p, "?#{} \t\r\n"):
		return "", fmt.Errorf("%w: mcp: Prefix %q must be a plain path", backwave.ErrInvalidConfig, p)
	}
	return p, nil
}

// moduleVersion is the version of this module in the running binary, as
// the Go toolchain recorded it ("(devel)" in a build from a work tree).
func moduleVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	const path = "github.com/backwave/backwave"
	if info.Main.Path == path {
		return info.Main.Version
	}
	for _, m := range info.Deps {
		if m.Path == path {
			return m.Version
		}
	}
	return "(unknown)"
}

// Prefix returns the URL path Handler serves.
func (s *Server) Prefix() string { return s.prefix }

// Handler returns the streamable-HTTP handler, to mount at Prefix (it
// answers Prefix and Prefix + "/", and 404 to any other path). Each request
// is served statelessly by a server built for its own caller: the tools the
// Policy lets that caller use, with the *http.Request attached to the
// context every Policy callback sees. It refuses a Host that is neither a
// loopback name nor in Options.AllowedHosts (DNS rebinding), and it applies the standard library's cross-origin
// protection, so a browser page of another origin cannot ride a user's
// cookies into a tool.
func (s *Server) Handler() http.Handler { return s.handler }

type memoKey struct{}

// memo holds the server built for one HTTP request: the SDK's handler asks
// for it more than once per request.
type memo struct {
	once sync.Once
	srv  *sdk.Server
}

func (s *Server) newHandler() http.Handler {
	h := sdk.NewStreamableHTTPHandler(s.serverFor, &sdk.StreamableHTTPOptions{
		Stateless: true,
		Logger:    s.logger,
		// hostAllowed below is the SDK's check with an allow-list.
		DisableLocalhostProtection: true,
	})
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != s.prefix && r.URL.Path != s.prefix+"/" {
			http.NotFound(w, r)
			return
		}
		if !s.hosts.Allows(r.Host) {
			http.Error(w, "forbidden: host not allowed", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), memoKey{}, &memo{})))
	})
	return http.NewCrossOriginProtection().Handler(inner)
}

// serverFor builds the server for the caller behind r, once per request.
func (s *Server) serverFor(r *http.Request) *sdk.Server {
	m, ok := r.Context().Value(memoKey{}).(*memo)
	if !ok {
		// Only newHandler's wrapper calls this, and it always sets a memo.
		panic("mcp: request without its server memo")
	}
	m.once.Do(func() {
		c := caller{req: r}
		ctx := c.context(r.Context())
		m.srv = s.build(c, s.offered(ctx))
	})
	return m.srv
}

// Run serves one client over t until the client disconnects or ctx is
// done; the stdio form of the server, where no *http.Request exists and the
// Policy callbacks see ctx. The tools the Policy grants under ctx are the
// ones listed.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error {
	srv := s.build(caller{}, s.offered(ctx))
	if err := srv.Run(ctx, t); err != nil {
		return fmt.Errorf("mcp: run: %w", err)
	}
	return nil
}

// RunStdio is Run over standard input and output, for
// "backwave mcp --db URI".
func (s *Server) RunStdio(ctx context.Context) error {
	return s.Run(ctx, &sdk.StdioTransport{})
}

// offered returns whether the caller behind ctx may use a tool: it holds
// the tool's Permission and, for a write, the Policy can name an Actor.
// Each Permission is asked of the Policy once, however many tools it
// gates.
func (s *Server) offered(ctx context.Context) func(toolDef) bool {
	granted := map[permission.Permission]bool{}
	return func(d toolDef) bool {
		if d.write() && s.policy.ResolveActor == nil {
			return false
		}
		p := d.permission()
		g, asked := granted[p]
		if !asked {
			g = s.policy.Allowed(ctx, p)
			granted[p] = g
		}
		return g
	}
}

// build returns an SDK server holding the tools keep keeps, bound to c.
func (s *Server) build(c caller, keep func(toolDef) bool) *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: implementationName, Title: "BackWave", Version: s.version}, &sdk.ServerOptions{
		Instructions: instructions,
		Logger:       s.logger,
		SchemaCache:  s.cache,
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}},
	})
	for _, d := range s.tools {
		if keep(d) {
			d.bind(srv, s, c)
		}
	}
	return srv
}

// ToolInfo describes one tool of the catalogue: its name and what gates it.
type ToolInfo struct {
	// Name is the tool's MCP name, e.g. "job_requeue".
	Name string
	// Permission is the Dashboard Permission a caller must hold for the
	// tool to be listed and to run.
	Permission permission.Permission
	// Action is the Operator Action a write tool takes; zero for a read.
	Action permission.Action
}

// Tools returns the whole catalogue, reads first, whatever any caller may
// use: the 28 tools offered to a caller holding every Permission under a
// Policy with a ResolveActor.
func (s *Server) Tools() []ToolInfo {
	out := make([]ToolInfo, len(s.tools))
	for i, d := range s.tools {
		out[i] = ToolInfo{Name: d.name, Permission: d.permission(), Action: d.action}
	}
	return out
}

// caller is who a server was built for: the HTTP request behind it, or
// none on stdio.
type caller struct {
	req *http.Request
}

// context returns ctx carrying the caller's request for the Policy
// callbacks.
func (c caller) context(ctx context.Context) context.Context {
	if c.req == nil {
		return ctx
	}
	return permission.WithRequest(ctx, c.req)
}
