package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// Redis-backed peer: asynq on the redis target, a Redis server at -redis.
const (
	tgRedis  = "redis"
	sysAsynq = "asynq"
)

// asynqSystem is asynq (github.com/hibiken/asynq): a Client enqueues, a
// Server with a ServeMux works, each run on its own queue name, deleted
// afterwards.
type asynqSystem struct{}

func (asynqSystem) name() string { return sysAsynq }

// supports: the redis target, the scenarios River has, except the hints-on
// latency: asynq has no wake-up; its processor, finding every queue
// empty, sleeps TaskCheckInterval (jittered) before it looks again, so its
// one latency row is the hints-off one.
func (asynqSystem) supports(sc, tg string) bool {
	if tg != tgRedis {
		return false
	}
	switch sc {
	case scInsert, scDrain, scSteady, scLatencyOff:
		return true
	}
	return false
}

// asynqKnobs is asynq's tuning: Config.Concurrency (its own end-to-end
// benchmark uses 10; the default is the CPU count), TaskCheckInterval (its
// default 1 s; the hints-off poll of every system for latency), and the
// enqueue concurrency of the bulk path: asynq has no batch enqueue, so the
// bulk path is Client.Enqueue from insert_conc goroutines.
func asynqKnobs(sc string, sz sizes) *knobs {
	k := newKnobs("concurrency", "100", "check", "1s", "insert_conc", "16")
	if sc == scLatencyOff {
		k.set("concurrency", "10")
		k.set("check", sz.HintsOffPoll.String())
	}
	return k
}

type asynqInstance struct {
	b      *bench
	k      *knobs
	queue  string
	opt    asynq.RedisClientOpt
	client *asynq.Client
	srv    *asynq.Server
	rdb    *redis.Client
}

func (asynqSystem) open(ctx context.Context, b *bench, sc, _ string) (instance, string, error) {
	k := asynqKnobs(sc, b.cfg.sizes)
	if err := k.override(b.cfg.overrides[sysAsynq]); err != nil {
		return nil, "", fmt.Errorf("-asynq: %w", err)
	}
	in := &asynqInstance{
		b: b, k: k,
		queue: fmt.Sprintf("bwbench_%d_%d", os.Getpid(), b.seq.Add(1)),
		opt:   asynq.RedisClientOpt{Addr: b.cfg.redisAddr, PoolSize: max(20, k.int("insert_conc")+4)},
	}
	in.client = asynq.NewClient(in.opt)
	in.rdb = redis.NewClient(&redis.Options{Addr: b.cfg.redisAddr})
	if err := in.rdb.Ping(ctx).Err(); err != nil {
		_ = in.close(ctx)
		return nil, "", fmt.Errorf("redis %s: %w", b.cfg.redisAddr, err)
	}
	return in, k.forScenario(sc), nil
}

var asynqPayload = mustJSON(noop{})

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func (in *asynqInstance) task(payload []byte) *asynq.Task {
	return asynq.NewTask(noop{}.Kind(), payload, asynq.Queue(in.queue), asynq.MaxRetry(0))
}

func (in *asynqInstance) bulkInsert(ctx context.Context, n int) error {
	conc := max(1, in.k.int("insert_conc"))
	var wg sync.WaitGroup
	errs := make([]error, conc)
	per := (n + conc - 1) / conc
	for i := range conc {
		share := min(per, n-i*per)
		if share <= 0 {
			break
		}
		wg.Go(func() {
			for range share {
				if _, err := in.client.EnqueueContext(ctx, in.task(asynqPayload)); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (in *asynqInstance) start(_ context.Context, onWork func(int64)) error {
	in.srv = asynq.NewServer(in.opt, asynq.Config{
		Concurrency:       in.k.int("concurrency"),
		Queues:            map[string]int{in.queue: 1},
		TaskCheckInterval: in.k.dur("check"),
		LogLevel:          asynq.ErrorLevel,
		Logger:            asynqLogger{in.b.quietLogger(sysAsynq)},
	})
	mux := asynq.NewServeMux()
	mux.HandleFunc(noop{}.Kind(), func(_ context.Context, t *asynq.Task) error {
		var j noop
		if err := json.Unmarshal(t.Payload(), &j); err != nil {
			return err
		}
		onWork(j.T)
		return nil
	})
	return in.srv.Start(mux)
}

func (in *asynqInstance) enqueue(ctx context.Context, stamp int64) error {
	_, err := in.client.EnqueueContext(ctx, in.task(mustJSON(noop{T: stamp})))
	return err
}

// pending counts the queue's tasks in the pending, active, scheduled and
// retry sets, read from asynq's keys directly: its Inspector's
// GetQueueInfo also samples memory use, too heavy to poll.
func (in *asynqInstance) pending(ctx context.Context) (int, error) {
	pfx := "asynq:{" + in.queue + "}:"
	pipe := in.rdb.Pipeline()
	cmds := []*redis.IntCmd{
		pipe.LLen(ctx, pfx+"pending"), pipe.LLen(ctx, pfx+"active"),
		pipe.ZCard(ctx, pfx+"scheduled"), pipe.ZCard(ctx, pfx+"retry"),
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return 0, err
	}
	total := 0
	for _, c := range cmds {
		total += int(c.Val())
	}
	return total, nil
}

func (in *asynqInstance) close(ctx context.Context) error {
	var errs []error
	if in.srv != nil {
		in.srv.Shutdown()
	}
	if in.client != nil {
		errs = append(errs, in.client.Close())
	}
	insp := asynq.NewInspector(in.opt)
	if err := insp.DeleteQueue(in.queue, true); err != nil && !errors.Is(err, asynq.ErrQueueNotFound) {
		errs = append(errs, fmt.Errorf("delete queue %s: %w", in.queue, err))
	}
	errs = append(errs, insp.Close())
	if in.rdb != nil {
		// Stat counters asynq keeps per queue and day.
		if keys, err := in.rdb.Keys(ctx, "asynq:{"+in.queue+"}:*").Result(); err == nil && len(keys) > 0 {
			errs = append(errs, in.rdb.Del(ctx, keys...).Err())
		}
		errs = append(errs, in.rdb.Close())
	}
	return errors.Join(errs...)
}

// asynqLogger hands asynq's log lines to the bench's quiet logger.
type asynqLogger struct{ l *slog.Logger }

func (a asynqLogger) Debug(args ...any) {}
func (a asynqLogger) Info(args ...any)  {}
func (a asynqLogger) Warn(args ...any)  { a.l.Warn(fmt.Sprint(args...)) }
func (a asynqLogger) Error(args ...any) { a.l.Error(fmt.Sprint(args...)) }
func (a asynqLogger) Fatal(args ...any) { a.l.Error(fmt.Sprint(args...)) }

// redisInfo reads the Redis server's version and persistence settings for
// the manifest.
func redisInfo(ctx context.Context, addr string) (map[string]string, error) {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer func() { _ = rdb.Close() }()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	info, err := rdb.InfoMap(ctx, "server", "persistence").Result()
	if err != nil {
		return nil, err
	}
	m := map[string]string{"address": addr}
	if s, ok := info["Server"]; ok {
		m["version"] = s["redis_version"]
	}
	if p, ok := info["Persistence"]; ok {
		m["aof_enabled"] = p["aof_enabled"]
	}
	if save, err := rdb.ConfigGet(ctx, "save").Result(); err == nil {
		m["save"] = save["save"]
	}
	if aof, err := rdb.ConfigGet(ctx, "appendonly").Result(); err == nil {
		m["appendonly"] = aof["appendonly"]
	}
	return m, nil
}
