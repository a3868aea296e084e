package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Scenarios where the network and the database behave as they do in
// production rather than on a loopback to an idle server, PostgreSQL only.
// Each reruns a base scenario (variants) under one condition:
//   - drain-lag and latency-lag put lagEachWay of delay on each direction
//     of every connection of the system under test, through an in-process
//     TCP proxy: a round trip costs 2 ms more, as across hosts in one zone;
//   - drain-idle-tx drains while a side session sits idle in a REPEATABLE
//     READ transaction for the whole run, pinning the xmin horizon so no
//     dead row version can be cleaned up, as an application's forgotten
//     transaction does.
const (
	scDrainLag    = "drain-lag"
	scLatencyLag  = "latency-lag"
	scDrainIdleTx = "drain-idle-tx"
)

// variants maps each condition scenario to the scenario it reruns.
var variants = map[string]string{scDrainLag: scDrain, scLatencyLag: scLatencyOn, scDrainIdleTx: scDrain}

// lagEachWay is the delay the proxy adds to each direction.
const lagEachWay = time.Millisecond

// measured reports whether system s has a row for scenario sc on target
// tg: the condition scenarios run on PostgreSQL only, for BackWave and
// River, where the base scenario does.
func measured(s system, sc, tg string) bool {
	if tg == tgRedis && s.name() != sysAsynq {
		return false // asynq's target alone
	}
	if base, ok := variants[sc]; ok {
		return tg == tgPostgres && (s.name() == sysBackWave || s.name() == sysRiver) && s.supports(base, tg)
	}
	return s.supports(sc, tg)
}

// baseScenario returns the scenario sc reruns, or sc itself.
func baseScenario(sc string) string {
	if base, ok := variants[sc]; ok {
		return base
	}
	return sc
}

// condition sets up sc's condition for one run and returns its undo; for a
// scenario without one, or called at the other point of the run (opened:
// before or after the system opened its storage), it does nothing.
func (b *bench) condition(ctx context.Context, sc string, opened bool) (undo func(), err error) {
	switch {
	case !opened && (sc == scDrainLag || sc == scLatencyLag):
		if b.lag == nil {
			target, err := pgHostPort(b.cfg.pgURL)
			if err != nil {
				return nil, err
			}
			if b.lag, err = startLagProxy(target, lagEachWay); err != nil {
				return nil, err
			}
		}
		b.via = b.lag.addr()
		return func() { b.via = "" }, nil
	case opened && sc == scDrainIdleTx:
		conn, err := pgx.Connect(ctx, b.cfg.pgURL)
		if err != nil {
			return nil, fmt.Errorf("idle-in-transaction session: %w", err)
		}
		tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
		if err == nil {
			// A snapshot and a transaction id: the xmin horizon stays here.
			_, err = tx.Exec(ctx, "SELECT txid_current(), count(*) FROM pg_class")
		}
		if err != nil {
			_ = conn.Close(ctx)
			return nil, fmt.Errorf("idle-in-transaction session: %w", err)
		}
		return func() {
			bg := context.WithoutCancel(ctx)
			_ = tx.Rollback(bg)
			_ = conn.Close(bg)
		}, nil
	}
	return func() {}, nil
}

// pgHostPort returns the host:port a postgres:// URL connects to.
func pgHostPort(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		return "", errors.New("the lag scenarios need -postgres as a postgres:// URL with a host")
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "5432"
	}
	return net.JoinHostPort(host, port), nil
}

// lagProxy forwards TCP connections to a target, delaying every chunk of
// bytes by a fixed lag in each direction without limiting throughput: a
// chunk is stamped when read and written once its time has come, while
// later chunks keep being read.
type lagProxy struct {
	ln     net.Listener
	target string
	lag    time.Duration
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
}

func startLagProxy(target string, lag time.Duration) (*lagProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("lag proxy: %w", err)
	}
	p := &lagProxy{ln: ln, target: target, lag: lag, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	return p, nil
}

func (p *lagProxy) addr() string { return p.ln.Addr().String() }

func (p *lagProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Go(func() { p.serve(c) })
	}
}

func (p *lagProxy) track(c net.Conn, add bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
}

func (p *lagProxy) serve(client net.Conn) {
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = client.Close()
		return
	}
	p.track(client, true)
	p.track(server, true)
	var wg sync.WaitGroup
	wg.Go(func() { lagCopy(server, client, p.lag) })
	wg.Go(func() { lagCopy(client, server, p.lag) })
	wg.Wait()
	for _, c := range []net.Conn{client, server} {
		p.track(c, false)
		_ = c.Close()
	}
}

// lagCopy copies src to dst, each chunk lag after it was read.
func lagCopy(dst, src net.Conn, lag time.Duration) {
	type chunk struct {
		due time.Time
		b   []byte
	}
	chunks := make(chan chunk, 4096)
	go func() {
		defer close(chunks)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				chunks <- chunk{time.Now().Add(lag), buf[:n]}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range chunks {
		if d := time.Until(c.due); d > 0 {
			time.Sleep(d)
		}
		if _, err := dst.Write(c.b); err != nil {
			break
		}
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	} else {
		_ = dst.Close()
	}
	_, _ = io.Copy(io.Discard, src) // let the reader finish
}

// close stops accepting and cuts every forwarded connection.
func (p *lagProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
