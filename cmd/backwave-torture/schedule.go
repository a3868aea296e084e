package main

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"
)

// The cells of a run: a calm baseline, a ceiling probe, then chaos cells
// (faults) and pressure cells (load and long transactions) in an order the
// seed shuffles.
var (
	postgresCells = []string{"idle_in_tx", "active_readers", "pool_exhaustion", "pg_backend_kill", "postgres_restart", "crash_recovery", "repeated_kills", "listen_kill", "sustained_high_load", "event_burst", "kill_in_tx"}
	sqliteCells   = []string{"snapshot_reader", "repeated_kills", "kill_in_tx", "sustained_high_load", "event_burst"}
	// mariadbCells are postgresCells with MariaDB's own names, less
	// listen_kill: MariaDB has no LISTEN/NOTIFY, so there is no Wake-Up
	// Hint connection to end.
	mariadbCells = []string{"idle_in_tx", "active_readers", "pool_exhaustion", "connection_kill", "mariadb_restart", "crash_recovery", "repeated_kills", "sustained_high_load", "event_burst", "kill_in_tx"}
	// galeraCells are mariadbCells with node crashes for the whole
	// server's restarts.
	// haCells are postgresCells less the whole server's restarts (the
	// failovers, all through the run, take their place) and
	// pool_exhaustion (whose 300 idle connections would hold the
	// failed-over primary's slots).
	haCells     = []string{"idle_in_tx", "active_readers", "pg_backend_kill", "repeated_kills", "listen_kill", "sustained_high_load", "event_burst", "kill_in_tx"}
	galeraCells = []string{"idle_in_tx", "active_readers", "pool_exhaustion", "connection_kill", "node_crash", "repeated_kills", "sustained_high_load", "event_burst", "kill_in_tx"}
)

// The kinds of fault the coordinator injects, as counted in the report.
const (
	faultKill9         = "kill9"            // SIGKILL of a worker process
	faultTerminate     = "pg_terminate"     // pg_terminate_backend of random connections
	faultRestart       = "postgres_restart" // pg_ctl restart -m fast
	faultCrash         = "crash_recovery"   // pg_ctl restart -m immediate: crash recovery
	faultPool          = "pool_exhaustion"  // 300 idle connections held by the coordinator
	faultIdleInTx      = "idle_in_tx"       // a session idle in transaction, xmin pinned
	faultRR            = "active_readers"   // REPEATABLE READ scanners holding snapshots
	faultListenKill    = "listen_kill"      // pg_terminate_backend of every LISTEN connection
	faultBurst         = "event_burst"      // a burst of enqueues within about a second
	faultHighLoad      = "sustained_high_load"
	faultKillInTx      = "kill_in_tx"      // SIGKILL of a process inside a write transaction
	faultSnapshot      = "snapshot_reader" // SQLite: a reader holding one snapshot
	faultRepeatedKills = "repeated_kills"
	faultFreeze        = "freeze"          // SIGSTOP of a worker past its Lease, then SIGCONT: an isolated node's late outcomes
	faultKillConn      = "kill_connection" // MariaDB: KILL CONNECTION of random connections
	faultMariaRestart  = "mariadb_restart" // MariaDB: SIGTERM (a clean shutdown) and a new mariadbd
	cellKillConn       = "connection_kill" // MariaDB: the cell of repeated KILL CONNECTIONs
	faultNodeCrash     = "node_crash"      // Galera: SIGKILL of a node's mariadbd, restarted 2 s later to rejoin
	faultFailover      = "failover"        // postgres-ha: SIGKILL of the primary's postmaster, the standby promoted, the old primary rejoined
)

// freezeFor is how long a frozen worker stays stopped: past its Lease
// (5 s), so its Attempts are expired and claimed elsewhere before it
// reports them.
const freezeFor = 8 * time.Second

// cell is one span of the schedule, in absolute time once the run starts.
type cell struct {
	Name     string
	From, To time.Time
}

// event is one instant fault of the schedule, at an offset from the start.
type event struct {
	At   time.Duration
	Kind string
	// N is how many connections a pg_terminate ends.
	N int
}

// cellPlan is a cell at an offset from the start.
type cellPlan struct {
	Name       string
	Start, Dur time.Duration
}

// schedule is a run's fault schedule: a pure function of the seed, the
// target and the chaos duration, so the same seed gives the same faults at
// the same offsets (the interleavings it meets differ).
type schedule struct {
	Seed   uint64
	Target string
	Chaos  time.Duration
	Cells  []cellPlan
	Events []event
}

func uniform(r *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(r.Int64N(int64(hi-lo)+1))
}

// plan draws the schedule.
func plan(seed uint64, target string, chaos time.Duration) schedule {
	r := rand.New(rand.NewPCG(seed, 0x7077))
	rest := postgresCells
	switch target {
	case targetSQLite:
		rest = sqliteCells
	case targetMariaDB:
		rest = mariadbCells
	case targetGalera:
		rest = galeraCells
	case targetPostgresHA:
		rest = haCells
	}
	rest = append([]string(nil), rest...)
	r.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
	names := append([]string{"calm", "ceiling_probe"}, rest...)
	dur := chaos / time.Duration(len(names))
	s := schedule{Seed: seed, Target: target, Chaos: chaos}
	for i, n := range names {
		s.Cells = append(s.Cells, cellPlan{Name: n, Start: time.Duration(i) * dur, Dur: dur})
	}
	add := func(at time.Duration, kind string, n int) {
		s.Events = append(s.Events, event{At: at, Kind: kind, N: n})
	}
	chaosFrom := 2 * dur // no faults in the calm baseline and the ceiling probe
	for t := chaosFrom + uniform(r, 3*time.Second, 8*time.Second); t < chaos; t += uniform(r, 3*time.Second, 8*time.Second) {
		add(t, faultKill9, 1)
	}
	froze := false
	for t := chaosFrom + uniform(r, 15*time.Second, 40*time.Second); t < chaos-freezeFor; t += uniform(r, 15*time.Second, 40*time.Second) {
		add(t, faultFreeze, 1)
		froze = true
	}
	if !froze && chaos-freezeFor > chaosFrom {
		// A run too short for the first draw (a --smoke run) still
		// freezes once, midway through its faults; it draws nothing, so
		// the rest of the schedule is the seed's as before.
		add(chaosFrom+(chaos-freezeFor-chaosFrom)/2, faultFreeze, 1)
	}
	if target == targetPostgresHA {
		// A failover every 40–70 s from the end of the ceiling probe,
		// the last at least 30 s before the faults stop: 25 or so in a
		// 30-minute run, 3 in a --short one.
		failed := false
		for t := chaosFrom + uniform(r, 5*time.Second, 15*time.Second); t < chaos-30*time.Second; t += uniform(r, 40*time.Second, 70*time.Second) {
			add(t, faultFailover, 0)
			failed = true
		}
		if !failed && chaos > chaosFrom {
			// A run too short for the first draw (a --smoke run) still
			// fails over once, a third of the way into its faults, so
			// the CI smoke run crosses a promotion; like the freeze
			// above it draws nothing.
			add(chaosFrom+(chaos-chaosFrom)/3, faultFailover, 0)
		}
	}
	if target == targetPostgres || target == targetPostgresHA {
		for t := chaosFrom + uniform(r, 8*time.Second, 20*time.Second); t < chaos; t += uniform(r, 8*time.Second, 20*time.Second) {
			add(t, faultTerminate, 1)
		}
		for t := chaosFrom + uniform(r, 30*time.Second, 90*time.Second); t < chaos; t += uniform(r, 30*time.Second, 90*time.Second) {
			add(t, faultListenKill, 0)
		}
	}
	if target == targetMariaDB || target == targetGalera {
		for t := chaosFrom + uniform(r, 8*time.Second, 20*time.Second); t < chaos; t += uniform(r, 8*time.Second, 20*time.Second) {
			add(t, faultKillConn, 1)
		}
	}
	for _, c := range s.Cells {
		end := c.Start + c.Dur
		switch c.Name {
		case faultRepeatedKills:
			for t := c.Start + time.Second; t < end; t += uniform(r, 800*time.Millisecond, 2*time.Second) {
				add(t, faultKill9, 1)
			}
		case "pg_backend_kill":
			for t := c.Start + time.Second; t < end; t += uniform(r, time.Second, 3*time.Second) {
				add(t, faultTerminate, 1+r.IntN(3))
			}
		case cellKillConn:
			for t := c.Start + time.Second; t < end; t += uniform(r, time.Second, 3*time.Second) {
				add(t, faultKillConn, 1+r.IntN(3))
			}
		case faultMariaRestart:
			add(c.Start+c.Dur/3, faultMariaRestart, 0)
		case faultNodeCrash:
			add(c.Start+c.Dur/4, faultNodeCrash, 0)
		case faultListenKill:
			for t := c.Start + time.Second; t < end; t += 5 * time.Second {
				add(t, faultListenKill, 0)
			}
		case faultRestart:
			add(c.Start+c.Dur/3, faultRestart, 0)
		case faultCrash:
			add(c.Start+c.Dur/3, faultCrash, 0)
		case faultKillInTx:
			for t := c.Start + time.Second; t < end; t += uniform(r, 5*time.Second, 10*time.Second) {
				add(t, faultKillInTx, 0)
			}
		}
	}
	sort.SliceStable(s.Events, func(i, j int) bool { return s.Events[i].At < s.Events[j].At })
	return s
}

// String prints the schedule: the cells, then the count and the first
// offsets of each kind of instant fault.
func (s schedule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d, target %s, chaos %s\n", s.Seed, s.Target, s.Chaos)
	for _, c := range s.Cells {
		fmt.Fprintf(&b, "  cell %-20s +%-8s for %s\n", c.Name, c.Start.Round(time.Second), c.Dur.Round(time.Second))
	}
	byKind := map[string][]string{}
	var kinds []string
	for _, e := range s.Events {
		if _, ok := byKind[e.Kind]; !ok {
			kinds = append(kinds, e.Kind)
		}
		at := "+" + e.At.Round(100*time.Millisecond).String()
		if e.N > 1 {
			at += fmt.Sprintf("×%d", e.N)
		}
		byKind[e.Kind] = append(byKind[e.Kind], at)
	}
	for _, k := range kinds {
		at := byKind[k]
		more := ""
		if len(at) > 12 {
			more = fmt.Sprintf(" … (%d more)", len(at)-12)
			at = at[:12]
		}
		fmt.Fprintf(&b, "  %-14s %3d× at %s%s\n", k, len(byKind[k]), strings.Join(at, " "), more)
	}
	return b.String()
}
