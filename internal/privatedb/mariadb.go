package privatedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
)

// MariaDBConfig describes a private MariaDB server.
type MariaDBConfig struct {
	// Dir is the server's directory: its data directory (Dir/data), its
	// socket, its pid file and its error log (Dir/server.log) live in it.
	// It is made if missing and given to the server's OS user; it must be
	// absolute, and short enough for a Unix socket path (Dir/mysqld.sock
	// under 100 bytes).
	Dir string
	// Within is the caller's own directory tree holding Dir (see
	// PrepareDir). Empty means Dir's parent.
	Within string
	// Port is the loopback port the server listens on (see CheckPort).
	Port int
	// OSUser is the OS user the server runs as when the caller is root.
	// Empty means "mysql".
	OSUser string
	// Bin is the directory of mariadbd; InstallBin that of
	// mariadb-install-db. Empty means /usr/sbin and /usr/bin.
	Bin, InstallBin string
	// Settings are server options (name → value, as mariadbd's command
	// line spells them without the leading "--"), given after the port,
	// socket and directories, which they may not override. An empty value
	// gives the option alone (--skip-log-bin).
	Settings map[string]string
}

// MariaDB is a private MariaDB server: installed in its own directory,
// listening on 127.0.0.1 at its own port and on its own socket only, with
// the user root at 127.0.0.1 and no password, and a database named test.
// Only one goroutine may drive it at a time.
type MariaDB struct {
	cfg  MariaDBConfig
	acct Account
	data string
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// NewMariaDB checks cfg and resolves the OS user and the binaries; it
// starts nothing.
func NewMariaDB(cfg MariaDBConfig) (*MariaDB, error) {
	if !filepath.IsAbs(cfg.Dir) {
		return nil, fmt.Errorf("private MariaDB: directory %q must be an absolute path", cfg.Dir)
	}
	cfg.Dir = filepath.Clean(cfg.Dir)
	if n := len(filepath.Join(cfg.Dir, "mysqld.sock")); n >= 100 {
		return nil, fmt.Errorf("private MariaDB: directory %q is too long for its socket path (%d bytes, Unix sockets take under 108)", cfg.Dir, n)
	}
	if cfg.Within == "" {
		cfg.Within = filepath.Dir(cfg.Dir)
	}
	if cfg.OSUser == "" {
		cfg.OSUser = "mysql"
	}
	if cfg.Bin == "" {
		cfg.Bin = "/usr/sbin"
	}
	if cfg.InstallBin == "" {
		cfg.InstallBin = "/usr/bin"
	}
	if err := validPort(cfg.Port); err != nil {
		return nil, fmt.Errorf("private MariaDB: %w", err)
	}
	for _, bin := range []string{filepath.Join(cfg.Bin, "mariadbd"), filepath.Join(cfg.InstallBin, "mariadb-install-db")} {
		if _, err := os.Stat(bin); err != nil {
			return nil, fmt.Errorf("private MariaDB: %w (install the mariadb-server package)", err)
		}
	}
	for name, v := range cfg.Settings {
		if name == "" || strings.HasPrefix(name, "-") || strings.ContainsAny(name, " \n=") || strings.ContainsAny(v, "\n") {
			return nil, fmt.Errorf("private MariaDB: setting %q = %q: not a mariadbd option", name, v)
		}
		switch name {
		case "port", "socket", "datadir", "bind-address", "pid-file", "log-error", "user":
			return nil, fmt.Errorf("private MariaDB: setting %q is the server's own", name)
		}
	}
	acct, err := ServerAccount(cfg.OSUser)
	if err != nil {
		return nil, fmt.Errorf("private MariaDB: %w", err)
	}
	return &MariaDB{cfg: cfg, acct: acct, data: filepath.Join(cfg.Dir, "data")}, nil
}

// StartMariaDB creates a private server (NewMariaDB, Init) and starts it.
func StartMariaDB(ctx context.Context, cfg MariaDBConfig) (*MariaDB, error) {
	m, err := NewMariaDB(cfg)
	if err != nil {
		return nil, err
	}
	if err := m.Init(ctx); err != nil {
		return nil, err
	}
	if err := m.Start(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

// Account is the OS user the server runs as.
func (m *MariaDB) Account() Account { return m.acct }

// Port is the server's loopback port.
func (m *MariaDB) Port() int { return m.cfg.Port }

// DataDir is the server's data directory.
func (m *MariaDB) DataDir() string { return m.data }

// Socket is the server's Unix socket.
func (m *MariaDB) Socket() string { return filepath.Join(m.cfg.Dir, "mysqld.sock") }

// LogPath is the server's error log.
func (m *MariaDB) LogPath() string { return filepath.Join(m.cfg.Dir, "server.log") }

// URL is root's mariadb:// URI for database db over TCP.
func (m *MariaDB) URL(db string) string {
	return fmt.Sprintf("mariadb://root@127.0.0.1:%d/%s", m.cfg.Port, db)
}

// DSN is root's go-sql-driver/mysql DSN for database db over TCP.
func (m *MariaDB) DSN(db string) string {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr, cfg.DBName = "root", "tcp", fmt.Sprintf("127.0.0.1:%d", m.cfg.Port), db
	return cfg.FormatDSN()
}

// Init prepares the server's directory for its OS user (PrepareDir) and
// runs mariadb-install-db: root with no password (mysql_native_password,
// reachable at 127.0.0.1), no test database of the installer's. It fails
// if the data directory already holds a server's data.
func (m *MariaDB) Init(ctx context.Context) error {
	if err := PrepareDir(m.acct, m.cfg.Dir, m.cfg.Within); err != nil {
		return fmt.Errorf("private MariaDB: %w", err)
	}
	if _, err := os.Stat(filepath.Join(m.data, "mysql")); err == nil {
		return fmt.Errorf("private MariaDB: %s already holds a server's data", m.data)
	}
	if err := m.acct.run(ctx, m.cfg.Dir, filepath.Join(m.cfg.InstallBin, "mariadb-install-db"),
		"--no-defaults", "--datadir="+m.data, "--auth-root-authentication-method=normal", "--skip-test-db"); err != nil {
		return fmt.Errorf("private MariaDB: %w", err)
	}
	return nil
}

// args are mariadbd's options: the server's own, then the Settings in
// name order.
func (m *MariaDB) args() []string {
	args := []string{
		"--no-defaults", "--datadir=" + m.data, "--bind-address=127.0.0.1",
		fmt.Sprintf("--port=%d", m.cfg.Port), "--socket=" + m.Socket(),
		"--pid-file=" + filepath.Join(m.cfg.Dir, "mysqld.pid"), "--log-error=" + m.LogPath(),
	}
	names := make([]string, 0, len(m.cfg.Settings))
	for name := range m.cfg.Settings {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if v := m.cfg.Settings[name]; v != "" {
			args = append(args, "--"+name+"="+v)
		} else {
			args = append(args, "--"+name)
		}
	}
	return args
}

// Start starts mariadbd, waits (up to two minutes: InnoDB recovers a
// crashed server's log first) until root can connect over TCP, and makes
// the database test if missing. It fails if the port is not free
// (CheckPort) or the server is already running. The server is killed if
// the calling process dies.
func (m *MariaDB) Start(ctx context.Context) error {
	if m.cmd != nil {
		return errors.New("private MariaDB: already running")
	}
	if err := CheckPort(m.cfg.Port); err != nil {
		return fmt.Errorf("private MariaDB: %w", err)
	}
	cmd := m.acct.Command(context.Background(), m.cfg.Dir, filepath.Join(m.cfg.Bin, "mariadbd"), m.args()...)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("private MariaDB: start mariadbd: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	m.cmd, m.done = cmd, done
	if err := m.waitReady(ctx, 2*time.Minute); err != nil {
		_ = m.Stop(context.Background(), Immediate)
		return fmt.Errorf("private MariaDB: start: %w (server log: %s)", err, m.LogPath())
	}
	return nil
}

// waitReady waits until root connects over TCP and makes the database
// test.
func (m *MariaDB) waitReady(ctx context.Context, limit time.Duration) error {
	db, err := sql.Open("mysql", m.DSN(""))
	if err != nil {
		return err
	}
	defer db.Close()
	deadline := time.Now().Add(limit)
	for {
		// A Galera node accepts connections before it has joined its
		// cluster and refuses statements until then: retry both.
		_, err := db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS test")
		if err == nil {
			return nil
		}
		select {
		case <-m.done:
			return errors.New("mariadbd exited")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not accepting connections after %s: %w", limit, err)
		}
	}
}

// Stop ends the server and waits up to two minutes: Fast sends SIGTERM,
// a clean shutdown (open transactions rolled back, InnoDB's buffer pool
// flushed); Immediate sends SIGKILL, a crash, and the next Start recovers
// from InnoDB's redo log. Stopping a stopped server does nothing.
func (m *MariaDB) Stop(ctx context.Context, mode ShutdownMode) error {
	if err := mode.check(); err != nil {
		return err
	}
	if m.cmd == nil {
		return nil
	}
	sig := syscall.SIGTERM
	if mode == Immediate {
		sig = syscall.SIGKILL
	}
	if err := m.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("private MariaDB: stop: %w", err)
	}
	select {
	case <-m.done:
	case <-ctx.Done():
		return fmt.Errorf("private MariaDB: stop: %w", ctx.Err())
	case <-time.After(2 * time.Minute):
		_ = m.cmd.Process.Kill()
		<-m.done
		return errors.New("private MariaDB: stop: mariadbd did not exit in two minutes; killed")
	}
	m.cmd, m.done = nil, nil
	return nil
}

// Restart stops the server in the given mode and starts it again.
func (m *MariaDB) Restart(ctx context.Context, mode ShutdownMode) error {
	if err := m.Stop(ctx, mode); err != nil {
		return fmt.Errorf("restart (%s): %w", mode, err)
	}
	if err := m.Start(ctx); err != nil {
		return fmt.Errorf("restart (%s): %w", mode, err)
	}
	return nil
}
