package backwave

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/backwave/backwave/node"
	"github.com/backwave/backwave/store"
)

// The node registry: every started Client keeps a row in the store saying
// which process it is, which Worker Groups and Queues it serves and how
// many jobs it holds, stamped on its beat with the store's clock
// (store.Nodes). Admin.Nodes reads it.
const (
	// NodeLiveBeats is how many of its own beats a node's last stamp may
	// age, on the store's clock, before Admin.Nodes shows the node
	// expired.
	NodeLiveBeats = store.NodeLiveBeats
	// NodeForget is how old a row may grow, on the store's clock, before
	// any node's stamp removes it: a process that died without Stop stays
	// listed, expired, for this long.
	NodeForget = 24 * time.Hour
)

// nodeRegistry is one Client's row in the node registry and the goroutine
// that keeps it stamped, from Client.Start to Client.Stop.
type nodeRegistry struct {
	store store.Nodes
	log   *slog.Logger
	// stamp is the row's fixed part; Running is filled at each stamp.
	stamp store.NodeStampParams
	// running counts the jobs the Client holds now.
	running func() int

	// cancel ends the stamping goroutine and a stamp in flight; done is
	// closed when the goroutine has returned.
	cancel context.CancelFunc
	done   chan struct{}
	// failing is set while stamps fail, so a streak of failures is logged
	// once (and its end once). Only the stamping goroutine, or Start
	// before it, touches it.
	failing bool
}

// nodeBeat is how often a Client stamps its row: Config.NodeHeartbeat, or
// else the shortest HeartbeatInterval of its Worker Groups after their
// defaults (a third of each LeaseDuration), or a third of
// DefaultLeaseDuration for a Client without groups.
func nodeBeat(cfg Config) (time.Duration, error) {
	switch {
	case cfg.NodeHeartbeat < 0:
		return 0, fmt.Errorf("%w: NodeHeartbeat %v (want ≥ 0)", ErrInvalidConfig, cfg.NodeHeartbeat)
	case cfg.NodeHeartbeat > 0:
		return cfg.NodeHeartbeat, nil
	}
	beat := node.Pacing{}.WithDefaults(node.Config{}.WithDefaults().LeaseDuration).HeartbeatInterval
	for i, g := range cfg.Groups {
		lease := g.driver().WithDefaults().LeaseDuration
		hb := g.pacing(cfg).WithDefaults(lease).HeartbeatInterval
		if i == 0 || hb < beat {
			beat = hb
		}
	}
	return beat, nil
}

// newNodeRegistry returns the registry row of a Client about to start: a
// fresh id (nodeID and a random suffix, so two starts never share a row),
// this process's host, pid and Version, and the Worker Groups.
func (c *Client) newNodeRegistry() *nodeRegistry {
	host, _ := os.Hostname() // unknown stays empty
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	groups := make([]store.NodeGroup, len(c.groups))
	for i, g := range c.groups {
		groups[i] = store.NodeGroup{Name: g.name, Queues: g.queues}
	}
	return &nodeRegistry{
		store: c.store,
		log:   c.log,
		stamp: store.NodeStampParams{
			ID: c.nodeID + "." + hex.EncodeToString(b[:]), Host: host, PID: os.Getpid(), Version: Version,
			Groups: groups, Beat: c.nodeBeat, Forget: NodeForget,
		},
		running: c.running,
		cancel:  func() {},
		done:    make(chan struct{}),
	}
}

// running is how many jobs the Client's Pumps hold now: Attempts running
// and finished ones whose outcome is not yet in the store.
func (c *Client) running() int {
	n := 0
	for _, p := range c.pumps {
		s := p.Stats()
		n += s.Executing + s.BufferedOutcomes
	}
	return n
}

// start stamps the row once, so the node is listed when Start returns,
// and then on every beat until ctx is done or end is called.
func (r *nodeRegistry) start(ctx context.Context) {
	ctx, r.cancel = context.WithCancel(ctx)
	r.beat(ctx)
	go func() {
		defer close(r.done)
		t := time.NewTicker(r.stamp.Beat)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				r.beat(ctx)
			}
		}
	}()
}

// beat stamps the row, within one beat. A failure is never fatal: the
// first of a streak is logged at Warn, the stamp that ends it at Info, and the row meanwhile
// ages towards expired, which is what an operator should then see.
func (r *nodeRegistry) beat(ctx context.Context) {
	p := r.stamp
	p.Running = r.running()
	stampCtx, cancel := context.WithTimeout(ctx, p.Beat)
	defer cancel()
	_, err := r.store.NodeStamp(stampCtx, p)
	switch {
	case err != nil && ctx.Err() != nil:
		// The Client is stopping: a stamp cut short is no failure.
	case err != nil && !r.failing:
		r.failing = true
		r.log.WarnContext(ctx, "node registry: stamp failed; the node shows as expired if this goes on (logged once until a stamp succeeds)",
			"node", p.ID, "error", err)
	case err == nil && r.failing:
		r.failing = false
		r.log.InfoContext(ctx, "node registry: stamp succeeded again", "node", p.ID)
	}
}

// end stops the stamping (cancelling a stamp in flight), waits for the
// goroutine, and removes the row. A failed removal is logged: the row then
// expires on its own.
func (r *nodeRegistry) end(ctx context.Context) {
	r.cancel()
	<-r.done
	if err := r.store.NodeRemove(ctx, r.stamp.ID); err != nil {
		r.log.WarnContext(ctx, "node registry: could not remove this node's row; it shows as expired until forgotten",
			"node", r.stamp.ID, "error", err)
	}
}
