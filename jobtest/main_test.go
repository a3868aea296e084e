package jobtest_test

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// Every test of the package leaves no goroutine behind: no handler
// goroutine outlives its Client.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeTB is a testing.TB that records failures instead of failing the
// test, so a test can show that a helper fails when it should. Methods it
// does not override panic (its embedded TB is nil).
type fakeTB struct {
	testing.TB
	mu       sync.Mutex
	fatal    string
	errs     []string
	cleanups []func()
}

func (f *fakeTB) Helper()                  {}
func (f *fakeTB) Name() string             { return "fake" }
func (f *fakeTB) Output() io.Writer        { return io.Discard }
func (f *fakeTB) Context() context.Context { return context.Background() }
func (f *fakeTB) Cleanup(fn func())        { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) Logf(string, ...any)      {}
func (f *fakeTB) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	if f.fatal == "" {
		f.fatal = fmt.Sprintf(format, args...)
	}
	f.mu.Unlock()
	runtime.Goexit()
}

// runFake runs body as a test body on its own goroutine with a fakeTB, then
// its cleanups (last first), and returns the first Fatalf message ("" if
// none) and the Errorf messages.
func runFake(body func(tb testing.TB)) (fatal string, errs []string) {
	f := &fakeTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			for i := len(f.cleanups) - 1; i >= 0; i-- {
				f.cleanups[i]()
			}
		}()
		body(f)
	}()
	<-done
	return f.fatal, f.errs
}
