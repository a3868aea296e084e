//go:build unix

package filecheck

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestRegular(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "l")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "p")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "none")
	for _, tc := range []struct {
		name, path string
		absentOK   bool
		exists     bool
		is         error
	}{
		{"file", file, false, true, nil},
		{"link to a file", link, false, true, nil},
		{"fifo", fifo, true, true, ErrNotRegular},
		{"directory", dir, true, true, ErrNotRegular},
		{"device", "/dev/null", true, true, ErrNotRegular},
		{"absent, may be", missing, true, false, nil},
		{"absent, must exist", missing, false, false, fs.ErrNotExist},
	} {
		exists, err := Regular(tc.path, tc.absentOK)
		if exists != tc.exists || (tc.is == nil) != (err == nil) || tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("%s: Regular = %v, %v; want %v, %v", tc.name, exists, err, tc.exists, tc.is)
		}
	}
}
