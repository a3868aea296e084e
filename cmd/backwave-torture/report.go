package main

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/backwave/backwave/cmd/backwave-torture/audit"
	"github.com/backwave/backwave/cmd/backwave-torture/journal"
)

// cellStat is one cell's measurements.
type cellStat struct {
	name       string
	dur        time.Duration
	pickups    int
	p50, p99   time.Duration
	throughput float64 // succeeded outcomes applied per second
	waits      string
}

// report is what a run measured, printed as Markdown.
type report struct {
	command             string
	target              string
	seed                uint64
	schedule            string
	started, ended      time.Time
	faults              map[string]int
	jobs                int
	states              map[string]int
	claims, applied     int
	stale, lost         int
	starts, torn        int
	ops                 map[string]int
	recovery            map[string][]time.Duration
	cells               []cellStat
	walMax, walBound    int64
	healed, recovered   time.Time
	liveness            time.Duration
	notes               []string
	workers, procs      int
	lease, poll, maint  time.Duration
	logsRead, logsTotal int
}

func buildReport(c *coordinator, in audit.Input, torn int, healed, recovered time.Time) *report {
	r := &report{
		command: c.o.command, target: c.o.target, seed: c.o.seed, schedule: c.sched.String(),
		started: c.start, ended: time.Now(), faults: map[string]int{}, states: map[string]int{},
		ops: map[string]int{}, recovery: map[string][]time.Duration{}, torn: torn,
		healed: healed, recovered: recovered, liveness: c.o.liveness, walBound: c.o.walBound,
		workers: c.o.workers, lease: c.group.Lease, poll: c.group.Poll, maint: c.group.Maintenance,
	}
	if c.o.target != targetSQLite {
		r.walBound = 0
	}
	if c.o.target == targetGalera {
		r.notes = append(r.notes, fmt.Sprintf("Galera: %d nodes; worker slot i runs on node (i-1) mod %d, the producer, operator, reader and coordinator on node 1. node_crash SIGKILLs node 2's or 3's mariadbd and starts it again 2 s later to rejoin; node 1 is never crashed, and the whole-server mariadb_restart and crash_recovery are left out. kill_connection, pool_exhaustion, idle_in_tx and active_readers act on node 1. Left out as on MariaDB: listen_kill, snapshot_reader, the write-ahead log bound and the wait events column.", galeraNodes, galeraNodes))
	}
	if c.o.target == targetMariaDB {
		r.notes = append(r.notes, "MariaDB: pg_terminate and postgres_restart are kill_connection (KILL CONNECTION) and mariadb_restart (SIGTERM of mariadbd, then a new one); crash_recovery is a SIGKILL of mariadbd and InnoDB's recovery. Left out, as PostgreSQL's or SQLite's own: listen_kill (MariaDB has no LISTEN/NOTIFY, so no hint connection to end), snapshot_reader and the write-ahead log bound (SQLite's), and the wait events column (pg_stat_activity's).")
	}
	c.mu.Lock()
	r.walMax = c.walMax
	waits := c.waits
	c.mu.Unlock()
	r.jobs = len(in.Jobs)
	for _, j := range in.Jobs {
		r.states[j.State]++
		r.logsTotal++
		if j.HasLog {
			r.logsRead++
		}
	}
	type key struct{ id, a int64 }
	firstClaim := map[int64]int64{}
	claims := map[int64][]journal.Entry{}
	reported := map[key]bool{}
	var appliedAt []int64
	ack := map[int64]int64{}
	rescheduled := map[int64]bool{}
	dependent := map[int64]bool{}
	procs := map[string]bool{}
	for _, e := range in.Entries {
		procs[e.Proc] = true
		switch e.Kind {
		case journal.KindFault:
			r.faults[e.Note]++
		case journal.KindClaim:
			r.claims++
			if _, ok := firstClaim[e.ID]; !ok {
				firstClaim[e.ID] = e.T
			}
			claims[e.ID] = append(claims[e.ID], e)
		case journal.KindStart:
			r.starts++
		case journal.KindReport:
			if e.Applied {
				reported[key{e.ID, e.A}] = true
				r.applied++
				appliedAt = append(appliedAt, e.T)
			} else {
				r.stale++
			}
		case journal.KindRenewLost:
			r.lost++
		case journal.KindEnqueue:
			for _, id := range e.IDs {
				ack[id] = e.T
			}
		case journal.KindDependency:
			dependent[e.ID] = true
		case journal.KindOperator:
			if e.Applied {
				r.ops[e.Note]++
			}
			if e.Note == "reschedule" {
				rescheduled[e.ID] = true
			}
			if e.Note == "ceiling" {
				r.notes = append(r.notes, fmt.Sprintf("measured ceiling: %d jobs/s (sustained_high_load enqueued at 1.5× it)", e.N))
			}
			if e.Note == "burst" {
				r.notes = append(r.notes, "event_burst: "+e.Detail)
			}
		}
	}
	r.procs = len(procs)
	sort.Slice(appliedAt, func(i, j int) bool { return appliedAt[i] < appliedAt[j] })
	nextApplied := func(after int64) (time.Duration, bool) {
		i := sort.Search(len(appliedAt), func(i int) bool { return appliedAt[i] > after })
		if i == len(appliedAt) {
			return 0, false
		}
		return time.Duration(appliedAt[i] - after), true
	}
	for _, e := range in.Entries {
		if e.Kind != journal.KindFault {
			continue
		}
		at := max(e.T, e.End)
		if e.Note == faultKill9 || e.Note == faultFreeze {
			// Recovery: until the last job the killed process held
			// left Running (its Lease expired), by the Transition Log,
			// else until it was claimed again.
			name, _, _ := strings.Cut(e.Detail, " ") // "w2.2" or "w2.2 stopped 8s"
			prefix := name + "/"
			var worst time.Duration
			found := false
			for id, cs := range claims {
				for _, cl := range cs {
					if !strings.HasPrefix(cl.W, prefix) || cl.T > e.T || reported[key{id, cl.A}] {
						continue
					}
					if d, ok := leaseEnded(in.Jobs[id], cl.A, e.T); ok {
						worst, found = max(worst, d), true
						continue
					}
					for _, nx := range cs {
						if nx.A > cl.A && nx.T > e.T {
							worst, found = max(worst, time.Duration(nx.T-e.T)), true
							break
						}
					}
				}
			}
			if found {
				r.recovery[e.Note] = append(r.recovery[e.Note], worst)
			}
			continue
		}
		if d, ok := nextApplied(at); ok {
			r.recovery[e.Note] = append(r.recovery[e.Note], d)
		}
	}
	for _, cl := range c.cells {
		st := cellStat{name: cl.Name, dur: cl.To.Sub(cl.From)}
		var lat []time.Duration
		for id, t := range ack {
			if t < cl.From.UnixNano() || t >= cl.To.UnixNano() || dependent[id] || rescheduled[id] {
				continue
			}
			if j, ok := in.Jobs[id]; !ok || j.Queue != queueFree {
				continue
			}
			if fc, ok := firstClaim[id]; ok {
				lat = append(lat, time.Duration(max(fc-t, 0)))
			}
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		st.pickups = len(lat)
		if len(lat) > 0 {
			st.p50 = lat[len(lat)/2]
			st.p99 = lat[min(len(lat)-1, len(lat)*99/100)]
		}
		n := 0
		for _, e := range in.Entries {
			if e.Kind == journal.KindReport && e.Applied && e.State == "succeeded" && e.T >= cl.From.UnixNano() && e.T < cl.To.UnixNano() {
				n++
			}
		}
		st.throughput = float64(n) / st.dur.Seconds()
		st.waits = topWaits(waits[cl.Name], 3)
		r.cells = append(r.cells, st)
	}
	return r
}

func topWaits(m map[string]int, k int) string {
	type kv struct {
		k string
		n int
	}
	var all []kv
	total := 0
	for key, n := range m {
		all = append(all, kv{key, n})
		total += n
	}
	sort.Slice(all, func(i, j int) bool { return all[i].n > all[j].n || (all[i].n == all[j].n && all[i].k < all[j].k) })
	var parts []string
	for _, x := range all[:min(k, len(all))] {
		parts = append(parts, fmt.Sprintf("%s %d%%", x.k, x.n*100/max(total, 1)))
	}
	return strings.Join(parts, ", ")
}

func minMedMax(ds []time.Duration) string {
	if len(ds) == 0 {
		return "—"
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rd := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	return fmt.Sprintf("%s / %s / %s", rd(s[0]), rd(s[len(s)/2]), rd(s[len(s)-1]))
}

// summary is the one line a run ends with.
func summary(vs []audit.Violation) string {
	if len(vs) == 0 {
		return "0 violations"
	}
	seen := map[string]int{}
	for _, v := range vs {
		seen[v.Audit]++
	}
	var parts []string
	for _, n := range audit.Names {
		if seen[n] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", n, seen[n]))
		}
	}
	return fmt.Sprintf("%d violations (%s)", len(vs), strings.Join(parts, ", "))
}

// markdown renders the report.
func (r *report) markdown(vs []audit.Violation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Torture run: %s, seed %d\n\n", r.target, r.seed)
	fmt.Fprintf(&b, "Command: `%s`  \n", r.command)
	fmt.Fprintf(&b, "Run: %s to %s UTC (%s); %d worker slots, %d processes journaled; Lease %s, poll %s, maintenance %s.\n\n",
		r.started.UTC().Format("2006-01-02 15:04:05"), r.ended.UTC().Format("15:04:05"), r.ended.Sub(r.started).Round(time.Second), r.workers, r.procs, r.lease, r.poll, r.maint)
	fmt.Fprintf(&b, "**Result: %s**\n\n", summary(vs))
	counts := map[string]int{}
	for _, v := range vs {
		counts[v.Audit]++
	}
	b.WriteString("| audit | violations |\n|---|---|\n")
	for _, n := range audit.Names {
		val := fmt.Sprint(counts[n])
		if n == audit.WALBound && r.walBound == 0 {
			val = "n/a (SQLite only)"
		}
		fmt.Fprintf(&b, "| %s | %s |\n", n, val)
	}
	fmt.Fprintf(&b, "\nJobs: %d stored (", r.jobs)
	var st []string
	for k, n := range r.states {
		st = append(st, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(st)
	b.WriteString(strings.Join(st, ", "))
	fmt.Fprintf(&b, "); %d Attempts claimed, %d handler starts, %d outcomes applied, %d refused by the fence (stale), %d Leases reported lost at renewal; %d torn journal lines; Transition Logs read for %d of %d jobs.\n\n", r.claims, r.starts, r.applied, r.stale, r.lost, r.torn, r.logsRead, r.logsTotal)
	var ops []string
	for k, n := range r.ops {
		ops = append(ops, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(ops)
	fmt.Fprintf(&b, "Operator and store actions that succeeded: %s.\n\n", strings.Join(ops, ", "))
	b.WriteString("| fault | injected | recovery min / median / max |\n|---|---|---|\n")
	kinds := []string{faultKill9, faultFreeze, faultTerminate, faultKillConn, faultRestart, faultMariaRestart, faultCrash, faultNodeCrash, faultFailover, faultPool, faultIdleInTx, faultRR, faultListenKill, faultBurst, faultHighLoad, faultKillInTx, faultSnapshot}
	for _, k := range kinds {
		if !targetHas(r.target, k) {
			continue
		}
		fmt.Fprintf(&b, "| %s | %d | %s |\n", k, r.faults[k], minMedMax(r.recovery[k]))
	}
	b.WriteString("\nRecovery: for kill9 and freeze, from the signal until the last job the process held left Running (its Lease expired); for the others, from the fault's end until the next applied outcome.\n\n")
	var calm float64
	for _, c := range r.cells {
		if c.name == "calm" {
			calm = c.throughput
		}
	}
	b.WriteString("| cell | length | pickups | pickup p50 | pickup p99 | throughput (succeeded/s) | vs calm |")
	if r.target == targetPostgres || r.target == targetPostgresHA {
		b.WriteString(" top wait events |")
	}
	b.WriteString("\n|---|---|---|---|---|---|---|")
	if r.target == targetPostgres || r.target == targetPostgresHA {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, c := range r.cells {
		ratio := "—"
		if calm > 0 {
			ratio = fmt.Sprintf("%.2f×", c.throughput/calm)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %.1f | %s |", c.name, c.dur.Round(time.Second), c.pickups, c.p50.Round(time.Millisecond), c.p99.Round(time.Millisecond), c.throughput, ratio)
		if r.target == targetPostgres || r.target == targetPostgresHA {
			fmt.Fprintf(&b, " %s |", c.waits)
		}
		b.WriteString("\n")
	}
	b.WriteString("\nPickup latency: from the acknowledged enqueue to the first claim, jobs of the unlimited Queue only (no dependents, none an operator rescheduled), by the cell the enqueue fell in.\n\n")
	if r.walBound > 0 && r.target == targetSQLite {
		fmt.Fprintf(&b, "SQLite write-ahead log: largest %.1f MiB, bound %.0f MiB.\n\n", float64(r.walMax)/(1<<20), float64(r.walBound)/(1<<20))
	}
	if !r.recovered.IsZero() {
		fmt.Fprintf(&b, "Liveness: every job terminal %s after the faults stopped (bound %s).\n\n", r.recovered.Sub(r.healed).Round(time.Second), r.liveness)
	} else {
		fmt.Fprintf(&b, "Liveness: jobs still live %s after the faults stopped (bound %s).\n\n", r.liveness, r.liveness)
	}
	for _, n := range r.notes {
		fmt.Fprintf(&b, "- %s\n", n)
	}
	fmt.Fprintf(&b, "\nFault schedule:\n\n```\n%s```\n", r.schedule)
	return b.String()
}

// targetHas reports whether target's runs inject the fault kind k.
func targetHas(target, k string) bool {
	switch k {
	case faultKill9, faultFreeze, faultBurst, faultHighLoad, faultKillInTx:
		return true
	case faultPool:
		return target != targetSQLite && target != targetPostgresHA
	case faultIdleInTx, faultRR:
		return target != targetSQLite
	case faultCrash:
		return target == targetPostgres || target == targetMariaDB
	case faultTerminate, faultListenKill:
		return target == targetPostgres || target == targetPostgresHA
	case faultRestart:
		return target == targetPostgres
	case faultFailover:
		return target == targetPostgresHA
	case faultKillConn:
		return target == targetMariaDB || target == targetGalera
	case faultMariaRestart:
		return target == targetMariaDB
	case faultNodeCrash:
		return target == targetGalera
	case faultSnapshot:
		return target == targetSQLite
	}
	return false
}

// leaseEnded returns how long after kill (Unix ns) the job's Attempt a
// left Running, by its Transition Log.
func leaseEnded(j audit.Job, a int64, kill int64) (time.Duration, bool) {
	for _, t := range j.Log {
		if t.From == "running" && t.Attempt == a {
			return max(t.At.Sub(time.Unix(0, kill)), 0), true
		}
	}
	return 0, false
}
