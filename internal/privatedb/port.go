package privatedb

import (
	"fmt"
	"net"
	"strconv"
	"time"
)

// sharedPorts are the default ports of machine-wide servers, never a
// private server's: a private server on one of them would collide with,
// or be mistaken for, the machine's own.
var sharedPorts = map[int]string{5432: "PostgreSQL", 3306: "MariaDB", 6432: "PgBouncer"}

// CheckPort fails unless port is a valid TCP port, not a machine-wide
// server's default, and nothing answers on it at 127.0.0.1.
func CheckPort(port int) error {
	if err := validPort(port); err != nil {
		return err
	}
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
	if err == nil {
		_ = c.Close()
		return fmt.Errorf("private server port %d: something already answers on 127.0.0.1:%d (a server of an earlier run still up?)", port, port)
	}
	return nil
}

// FreePort returns a loopback port that was free when asked (the kernel's
// choice), for a server a test starts.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// validPort fails unless port is a valid TCP port and not a machine-wide
// server's default.
func validPort(port int) error {
	if port < 1024 || port > 65535 {
		return fmt.Errorf("private server port %d: want 1024–65535", port)
	}
	if name, ok := sharedPorts[port]; ok {
		return fmt.Errorf("private server port %d is the machine-wide %s's default: choose another", port, name)
	}
	return nil
}
