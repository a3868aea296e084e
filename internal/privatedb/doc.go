// Package privatedb starts private database servers for tests and for the
// Torture Suite: a server of one's own, on its own loopback port and in its
// own directory, that a run may restart, crash and fill without touching the
// machine's shared servers.
//
// The parts every server needs are here once:
//
//   - Account: the OS user the server runs as. Run as an ordinary user, a
//     server runs as that user. Run as root, it runs as its own system user
//     ("postgres", later "mysql"): the servers refuse root.
//   - PrepareDir: the server's directory, owned by that Account and mode
//     0700, and every directory above it searchable by the Account. Inside
//     the caller's own tree (the within directory) a directory that is not
//     is given search permission — the execute bit of the Account's class,
//     usually o+x: traverse, never list; above it nothing is changed, and
//     an *AccessError names the path, its mode and owner, and the user who
//     cannot pass.
//   - Account.Command: a server binary run as the Account, with no shell
//     and no su.
//   - CheckPort and FreePort: a loopback port that no other server answers
//     on, never a machine-wide server's default (5432, 3306, 6432).
//
// Postgres is the first server built from them: initdb, start, stop and
// restart (clean or a crash) of a private PostgreSQL cluster. MariaDB is
// the second: mariadb-install-db into its own data directory, and mariadbd
// on its own loopback port and socket, started, stopped and restarted
// (SIGTERM, or SIGKILL for a crash) as a child of the caller. Further
// servers are further types over the same Account, PrepareDir and port
// checks: a PgBouncer in front of PostgreSQL, a streaming standby of a
// private cluster (StartStandby: pg_basebackup -R), a Galera cluster, and
// a Patroni cluster (StartPatroni: one etcd member and a Patroni-managed
// PostgreSQL per node, synchronous or not) whose primary can be crashed
// (KillPostmaster) to fail over.
package privatedb
