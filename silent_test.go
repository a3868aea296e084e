package backwave_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store/postgres"
)

// silentProxy forwards TCP connections to target until silence is called;
// from then on it behaves like a route to a dead host: connections stay
// open and new ones are accepted, but no byte gets through either way and
// nothing is closed towards the client.
type silentProxy struct {
	ln     net.Listener
	target string
	quiet  atomic.Bool

	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func startProxy(t *testing.T, target string) *silentProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &silentProxy{ln: ln, target: target}
	p.wg.Go(p.accept)
	return p
}

func (p *silentProxy) addr() string { return p.ln.Addr().String() }

func (p *silentProxy) silence() { p.quiet.Store(true) }

func (p *silentProxy) track(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conns = append(p.conns, c)
}

func (p *silentProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.track(c)
		if p.quiet.Load() {
			p.wg.Go(func() { _, _ = io.Copy(io.Discard, c) }) // accepted, never answered
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.track(up)
		p.wg.Go(func() { p.pipe(up, c, false) })
		p.wg.Go(func() { p.pipe(c, up, true) })
	}
}

// pipe copies src to dst, dropping the bytes once the proxy is silent. When
// src ends it closes dst, unless dst is the client and the proxy is silent.
func (p *silentProxy) pipe(dst, src net.Conn, toClient bool) {
	_, _ = io.Copy(gate{p: p, w: dst}, src)
	if !toClient || !p.quiet.Load() {
		_ = dst.Close()
	}
}

// gate writes through to w while the proxy forwards and swallows after.
type gate struct {
	p *silentProxy
	w io.Writer
}

func (g gate) Write(b []byte) (int, error) {
	if g.p.quiet.Load() {
		return len(b), nil
	}
	return g.w.Write(b)
}

// close stops accepting, closes every connection and waits for the copiers.
func (p *silentProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// TestStopBoundedWhenPostgresGoesSilent stops a Client whose connections to
// PostgreSQL went silent while its handler runs (a dead host: TCP stays
// open, nothing answers). Stop still returns within DrainTimeout +
// RelinquishTimeout (glossary, Relinquish: a failed hand-back never blocks
// the host from exiting), the handler sees ErrShutdown, and once the Lease
// lapses another node connected directly runs the job again (glossary,
// Lease).
func TestStopBoundedWhenPostgresGoesSilent(t *testing.T) {
	t.Parallel()
	// A fresh schema, skipped without BACKWAVE_TEST_POSTGRES_URL.
	direct := relinquishStores(t)["postgres"](t).(*postgres.Store)
	const (
		lease      = 2 * time.Second
		drain      = time.Second
		relinquish = time.Second
	)
	ctx := context.Background()
	u, err := url.Parse(os.Getenv("BACKWAVE_TEST_POSTGRES_URL"))
	if err != nil {
		t.Fatal(err)
	}
	proxy := startProxy(t, u.Host)
	u.Host = proxy.addr()
	proxied, err := postgres.Open(ctx, u.String(), postgres.Options{Schema: direct.Schema(), SkipMigrate: true})
	if err != nil {
		proxy.close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		proxy.close()
		_ = proxied.Close()
	})

	newClient := func(st *postgres.Store, node string, handle func(ctx context.Context, j *backwave.Job[stubborn]) error) *backwave.Client {
		t.Helper()
		h := backwave.NewHandlers()
		if err := backwave.AddHandlerFunc(h, handle); err != nil {
			t.Fatal(err)
		}
		g := backwave.DefaultWorkerGroup("g", backwave.Strict(backwave.DefaultQueue))
		g.LeaseDuration = lease
		g.HeartbeatInterval = lease / 3
		g.PollInterval = 50 * time.Millisecond
		g.MaintenanceInterval = 100 * time.Millisecond
		c, err := backwave.NewClient(st, backwave.Config{
			Handlers:          h,
			Groups:            []backwave.WorkerGroupOptions{g},
			NodeID:            node,
			DrainTimeout:      drain,
			RelinquishTimeout: relinquish,
			Logger:            testLogger(t, slog.LevelWarn),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Stop(context.Background()) })
		return c
	}

	started := make(chan struct{}, 1)
	cause := make(chan error, 1)
	a := newClient(proxied, "a", func(ctx context.Context, j *backwave.Job[stubborn]) error {
		started <- struct{}{}
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return context.Cause(ctx)
	})
	id, err := a.Enqueue(ctx, stubborn{}, backwave.WithMaxAttempts(5))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("node a did not start the job within 10s")
	}

	proxy.silence()
	began := time.Now()
	stopped := make(chan error, 1)
	go func() { stopped <- a.Stop(ctx) }()
	bound := drain + relinquish + time.Second
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("Stop: %v", err)
		}
	case <-time.After(bound + 2*time.Second):
		proxy.close() // lets the stuck calls fail, so the Client can end
		t.Fatalf("Stop still blocked %v after it was called; the bound is DrainTimeout + RelinquishTimeout + 1s = %v", bound+2*time.Second, bound)
	}
	took := time.Since(began)
	t.Logf("Stop took %v", took)
	if took > bound {
		t.Errorf("Stop took %v, want at most DrainTimeout + RelinquishTimeout + 1s = %v", took, bound)
	}
	select {
	case err := <-cause:
		if !errors.Is(err, backwave.ErrShutdown) {
			t.Errorf("handler's cause = %v, want ErrShutdown", err)
		}
	default:
		t.Error("Stop returned but the handler's context was never cancelled")
	}
	if j, err := direct.JobGet(ctx, id); err != nil || j.State != job.StateRunning || j.Attempt != 1 {
		t.Fatalf("after Stop: %v at Attempt %d (%v), want still running at Attempt 1: the hand-back cannot have reached the store", j.State, j.Attempt, err)
	}

	reran := make(chan backwave.Attempt, 1)
	b2 := newClient(direct, "b", func(ctx context.Context, j *backwave.Job[stubborn]) error {
		reran <- j.Attempt
		return nil
	})
	if err := b2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case attempt := <-reran:
		if attempt != 2 {
			t.Errorf("node b ran Attempt %d, want 2", attempt)
		}
	case <-time.After(lease + 5*time.Second):
		t.Fatal("node b did not run the job again after its Lease lapsed")
	}
	if err := b2.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if j, err := direct.JobGet(ctx, id); err != nil || j.State != job.StateSucceeded || j.RetryCause != job.RetryCauseLeaseExpired {
		t.Errorf("after node b: %v, Retry Cause %q (%v); want succeeded after the lease expired", j.State, j.RetryCause, err)
	}
}
