package privatedb

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// GaleraProvider is the Galera 4 library the Debian galera-4 package
// installs.
const GaleraProvider = "/usr/lib/galera/libgalera_smm.so"

// GaleraConfig describes a private Galera cluster of MariaDB servers, all
// on loopback.
type GaleraConfig struct {
	// Dir holds one directory per node, Dir/n1, Dir/n2, …; it must be
	// absolute.
	Dir string
	// Within is the caller's own directory tree holding Dir (see
	// PrepareDir). Empty means Dir's parent.
	Within string
	// Nodes is the number of nodes, at least 1 (3 when zero).
	Nodes int
	// Ports are the nodes' SQL ports, one per node. Node i's group
	// communication listens on GroupPort+10·i, its incremental state
	// transfer on the port after and its full state transfer (rsync) on
	// the one after that.
	Ports []int
	// GroupPort is the first node's group communication port; the
	// cluster uses GroupPort … GroupPort+10·Nodes+2.
	GroupPort int
	// Settings are server options every node gets (see
	// MariaDBConfig.Settings).
	Settings map[string]string
}

// Galera is a private Galera cluster: one MariaDB server per node, the
// first bootstrapped as a new cluster, the others joined to it by a full
// state transfer. Only one goroutine may drive it at a time.
type Galera struct {
	cfg   GaleraConfig
	nodes []*MariaDB
}

// StartGalera installs every node, bootstraps the first, and starts and
// joins the others one after another.
func StartGalera(ctx context.Context, cfg GaleraConfig) (*Galera, error) {
	if cfg.Nodes == 0 {
		cfg.Nodes = 3
	}
	if cfg.Nodes < 1 || len(cfg.Ports) != cfg.Nodes {
		return nil, fmt.Errorf("private Galera: %d nodes need %d ports, got %d", cfg.Nodes, cfg.Nodes, len(cfg.Ports))
	}
	if _, err := os.Stat(GaleraProvider); err != nil {
		return nil, fmt.Errorf("private Galera: %w (install the galera-4 package)", err)
	}
	if cfg.Within == "" {
		cfg.Within = filepath.Dir(cfg.Dir)
	}
	var addrs []string
	for i := range cfg.Nodes {
		gp := cfg.GroupPort + 10*i
		if err := validPort(gp); err != nil {
			return nil, fmt.Errorf("private Galera: group port: %w", err)
		}
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", gp))
	}
	g := &Galera{cfg: cfg}
	for i := range cfg.Nodes {
		gp := cfg.GroupPort + 10*i
		settings := maps.Clone(cfg.Settings)
		if settings == nil {
			settings = map[string]string{}
		}
		maps.Copy(settings, map[string]string{
			"wsrep-on":                       "ON",
			"wsrep-provider":                 GaleraProvider,
			"wsrep-cluster-name":             "privatedb",
			"wsrep-cluster-address":          "gcomm://" + strings.Join(addrs, ","),
			"wsrep-node-address":             addrs[i],
			"wsrep-provider-options":         fmt.Sprintf("base_port=%d;ist.recv_addr=127.0.0.1:%d;gcache.size=64M", gp, gp+1),
			"wsrep-sst-receive-address":      fmt.Sprintf("127.0.0.1:%d", gp+2),
			"wsrep-sst-method":               "rsync",
			"binlog-format":                  "ROW",
			"innodb-autoinc-lock-mode":       "2",
			"default-storage-engine":         "InnoDB",
			"wsrep-slave-threads":            "2",
			"innodb-flush-log-at-trx-commit": "2",
		})
		if i == 0 {
			settings["wsrep-new-cluster"] = ""
		}
		m, err := NewMariaDB(MariaDBConfig{Dir: filepath.Join(cfg.Dir, fmt.Sprintf("n%d", i+1)), Within: cfg.Within, Port: cfg.Ports[i], Settings: settings})
		if err != nil {
			return nil, fmt.Errorf("private Galera node %d: %w", i+1, err)
		}
		g.nodes = append(g.nodes, m)
	}
	if err := PrepareDir(g.nodes[0].acct, cfg.Dir, cfg.Within); err != nil {
		return nil, fmt.Errorf("private Galera: %w", err)
	}
	for i, m := range g.nodes {
		if err := m.Init(ctx); err != nil {
			return nil, fmt.Errorf("private Galera node %d: %w", i+1, err)
		}
		if err := g.startNode(ctx, i); err != nil {
			_ = g.Stop(context.Background())
			return nil, err
		}
		if i == 0 {
			// Restarted later, the first node joins the cluster the
			// others keep, as any other node does.
			delete(m.cfg.Settings, "wsrep-new-cluster")
		}
	}
	return g, nil
}

// startNode starts node i and waits until it is synced with the cluster
// (wsrep_ready).
func (g *Galera) startNode(ctx context.Context, i int) error {
	m := g.nodes[i]
	if err := m.Start(ctx); err != nil {
		return fmt.Errorf("private Galera node %d: %w", i+1, err)
	}
	db, err := sql.Open("mysql", m.DSN(""))
	if err != nil {
		return fmt.Errorf("private Galera node %d: %w", i+1, err)
	}
	defer db.Close()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var name, ready string
		err := db.QueryRowContext(ctx, "SHOW STATUS LIKE 'wsrep_ready'").Scan(&name, &ready)
		if err == nil && ready == "ON" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("private Galera node %d: not synced after two minutes (wsrep_ready %q, %v; server log: %s)", i+1, ready, err, m.LogPath())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// RestartNode stops node i (0-based) in the given mode — Immediate is a
// SIGKILL, a node crash — and starts it again, waiting until it has
// rejoined the cluster and caught up (by an incremental or a full state
// transfer).
func (g *Galera) RestartNode(ctx context.Context, i int, mode ShutdownMode) error {
	if i < 0 || i >= len(g.nodes) {
		return fmt.Errorf("private Galera: no node %d", i+1)
	}
	if err := g.nodes[i].Stop(ctx, mode); err != nil {
		return fmt.Errorf("private Galera node %d: %w", i+1, err)
	}
	return g.startNode(ctx, i)
}

// Nodes are the cluster's servers, in node order.
func (g *Galera) Nodes() []*MariaDB { return g.nodes }

// Stop stops every node cleanly, the last first, and returns the first
// error.
func (g *Galera) Stop(ctx context.Context) error {
	var first error
	for i := len(g.nodes) - 1; i >= 0; i-- {
		if err := g.nodes[i].Stop(ctx, Fast); err != nil && first == nil {
			first = fmt.Errorf("private Galera node %d: %w", i+1, err)
		}
	}
	return first
}
