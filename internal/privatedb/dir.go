package privatedb

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// AccessError says that a server's OS user cannot reach its directory
// because of a directory the package may not change.
type AccessError struct {
	// Path is the directory the user cannot search.
	Path string
	// User is the server's OS user.
	User string
	// Mode, UID and GID are the directory's permission bits and owner.
	Mode     fs.FileMode
	UID, GID int
	// Within is the caller's tree, the only directories PrepareDir changes.
	Within string
}

func (e *AccessError) Error() string {
	return fmt.Sprintf("the %s OS user cannot search %s (mode %04o, owner uid %d gid %d), which is above %s and left as it is: give that user search permission on %s, or choose a directory it can reach",
		e.User, e.Path, e.Mode.Perm(), e.UID, e.GID, e.Within, e.Path)
}

// stat is what the ownership logic reads of a directory.
type stat struct {
	mode     fs.FileMode
	uid, gid int
}

// fileSystem is the part of the OS the ownership logic acts on; tests
// give it a map.
type fileSystem interface {
	stat(path string) (stat, error)
	mkdirAll(path string, perm fs.FileMode) error
	chown(path string, uid, gid int) error
	chmod(path string, mode fs.FileMode) error
}

// osFS is the real file system.
type osFS struct{}

func (osFS) stat(path string) (stat, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return stat{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return stat{}, fmt.Errorf("%s: no owner in its file info", path)
	}
	return stat{mode: fi.Mode(), uid: int(st.Uid), gid: int(st.Gid)}, nil
}

func (osFS) mkdirAll(path string, perm fs.FileMode) error { return os.MkdirAll(path, perm) }
func (osFS) chown(path string, uid, gid int) error        { return os.Chown(path, uid, gid) }
func (osFS) chmod(path string, mode fs.FileMode) error    { return os.Chmod(path, mode) }

// PrepareDir makes dir the home of a server run by acct: it creates dir if
// missing, gives it to acct (when acct is switched to) with mode 0700, and
// makes every directory above it searchable by acct. A directory at or
// below within (the caller's own tree, which must contain dir) that acct
// cannot search gets the execute bit of the class acct falls in — owner,
// group or others (traverse, not list); a directory above within that acct
// cannot search is left alone and reported as an *AccessError.
func PrepareDir(acct Account, dir, within string) error {
	return prepareDir(osFS{}, os.Geteuid(), acct, dir, within)
}

func prepareDir(fsys fileSystem, euid int, acct Account, dir, within string) error {
	dir, within = filepath.Clean(dir), filepath.Clean(within)
	if !filepath.IsAbs(dir) || !filepath.IsAbs(within) {
		return fmt.Errorf("server directory %s and its tree %s must be absolute paths", dir, within)
	}
	if !inside(dir, within) {
		return fmt.Errorf("server directory %s is not inside %s", dir, within)
	}
	if err := fsys.mkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("server directory: %w", err)
	}
	if acct.Switch {
		if err := fsys.chown(dir, acct.UID, acct.GID); err != nil {
			return fmt.Errorf("server directory %s for the %s OS user: %w", dir, acct.Name, err)
		}
	}
	if err := fsys.chmod(dir, 0o700); err != nil {
		return fmt.Errorf("server directory %s: %w", dir, err)
	}
	st, err := fsys.stat(dir)
	if err != nil {
		return fmt.Errorf("server directory: %w", err)
	}
	if st.uid != acct.UID {
		return fmt.Errorf("server directory %s is owned by uid %d, not by the %s OS user (uid %d) the server runs as", dir, st.uid, acct.Name, acct.UID)
	}
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		st, err := fsys.stat(p)
		if err != nil {
			return fmt.Errorf("server directory: %w", err)
		}
		if bit := searchBit(st, acct); bit != 0 && st.mode&bit == 0 {
			if !inside(p, within) {
				return &AccessError{Path: p, User: acct.Name, Mode: st.mode, UID: st.uid, GID: st.gid, Within: within}
			}
			if euid != 0 && euid != st.uid {
				return fmt.Errorf("the %s OS user cannot search %s (mode %04o, owner uid %d), and this process (uid %d) may not change it", acct.Name, p, st.mode.Perm(), st.uid, euid)
			}
			if err := fsys.chmod(p, st.mode|bit); err != nil {
				return fmt.Errorf("search permission on %s for the %s OS user: %w", p, acct.Name, err)
			}
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// searchBit is the mode bit that decides whether acct may search
// (traverse) a directory: the owner's, the group's or the others' execute
// bit, whichever class acct falls in first, as the kernel checks them
// (access control lists aside). It is 0 for root, who may search any
// directory.
func searchBit(st stat, acct Account) fs.FileMode {
	switch {
	case acct.UID == 0:
		return 0
	case st.uid == acct.UID:
		return 0o100
	case acct.inGroup(st.gid):
		return 0o010
	default:
		return 0o001
	}
}

// inside reports whether path is root or below it (both clean).
func inside(path, root string) bool {
	if path == root || root == "/" {
		return true
	}
	return strings.HasPrefix(path, root+string(filepath.Separator))
}
