package main

import (
	"context"
	"fmt"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuMeter (-cpu) charges the CPU time of a measured interval per job: the
// bench process's own (every goroutine: the system under test, its
// handlers, the harness) and, on PostgreSQL, that of the server backends
// serving the system's connections, found by application_name and read
// from /proc. On a two-core machine the two together bound the rate. It
// also charges the bench process's heap allocations (objects and bytes) and
// garbage collections per job.
type cpuMeter struct {
	b       *bench
	label   string
	appName string // "" on SQLite
	self    time.Duration
	heap    heapCounts
	backend map[int]time.Duration
	t0      time.Time
	// allocsPerJob is the heap objects allocated per job over the last
	// measured interval.
	allocsPerJob float64
}

// heapCounts are the process's cumulative heap allocations and completed
// GC cycles.
type heapCounts struct{ objects, bytes, cycles uint64 }

var heapMetrics = []string{"/gc/heap/allocs:objects", "/gc/heap/allocs:bytes", "/gc/cycles/total:gc-cycles"}

func readHeap() heapCounts {
	samples := make([]metrics.Sample, len(heapMetrics))
	for i, name := range heapMetrics {
		samples[i].Name = name
	}
	metrics.Read(samples)
	var v [3]uint64
	for i, s := range samples {
		if s.Value.Kind() == metrics.KindUint64 {
			v[i] = s.Value.Uint64()
		}
	}
	return heapCounts{objects: v[0], bytes: v[1], cycles: v[2]}
}

// clockTick is the unit of /proc/<pid>/stat times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

func (b *bench) newCPUMeter(label, appName string) *cpuMeter {
	if !b.cfg.cpu {
		return nil
	}
	return &cpuMeter{b: b, label: label, appName: appName}
}

func (m *cpuMeter) begin(ctx context.Context) {
	if m == nil {
		return
	}
	m.self = selfCPU()
	m.heap = readHeap()
	m.backend = m.backends(ctx)
	m.t0 = time.Now()
}

func (m *cpuMeter) end(ctx context.Context, jobs int) {
	if m == nil || jobs <= 0 {
		return
	}
	wall := time.Since(m.t0)
	self := selfCPU() - m.self
	heap := readHeap()
	var db time.Duration
	n := 0
	for pid, t := range m.backends(ctx) {
		db += t - m.backend[pid]
		n++
	}
	per := func(d time.Duration) string {
		return fmt.Sprintf("%.1fµs/job (%.0f%% of a core)", float64(d.Microseconds())/float64(jobs), 100*d.Seconds()/wall.Seconds())
	}
	m.allocsPerJob = float64(heap.objects-m.heap.objects) / float64(jobs)
	line := fmt.Sprintf("cpu %s: %d jobs in %v; bench process %s, %.1f allocs/job, %.0f B/job, %d GCs",
		m.label, jobs, wall.Round(time.Millisecond), per(self),
		m.allocsPerJob, float64(heap.bytes-m.heap.bytes)/float64(jobs), heap.cycles-m.heap.cycles)
	if m.appName != "" {
		line += fmt.Sprintf("; postgres backends (%d) %s", n, per(db))
	}
	fmt.Fprintln(m.b.stderr, line)
}

// backends reads the CPU time of every server backend whose
// application_name is the meter's.
func (m *cpuMeter) backends(ctx context.Context) map[int]time.Duration {
	out := map[int]time.Duration{}
	if m.appName == "" || m.b.pg == nil {
		return out
	}
	rows, err := m.b.pg.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE application_name = $1", m.appName)
	if err != nil {
		return out
	}
	defer rows.Close()
	for rows.Next() {
		var pid int
		if rows.Scan(&pid) == nil {
			out[pid] = procCPU(pid)
		}
	}
	return out
}

// procCPU is a process's user plus system time from /proc (zero if it
// cannot be read, as for a server on another host).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the parenthesized command name: state is field 3,
	// utime 14 and stime 15.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * clockTick
}

// selfCPU is this process's user plus system time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
