package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestPeersSmoke runs the peers' scenarios once at a tiny size: graphile-
// worker and pg-boss on PostgreSQL where peers/install.sh has installed
// them (and Node.js is there), asynq on the Redis at $BWBENCH_REDIS_ADDR or
// 127.0.0.1:6379 where one answers, each beside BackWave so the peer ratio
// table prints. A peer that is not there is skipped with the message
// bwbench prints, not failed.
func TestPeersSmoke(t *testing.T) {
	pgURL := os.Getenv("BACKWAVE_TEST_POSTGRES_URL")
	redisAddr := cmpOr(os.Getenv("BWBENCH_REDIS_ADDR"), "127.0.0.1:6379")
	cases := []struct {
		sys, tg string
		rows    []string
	}{
		{sysGraphile, tgPostgres, []string{scInsert, scDrain, scSteady, scLatencyOn}},
		{sysPgBoss, tgPostgres, []string{scInsert, scDrain, scSteady, scLatencyOn, scLatencyOff}},
		{sysAsynq, tgRedis, []string{scInsert, scDrain, scSteady, scLatencyOff}},
	}
	for _, c := range cases {
		t.Run(c.sys, func(t *testing.T) {
			cfg := config{
				mode: "local", scenarios: []string{scInsert, scDrain, scSteady, scLatencyOn, scLatencyOff},
				targets: []string{c.tg}, systems: []string{c.sys}, runs: 1,
				pgURL: pgURL, redisAddr: redisAddr, node: "node", peersDir: "peers",
				sqliteSync: "normal", sizes: tinySizes, overrides: map[string]string{},
			}
			switch c.tg {
			case tgPostgres:
				if pgURL == "" {
					t.Skip("BACKWAVE_TEST_POSTGRES_URL is unset: the Node.js peers run on PostgreSQL")
				}
				b := &bench{cfg: cfg}
				if _, reason := b.peerRuntime(c.sys); reason != "" {
					t.Skipf("%s skipped: %s", c.sys, reason)
				}
			case tgRedis:
				if _, err := redisInfo(context.Background(), redisAddr); err != nil {
					t.Skipf("asynq skipped: no Redis at %s: %v", redisAddr, err)
				}
			}
			var stdout, stderr bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			if err := run(ctx, cfg, &stdout, &stderr); err != nil {
				t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
			}
			for _, sc := range c.rows {
				if row := fmt.Sprintf("| %s | %s | %s |", sc, c.tg, c.sys); !strings.Contains(stdout.String(), row) {
					t.Errorf("no row %q in:\n%s", row, stdout.String())
				}
			}
			if !strings.Contains(stdout.String(), c.sys+" drain settings") {
				t.Errorf("the manifest has no %s settings:\n%s", c.sys, stdout.String())
			}
		})
	}
}
