package privatedb

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// PatroniConfig describes a private high-availability PostgreSQL cluster:
// one etcd member as the consensus store and a Patroni-managed PostgreSQL
// node per port, the first bootstrapped as the primary, the others
// streaming from it.
type PatroniConfig struct {
	// Dir is the cluster's directory: etcd's (Dir/etcd) and each node's
	// (Dir/nodeN, its data directory Dir/nodeN/data and its Patroni log
	// Dir/nodeN/patroni.log) live in it. It must be absolute.
	Dir string
	// Within is the caller's own directory tree holding Dir (see
	// PrepareDir). Empty means Dir's parent.
	Within string
	// Ports are the nodes' PostgreSQL ports on 127.0.0.1, one per node (at
	// least two); RESTPorts their Patroni REST API ports, as many.
	Ports, RESTPorts []int
	// EtcdPort and EtcdPeerPort are etcd's client and peer ports.
	EtcdPort, EtcdPeerPort int
	// Synchronous turns on Patroni's synchronous_mode: a commit is
	// acknowledged only once the synchronous standby has it, and only that
	// standby may be promoted. Off, replication is asynchronous and a
	// failover may lose the primary's last acknowledged commits.
	Synchronous bool
	// Settings are PostgreSQL server settings for every node.
	Settings map[string]string
	// Scope is the cluster's name in etcd; empty means "backwave".
	Scope string
	// OSUser is the OS user etcd, Patroni and PostgreSQL run as when the
	// caller is root. Empty means "postgres".
	OSUser string
	// Bin is PostgreSQL's binary directory; empty means PostgresBin's.
	Bin string
}

// Patroni is a private Patroni cluster with its etcd: every process a
// child of the caller on loopback ports only. Only one goroutine may drive
// it at a time.
type Patroni struct {
	cfg     PatroniConfig
	acct    Account
	etcd    *daemon
	nodes   []*daemon
	patroni string
	etcdBin string
}

// PatroniBins returns the patroni and etcd binaries (Debian: apt-get
// install patroni etcd-server).
func PatroniBins() (patroni, etcd string, err error) {
	find := func(name string, dirs ...string) (string, error) {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
		for _, d := range dirs {
			if _, err := os.Stat(filepath.Join(d, name)); err == nil {
				return filepath.Join(d, name), nil
			}
		}
		return "", fmt.Errorf("no %s binary on PATH (Debian: apt-get install -y etcd-server patroni)", name)
	}
	if patroni, err = find("patroni", "/usr/bin"); err != nil {
		return "", "", err
	}
	if etcd, err = find("etcd", "/usr/bin", "/usr/sbin"); err != nil {
		return "", "", err
	}
	return patroni, etcd, nil
}

// NewPatroni checks cfg and resolves the OS user and the binaries; it
// starts nothing.
func NewPatroni(cfg PatroniConfig) (*Patroni, error) {
	if !filepath.IsAbs(cfg.Dir) {
		return nil, fmt.Errorf("private Patroni: directory %q must be an absolute path", cfg.Dir)
	}
	cfg.Dir = filepath.Clean(cfg.Dir)
	if cfg.Within == "" {
		cfg.Within = filepath.Dir(cfg.Dir)
	}
	if cfg.OSUser == "" {
		cfg.OSUser = "postgres"
	}
	if cfg.Scope == "" {
		cfg.Scope = "backwave"
	}
	if len(cfg.Ports) < 2 || len(cfg.RESTPorts) != len(cfg.Ports) {
		return nil, fmt.Errorf("private Patroni: %d PostgreSQL and %d REST ports: want at least two nodes, one REST port each", len(cfg.Ports), len(cfg.RESTPorts))
	}
	seen := map[int]bool{}
	for _, p := range append(append([]int{cfg.EtcdPort, cfg.EtcdPeerPort}, cfg.Ports...), cfg.RESTPorts...) {
		if err := validPort(p); err != nil {
			return nil, fmt.Errorf("private Patroni: %w", err)
		}
		if seen[p] {
			return nil, fmt.Errorf("private Patroni: port %d given twice", p)
		}
		seen[p] = true
	}
	for name, v := range cfg.Settings {
		if name == "" || strings.ContainsAny(name, " \n:'\"") || strings.ContainsAny(v, "\n'") {
			return nil, fmt.Errorf("private Patroni: setting %q = %q: not a plain PostgreSQL setting", name, v)
		}
	}
	if cfg.Bin == "" {
		bin, err := PostgresBin()
		if err != nil {
			return nil, fmt.Errorf("private Patroni: %w", err)
		}
		cfg.Bin = bin
	}
	pbin, ebin, err := PatroniBins()
	if err != nil {
		return nil, fmt.Errorf("private Patroni: %w", err)
	}
	acct, err := ServerAccount(cfg.OSUser)
	if err != nil {
		return nil, fmt.Errorf("private Patroni: %w", err)
	}
	return &Patroni{cfg: cfg, acct: acct, patroni: pbin, etcdBin: ebin}, nil
}

// StartPatroni makes a private Patroni cluster (NewPatroni), starts etcd
// and every node, and waits until there is a primary and every standby
// streams from it (and, synchronous, one of them is its synchronous
// standby).
func StartPatroni(ctx context.Context, cfg PatroniConfig) (*Patroni, error) {
	p, err := NewPatroni(cfg)
	if err != nil {
		return nil, err
	}
	if err := p.Start(ctx); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// Account is the OS user the cluster's processes run as.
func (p *Patroni) Account() Account { return p.acct }

// Nodes is the number of PostgreSQL nodes.
func (p *Patroni) Nodes() int { return len(p.cfg.Ports) }

// Port is node i's PostgreSQL port.
func (p *Patroni) Port(i int) int { return p.cfg.Ports[i] }

// NodeDir is node i's directory.
func (p *Patroni) NodeDir(i int) string { return filepath.Join(p.cfg.Dir, "node"+strconv.Itoa(i+1)) }

// NodeURL is the superuser's connection string for database db on node i
// alone.
func (p *Patroni) NodeURL(i int, db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", p.cfg.Ports[i], db)
}

// URL is the superuser's multi-host connection string for database db:
// every node, and target_session_attrs=read-write, so that a connection
// reaches whichever node is the primary now.
func (p *Patroni) URL(db string) string {
	hosts := make([]string, len(p.cfg.Ports))
	for i, port := range p.cfg.Ports {
		hosts[i] = "127.0.0.1:" + strconv.Itoa(port)
	}
	return fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable&target_session_attrs=read-write&connect_timeout=5", strings.Join(hosts, ","), db)
}

// Start starts etcd, then the nodes one after another (the first
// bootstraps the cluster, the others clone it), and waits up to three
// minutes until the cluster is Healthy.
func (p *Patroni) Start(ctx context.Context) error {
	if p.etcd != nil {
		return errors.New("private Patroni: already started")
	}
	for _, port := range append(append([]int{p.cfg.EtcdPort, p.cfg.EtcdPeerPort}, p.cfg.Ports...), p.cfg.RESTPorts...) {
		if err := CheckPort(port); err != nil {
			return fmt.Errorf("private Patroni: %w", err)
		}
	}
	if err := PrepareDir(p.acct, p.cfg.Dir, p.cfg.Within); err != nil {
		return fmt.Errorf("private Patroni: %w", err)
	}
	edir := filepath.Join(p.cfg.Dir, "etcd")
	if err := PrepareDir(p.acct, edir, p.cfg.Within); err != nil {
		return fmt.Errorf("private Patroni: %w", err)
	}
	peer := fmt.Sprintf("http://127.0.0.1:%d", p.cfg.EtcdPeerPort)
	client := fmt.Sprintf("http://127.0.0.1:%d", p.cfg.EtcdPort)
	elog := filepath.Join(p.cfg.Dir, "etcd.log")
	var err error
	p.etcd, err = startDaemon("private etcd", p.acct, edir, elog, p.etcdBin,
		"--name", "e1", "--data-dir", filepath.Join(edir, "data"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "e1="+peer, "--initial-cluster-state", "new",
		"--log-level", "warn")
	if err != nil {
		return fmt.Errorf("private Patroni: %w", err)
	}
	if err := p.etcd.waitPort(ctx, p.cfg.EtcdPort, 30*time.Second, elog); err != nil {
		return fmt.Errorf("private Patroni: %w", err)
	}
	p.nodes = make([]*daemon, len(p.cfg.Ports))
	for i := range p.cfg.Ports {
		if err := p.StartNode(ctx, i); err != nil {
			return err
		}
		if i == 0 {
			if _, err := p.WaitPrimary(ctx, -1, 2*time.Minute); err != nil {
				return err
			}
		}
	}
	return p.WaitHealthy(ctx, 3*time.Minute)
}

// StartNode writes node i's Patroni configuration and starts its Patroni,
// which starts (or clones, or rewinds and rejoins) its PostgreSQL.
func (p *Patroni) StartNode(ctx context.Context, i int) error {
	if p.nodes[i] != nil {
		return fmt.Errorf("private Patroni: node %d already runs", i+1)
	}
	dir := p.NodeDir(i)
	if err := PrepareDir(p.acct, dir, p.cfg.Within); err != nil {
		return fmt.Errorf("private Patroni: %w", err)
	}
	conf := filepath.Join(dir, "patroni.yml")
	if err := os.WriteFile(conf, []byte(p.config(i)), 0o600); err != nil {
		return fmt.Errorf("private Patroni: %w", err)
	}
	if p.acct.Switch {
		if err := os.Chown(conf, p.acct.UID, p.acct.GID); err != nil {
			return fmt.Errorf("private Patroni: give %s to OS user %s: %w", conf, p.acct.Name, err)
		}
	}
	d, err := startDaemon(fmt.Sprintf("private Patroni node %d", i+1), p.acct, dir, filepath.Join(dir, "patroni.log"), p.patroni, conf)
	if err != nil {
		return fmt.Errorf("private Patroni: %w", err)
	}
	p.nodes[i] = d
	if err := d.waitPort(ctx, p.cfg.RESTPorts[i], time.Minute, filepath.Join(dir, "patroni.log")); err != nil {
		return fmt.Errorf("private Patroni: %w", err)
	}
	return nil
}

// config is node i's patroni.yml. The timings are short for a test
// cluster: a loop every second, a leader key of 20 s (Patroni's least),
// and primary_start_timeout 0 — a crashed primary is failed over at once,
// not restarted in place.
func (p *Patroni) config(i int) string {
	dir := p.NodeDir(i)
	var params strings.Builder
	settings := map[string]string{"wal_log_hints": "on", "hot_standby": "on", "max_wal_senders": "10", "max_replication_slots": "10", "wal_keep_size": "256MB"}
	if p.cfg.Synchronous {
		settings["synchronous_commit"] = "on"
	}
	for k, v := range p.cfg.Settings {
		settings[k] = v
	}
	names := make([]string, 0, len(settings))
	for k := range settings {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(&params, "        %s: '%s'\n", k, settings[k])
	}
	lag := 1 << 30
	hba := `  - local all all trust
  - host replication all 127.0.0.1/32 trust
  - host all all 127.0.0.1/32 trust
`
	return fmt.Sprintf(`# privatedb: a private Patroni node on loopback ports
scope: %[1]s
name: node%[2]d
log:
  level: WARNING
restapi:
  listen: 127.0.0.1:%[3]d
  connect_address: 127.0.0.1:%[3]d
etcd3:
  hosts: 127.0.0.1:%[4]d
bootstrap:
  dcs:
    ttl: 20
    loop_wait: 1
    retry_timeout: 5
    primary_start_timeout: 0
    master_start_timeout: 0
    synchronous_mode: %[5]t
    maximum_lag_on_failover: %[6]d
    postgresql:
      use_pg_rewind: true
      use_slots: true
      remove_data_directory_on_rewind_failure: true
      remove_data_directory_on_diverged_timelines: true
      parameters:
%[7]s  initdb:
  - encoding: UTF8
  - auth: trust
postgresql:
  listen: 127.0.0.1:%[8]d
  connect_address: 127.0.0.1:%[8]d
  data_dir: %[9]s/data
  bin_dir: %[10]s
  pgpass: %[9]s/pgpass
  use_unix_socket: true
  authentication:
    superuser:
      username: postgres
    replication:
      username: postgres
    rewind:
      username: postgres
  parameters:
    unix_socket_directories: '%[9]s'
  pg_hba:
%[11]s`, p.cfg.Scope, i+1, p.cfg.RESTPorts[i], p.cfg.EtcdPort, p.cfg.Synchronous, lag,
		params.String(), p.cfg.Ports[i], dir, p.cfg.Bin, hba)
}

// role asks node i's REST API for path ("primary", "replica",
// "synchronous"): true when it answers 200.
func (p *Patroni) role(ctx context.Context, i int, path string) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/%s", p.cfg.RESTPorts[i], path), nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Primary returns the node that is the running primary now, or -1.
func (p *Patroni) Primary(ctx context.Context) int {
	for i := range p.cfg.Ports {
		if p.role(ctx, i, "primary") {
			return i
		}
	}
	return -1
}

// writable reports whether node i's PostgreSQL accepts a connection and is
// out of recovery: Patroni names a primary as soon as it holds the leader
// key, a moment before its promotion ends.
func (p *Patroni) writable(ctx context.Context, i int) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, p.NodeURL(i, "postgres"))
	if err != nil {
		return false
	}
	defer c.Close(context.Background())
	var rec bool
	return c.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&rec) == nil && !rec
}

// WaitPrimary waits up to limit for a running, writable primary other
// than node not (-1: any node) and returns it.
func (p *Patroni) WaitPrimary(ctx context.Context, not int, limit time.Duration) (int, error) {
	deadline := time.Now().Add(limit)
	for {
		for i := range p.cfg.Ports {
			if i != not && p.role(ctx, i, "primary") && p.writable(ctx, i) {
				return i, nil
			}
		}
		if time.Now().After(deadline) {
			return -1, fmt.Errorf("private Patroni: no primary (other than node %d) after %s (logs: %s/node*/patroni.log)", not+1, limit, p.cfg.Dir)
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return -1, fmt.Errorf("private Patroni: wait for a primary: %w", err)
		}
	}
}

// WaitHealthy waits up to limit until one node is the primary and every
// other streams from it, one of them as its synchronous standby when the
// cluster is synchronous.
func (p *Patroni) WaitHealthy(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		primaries, replicas, syncs := 0, 0, 0
		for i := range p.cfg.Ports {
			switch {
			case p.role(ctx, i, "primary"):
				primaries++
			case p.role(ctx, i, "replica?lag=16MB"):
				replicas++
				if p.role(ctx, i, "synchronous") {
					syncs++
				}
			}
		}
		if primaries == 1 && replicas == len(p.cfg.Ports)-1 && (!p.cfg.Synchronous || syncs > 0) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("private Patroni: not healthy after %s: %d primaries, %d streaming standbys, %d synchronous (logs: %s/node*/patroni.log)",
				limit, primaries, replicas, syncs, p.cfg.Dir)
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return fmt.Errorf("private Patroni: wait until healthy: %w", err)
		}
	}
}

// Postmaster returns node i's postmaster's process id, from its
// postmaster.pid.
func (p *Patroni) Postmaster(i int) (int, error) {
	path := filepath.Join(p.NodeDir(i), "data", "postmaster.pid")
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("private Patroni: node %d's postmaster: %w", i+1, err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 1 {
		return 0, fmt.Errorf("private Patroni: node %d's postmaster.pid starts %q, not a process id", i+1, line)
	}
	return pid, nil
}

// KillPostmaster SIGKILLs node i's postmaster, as a crash of the server
// would end it; its Patroni stays up to fail over and later rejoin it.
func (p *Patroni) KillPostmaster(i int) error {
	pid, err := p.Postmaster(i)
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("private Patroni: SIGKILL node %d's postmaster (pid %d): %w", i+1, pid, err)
	}
	return nil
}

// Stop stops every node's Patroni (which stops its PostgreSQL), then etcd.
func (p *Patroni) Stop() error {
	var errs []error
	for i, d := range p.nodes {
		if d != nil {
			errs = append(errs, d.stop(time.Minute))
			p.nodes[i] = nil
		}
	}
	if p.etcd != nil {
		errs = append(errs, p.etcd.stop(10*time.Second))
		p.etcd = nil
	}
	return errors.Join(errs...)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// WALReceiver returns the process id of node i's WAL receiver, the
// standby's process that streams from the primary (pg_stat_wal_receiver).
func (p *Patroni) WALReceiver(ctx context.Context, i int) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, p.NodeURL(i, "postgres"))
	if err != nil {
		return 0, fmt.Errorf("private Patroni: node %d's WAL receiver: %w", i+1, err)
	}
	defer c.Close(context.Background())
	var pid int
	if err := c.QueryRow(ctx, "SELECT pid FROM pg_stat_wal_receiver").Scan(&pid); err != nil {
		return 0, fmt.Errorf("private Patroni: node %d's WAL receiver (is it a streaming standby?): %w", i+1, err)
	}
	return pid, nil
}
