package privatedb

import (
	"context"
	"errors"
	"fmt"
	"net"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// PgBouncerConfig describes a private PgBouncer in front of one PostgreSQL
// server.
type PgBouncerConfig struct {
	// Dir is the pooler's directory: its pgbouncer.ini, userlist.txt, log
	// (Dir/pgbouncer.log) and pid file. It is made if missing and given to
	// the pooler's OS user; it must be absolute.
	Dir string
	// Within is the caller's own directory tree holding Dir (see
	// PrepareDir). Empty means Dir's parent.
	Within string
	// Port is the loopback port the pooler listens on (see CheckPort).
	Port int
	// ServerHost and ServerPort are the PostgreSQL server the pooler
	// connects to; empty ServerHost means 127.0.0.1. Every database name a
	// client asks for is passed through to it.
	ServerHost string
	ServerPort int
	// Users are the role names clients may log in as, trusted without a
	// password (as the private clusters trust them). Empty means
	// "postgres".
	Users []string
	// PoolMode is pgbouncer's pool_mode; empty means "transaction": a
	// server connection is a client's for one transaction only.
	PoolMode string
	// PoolSize is the number of server connections per database and user;
	// 0 means 20.
	PoolSize int
	// OSUser is the OS user the pooler runs as when the caller is root
	// (pgbouncer refuses root). Empty means "postgres".
	OSUser string
	// Bin is the pgbouncer binary; empty means "pgbouncer" on PATH or
	// /usr/sbin/pgbouncer.
	Bin string
}

// PgBouncer is a private PgBouncer process: listening on 127.0.0.1 at its
// own port only, trusting its Users, passing every database through to one
// PostgreSQL server. Only one goroutine may drive it at a time.
type PgBouncer struct {
	cfg  PgBouncerConfig
	acct Account
	cmd  *exec.Cmd
	done chan error
}

// PgBouncerBin returns the pgbouncer binary: on PATH, or Debian's
// /usr/sbin/pgbouncer (not on an ordinary user's PATH).
func PgBouncerBin() (string, error) {
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/pgbouncer"); err == nil {
		return "/usr/sbin/pgbouncer", nil
	}
	return "", errors.New("no pgbouncer binary on PATH or at /usr/sbin/pgbouncer (Debian: apt-get install pgbouncer)")
}

// NewPgBouncer checks cfg and resolves the OS user and the binary; it
// starts nothing.
func NewPgBouncer(cfg PgBouncerConfig) (*PgBouncer, error) {
	if !filepath.IsAbs(cfg.Dir) {
		return nil, fmt.Errorf("private PgBouncer: directory %q must be an absolute path", cfg.Dir)
	}
	cfg.Dir = filepath.Clean(cfg.Dir)
	if cfg.Within == "" {
		cfg.Within = filepath.Dir(cfg.Dir)
	}
	if cfg.OSUser == "" {
		cfg.OSUser = "postgres"
	}
	if cfg.ServerHost == "" {
		cfg.ServerHost = "127.0.0.1"
	}
	if cfg.PoolMode == "" {
		cfg.PoolMode = "transaction"
	}
	if cfg.PoolMode != "transaction" && cfg.PoolMode != "session" && cfg.PoolMode != "statement" {
		return nil, fmt.Errorf("private PgBouncer: pool mode %q: want transaction, session or statement", cfg.PoolMode)
	}
	if cfg.PoolSize == 0 {
		cfg.PoolSize = 20
	}
	if cfg.PoolSize < 1 {
		return nil, fmt.Errorf("private PgBouncer: pool size %d: want at least 1", cfg.PoolSize)
	}
	if len(cfg.Users) == 0 {
		cfg.Users = []string{"postgres"}
	}
	for _, u := range cfg.Users {
		if u == "" || strings.ContainsAny(u, "\"\n\\ ") {
			return nil, fmt.Errorf("private PgBouncer: user %q: want a plain role name", u)
		}
	}
	if err := validPort(cfg.Port); err != nil {
		return nil, fmt.Errorf("private PgBouncer: %w", err)
	}
	if cfg.ServerPort < 1 || cfg.ServerPort > 65535 {
		return nil, fmt.Errorf("private PgBouncer: server port %d: want 1–65535", cfg.ServerPort)
	}
	if strings.ContainsAny(cfg.ServerHost, " \n=") {
		return nil, fmt.Errorf("private PgBouncer: server host %q: want a host name or address", cfg.ServerHost)
	}
	if cfg.Bin == "" {
		bin, err := PgBouncerBin()
		if err != nil {
			return nil, fmt.Errorf("private PgBouncer: %w", err)
		}
		cfg.Bin = bin
	}
	acct, err := ServerAccount(cfg.OSUser)
	if err != nil {
		return nil, fmt.Errorf("private PgBouncer: %w", err)
	}
	return &PgBouncer{cfg: cfg, acct: acct}, nil
}

// StartPgBouncer makes a private PgBouncer (NewPgBouncer) and starts it.
func StartPgBouncer(ctx context.Context, cfg PgBouncerConfig) (*PgBouncer, error) {
	b, err := NewPgBouncer(cfg)
	if err != nil {
		return nil, err
	}
	if err := b.Start(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

// StartPgBouncerFor starts a private PgBouncer in transaction mode, with
// poolSize server connections, in front of the server serverURL (a
// postgres:// URL) names, as its user, on a free loopback port, in the
// directory within/pgbouncer.
func StartPgBouncerFor(ctx context.Context, serverURL, within string, poolSize int) (*PgBouncer, error) {
	u, err := neturl.Parse(serverURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		return nil, fmt.Errorf("private PgBouncer: the server must be named by a postgres:// URL with a host, not %q", serverURL)
	}
	port, _ := strconv.Atoi(u.Port())
	if port == 0 {
		port = 5432
	}
	host := u.Hostname()
	if host == "localhost" {
		host = "127.0.0.1"
	}
	user := u.User.Username()
	if user == "" {
		user = "postgres"
	}
	free, err := FreePort()
	if err != nil {
		return nil, err
	}
	return StartPgBouncer(ctx, PgBouncerConfig{
		Dir: filepath.Join(within, "pgbouncer"), Within: within, Port: free,
		ServerHost: host, ServerPort: port, Users: []string{user}, PoolSize: poolSize,
	})
}

// Through returns serverURL, a postgres:// URL of the server the pooler
// fronts, as it reads through the pooler: the same user, database and
// parameters, the pooler's address.
func (b *PgBouncer) Through(serverURL string) (string, error) {
	u, err := neturl.Parse(serverURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("private PgBouncer: %q is not a postgres:// URL", serverURL)
	}
	u.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(b.cfg.Port))
	return u.String(), nil
}

// Port is the pooler's loopback port.
func (b *PgBouncer) Port() int { return b.cfg.Port }

// LogPath is the pooler's log.
func (b *PgBouncer) LogPath() string { return filepath.Join(b.cfg.Dir, "pgbouncer.log") }

// URL is the connection string of database db through the pooler, as
// user "postgres".
func (b *PgBouncer) URL(db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", b.cfg.Users[0], b.cfg.Port, db)
}

// Start writes the pooler's configuration into its directory, starts it
// in the foreground as its OS user and waits (up to 30 seconds) until it
// accepts connections. It fails if its port is not free (CheckPort) or it
// already runs.
func (b *PgBouncer) Start(ctx context.Context) error {
	if b.cmd != nil {
		return errors.New("private PgBouncer: already started")
	}
	if err := CheckPort(b.cfg.Port); err != nil {
		return fmt.Errorf("private PgBouncer: %w", err)
	}
	if err := PrepareDir(b.acct, b.cfg.Dir, b.cfg.Within); err != nil {
		return fmt.Errorf("private PgBouncer: %w", err)
	}
	ini, err := b.writeConfig()
	if err != nil {
		return fmt.Errorf("private PgBouncer: %w", err)
	}
	// The process is the caller's child, not a daemon: Stop signals it and
	// waits; its own context is not ctx, which only bounds the start.
	cmd := b.acct.Command(context.Background(), b.cfg.Dir, b.cfg.Bin, ini)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("private PgBouncer: start %s (as OS user %s): %w", b.cfg.Bin, b.acct.Name, err)
	}
	b.cmd, b.done = cmd, make(chan error, 1)
	go func() { b.done <- cmd.Wait() }()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(b.cfg.Port))
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
			return nil
		}
		select {
		case werr := <-b.done:
			b.cmd = nil
			log, _ := os.ReadFile(b.LogPath())
			return fmt.Errorf("private PgBouncer: exited at start: %v: %s", werr, log)
		case <-ctx.Done():
			_ = b.Stop()
			return fmt.Errorf("private PgBouncer: wait for %s: %w", addr, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = b.Stop()
			return fmt.Errorf("private PgBouncer: nothing answers on %s after 30s (log: %s)", addr, b.LogPath())
		}
	}
}

// writeConfig writes pgbouncer.ini and userlist.txt, readable by the
// pooler's OS user, and returns the ini's path.
func (b *PgBouncer) writeConfig() (string, error) {
	var users strings.Builder
	for _, u := range b.cfg.Users {
		fmt.Fprintf(&users, "%q \"\"\n", u)
	}
	userlist := filepath.Join(b.cfg.Dir, "userlist.txt")
	ini := fmt.Sprintf(`;; privatedb: a private PgBouncer on its own loopback port
[databases]
* = host=%s port=%d

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = %s
default_pool_size = %d
max_client_conn = 1000
admin_users = %s
ignore_startup_parameters = extra_float_digits
logfile = %s
pidfile = %s
`, b.cfg.ServerHost, b.cfg.ServerPort, b.cfg.Port, userlist, b.cfg.PoolMode, b.cfg.PoolSize,
		strings.Join(b.cfg.Users, ","), b.LogPath(), filepath.Join(b.cfg.Dir, "pgbouncer.pid"))
	path := filepath.Join(b.cfg.Dir, "pgbouncer.ini")
	for name, text := range map[string]string{userlist: users.String(), path: ini} {
		if err := os.WriteFile(name, []byte(text), 0o600); err != nil {
			return "", fmt.Errorf("write %s: %w", name, err)
		}
		if b.acct.Switch {
			if err := os.Chown(name, b.acct.UID, b.acct.GID); err != nil {
				return "", fmt.Errorf("give %s to OS user %s: %w", name, b.acct.Name, err)
			}
		}
	}
	return path, nil
}

// Stop ends the pooler at once (SIGTERM: its clients' connections are
// closed) and waits for it, up to 10 seconds before it is killed.
func (b *PgBouncer) Stop() error {
	if b.cmd == nil {
		return nil
	}
	defer func() { b.cmd = nil }()
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("private PgBouncer: stop: %w", err)
	}
	select {
	case <-b.done:
		return nil
	case <-time.After(10 * time.Second):
		_ = b.cmd.Process.Kill()
		<-b.done
		return errors.New("private PgBouncer: did not stop within 10s of SIGTERM; killed")
	}
}
