package backwave_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/backwave/backwave"
	"github.com/backwave/backwave/store/sqlite"
)

// The README's quick start, compiled and run here. TestReadmeQuickStart
// fails unless the README's Go block is the text between the quickstart
// markers below, with main's body the example's.

// quickstart:decl
type Welcome struct {
	To string `json:"to"`
}

func (Welcome) WireName() string { return "welcome" } // its stable name in storage

// quickstart:end

func Example_quickStart() {
	dir, err := os.MkdirTemp("", "backwave-quickstart")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// quickstart:body
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "jobs.db"), sqlite.Options{}) // creates and migrates the file
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	done := make(chan struct{})
	handlers := backwave.NewHandlers()
	_ = backwave.AddHandlerFunc(handlers, func(ctx context.Context, j *backwave.Job[Welcome]) error {
		fmt.Println("welcoming", j.Args.To) // return an error to retry with backoff
		close(done)
		return nil
	})
	client, err := backwave.NewClient(st, backwave.Config{
		Handlers: handlers,
		Groups:   []backwave.WorkerGroupOptions{backwave.DefaultWorkerGroup("web", backwave.Strict(backwave.DefaultQueue))},
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	if _, err := client.Enqueue(ctx, Welcome{To: "ada@example.com"}); err != nil {
		log.Fatal(err)
	}
	<-done
	if err := client.Stop(ctx); err != nil { // drains running handlers, hands back Leases
		log.Fatal(err)
	}
	// quickstart:end

	// Output: welcoming ada@example.com
}

// TestReadmeQuickStart: the README's quick start is Example_quickStart's
// text, so it compiles and runs as printed.
func TestReadmeQuickStart(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("example_quickstart_test.go")
	if err != nil {
		t.Fatal(err)
	}
	region := func(marker string) string {
		_, after, ok := strings.Cut(string(src), "\t// quickstart:"+marker+"\n")
		if !ok {
			_, after, ok = strings.Cut(string(src), "// quickstart:"+marker+"\n")
		}
		text, _, ok2 := strings.Cut(after, "// quickstart:end")
		if !ok || !ok2 {
			t.Fatalf("example_quickstart_test.go has no quickstart:%s region", marker)
		}
		return strings.TrimRight(text, "\t")
	}
	want := region("decl") + "func main() {\n" + region("body") + "}\n"
	_, block, ok := strings.Cut(string(readme), "## Quick start")
	if ok {
		_, block, ok = strings.Cut(block, "```go\n")
	}
	if ok {
		block, _, ok = strings.Cut(block, "```")
	}
	if !ok {
		t.Fatal("README.md has no ## Quick start section with a ```go block")
	}
	if block != want {
		t.Errorf("README.md's quick start differs from Example_quickStart; make it read:\n%s", want)
	}
}
