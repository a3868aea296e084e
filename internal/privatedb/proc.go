package privatedb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// daemon is a server process run in the foreground as the caller's child:
// started by start, ended by stop, its exit seen on done.
type daemon struct {
	name string
	cmd  *exec.Cmd
	done chan error
}

// startDaemon starts bin as acct in dir with its output appended to logPath.
func startDaemon(name string, acct Account, dir, logPath, bin string, args ...string) (*daemon, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: log: %w", name, err)
	}
	defer log.Close()
	if acct.Switch {
		if err := os.Chown(logPath, acct.UID, acct.GID); err != nil {
			return nil, fmt.Errorf("%s: give %s to OS user %s: %w", name, logPath, acct.Name, err)
		}
	}
	// The process's own context is not the caller's, which only bounds a
	// start: stop signals it and waits.
	cmd := acct.Command(context.Background(), dir, bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	// Its own process group: a terminal's ^C reaches the caller, which
	// stops its servers in order.
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: start %s (as OS user %s): %w", name, bin, acct.Name, err)
	}
	d := &daemon{name: name, cmd: cmd, done: make(chan error, 1)}
	go func() { d.done <- cmd.Wait() }()
	return d, nil
}

// waitPort waits until something answers on 127.0.0.1:port, the daemon
// exits, ctx ends or limit passes.
func (d *daemon) waitPort(ctx context.Context, port int, limit time.Duration, logPath string) error {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(limit)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
			return nil
		}
		select {
		case werr := <-d.done:
			d.done <- werr
			b, _ := os.ReadFile(logPath)
			return fmt.Errorf("%s: exited at start: %v: %s", d.name, werr, tail(b, 2000))
		case <-ctx.Done():
			return fmt.Errorf("%s: wait for %s: %w", d.name, addr, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: nothing answers on %s after %s (log: %s)", d.name, addr, limit, logPath)
		}
	}
}

// stop sends SIGTERM and waits up to grace before it kills the process.
func (d *daemon) stop(grace time.Duration) error {
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("%s: stop: %w", d.name, err)
	}
	select {
	case <-d.done:
		return nil
	case <-time.After(grace):
		_ = d.cmd.Process.Kill()
		<-d.done
		return fmt.Errorf("%s: did not stop within %s of SIGTERM; killed", d.name, grace)
	}
}

// tail is the last n bytes of b.
func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
