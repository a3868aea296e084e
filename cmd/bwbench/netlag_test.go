package main

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// The lag proxy delivers every byte, in order, and a round trip through it
// takes at least twice its lag (it cannot deliver early).
func TestLagProxy(t *testing.T) {
	t.Parallel()
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	const lag = 5 * time.Millisecond
	p, err := startLagProxy(echo.Addr().String(), lag)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	c, err := net.Dial("tcp", p.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	payload := bytes.Repeat([]byte("backwave"), 64<<10) // 512 KiB: many chunks
	for round := range 3 {
		t0 := time.Now()
		go func() { _, _ = c.Write(payload) }()
		got := make([]byte, len(payload))
		if _, err := io.ReadFull(c, got); err != nil {
			t.Fatal(err)
		}
		if rtt := time.Since(t0); rtt < 2*lag {
			t.Errorf("round %d: round trip %v, want at least %v", round, rtt, 2*lag)
		}
		if !bytes.Equal(got, payload) {
			t.Fatalf("round %d: the bytes came back changed", round)
		}
	}
}

func TestPgHostPort(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"postgres://u@db.example:6543/x": "db.example:6543",
		"postgresql://u@127.0.0.1/x":     "127.0.0.1:5432",
		"postgres://u@[::1]:5432/x?a=b":  "[::1]:5432",
		"host=localhost user=postgres":   "",
		"postgres:///x?host=/var/run/pg": "",
	} {
		got, err := pgHostPort(in)
		if got != want || (err == nil) != (want != "") {
			t.Errorf("pgHostPort(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
