package postgres

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// hintChannel is the NOTIFY channel of the default schema; s.sql renames it
// with the rest, so stores of different schemas do not hear each other.
const hintChannel = `"backwave.hint"`

// hub holds a Store's Wake-Up Hint subscribers and runs its listener.
type hub struct {
	s *Store

	mu      sync.Mutex
	next    int
	subs    []subscriber
	cancel  context.CancelFunc // stops the listener; nil when none runs
	done    chan struct{}      // closed when the listener has stopped
	stopped bool
}

type subscriber struct {
	id int
	fn func(queue string)
}

// SubscribeHints calls fn with a Queue's name when a NOTIFY from any store
// on this schema says jobs may have become claimable in it: an insert of
// jobs due now (at commit of the inserting transaction), a retry due at
// once, an expiry or Relinquish back to Scheduled, a resume, a changed
// limit, or a slot freed in a limited Queue. After the listener's connection
// is made, and again after every reconnect, fn is called once for every
// known Queue, since hints may have been missed meanwhile. fn is called from
// the listener's goroutine and must not block. The returned func
// unsubscribes; calling it again does nothing.
//
// The first subscription starts the listener, on a dedicated connection
// outside the pool (Options.ListenURL's, if set); Close stops it. With
// Options.DisableListener nothing is ever delivered, nor behind a
// transaction pooler without Options.ListenURL. A hint only cuts latency: workers must behave the same,
// one poll later, without it.
func (s *Store) SubscribeHints(fn func(queue string)) (unsubscribe func()) {
	h := &s.hints
	h.mu.Lock()
	defer h.mu.Unlock()
	h.next++
	id := h.next
	h.subs = append(h.subs, subscriber{id: id, fn: fn})
	if h.cancel == nil && !h.stopped && s.listens() {
		ctx, cancel := context.WithCancel(context.Background())
		h.cancel, h.done = cancel, make(chan struct{})
		go h.listen(ctx, h.done)
	}
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.subs = slices.DeleteFunc(h.subs, func(sub subscriber) bool { return sub.id == id })
	}
}

// stop ends the listener, if one runs, and waits for it.
func (h *hub) stop() {
	h.mu.Lock()
	h.stopped = true
	cancel, done := h.cancel, h.done
	h.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// announce calls every subscriber with queue.
func (h *hub) announce(queue string) {
	h.mu.Lock()
	subs := slices.Clone(h.subs)
	h.mu.Unlock()
	for _, sub := range subs {
		sub.fn(queue)
	}
}

// listen keeps a dedicated connection LISTENing on the hint channel until
// ctx is done, reconnecting after a delay whenever it fails.
func (h *hub) listen(ctx context.Context, done chan struct{}) {
	defer close(done)
	delay := h.s.opts.ListenerReconnectDelay
	if delay <= 0 {
		delay = time.Second
	}
	for {
		err := h.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		h.s.log.Warn("backwave: hint listener lost its connection; reconnecting", "schema", h.s.schema, "error", err, "delay", delay)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// listenOnce connects, LISTENs, announces every known Queue (hints may have
// been missed while not listening) and then relays notifications until the
// connection fails or ctx is done.
func (h *hub) listenOnce(ctx context.Context) error {
	cfg, err := h.s.listenConfig(ctx)
	if err != nil {
		return err
	}
	// A config copied from a live connection carries that connection's
	// notification handler; this one must buffer its own.
	cfg.OnNotification = nil
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = make(map[string]string)
	}
	cfg.RuntimeParams["application_name"] = "backwave-hints:" + h.s.schema
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	if _, err := conn.Exec(ctx, h.s.sql(`LISTEN `+hintChannel)); err != nil {
		return err
	}
	var queues []string
	rows, err := conn.Query(ctx, h.s.sql(`SELECT q.name FROM backwave.queue q ORDER BY q.name COLLATE "C"`))
	if err != nil {
		return err
	}
	if queues, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return err
	}
	for _, q := range queues {
		h.announce(q)
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if n != nil {
			h.announce(n.Payload)
		}
	}
}

// listens reports whether the store runs a hint listener: not with
// Options.DisableListener, nor behind a transaction pooler without a
// listen= URL (Open said so).
func (s *Store) listens() bool {
	if s.opts.DisableListener {
		return false
	}
	return s.opts.Pooler != PoolerTransaction || s.listenCfg != nil
}

// listenConfig is the listener's connection config: Options.ListenURL's,
// or the store's own.
func (s *Store) listenConfig(ctx context.Context) (*pgx.ConnConfig, error) {
	if s.listenCfg != nil {
		return s.listenCfg.Copy(), nil
	}
	return s.db.connConfig(ctx)
}

// hint sends a Wake-Up Hint for queue inside q's transaction.
func (s *Store) hint(ctx context.Context, q querier, queue string) error {
	if s.opts.DisableNotify {
		return nil
	}
	_, err := q.exec(ctx, s.sql(`SELECT pg_notify('backwave.hint', $1::text)`), queue)
	return err
}
