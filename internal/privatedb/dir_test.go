package privatedb

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// memFS is a map of directories, for the ownership logic.
type memFS struct {
	dirs map[string]stat
	euid int
	// denyChown makes chown fail, as it does for an ordinary user.
	denyChown bool
}

func (m *memFS) stat(path string) (stat, error) {
	st, ok := m.dirs[path]
	if !ok {
		return stat{}, fs.ErrNotExist
	}
	return st, nil
}

func (m *memFS) mkdirAll(path string, perm fs.FileMode) error {
	if _, ok := m.dirs[path]; ok {
		return nil
	}
	if err := m.mkdirAll(filepath.Dir(path), perm); err != nil {
		return err
	}
	m.dirs[path] = stat{mode: fs.ModeDir | perm, uid: m.euid, gid: m.euid}
	return nil
}

func (m *memFS) chown(path string, uid, gid int) error {
	st, ok := m.dirs[path]
	if !ok {
		return fs.ErrNotExist
	}
	if m.denyChown || (m.euid != 0 && uid != m.euid) {
		return fs.ErrPermission
	}
	st.uid, st.gid = uid, gid
	m.dirs[path] = st
	return nil
}

func (m *memFS) chmod(path string, mode fs.FileMode) error {
	st, ok := m.dirs[path]
	if !ok {
		return fs.ErrNotExist
	}
	if m.euid != 0 && m.euid != st.uid {
		return fs.ErrPermission
	}
	st.mode = st.mode&fs.ModeType | mode&^fs.ModeType // chmod keeps the file's type
	m.dirs[path] = st
	return nil
}

func dir(perm fs.FileMode, uid, gid int) stat {
	return stat{mode: fs.ModeDir | perm, uid: uid, gid: gid}
}

var (
	postgresAcct = Account{Name: "postgres", UID: 101, GID: 104, Groups: []int{110}, Switch: true}
	aliceAcct    = Account{Name: "alice", UID: 1000, GID: 1000}
)

// TestPrepareDir covers the ownership and mode decisions for a server's
// directory, as root and as an ordinary user, without touching the disk.
func TestPrepareDir(t *testing.T) {
	t.Parallel()
	base := func() map[string]stat {
		return map[string]stat{
			"/":            dir(0o755, 0, 0),
			"/tmp":         dir(0o777|fs.ModeSticky, 0, 0),
			"/root":        dir(0o700, 0, 0),
			"/home":        dir(0o755, 0, 0),
			"/home/alice":  dir(0o750, 1000, 1000),
			"/srv":         dir(0o750, 0, 110), // group 110: postgres is a member
			"/srv/nogroup": dir(0o700, 0, 0),
		}
	}
	cases := []struct {
		name   string
		euid   int
		acct   Account
		extra  map[string]stat
		dir    string
		within string
		// want are the directories' stats afterwards; wantErr a substring of
		// the error (every word of it must be in the message).
		want    map[string]stat
		wantErr []string
	}{
		{
			// The failure of issue 39: a 0700 root work dir from MkdirTemp.
			name: "root, work dir 0700 in /tmp", euid: 0, acct: postgresAcct,
			extra: map[string]stat{"/tmp/bwt-1": dir(0o700, 0, 0)},
			dir:   "/tmp/bwt-1/pg", within: "/tmp/bwt-1",
			want: map[string]stat{
				"/tmp/bwt-1":    dir(0o701, 0, 0), // traverse only, for others
				"/tmp/bwt-1/pg": dir(0o700, 101, 104),
				"/tmp":          dir(0o777|fs.ModeSticky, 0, 0),
			},
		},
		{
			name: "root, nested server dir: the made parents opened too", euid: 0, acct: postgresAcct,
			extra: map[string]stat{"/tmp/bwt-2": dir(0o700, 0, 0)},
			dir:   "/tmp/bwt-2/pg/primary", within: "/tmp/bwt-2",
			want: map[string]stat{
				"/tmp/bwt-2":            dir(0o701, 0, 0),
				"/tmp/bwt-2/pg":         dir(0o701, 0, 0),
				"/tmp/bwt-2/pg/primary": dir(0o700, 101, 104),
			},
		},
		{
			name: "root, the server's group may already search", euid: 0, acct: postgresAcct,
			dir: "/srv/pg", within: "/srv/pg",
			want: map[string]stat{"/srv": dir(0o750, 0, 110), "/srv/pg": dir(0o700, 101, 104)},
		},
		{
			name: "root, group class without search: the group bit, not o+x", euid: 0, acct: postgresAcct,
			extra: map[string]stat{"/srv/g": dir(0o705, 0, 110)},
			dir:   "/srv/g/pg", within: "/srv/g",
			want: map[string]stat{"/srv/g": dir(0o715, 0, 110)},
		},
		{
			name: "root, a dir under /root: refused, named, unchanged", euid: 0, acct: postgresAcct,
			dir: "/root/torture/pg", within: "/root/torture",
			want:    map[string]stat{"/root": dir(0o700, 0, 0)},
			wantErr: []string{"postgres OS user", "cannot search /root", "0700", "uid 0"},
		},
		{
			name: "root, above within is never changed", euid: 0, acct: postgresAcct,
			dir: "/srv/nogroup/x/pg", within: "/srv/nogroup/x",
			want:    map[string]stat{"/srv/nogroup": dir(0o700, 0, 0)},
			wantErr: []string{"cannot search /srv/nogroup"},
		},
		{
			name: "ordinary user, own work dir: nothing opened", euid: 1000, acct: aliceAcct,
			extra: map[string]stat{"/tmp/bwt-3": dir(0o700, 1000, 1000)},
			dir:   "/tmp/bwt-3/pg", within: "/tmp/bwt-3",
			want: map[string]stat{
				"/tmp/bwt-3":    dir(0o700, 1000, 1000),
				"/tmp/bwt-3/pg": dir(0o700, 1000, 1000),
			},
		},
		{
			name: "ordinary user, home 0750: the owner bit decides", euid: 1000, acct: aliceAcct,
			dir: "/home/alice/run/pg", within: "/home/alice/run",
			want: map[string]stat{"/home/alice": dir(0o750, 1000, 1000), "/home/alice/run/pg": dir(0o700, 1000, 1000)},
		},
		{
			name: "ordinary user, own dir without u+x: given it", euid: 1000, acct: aliceAcct,
			extra: map[string]stat{"/tmp/bwt-4": dir(0o600, 1000, 1000), "/tmp/bwt-4/pg": dir(0o700, 1000, 1000)},
			dir:   "/tmp/bwt-4/pg", within: "/tmp/bwt-4",
			want: map[string]stat{"/tmp/bwt-4": dir(0o700, 1000, 1000)},
		},
		{
			name: "ordinary user, someone else's dir in its tree: refused", euid: 1000, acct: aliceAcct,
			extra: map[string]stat{"/tmp/shared": dir(0o700, 1001, 1001)},
			dir:   "/tmp/shared/pg", within: "/tmp/shared",
			wantErr: []string{"alice OS user cannot search /tmp/shared", "may not change it"},
		},
		{
			name: "ordinary user, server dir owned by another user", euid: 1000, acct: aliceAcct,
			extra: map[string]stat{"/tmp/bwt-5": dir(0o755, 1000, 1000), "/tmp/bwt-5/pg": dir(0o755, 1001, 1001)},
			dir:   "/tmp/bwt-5/pg", within: "/tmp/bwt-5",
			wantErr: []string{"/tmp/bwt-5/pg", "permission denied"},
		},
		{
			name: "dir outside within", euid: 0, acct: postgresAcct,
			dir: "/tmp/a/pg", within: "/tmp/b",
			wantErr: []string{"/tmp/a/pg is not inside /tmp/b"},
		},
		{
			name: "relative dir", euid: 0, acct: postgresAcct,
			dir: "pg", within: "/tmp",
			wantErr: []string{"absolute"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := &memFS{dirs: base(), euid: tc.euid}
			for p, st := range tc.extra {
				m.dirs[p] = st
			}
			err := prepareDir(m, tc.euid, tc.acct, tc.dir, tc.within)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("prepareDir: no error, want one saying %q", tc.wantErr)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("prepareDir error %q does not say %q", err, w)
					}
				}
			} else if err != nil {
				t.Fatalf("prepareDir: %v", err)
			}
			for p, want := range tc.want {
				if got := m.dirs[p]; got != want {
					t.Errorf("%s: got mode %v uid %d gid %d, want mode %v uid %d gid %d", p, got.mode, got.uid, got.gid, want.mode, want.uid, want.gid)
				}
			}
		})
	}
}

func TestAccessErrorIsTyped(t *testing.T) {
	t.Parallel()
	m := &memFS{dirs: map[string]stat{"/": dir(0o755, 0, 0), "/root": dir(0o700, 0, 0)}}
	err := prepareDir(m, 0, postgresAcct, "/root/w/pg", "/root/w")
	var ae *AccessError
	if !errors.As(err, &ae) {
		t.Fatalf("prepareDir: %v, want an *AccessError", err)
	}
	if ae.Path != "/root" || ae.User != "postgres" {
		t.Errorf("AccessError names %s and %s, want /root and postgres", ae.Path, ae.User)
	}
}

func TestSearchBit(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		st   stat
		acct Account
		want fs.FileMode
	}{
		{"owner", dir(0o700, 1000, 0), aliceAcct, 0o100},
		{"primary group", dir(0o070, 0, 1000), aliceAcct, 0o010},
		{"supplementary group", dir(0o070, 0, 110), postgresAcct, 0o010},
		{"others", dir(0o007, 0, 0), aliceAcct, 0o001},
		{"root searches all", dir(0o000, 5, 5), Account{Name: "root"}, 0},
	}
	for _, tc := range cases {
		if got := searchBit(tc.st, tc.acct); got != tc.want {
			t.Errorf("%s: searchBit = %o, want %o", tc.name, got, tc.want)
		}
	}
}

func TestCheckPortRefusesSharedAndBusyPorts(t *testing.T) {
	t.Parallel()
	for _, p := range []int{0, 80, 5432, 3306, 6432, 70000} {
		if err := CheckPort(p); err == nil {
			t.Errorf("CheckPort(%d): no error", p)
		}
	}
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckPort(port); err != nil {
		t.Errorf("CheckPort(%d) of a free port: %v", port, err)
	}
}
