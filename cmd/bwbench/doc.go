// Command bwbench is the Benchmark Harness: it drives BackWave's real Shell
// pump through the public Client against the real Storage Adapters
// (PostgreSQL through pgx, SQLite as a WAL file in a temporary directory)
// under the wall clock, and measures the competitors (River, and the peers
// graphile-worker, pg-boss and asynq) and a raw SQL baseline with no
// framework at all, in the same process invocation.
//
// # What it measures
//
// Every job is a noop: the handler returns at once, so each number is the
// framework-overhead ceiling — the cost of moving a job through the queue,
// never of doing its work. The scenarios:
//
//	insert             bulk enqueue of N noop jobs through each system's best bulk path
//	                   (BackWave Client.EnqueueMany; River InsertManyFast, COPY on PostgreSQL;
//	                   raw COPY / one prepared-insert transaction)
//	drain              N pre-inserted jobs, time until all are finalized in the database
//	drain-history-off  BackWave's drain with the Job History Policy off (no Transition Log)
//	drain-encrypted    BackWave's drain through Encryption at Rest (package encrypt): every
//	                   payload sealed at insert and opened at claim, AES-256-GCM
//	drain-observers-idle  BackWave's drain with an Observer whose every callback does nothing,
//	                   paired with the default drain run alternately (the ratio is the cost)
//	drain-fleet-skip   BackWave's drain while the fleet registry shows another live node
//	                   handling a Wire Name this one lacks, so every claim carries a Skip list;
//	                   paired with the default drain (the ratio is the cost per claim)
//	drain-batch        BackWave's drain through a batch handler taking up to 100 jobs a call
//	                   (AddBatchHandler, default linger), paired with the default drain
//	steady             a producer keeps a backlog while workers drain; completed jobs/s over
//	                   a window after a warm-up
//	latency-hints-on   single enqueues at a fixed rate; enqueue → handler start p50/p90/p99,
//	                   with Wake-Up Hints (LISTEN/NOTIFY on PostgreSQL, in-process on SQLite)
//	latency-hints-off  the same with hints off: polling alone, at the stated poll interval
//	limit              the drain with a per-Queue Concurrency Limit (BackWave only: River has
//	                   none in its free tier); compare with the unlimited drain
//	rate               the drain with a per-Queue Rate Limit that never binds (BackWave only);
//	                   the paired ratio to the unrated drain is the cost of an idle Rate Limit
//	noisy-neighbour    Concurrency Keys: key A enqueues a flood, then 50 small keys enqueue 20 jobs
//	                   each while it drains; the small keys' enqueue → start p50/p90/p99 and the
//	                   drain rate, with Fair Claim on the Queue and without (the plain claim),
//	                   run alternately (BackWave only; the ratio is Fair Claim's drain cost)
//	rss                peak RSS of a child process whose Client drains a backlog, at each
//	                   backlog size given (BackWave only; flat in the backlog is the goal)
//
// Runs alternate between the systems (A B C A B C …) so machine drift hits
// each alike; a row reports the median of its runs with the min and max.
// Each system runs on fresh storage every run: its own PostgreSQL schema
// (dropped afterwards) or its own new SQLite file. River's schema is created
// by River's own migrator. Every system is tuned per scenario and target;
// the settings used are printed with each row.
//
// # Output
//
// A Markdown table goes to stdout, led by the environment manifest (Go
// version, CPU, OS, load average before and after, PostgreSQL version and
// settings, SQLite version and pragmas, the commit, the mode). -json FILE
// also writes
//
//	{"manifest": {...}, "results": [{"scenario", "target", "system", "jobs_per_sec",
//	  "p50_ms", "p90_ms", "p99_ms", "settings", "runs", "min", "max"}]}
//
// Every result is labelled local (a developer's machine: indicative only,
// never published) or official (-mode official, a pinned native x86-64
// instance: the only publishable source).
//
// # Looking inside
//
// -cpu prints, per measured interval, the CPU time per job of the bench
// process and of the system's PostgreSQL backends (found by
// application_name, read from /proc) and the bench process's heap
// allocations per job and GC cycles; -calls prints BackWave's store round
// trips (count, jobs per call, mean and max time); -cpuprofile writes a
// pprof CPU profile and -memprofile a heap allocation profile. -backwave, -river and -raw override a system's tuned
// settings by the names its rows print, e.g. -backwave pumps=4,claim=200.
// -backwave-pg-sql runs SQL on each of BackWave's PostgreSQL schemas once it
// is migrated ({schema} names it), for experiments that bound what a part
// of the schema costs, e.g. -backwave-pg-sql 'ALTER TABLE {schema}.job SET
// (fillfactor = 70)'; the rows it touches print it among their settings.
//
// # Usage
//
//	cd cmd/bwbench
//	go run . -quick                          # every scenario, both targets, sizes printed
//	go run . -scenarios drain,steady -targets postgres -runs 5 -json out.json
//	go run . -drain 200000 -rss 10000,1000000
//
// The PostgreSQL target reads -postgres, else BWBENCH_POSTGRES_URL, else
// BACKWAVE_TEST_POSTGRES_URL; without any, it is skipped. The
// postgres-pgbouncer target is the same server through a private PgBouncer
// in transaction pooling mode that bwbench starts on a free loopback port
// (Debian's pgbouncer; skipped with a message where it is not installed):
// the drain and both latency scenarios, BackWave with pooler=transaction and
// listen= naming the server directly, River in pgx's exec mode with
// PollOnly, raw in exec mode (pgbouncer.go says why each). The mariadb
// target reads -mariadb, else BWBENCH_MARIADB_URL, else
// BACKWAVE_TEST_MARIADB_URL: BackWave's MariaDB adapter against a raw
// FOR UPDATE SKIP LOCKED loop on the same server, the insert and the drain
// (-drain-mariadb, 10,000 by default).
//
// # The competitors
//
// River is pinned at v0.51.2 (github.com/riverqueue/river with
// riverdriver/riverpgxv5 and riverdriver/riversqlite). This command is its
// own Go module (cmd/bwbench/go.mod, with a replace of the library to
// ../..), so River and its drivers never enter the library's module graph.
//
// The peers run beside them with the same scenarios, each tuned as its
// documentation advises (docs/benchmarks.md quotes it):
//
//	graphile-worker  0.18.0, npm, on the same PostgreSQL
//	pg-boss          12.38.0, npm, on the same PostgreSQL
//	asynq            v0.26.0 (github.com/hibiken/asynq), on the redis target:
//	                 the Redis at -redis ($BWBENCH_REDIS_ADDR, 127.0.0.1:6379);
//	                 a Redis that keeps nothing on disk makes its rows a ceiling
//
// The two Node.js peers run in a child process (peers/peer.mjs) driven over
// a pipe; peers/install.sh installs them into peers/node_modules (pinned by
// peers/package-lock.json, ignored by git). A peer that is not installed,
// or whose server does not answer, is skipped with a message. -node names
// the Node.js executable, -peers-dir the directory; -graphile-worker,
// -pg-boss and -asynq override their settings like -river.
package main
