package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// fleet starts and stops the run's child processes: copies of this binary
// re-executed in a role.
type fleet struct {
	bin    string
	base   childConfig
	logDir string

	mu    sync.Mutex
	procs map[string]*proc // by slot name ("w3", "producer"): the newest
	every []*proc          // every process started
	gen   map[string]int
}

// proc is one running child process.
type proc struct {
	slot, name string
	cmd        *exec.Cmd
	done       chan struct{}
	stdout     io.ReadCloser
	// frozen is set while the process is stopped by a freeze fault, which
	// a kill9 leaves alone so that its late outcomes do reach the store.
	frozen atomic.Bool
}

func newFleet(bin string, base childConfig, logDir string) *fleet {
	return &fleet{bin: bin, base: base, logDir: logDir, procs: map[string]*proc{}, gen: map[string]int{}}
}

// start starts a child in role under slot, named slot.<generation> so that
// every incarnation has its own journal and Worker ids, unless the slot's
// process is still running, which it returns. With pipe, its standard
// output is returned for reading.
func (f *fleet) start(slot, role string, pipe bool, edit func(*childConfig)) (*proc, error) {
	f.mu.Lock()
	if p, ok := f.procs[slot]; ok {
		select {
		case <-p.done:
		default:
			f.mu.Unlock()
			return p, nil // the slot is running already
		}
	}
	f.gen[slot]++
	name := fmt.Sprintf("%s.%d", slot, f.gen[slot])
	f.mu.Unlock()
	cfg := f.base
	cfg.Role, cfg.Name = role, name
	if edit != nil {
		edit(&cfg)
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	log, err := os.Create(filepath.Join(f.logDir, name+".log"))
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	cmd := exec.Command(f.bin)
	cmd.Env = append(os.Environ(), childEnv+"="+string(raw))
	cmd.Stderr = log
	// A child dies with the coordinator, whatever kills it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p := &proc{slot: slot, name: name, cmd: cmd, done: make(chan struct{})}
	if pipe {
		if p.stdout, err = cmd.StdoutPipe(); err != nil {
			log.Close()
			return nil, fmt.Errorf("start %s: %w", name, err)
		}
	} else {
		cmd.Stdout = io.Discard
	}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		_ = cmd.Wait()
		log.Close()
		close(p.done)
	}()
	f.mu.Lock()
	f.procs[slot] = p
	f.every = append(f.every, p)
	f.mu.Unlock()
	return p, nil
}

// get returns the live process of slot, if any.
func (f *fleet) get(slot string) (*proc, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.procs[slot]
	if !ok {
		return nil, false
	}
	select {
	case <-p.done:
		return nil, false
	default:
		return p, true
	}
}

// kill sends SIGKILL to p and waits for it to die.
func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop asks p to stop (SIGTERM) and kills it if it has not within grace.
func (p *proc) stop(grace time.Duration) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.kill()
	}
}

// waitLine waits until p prints line on its standard output.
func (p *proc) waitLine(ctx context.Context, line string, timeout time.Duration) error {
	found := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(p.stdout)
		seen := false
		for sc.Scan() {
			if !seen && strings.TrimSpace(sc.Text()) == line {
				seen = true
				close(found)
			}
		}
	}()
	select {
	case <-found:
		return nil
	case <-p.done:
		return fmt.Errorf("%s exited before printing %q", p.name, line)
	case <-time.After(timeout):
		return fmt.Errorf("%s did not print %q within %s", p.name, line, timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// all returns the live processes.
func (f *fleet) all() []*proc {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*proc
	for _, p := range f.every {
		select {
		case <-p.done:
		default:
			out = append(out, p)
		}
	}
	return out
}
