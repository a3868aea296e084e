package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/backwave/backwave/cmd/backwave-torture/journal"
)

// runCell injects a cell's span fault from its start to its end.
func (c *coordinator) runCell(ctx context.Context, cl cell) {
	if !sleepCtx(ctx, time.Until(cl.From)) {
		return
	}
	c.j.Write(journal.Entry{T: cl.From.UnixNano(), Kind: journal.KindPhase, Note: cl.Name, End: cl.To.UnixNano()})
	sctx, cancel := context.WithDeadline(ctx, cl.To.Add(-2*time.Second))
	defer cancel()
	from := time.Now()
	switch cl.Name {
	case faultPool:
		hold, base := holdConnections, c.pgBase
		if c.mdb != nil {
			hold, base = mariaHold, c.mdbDSN
		}
		n, err := hold(sctx, base, 300)
		c.fault(faultPool, from, fmt.Sprintf("%d idle connections held (%v)", n, errOrNil(err)))
	case faultIdleInTx:
		if c.mdb != nil {
			err := mariaIdleInTx(sctx, c.mdbDSN, c.schema)
			c.fault(faultIdleInTx, from, fmt.Sprintf("idle in a transaction holding a consistent snapshot, InnoDB's purge held back (%v)", errOrNil(err)))
			break
		}
		err := idleInTx(sctx, c.pgBase)
		c.fault(faultIdleInTx, from, fmt.Sprintf("idle in transaction with a transaction id (%v)", errOrNil(err)))
	case faultRR:
		scan, base := rrScanner, c.pgBase
		if c.mdb != nil {
			scan, base = mariaRRScanner, c.mdbDSN
		}
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() { _ = scan(sctx, base, c.schema) })
		}
		wg.Wait()
		c.fault(faultRR, from, "2 REPEATABLE READ scanners, 10 s snapshots")
	case faultSnapshot:
		hold := time.Until(cl.To.Add(-2 * time.Second))
		p, err := c.fl.start("snapshot", roleSnapshot, true, func(cfg *childConfig) { cfg.Hold = hold })
		if err != nil {
			c.logf("snapshot reader: %v", err)
			return
		}
		if err := p.waitLine(sctx, "in-snapshot", 60*time.Second); err != nil {
			c.logf("snapshot reader: %v", err)
		}
		<-p.done
		c.fault(faultSnapshot, from, fmt.Sprintf("one read snapshot held for %s", time.Since(from).Round(time.Second)))
	case faultHighLoad, faultBurst, faultRepeatedKills, "pg_backend_kill", cellKillConn:
		<-sctx.Done()
		if cl.Name == faultHighLoad || cl.Name == faultBurst {
			c.fault(cl.Name, from, "producer load cell")
		}
	}
}
