package privatedb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// PostgresConfig describes a private PostgreSQL cluster.
type PostgresConfig struct {
	// Dir is the cluster's directory: its data directory (Dir/data) and
	// its server log (Dir/server.log) live in it. It is made if missing
	// and given to the server's OS user; it must be absolute.
	Dir string
	// Within is the caller's own directory tree holding Dir, whose
	// directories may be given search permission for the server's OS
	// user (see PrepareDir). Empty means Dir's parent.
	Within string
	// Port is the loopback port the cluster listens on (see CheckPort).
	Port int
	// OSUser is the OS user the cluster runs as when the caller is root
	// (PostgreSQL refuses root). Empty means "postgres".
	OSUser string
	// Bin is the directory of initdb, pg_ctl and postgres. Empty means the
	// newest /usr/lib/postgresql/*/bin.
	Bin string
	// Settings are server settings (name → value, as postgresql.conf
	// spells them) written into postgresql.conf after listen_addresses,
	// port and unix_socket_directories, which they may override.
	Settings map[string]string
}

// Postgres is a private PostgreSQL cluster: initdb'ed in its own directory,
// listening on 127.0.0.1 at its own port only, with trust authentication
// for the superuser "postgres". Only one goroutine may drive it at a time.
type Postgres struct {
	cfg  PostgresConfig
	acct Account
	data string
}

// ShutdownMode is how Stop and Restart end the server: pg_ctl's -m.
type ShutdownMode string

const (
	// Fast rolls back open transactions, ends the sessions and shuts down
	// cleanly, with a checkpoint.
	Fast ShutdownMode = "fast"
	// Immediate kills the server processes at once, as a crash would; the
	// next start recovers from the write-ahead log.
	Immediate ShutdownMode = "immediate"
)

// PostgresBin returns the newest installed PostgreSQL's binary directory
// under /usr/lib/postgresql/*/bin.
func PostgresBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	var found []string
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			found = append(found, d)
		}
	}
	if len(found) == 0 {
		return "", errors.New("no PostgreSQL binaries (initdb) under /usr/lib/postgresql/*/bin")
	}
	version := func(d string) int {
		v, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		return v
	}
	sort.Slice(found, func(i, j int) bool { return version(found[i]) < version(found[j]) })
	return found[len(found)-1], nil
}

// NewPostgres checks cfg and resolves the OS user and the binaries; it
// starts nothing.
func NewPostgres(cfg PostgresConfig) (*Postgres, error) {
	if !filepath.IsAbs(cfg.Dir) {
		return nil, fmt.Errorf("private PostgreSQL: directory %q must be an absolute path", cfg.Dir)
	}
	cfg.Dir = filepath.Clean(cfg.Dir)
	if cfg.Within == "" {
		cfg.Within = filepath.Dir(cfg.Dir)
	}
	if cfg.OSUser == "" {
		cfg.OSUser = "postgres"
	}
	if err := validPort(cfg.Port); err != nil {
		return nil, fmt.Errorf("private PostgreSQL: %w", err)
	}
	if cfg.Bin == "" {
		bin, err := PostgresBin()
		if err != nil {
			return nil, fmt.Errorf("private PostgreSQL: %w", err)
		}
		cfg.Bin = bin
	}
	for name, v := range cfg.Settings {
		if name == "" || strings.ContainsAny(name, " \n=#'") || strings.ContainsAny(v, "\n") {
			return nil, fmt.Errorf("private PostgreSQL: setting %q = %q: not a postgresql.conf setting", name, v)
		}
	}
	acct, err := ServerAccount(cfg.OSUser)
	if err != nil {
		return nil, fmt.Errorf("private PostgreSQL: %w", err)
	}
	return &Postgres{cfg: cfg, acct: acct, data: filepath.Join(cfg.Dir, "data")}, nil
}

// StartPostgres creates a private cluster (NewPostgres, Init) and starts
// it.
func StartPostgres(ctx context.Context, cfg PostgresConfig) (*Postgres, error) {
	p, err := NewPostgres(cfg)
	if err != nil {
		return nil, err
	}
	if err := p.Init(ctx); err != nil {
		return nil, err
	}
	if err := p.Start(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// Account is the OS user the cluster runs as.
func (p *Postgres) Account() Account { return p.acct }

// Port is the cluster's loopback port.
func (p *Postgres) Port() int { return p.cfg.Port }

// DataDir is the cluster's data directory.
func (p *Postgres) DataDir() string { return p.data }

// LogPath is the server log.
func (p *Postgres) LogPath() string { return filepath.Join(p.cfg.Dir, "server.log") }

// URL is the superuser's connection string for database db.
func (p *Postgres) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", p.cfg.Port, db)
}

// Init prepares the cluster's directory for its OS user (PrepareDir) and
// runs initdb: superuser "postgres", trust authentication, UTF8, no sync
// to disk. It fails if the data directory already holds a cluster.
func (p *Postgres) Init(ctx context.Context) error {
	if err := PrepareDir(p.acct, p.cfg.Dir, p.cfg.Within); err != nil {
		return fmt.Errorf("private PostgreSQL: %w", err)
	}
	if _, err := os.Stat(filepath.Join(p.data, "PG_VERSION")); err == nil {
		return fmt.Errorf("private PostgreSQL: %s already holds a cluster", p.data)
	}
	if err := p.acct.run(ctx, p.cfg.Dir, filepath.Join(p.cfg.Bin, "initdb"),
		"-D", p.data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"); err != nil {
		return fmt.Errorf("private PostgreSQL: %w", err)
	}
	if err := p.writeConf(); err != nil {
		return fmt.Errorf("private PostgreSQL: %w", err)
	}
	return nil
}

// writeConf appends the cluster's settings to its postgresql.conf, where
// the last setting of a name wins, so every start and restart uses them.
func (p *Postgres) writeConf() error {
	var b strings.Builder
	b.WriteString("\n# privatedb: a private cluster on its own loopback port\n")
	fmt.Fprintf(&b, "listen_addresses = '127.0.0.1'\nport = %d\nunix_socket_directories = ''\n", p.cfg.Port)
	names := make([]string, 0, len(p.cfg.Settings))
	for name := range p.cfg.Settings {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(&b, "%s = '%s'\n", name, strings.ReplaceAll(p.cfg.Settings[name], "'", "''"))
	}
	f, err := os.OpenFile(filepath.Join(p.data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("settings: %w", err)
	}
	if _, err := f.WriteString(b.String()); err != nil {
		_ = f.Close()
		return fmt.Errorf("settings: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("settings: %w", err)
	}
	return nil
}

// Start starts the cluster and waits (up to a minute) until it accepts
// connections. It fails if its port is not free (CheckPort).
func (p *Postgres) Start(ctx context.Context) error {
	if err := CheckPort(p.cfg.Port); err != nil {
		return fmt.Errorf("private PostgreSQL: %w", err)
	}
	if err := p.pgCtl(ctx, "-l", p.LogPath(), "-w", "-t", "60", "start"); err != nil {
		return fmt.Errorf("private PostgreSQL: start: %w (server log: %s)", err, p.LogPath())
	}
	return nil
}

// Stop stops the cluster in the given mode and waits up to a minute.
func (p *Postgres) Stop(ctx context.Context, mode ShutdownMode) error {
	if err := mode.check(); err != nil {
		return err
	}
	if err := p.pgCtl(ctx, "-m", string(mode), "-w", "-t", "60", "stop"); err != nil {
		return fmt.Errorf("private PostgreSQL: stop: %w", err)
	}
	return nil
}

// Restart stops the cluster in the given mode and starts it again, waiting
// up to two minutes (an Immediate restart recovers from the write-ahead
// log first).
func (p *Postgres) Restart(ctx context.Context, mode ShutdownMode) error {
	if err := mode.check(); err != nil {
		return err
	}
	if err := p.pgCtl(ctx, "-l", p.LogPath(), "-m", string(mode), "-w", "-t", "120", "restart"); err != nil {
		return fmt.Errorf("private PostgreSQL: restart (%s): %w (server log: %s)", mode, err, p.LogPath())
	}
	return nil
}

func (p *Postgres) pgCtl(ctx context.Context, args ...string) error {
	return p.acct.run(ctx, p.cfg.Dir, filepath.Join(p.cfg.Bin, "pg_ctl"), append([]string{"-D", p.data}, args...)...)
}

func (m ShutdownMode) check() error {
	if m != Fast && m != Immediate {
		return fmt.Errorf("private server: shutdown mode %q: want %q or %q", m, Fast, Immediate)
	}
	return nil
}

// StartStandby makes a streaming standby of primary in cfg's directory and
// on cfg's port: pg_basebackup of the running primary with -R (which
// writes standby.signal and primary_conninfo), cfg's settings, and a
// start. The standby is read-only, replaying the primary's write-ahead log
// as it streams; the primary must allow replication connections from
// 127.0.0.1 (initdb's trust authentication does).
func StartStandby(ctx context.Context, primary *Postgres, cfg PostgresConfig) (*Postgres, error) {
	if cfg.Bin == "" {
		cfg.Bin = primary.cfg.Bin
	}
	s, err := NewPostgres(cfg)
	if err != nil {
		return nil, err
	}
	if err := PrepareDir(s.acct, s.cfg.Dir, s.cfg.Within); err != nil {
		return nil, fmt.Errorf("private standby: %w", err)
	}
	if _, err := os.Stat(filepath.Join(s.data, "PG_VERSION")); err == nil {
		return nil, fmt.Errorf("private standby: %s already holds a cluster", s.data)
	}
	if err := s.acct.run(ctx, s.cfg.Dir, filepath.Join(s.cfg.Bin, "pg_basebackup"),
		"-D", s.data, "-h", "127.0.0.1", "-p", strconv.Itoa(primary.cfg.Port), "-U", "postgres",
		"-R", "-X", "stream", "--no-sync", "-c", "fast"); err != nil {
		return nil, fmt.Errorf("private standby: %w", err)
	}
	if err := s.writeConf(); err != nil {
		return nil, fmt.Errorf("private standby: %w", err)
	}
	if err := s.Start(ctx); err != nil {
		return nil, fmt.Errorf("private standby: %w", err)
	}
	return s, nil
}
