package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/backwave/backwave/cmd/backwave-torture/audit"
	"github.com/backwave/backwave/cmd/backwave-torture/journal"
	"github.com/backwave/backwave/internal/privatedb"
)

// The ports of the postgres-ha target's private cluster, from --pg-port:
// the nodes' PostgreSQL on it and the next, their Patroni REST APIs at
// +100, etcd's client and peer ports at +200.
const (
	haNodes      = 2
	haRESTOffset = 100
	haEtcdOffset = 200
)

// startPrivateHA starts the postgres-ha target's private cluster in dir:
// etcd and two Patroni-managed PostgreSQL nodes, synchronous unless async,
// with the single cluster's settings (fsync off, as there: the faults kill
// processes, never the host).
func startPrivateHA(ctx context.Context, dir, within string, port int, async bool) (*privatedb.Patroni, error) {
	ports, rest := make([]int, haNodes), make([]int, haNodes)
	for i := range ports {
		ports[i], rest[i] = port+i, port+haRESTOffset+i
	}
	p, err := privatedb.StartPatroni(ctx, privatedb.PatroniConfig{
		Dir: dir, Within: within, Ports: ports, RESTPorts: rest,
		EtcdPort: port + haEtcdOffset, EtcdPeerPort: port + haEtcdOffset + 1,
		Synchronous: !async,
		Settings: map[string]string{
			"max_connections":  "420",
			"fsync":            "off",
			"full_page_writes": "on", // pg_rewind needs it
			"shared_buffers":   "128MB",
			"log_min_messages": "warning",
		},
	})
	if err != nil {
		return nil, fmt.Errorf("private Patroni cluster: %w", err)
	}
	return p, nil
}

// failoverRec is what one failover measured.
type failoverRec struct {
	Killed   time.Time     // the SIGKILL of the primary's postmaster
	Old, New int           // the nodes, 0-based
	Promoted time.Duration // kill → the new primary writable
	Rejoined time.Duration // kill → the old primary streaming again (0: never)
	// Dashboard is how long after the kill a Monitor read (CountByState,
	// each try bounded by 5 s) first succeeded, DashTries how many tries
	// it took and DashErr the first try's error.
	Dashboard time.Duration
	DashTries int
	DashErr   string
	// Stop is how long a worker process took to stop (SIGTERM: its
	// Client's Stop, bounded by 20 s) when asked right after the kill.
	Stop    time.Duration
	StopOf  string
	Err     string
	dashMax time.Duration
	// Stalled says the standby's WAL receiver was stopped for stallFor
	// before the kill (asynchronous runs).
	Stalled bool
}

// stallFor is how long an asynchronous run's standby receives nothing
// before the primary is killed: the window of acknowledged commits a
// failover then loses.
const stallFor = 2 * time.Second

// haState is the coordinator's record of the postgres-ha target's
// failovers.
type haState struct {
	mu   sync.Mutex
	recs []failoverRec
}

// failover SIGKILLs the primary's postmaster under load and waits until
// Patroni has promoted the standby and the old primary has rejoined (by
// pg_rewind) as a standby, measuring the dashboard's reads and a worker's
// Stop in the gap.
func (c *coordinator) failover(ctx context.Context) {
	if c.ha == nil {
		return
	}
	c.nodeMu.Lock()
	defer c.nodeMu.Unlock()
	old := c.ha.Primary(ctx)
	if old < 0 {
		c.logf("failover skipped: no primary now")
		return
	}
	rec := failoverRec{Old: old, New: -1}
	// Asynchronous, the standby is made to lag at the crash, as a slow
	// network or a busy standby would: its WAL receiver is stopped
	// (SIGSTOP) for stallFor before the kill and let go after it. What
	// the kernel's socket buffer already holds still reaches it; what
	// the primary acknowledged and had not yet sent is lost in the
	// promotion, and the audits must name it.
	var stalled int
	if c.o.async {
		if pid, err := c.ha.WALReceiver(ctx, 1-old); err != nil {
			c.logf("failover: no WAL receiver to stall: %v", err)
		} else if err := syscall.Kill(pid, syscall.SIGSTOP); err == nil {
			stalled = pid
			sleepCtx(ctx, stallFor)
		}
	}
	from := time.Now()
	rec.Killed = from
	err := c.ha.KillPostmaster(old)
	if stalled != 0 {
		_ = syscall.Kill(stalled, syscall.SIGCONT)
		rec.Stalled = true
	}
	if err != nil {
		rec.Err = err.Error()
		c.fault(faultFailover, from, err.Error())
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { c.dashboardGap(ctx, from, &rec) })
	wg.Go(func() { c.stopInGap(from, &rec) })
	now, err := c.ha.WaitPrimary(ctx, old, 2*time.Minute)
	if err == nil {
		rec.New, rec.Promoted = now, time.Since(from)
		err = c.ha.WaitHealthy(ctx, 3*time.Minute)
		if err == nil {
			rec.Rejoined = time.Since(from)
		}
	}
	wg.Wait()
	if err != nil {
		rec.Err = err.Error()
	}
	c.hastate.mu.Lock()
	c.hastate.recs = append(c.hastate.recs, rec)
	c.hastate.mu.Unlock()
	stall := ""
	if rec.Stalled {
		stall = fmt.Sprintf("node %d's WAL receiver stopped %s before the kill; ", 1-old+1, stallFor)
	}
	detail := fmt.Sprintf(stall+"SIGKILL of node %d's postmaster; node %d writable after %s; node %d streaming again after %s (%v)",
		old+1, rec.New+1, rec.Promoted.Round(time.Millisecond), old+1, rec.Rejoined.Round(time.Millisecond), errOrNil(err))
	c.fault(faultFailover, from, detail)
	c.logf("failover: %s", detail)
}

// dashboardGap reads the Monitor (as the dashboard's overview does) from
// the kill until a read succeeds, each try bounded by 5 s.
func (c *coordinator) dashboardGap(ctx context.Context, from time.Time, rec *failoverRec) {
	for ctx.Err() == nil && time.Since(from) < 3*time.Minute {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		t := time.Now()
		_, err := c.admin.CountByState(rctx, "")
		cancel()
		rec.DashTries++
		rec.dashMax = max(rec.dashMax, time.Since(t))
		if err == nil {
			rec.Dashboard = time.Since(from)
			return
		}
		if rec.DashErr == "" {
			rec.DashErr = err.Error()
		}
		sleepCtx(ctx, 250*time.Millisecond)
	}
}

// stopInGap asks worker w1 to stop right after the kill, times its exit,
// and starts its next incarnation.
func (c *coordinator) stopInGap(from time.Time, rec *failoverRec) {
	const slot = "w1"
	p, ok := c.fl.get(slot)
	if !ok || p.frozen.Load() {
		return
	}
	p.stop(45 * time.Second)
	rec.Stop, rec.StopOf = time.Since(from), p.name
	if _, err := c.fl.start(slot, roleWorker, false, nil); err != nil {
		c.logf("restart %s: %v", slot, err)
	}
}

// haNotes summarizes the failovers for the report: kill to promotion, to
// the first claim on the new primary (the first claim journaled after it
// became writable), to the rejoin, and what the dashboard and a worker's
// Stop did in the gap.
func (c *coordinator) haNotes(entries []journal.Entry) []string {
	if c.ha == nil {
		return nil
	}
	c.hastate.mu.Lock()
	recs := append([]failoverRec(nil), c.hastate.recs...)
	c.hastate.mu.Unlock()
	var claims []int64
	for _, e := range entries {
		if e.Kind == journal.KindClaim {
			claims = append(claims, e.T)
		}
	}
	sort.Slice(claims, func(i, k int) bool { return claims[i] < claims[k] })
	mode := "synchronous (Patroni synchronous_mode, synchronous_commit=on)"
	if c.o.async {
		mode = fmt.Sprintf("asynchronous (no synchronous standby; before each kill the standby's WAL receiver is stopped for %s, so it lags at the crash: what the primary acknowledged and had not yet sent is lost in the promotion, and the audits name each)", stallFor)
	}
	var promo, first, rejoin, dash, stop []time.Duration
	var rows []string
	for i, r := range recs {
		fc := time.Duration(0)
		if r.New >= 0 {
			at := r.Killed.Add(r.Promoted).UnixNano()
			k := sort.Search(len(claims), func(j int) bool { return claims[j] > at })
			if k < len(claims) {
				fc = time.Duration(claims[k] - r.Killed.UnixNano())
				first = append(first, fc)
			}
			promo = append(promo, r.Promoted)
		}
		if r.Rejoined > 0 {
			rejoin = append(rejoin, r.Rejoined)
		}
		if r.Dashboard > 0 {
			dash = append(dash, r.Dashboard)
		}
		if r.Stop > 0 {
			stop = append(stop, r.Stop)
		}
		errText := r.Err
		if errText == "" {
			errText = "ok"
		}
		rows = append(rows, fmt.Sprintf("| %d | node %d → node %d | %s | %s | %s | %s after %d tries (longest %s); first error: %s | %s | %s |",
			i+1, r.Old+1, r.New+1, r.Promoted.Round(time.Millisecond), fc.Round(time.Millisecond), r.Rejoined.Round(time.Millisecond),
			r.Dashboard.Round(time.Millisecond), r.DashTries, r.dashMax.Round(time.Millisecond), oneLine(r.DashErr), r.Stop.Round(time.Millisecond), errText))
	}
	notes := []string{fmt.Sprintf("postgres-ha: a private Patroni cluster of %d nodes and one etcd, replication %s; clients use the multi-host URL %s. %d failovers: SIGKILL of the primary's postmaster, Patroni promotes the standby (primary_start_timeout 0), the old primary rejoins by pg_rewind.",
		haNodes, mode, c.ha.URL("postgres"), len(recs))}
	notes = append(notes, fmt.Sprintf("Failover timings (p50 / max over %d): kill → new primary writable %s; kill → first claim on the new primary %s; kill → old primary streaming again %s; kill → first good dashboard read %s; kill → a worker asked to stop at the kill has exited %s.",
		len(recs), p50max(promo), p50max(first), p50max(rejoin), p50max(dash), p50max(stop)))
	notes = append(notes, "Failovers:\n\n  | # | nodes | writable | first claim | rejoined | dashboard read | worker stop | result |\n  |---|---|---|---|---|---|---|---|\n  "+strings.Join(rows, "\n  ")+"\n")
	return notes
}

// p50max renders a sample's median and maximum.
func p50max(d []time.Duration) string {
	if len(d) == 0 {
		return "— (none)"
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, k int) bool { return s[i] < s[k] })
	return fmt.Sprintf("%s / %s", s[len(s)/2].Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond))
}

// oneLine shortens an error for a table cell.
func oneLine(s string) string {
	if s == "" {
		return "none"
	}
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\n", " "), "|", "/")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}

// haDir is the private Patroni cluster's directory in the work directory.
func haDir(work string) string { return filepath.Join(work, "ha") }

// lossWindow is the span around a failover in which a write the old
// primary acknowledged may be lost by an asynchronous promotion: from a
// second before the standby stopped receiving until the new primary was
// writable.
func (r failoverRec) lossWindow() (from, to time.Time) {
	from = r.Killed.Add(-time.Second)
	if r.Stalled {
		from = from.Add(-stallFor)
	}
	return from, r.Killed.Add(r.Promoted)
}

// asyncLosses names, for an asynchronous run, each violation's
// acknowledged writes that fell in a failover's loss window: the writes
// the promotion lost, which the audits found as lost jobs, outcomes
// applied and then undone (fence), or Attempts claimed twice. A violation
// with no acknowledged write in any window is left as it is: a bug.
func (c *coordinator) asyncLosses(entries []journal.Entry, vs []audit.Violation) []string {
	if c.ha == nil || !c.o.async || len(vs) == 0 {
		return nil
	}
	c.hastate.mu.Lock()
	recs := append([]failoverRec(nil), c.hastate.recs...)
	c.hastate.mu.Unlock()
	byJob := map[int64][]journal.Entry{}
	for _, e := range entries {
		switch {
		case e.Kind == journal.KindEnqueue:
			for _, id := range e.IDs {
				byJob[id] = append(byJob[id], e)
			}
		case e.Kind == journal.KindClaim, e.Kind == journal.KindReport && e.Applied, e.Kind == journal.KindOperator && e.ID != 0:
			byJob[e.ID] = append(byJob[e.ID], e)
		}
	}
	var lines []string
	explained := 0
	for _, v := range vs {
		var found []string
		for _, e := range byJob[v.Job] {
			for i, r := range recs {
				if from, to := r.lossWindow(); !e.Time().Before(from) && !e.Time().After(to) {
					found = append(found, fmt.Sprintf("%s by %s at %s (%s before the kill of failover %d)",
						e.Kind, e.Proc, e.Time().UTC().Format("15:04:05.000"), r.Killed.Sub(e.Time()).Round(time.Millisecond), i+1))
				}
			}
		}
		if len(found) == 0 {
			lines = append(lines, fmt.Sprintf("  - %s: no acknowledged write in a failover's window — not explained by the asynchronous failover", v))
			continue
		}
		explained++
		lines = append(lines, fmt.Sprintf("  - %s — acknowledged and lost in the promotion: %s", v, strings.Join(found, "; ")))
	}
	head := fmt.Sprintf("Asynchronous replication: %d of %d violations are acknowledged writes the failovers lost (each named below with the write and the failover; a negative time is a write the dying primary's backends still acknowledged after the SIGKILL of its postmaster). With synchronous replication the same faults lose none.", explained, len(vs))
	return []string{head + "\n\n" + strings.Join(lines, "\n") + "\n"}
}
