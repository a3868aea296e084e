// Package journal is the Torture Suite's client-side journal: one
// append-only file of JSON lines per process, recording what that process
// observed — every enqueue the store acknowledged, every claim, handler
// start and finish with its (worker, Attempt), every outcome report and the
// store's answer, every operator action, every sample a reader took and
// every fault the coordinator injected.
//
// Each entry is written with one write(2) on an unbuffered file, so a
// process killed with SIGKILL loses at most the entry it was writing: the
// kernel keeps what was written. A torn last line is skipped on reading.
package journal

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// Kind names what an Entry records.
type Kind string

// The kinds of Entry.
const (
	// KindIntent: a producer is about to enqueue Batch (N jobs). Note
	// "doomed" marks a batch enqueued in a transaction that never commits.
	KindIntent Kind = "intent"
	// KindEnqueue: the store acknowledged Batch with the ids IDs.
	KindEnqueue Kind = "enq"
	// KindDependency: job ID was enqueued with Parents in Mode.
	KindDependency Kind = "dep"
	// KindClaim: the store leased job ID at Attempt A to worker W.
	KindClaim Kind = "claim"
	// KindStart: a handler started job ID at Attempt A.
	KindStart Kind = "start"
	// KindFinish: a handler returned for job ID at Attempt A; State says
	// how ("ok", "fail" or "perm").
	KindFinish Kind = "finish"
	// KindReport: worker W reported an outcome (target State) for job ID at
	// Attempt A and the store answered Applied.
	KindReport Kind = "report"
	// KindRenewLost: a renewal told worker W it lost job ID at Attempt A.
	KindRenewLost Kind = "renew_lost"
	// KindOperator: an Operator Action (Note) on job ID or Queue Q; Applied
	// says whether the store accepted it.
	KindOperator Kind = "op"
	// KindLimit: the Concurrency Limit of Queue Q is N (0: none) from T on.
	// Note "intent" is written before the change is sent, "ack" after.
	KindLimit Kind = "limit"
	// KindQueueSample: a reader saw N Running jobs in Queue Q.
	KindQueueSample Kind = "qsample"
	// KindRunningSample: a reader saw job ID Running at Attempt A under
	// worker W with its Lease ending at Lease.
	KindRunningSample Kind = "rsample"
	// KindFault: the coordinator injected fault Note (Detail says more);
	// End is when it stopped acting, zero for an instant fault.
	KindFault Kind = "fault"
	// KindPhase: a cell of the schedule (Note) began at T and ended at End.
	KindPhase Kind = "phase"
	// KindWAL: the SQLite write-ahead log was N bytes.
	KindWAL Kind = "wal"
)

// Entry is one journal line. Times are Unix nanoseconds on the host clock.
type Entry struct {
	T       int64   `json:"t"`
	Proc    string  `json:"p,omitempty"`
	Kind    Kind    `json:"k"`
	ID      int64   `json:"id,omitempty"`
	A       int64   `json:"a,omitempty"`
	W       string  `json:"w,omitempty"`
	State   string  `json:"s,omitempty"`
	Applied bool    `json:"ok,omitempty"`
	Batch   string  `json:"b,omitempty"`
	IDs     []int64 `json:"ids,omitempty"`
	Parents []int64 `json:"par,omitempty"`
	Mode    string  `json:"m,omitempty"`
	Q       string  `json:"q,omitempty"`
	N       int64   `json:"n,omitempty"`
	Lease   int64   `json:"lease,omitempty"`
	End     int64   `json:"end,omitempty"`
	Note    string  `json:"note,omitempty"`
	Detail  string  `json:"d,omitempty"`
}

// Time returns T as a time.Time.
func (e Entry) Time() time.Time { return time.Unix(0, e.T) }

// String renders the entry as one JSON line.
func (e Entry) String() string {
	b, err := json.Marshal(e)
	if err != nil {
		type plain Entry
		return fmt.Sprintf("%+v", plain(e))
	}
	return string(b)
}

// Writer appends entries to one process's journal file. Its methods are
// safe for concurrent use.
type Writer struct {
	mu   sync.Mutex
	f    *os.File
	proc string
	err  error
}

// Create opens (creating or appending to) the journal of process proc in
// dir.
func Create(dir, proc string) (*Writer, error) {
	f, err := os.OpenFile(filepath.Join(dir, proc+".jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("journal of %s: %w", proc, err)
	}
	return &Writer{f: f, proc: proc}, nil
}

// Write stamps e with the process name and, if T is zero, the time now,
// and appends it with a single write. The first write error is kept and
// returned by Err; later entries are dropped.
func (w *Writer) Write(e Entry) {
	if e.T == 0 {
		e.T = time.Now().UnixNano()
	}
	e.Proc = w.proc
	b, err := json.Marshal(e)
	if err != nil {
		w.mu.Lock()
		if w.err == nil {
			w.err = fmt.Errorf("journal of %s: %w", w.proc, err)
		}
		w.mu.Unlock()
		return
	}
	b = append(b, '\n')
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return
	}
	if _, err := w.f.Write(b); err != nil {
		w.err = fmt.Errorf("journal of %s: %w", w.proc, err)
	}
}

// Err returns the first write error.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close closes the file.
func (w *Writer) Close() error {
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("journal of %s: %w", w.proc, err)
	}
	return w.Err()
}

// ReadDir reads every journal file in dir and returns their entries sorted
// by time. A line that does not parse — the torn last write of a killed
// process — is skipped and counted in torn.
func ReadDir(dir string) (entries []Entry, torn int, err error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, 0, fmt.Errorf("journals in %s: %w", dir, err)
	}
	for _, name := range names {
		es, t, err := readFile(name)
		if err != nil {
			return nil, 0, err
		}
		entries = append(entries, es...)
		torn += t
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].T < entries[j].T })
	return entries, torn, nil
}

func readFile(name string) (entries []Entry, torn int, err error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, 0, fmt.Errorf("journal %s: %w", name, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var e Entry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			torn++
			continue
		}
		entries = append(entries, e)
	}
	if err := sc.Err(); err != nil && !errors.Is(err, os.ErrClosed) {
		return nil, 0, fmt.Errorf("journal %s: %w", name, err)
	}
	return entries, torn, nil
}
