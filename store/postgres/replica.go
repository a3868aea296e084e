package postgres

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/backwave/backwave/job"
	"github.com/backwave/backwave/store"
)

// DefaultReplicaMaxLag is ReplicaOptions.MaxLag's default.
const DefaultReplicaMaxLag = 10 * time.Second

// replicaProbeEvery is how often a Replica rechecks the standby's replay
// lag (and whether it answers at all).
const replicaProbeEvery = time.Second

// ReplicaOptions configure OpenReplica.
type ReplicaOptions struct {
	// Schema is the Schema Name, as the primary's store has it. Empty
	// means DefaultSchema, or the URI's schema=.
	Schema string
	// MaxLag is the replay lag past which reads go to the primary until
	// the standby catches up again; 0 means DefaultReplicaMaxLag.
	MaxLag time.Duration
}

// ReplicaStatus is what a Replica last saw of its standby.
type ReplicaStatus struct {
	// Lag is the standby's replay lag: 0 when it has replayed all it has
	// received, else the age of the last transaction it replayed.
	Lag time.Duration
	// InRecovery is pg_is_in_recovery() on the standby's connection: true
	// for a standby. A standby promoted meanwhile reports false, and reads
	// go to the primary.
	InRecovery bool
	// Serving says reads go to the standby now: it answers, is in
	// recovery, and lags less than MaxLag.
	Serving bool
	// Err is why it does not serve, when it does not; CheckedAt when the
	// standby was last asked.
	Err       error
	CheckedAt time.Time
	// ReplicaReads and PrimaryReads count the Monitor reads served by
	// each since the Replica opened.
	ReplicaReads, PrimaryReads int64
}

// Replica is a store.Monitor over a streaming standby of the primary: each
// read goes to the standby while it answers and lags less than
// ReplicaOptions.MaxLag, and to the primary's Monitor otherwise. A read the
// standby fails is served by the primary. It never writes: Operator
// Actions, and every read that must see a write just made, go to the
// primary's store, not through a Replica.
type Replica struct {
	standby *Store
	primary store.Monitor
	maxLag  time.Duration

	mu     sync.Mutex
	status ReplicaStatus

	replicaReads, primaryReads atomic.Int64
}

// OpenReplica opens the standby connString names — a postgres:// URL as
// ParseURI reads it (its schema= the Schema Name), or a connection string
// pgx understands — as a Replica that falls back to primary. The standby must be in recovery: a connString that
// names a primary (or anything that accepts writes) is an error wrapping
// store.ErrInvalidParams, as is one with pooler= or listen=. It migrates
// nothing and runs no hint listener; the schema must be the primary's
// current version.
func OpenReplica(ctx context.Context, connString string, primary store.Monitor, opts ReplicaOptions) (*Replica, error) {
	if primary == nil {
		return nil, fmt.Errorf("postgres: replica: %w: no primary Monitor to fall back to", store.ErrInvalidParams)
	}
	rest, popts := connString, Options{}
	if strings.HasPrefix(connString, Scheme+"://") || strings.HasPrefix(connString, SchemeLong+"://") {
		u, err := neturl.Parse(connString)
		if err != nil {
			return nil, fmt.Errorf("postgres: replica: %w: parse the replica's URL: %w", store.ErrInvalidParams, err)
		}
		if rest, popts, err = ParseURI(u); err != nil {
			return nil, fmt.Errorf("postgres: replica: %w", err)
		}
		switch {
		case opts.Schema == "":
			opts.Schema = popts.Schema
		case popts.Schema != "" && popts.Schema != opts.Schema:
			return nil, fmt.Errorf("postgres: replica: %w: the URL says schema=%s, ReplicaOptions.Schema %q", store.ErrInvalidParams, popts.Schema, opts.Schema)
		}
	}
	if popts.Pooler != "" || popts.ListenURL != "" {
		return nil, fmt.Errorf("postgres: replica: %w: pooler= and listen= are the primary's settings, not a standby's", store.ErrInvalidParams)
	}
	if opts.MaxLag < 0 {
		return nil, fmt.Errorf("postgres: replica: %w: MaxLag %s is negative", store.ErrInvalidParams, opts.MaxLag)
	}
	if opts.MaxLag == 0 {
		opts.MaxLag = DefaultReplicaMaxLag
	}
	s, err := Open(ctx, rest, Options{Schema: opts.Schema, SkipMigrate: true, DisableListener: true, DisableNotify: true})
	if err != nil {
		return nil, fmt.Errorf("postgres: replica: %w", err)
	}
	r := &Replica{standby: s, primary: primary, maxLag: opts.MaxLag}
	// A standby lagging at open is no error: its reads go to the primary
	// until it catches up. One that is not a standby, or does not answer,
	// is.
	switch st := r.probe(ctx); {
	case errors.Is(st.Err, errNotStandby):
		_ = s.Close()
		return nil, fmt.Errorf("postgres: replica: %w: %s is not a standby (pg_is_in_recovery() is false): it would take the Monitor's reads as a primary; name a streaming standby", store.ErrInvalidParams, redactURL(rest))
	case !st.InRecovery:
		_ = s.Close()
		return nil, fmt.Errorf("postgres: replica: %w", st.Err)
	}
	return r, nil
}

// redactURL is a connection string fit for a message: a URL's password
// hidden, anything else only named.
func redactURL(conn string) string {
	u, err := neturl.Parse(conn)
	if err != nil || u.Host == "" {
		return "the replica's connection string"
	}
	return u.Redacted()
}

// errNotStandby is a probe's finding that the server is not in recovery.
var errNotStandby = errors.New("the replica is not in recovery (promoted, or a primary)")

// Close closes the standby's connections; the primary's Monitor stays
// open.
func (r *Replica) Close() error { return r.standby.Close() }

// Status returns what the Replica saw of the standby, checking again if
// the last check is older than a second.
func (r *Replica) Status(ctx context.Context) ReplicaStatus {
	st := r.current(ctx)
	st.ReplicaReads, st.PrimaryReads = r.replicaReads.Load(), r.primaryReads.Load()
	return st
}

func (r *Replica) current(ctx context.Context) ReplicaStatus {
	r.mu.Lock()
	st := r.status
	r.mu.Unlock()
	if !st.CheckedAt.IsZero() && time.Since(st.CheckedAt) < replicaProbeEvery {
		return st
	}
	return r.probe(ctx)
}

// ReplicaLag reports the standby's replay lag, whether it serves the
// reads now, and why not when it does not: what a dashboard shows.
func (r *Replica) ReplicaLag(ctx context.Context) (lag time.Duration, serving bool, reason error) {
	st := r.current(ctx)
	return st.Lag, st.Serving, st.Err
}

// probe asks the standby whether it is in recovery and how far its replay
// lags, bounded by two seconds.
func (r *Replica) probe(ctx context.Context) ReplicaStatus {
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	st := ReplicaStatus{CheckedAt: time.Now()}
	var lagSec float64
	err := r.standby.db.query(pctx, `SELECT pg_is_in_recovery(),
		CASE WHEN NOT pg_is_in_recovery() OR pg_last_wal_receive_lsn() IS NULL
		       OR pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
		     ELSE coalesce(extract(epoch FROM now() - pg_last_xact_replay_timestamp()), 0)::float8 END`, nil,
		func(scan scanFunc) error { return scan(&st.InRecovery, &lagSec) })
	st.Lag = time.Duration(lagSec * float64(time.Second))
	switch {
	case err != nil:
		st.Err = fmt.Errorf("replica unreachable: %w", err)
	case !st.InRecovery:
		st.Err = errNotStandby
	case st.Lag > r.maxLag:
		st.Err = fmt.Errorf("replica lags %s, past the bound of %s", st.Lag.Round(time.Millisecond), r.maxLag)
	default:
		st.Serving = true
	}
	r.mu.Lock()
	r.status = st
	r.mu.Unlock()
	return st
}

// route runs read on the standby when it serves, else (or when it fails)
// on the primary.
func route[T any](ctx context.Context, r *Replica, read func(store.Monitor) (T, error)) (T, error) {
	if r.current(ctx).Serving {
		v, err := read(r.standby)
		if err == nil || errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrInvalidParams) || ctx.Err() != nil {
			r.replicaReads.Add(1)
			return v, err
		}
		r.mu.Lock()
		r.status = ReplicaStatus{CheckedAt: time.Now(), Err: fmt.Errorf("replica read failed: %w", err)}
		r.mu.Unlock()
	}
	r.primaryReads.Add(1)
	return read(r.primary)
}

// JobGet implements store.Monitor. A job enqueued a moment ago may not
// have reached the standby: read-your-write callers use the primary.
func (r *Replica) JobGet(ctx context.Context, id job.ID) (job.Job, error) {
	return route(ctx, r, func(m store.Monitor) (job.Job, error) { return m.JobGet(ctx, id) })
}

// JobList implements store.Monitor.
func (r *Replica) JobList(ctx context.Context, p store.JobListParams) ([]job.Job, error) {
	return route(ctx, r, func(m store.Monitor) ([]job.Job, error) { return m.JobList(ctx, p) })
}

// JobCountByState implements store.Monitor.
func (r *Replica) JobCountByState(ctx context.Context, p store.CountParams) (map[job.State]int, error) {
	return route(ctx, r, func(m store.Monitor) (map[job.State]int, error) { return m.JobCountByState(ctx, p) })
}

// JobCountByQueue implements store.Monitor.
func (r *Replica) JobCountByQueue(ctx context.Context) ([]store.QueueStateCount, error) {
	return route(ctx, r, func(m store.Monitor) ([]store.QueueStateCount, error) { return m.JobCountByQueue(ctx) })
}

// TagFacet implements store.Monitor.
func (r *Replica) TagFacet(ctx context.Context, p store.TagFacetParams) ([]store.TagCount, error) {
	return route(ctx, r, func(m store.Monitor) ([]store.TagCount, error) { return m.TagFacet(ctx, p) })
}

// TagSuggest implements store.Monitor.
func (r *Replica) TagSuggest(ctx context.Context, p store.TagSuggestParams) ([]job.Tag, error) {
	return route(ctx, r, func(m store.Monitor) ([]job.Tag, error) { return m.TagSuggest(ctx, p) })
}

// AuditList implements store.Monitor.
func (r *Replica) AuditList(ctx context.Context, p store.AuditListParams) ([]store.AuditEntry, error) {
	return route(ctx, r, func(m store.Monitor) ([]store.AuditEntry, error) { return m.AuditList(ctx, p) })
}

// QueueKeys implements store.Monitor.
func (r *Replica) QueueKeys(ctx context.Context, p store.QueueKeysParams) ([]store.KeyCount, error) {
	return route(ctx, r, func(m store.Monitor) ([]store.KeyCount, error) { return m.QueueKeys(ctx, p) })
}

var _ store.Monitor = (*Replica)(nil)
