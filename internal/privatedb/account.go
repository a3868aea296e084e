package privatedb

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"syscall"
)

// Account is the OS user a private server runs as.
type Account struct {
	// Name is the user's login name.
	Name string
	// UID and GID are the user's ids; Groups its supplementary groups.
	UID, GID int
	Groups   []int
	// Switch is true when the calling process (root) runs the server's
	// binaries as this user, not as itself.
	Switch bool
}

// ServerAccount returns the Account a server whose system user is name
// runs as: the calling user when it is not root, and the system user name
// when it is (database servers refuse to run as root). It fails when run
// as root and there is no such user, or it is root itself.
func ServerAccount(name string) (Account, error) {
	if os.Geteuid() != 0 {
		u, err := user.Current()
		if err != nil {
			return Account{}, fmt.Errorf("the current OS user: %w", err)
		}
		return account(u, false)
	}
	u, err := user.Lookup(name)
	if err != nil {
		return Account{}, fmt.Errorf("running as root, the server must run as the %q OS user (it refuses root): %w", name, err)
	}
	a, err := account(u, true)
	if err != nil {
		return Account{}, err
	}
	if a.UID == 0 {
		return Account{}, fmt.Errorf("the %q OS user is root: the server refuses to run as root", name)
	}
	return a, nil
}

func account(u *user.User, switchTo bool) (Account, error) {
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return Account{}, fmt.Errorf("OS user %q: uid %q: %w", u.Username, u.Uid, err)
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return Account{}, fmt.Errorf("OS user %q: gid %q: %w", u.Username, u.Gid, err)
	}
	a := Account{Name: u.Username, UID: uid, GID: gid, Switch: switchTo}
	ids, err := u.GroupIds()
	if err != nil {
		return Account{}, fmt.Errorf("OS user %q: groups: %w", u.Username, err)
	}
	for _, s := range ids {
		g, err := strconv.Atoi(s)
		if err != nil {
			return Account{}, fmt.Errorf("OS user %q: group %q: %w", u.Username, s, err)
		}
		if g != gid {
			a.Groups = append(a.Groups, g)
		}
	}
	return a, nil
}

// inGroup reports whether gid is the Account's primary or a supplementary
// group.
func (a Account) inGroup(gid int) bool {
	if gid == a.GID {
		return true
	}
	for _, g := range a.Groups {
		if g == gid {
			return true
		}
	}
	return false
}

// Command returns a command that runs bin with args as the Account, in
// directory dir (which the Account must be able to enter), with no shell
// in between. Its environment is the caller's, with HOME set to dir and
// USER and LOGNAME to the Account's name when the Account is switched to.
func (a Account) Command(ctx context.Context, dir, bin string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	if a.Switch {
		groups := make([]uint32, 0, len(a.Groups))
		for _, g := range a.Groups {
			groups = append(groups, uint32(g))
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{
			Uid: uint32(a.UID), Gid: uint32(a.GID), Groups: groups,
		}}
		cmd.Env = append(os.Environ(), "HOME="+dir, "USER="+a.Name, "LOGNAME="+a.Name)
	}
	return cmd
}

// run runs bin as the Account and returns its output with any error. The
// output goes to a file, not a pipe: a daemon the command starts may keep
// its descriptors and would hold a pipe open for its whole life.
func (a Account) run(ctx context.Context, dir, bin string, args ...string) error {
	out, err := os.CreateTemp("", "privatedb-*.out")
	if err != nil {
		return fmt.Errorf("%s: output file: %w", bin, err)
	}
	defer os.Remove(out.Name())
	defer out.Close()
	cmd := a.Command(ctx, dir, bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		b, _ := os.ReadFile(out.Name())
		return fmt.Errorf("%s (as OS user %s, in %s): %w: %s", bin, a.Name, dir, err, b)
	}
	return nil
}
