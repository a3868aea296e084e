package journal

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReadAndTornLine(t *testing.T) {
	dir := t.TempDir()
	a, err := Create(dir, "a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Create(dir, "b")
	if err != nil {
		t.Fatal(err)
	}
	b.Write(Entry{T: 2, Kind: KindClaim, ID: 7, A: 1, W: "b/g/0"})
	a.Write(Entry{T: 1, Kind: KindEnqueue, Batch: "x", IDs: []int64{7}})
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// A process killed mid-write leaves a torn last line.
	f, err := os.OpenFile(filepath.Join(dir, "b.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"t":3,"k":"rep`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	es, torn, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if torn != 1 || len(es) != 2 {
		t.Fatalf("got %d entries, %d torn; want 2, 1", len(es), torn)
	}
	if es[0].Proc != "a" || es[0].Kind != KindEnqueue || es[1].Proc != "b" || es[1].ID != 7 {
		t.Fatalf("entries out of order or unstamped: %v", es)
	}
}
