package main

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// manifest pins the environment every number was measured in.
type manifest struct {
	Mode       string            `json:"mode"`
	Started    string            `json:"started"`
	Duration   string            `json:"duration"`
	Commit     string            `json:"commit"`
	GoVersion  string            `json:"go_version"`
	OS         string            `json:"os"`
	Kernel     string            `json:"kernel"`
	CPUModel   string            `json:"cpu_model"`
	CPUCount   int               `json:"cpu_count"`
	GOMAXPROCS int               `json:"gomaxprocs"`
	LoadBefore string            `json:"load_average_before"`
	LoadAfter  string            `json:"load_average_after"`
	Postgres   map[string]string `json:"postgres,omitempty"`
	SQLite     map[string]string `json:"sqlite,omitempty"`
	Redis      map[string]string `json:"redis,omitempty"`
	// PgBouncer is the postgres-pgbouncer target's private pooler.
	PgBouncer string `json:"pgbouncer,omitempty"`
	// MariaDB is the mariadb target's server.
	MariaDB     string            `json:"mariadb,omitempty"`
	Competitors map[string]string `json:"competitors"`
	// PeerSettings is each peer's drain tuning; a row prints the settings
	// of its own scenario.
	PeerSettings map[string]string `json:"peer_settings,omitempty"`
	Sizes        string            `json:"sizes"`
}

// collectManifest reads what it can; a missing piece reads "unknown".
func collectManifest(ctx context.Context, b *bench) manifest {
	m := manifest{
		Mode:        b.cfg.mode,
		Started:     time.Now().UTC().Format(time.RFC3339),
		Commit:      gitCommit(),
		GoVersion:   runtime.Version(),
		OS:          osName(),
		Kernel:      strings.TrimSpace(readFile("/proc/sys/kernel/osrelease")),
		CPUModel:    cpuModel(),
		CPUCount:    runtime.NumCPU(),
		GOMAXPROCS:  runtime.GOMAXPROCS(0),
		LoadBefore:  loadAverage(),
		Competitors: map[string]string{"river": moduleVersion("github.com/riverqueue/river")},
		Sizes:       describeSizes(b.cfg),
	}
	if b.pg != nil {
		m.Postgres = map[string]string{}
		var version string
		if err := b.pg.QueryRow(ctx, "SHOW server_version").Scan(&version); err == nil {
			m.Postgres["version"] = version
		}
		for _, s := range []string{"shared_buffers", "synchronous_commit", "fsync", "max_connections", "wal_level", "full_page_writes"} {
			var v string
			if err := b.pg.QueryRow(ctx, "SHOW "+s).Scan(&v); err == nil {
				m.Postgres[s] = v
			}
		}
		m.Postgres["connection"] = "loopback"
		m.Competitors["riverpgxv5"] = moduleVersion("github.com/riverqueue/river/riverdriver/riverpgxv5")
	}
	for _, s := range b.systems {
		switch s.name() {
		case sysGraphile, sysPgBoss:
			m.Competitors[s.name()] = peerVersion(b.cfg.peersDir, s.name())
			m.Competitors["node"] = nodeVersion(ctx, b.cfg.node)
			m.peerSetting(s.name(), peerKnobs(s.name(), scDrain, b.cfg.sizes).String())
		case sysAsynq:
			m.Competitors[sysAsynq] = moduleVersion("github.com/hibiken/asynq")
			m.Competitors["go-redis"] = moduleVersion("github.com/redis/go-redis/v9")
			m.peerSetting(sysAsynq, asynqKnobs(scDrain, b.cfg.sizes).String())
		}
	}
	if b.redis != nil {
		m.Redis = b.redis
	}
	if b.maria != nil {
		m.MariaDB = b.mariaVersion + ", loopback"
		m.Competitors["go-sql-driver/mysql"] = moduleVersion("github.com/go-sql-driver/mysql")
	}
	if b.pooler != nil {
		m.PgBouncer = fmt.Sprintf("%s, pool_mode transaction, %d server connections, 127.0.0.1:%d (private, started for the run)",
			pgbouncerVersion(), pgbouncerPoolSize, b.pooler.Port())
	}
	if b.dir != "" {
		m.SQLite = map[string]string{
			"driver":       "modernc.org/sqlite " + moduleVersion("modernc.org/sqlite"),
			"journal_mode": "wal",
			"synchronous":  b.cfg.sqliteSync,
			"busy_timeout": "10000",
			"directory":    b.dir,
		}
		if v, err := sqliteVersion(ctx); err == nil {
			m.SQLite["version"] = v
		}
		m.Competitors["riversqlite"] = moduleVersion("github.com/riverqueue/river/riverdriver/riversqlite")
	}
	return m
}

func (m *manifest) peerSetting(sys, v string) {
	if m.PeerSettings == nil {
		m.PeerSettings = map[string]string{}
	}
	m.PeerSettings[sys] = v
}

// finish stamps the end of the run.
func (m *manifest) finish(started time.Time) {
	m.LoadAfter = loadAverage()
	m.Duration = time.Since(started).Round(time.Second).String()
}

func (m manifest) markdown() string {
	var b strings.Builder
	row := func(k, v string) { fmt.Fprintf(&b, "| %s | %s |\n", k, v) }
	b.WriteString("| manifest | |\n|---|---|\n")
	row("mode", m.Mode)
	row("commit", m.Commit)
	row("go", m.GoVersion)
	row("os / kernel", m.OS+" / "+m.Kernel)
	row("cpu", fmt.Sprintf("%s × %d (GOMAXPROCS %d)", m.CPUModel, m.CPUCount, m.GOMAXPROCS))
	row("load average before / after", m.LoadBefore+" / "+m.LoadAfter)
	row("duration", m.Duration)
	if m.Postgres != nil {
		row("postgresql", fmt.Sprintf("%s, shared_buffers %s, synchronous_commit %s, fsync %s, max_connections %s, wal_level %s, %s",
			m.Postgres["version"], m.Postgres["shared_buffers"], m.Postgres["synchronous_commit"], m.Postgres["fsync"],
			m.Postgres["max_connections"], m.Postgres["wal_level"], m.Postgres["connection"]))
	}
	if m.MariaDB != "" {
		row("mariadb", m.MariaDB)
	}
	if m.PgBouncer != "" {
		row("pgbouncer", m.PgBouncer)
	}
	if m.SQLite != nil {
		row("sqlite", fmt.Sprintf("%s (%s), journal_mode %s, synchronous %s, busy_timeout %s ms",
			m.SQLite["version"], m.SQLite["driver"], m.SQLite["journal_mode"], m.SQLite["synchronous"], m.SQLite["busy_timeout"]))
	}
	if m.Redis != nil {
		row("redis", fmt.Sprintf("%s at %s, save %q, appendonly %s: nothing kept on disk unless save or appendonly say so",
			m.Redis["version"], m.Redis["address"], m.Redis["save"], m.Redis["appendonly"]))
	}
	var comp []string
	for _, k := range []string{"river", "riverpgxv5", "riversqlite", sysGraphile, sysPgBoss, "node", sysAsynq, "go-redis", "go-sql-driver/mysql"} {
		if v, ok := m.Competitors[k]; ok {
			comp = append(comp, k+" "+v)
		}
	}
	row("competitors", strings.Join(comp, ", "))
	for _, k := range []string{sysGraphile, sysPgBoss, sysAsynq} {
		if v, ok := m.PeerSettings[k]; ok {
			row(k+" drain settings", v)
		}
	}
	return b.String()
}

func describeSizes(cfg config) string {
	s := cfg.sizes
	rss := make([]string, len(s.RSS))
	for i, n := range s.RSS {
		rss[i] = fmt.Sprint(n)
	}
	return fmt.Sprintf("insert %d; drain/limit %d (postgres), %d (sqlite; River on sqlite %d); steady warm-up %v, window %v, producer batch %d, backlog %d; latency %d jobs at %d/s, hints-off poll %v; rss backlogs %s",
		s.Insert, s.Drain, s.DrainSQLite, min(s.DrainSQLite, cmpInt(s.RiverSQLiteCap, s.DrainSQLite)),
		s.SteadyWarmup, s.SteadyWindow, steadyBatch, steadyBacklog, s.LatencyJobs, s.LatencyRate, s.HintsOffPoll,
		strings.Join(rss, ", "))
}

func cmpInt(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

func readFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "unknown"
	}
	return string(b)
}

func loadAverage() string {
	f := strings.Fields(readFile("/proc/loadavg"))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

func osName() string {
	for line := range strings.SplitSeq(readFile("/etc/os-release"), "\n") {
		if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
			return runtime.GOOS + " " + strings.Trim(v, `"`)
		}
	}
	return runtime.GOOS
}

// gitCommit names the commit of the working tree, marked dirty when it has
// uncommitted changes.
func gitCommit() string {
	dir := "."
	if exe, err := os.Executable(); err == nil && !strings.Contains(exe, os.TempDir()) {
		dir = filepath.Dir(exe)
	}
	out, err := exec.Command("git", "-C", dir, "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		out, err = exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
		if err != nil {
			return "unknown"
		}
		dir = "."
	}
	commit := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "-C", dir, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
		commit += "-dirty"
	}
	return commit
}

// moduleVersion reads a dependency's version from the build information.
func moduleVersion(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, d := range bi.Deps {
		if d.Path == path {
			return d.Version
		}
	}
	return "unknown"
}

// nodeVersion asks the Node.js executable its version.
func nodeVersion(ctx context.Context, node string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, "--version").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

func sqliteVersion(ctx context.Context) (string, error) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		return "", err
	}
	defer func() { _ = db.Close() }()
	var v string
	err = db.QueryRowContext(ctx, "SELECT sqlite_version()").Scan(&v)
	return v, err
}
