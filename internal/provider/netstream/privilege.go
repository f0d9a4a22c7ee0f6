package netstream

import (
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"wirefs/internal/ns"
	"wirefs/internal/procstatus"
)

// mayBind refuses, with the EACCES the kernel would give, to bind a
// privileged port for a caller that could not bind it itself. The daemon
// may run as root for other users (--allow-other): it must not lend them
// its privilege. Privileged ports are those below the kernel's
// net.ipv4.ip_unprivileged_port_start (1024 by default), which root and
// holders of CAP_NET_BIND_SERVICE (in the daemon's user namespace) may
// bind.
func mayBind(proto, name string, port int, c ns.Caller) error {
	start := unprivilegedPortStart()
	if port == 0 || port >= start || c.Uid == 0 || canBindPrivileged(c.Pid) {
		return nil
	}
	return ns.Errorf(syscall.EACCES, "%s/%s: port %d is privileged (below %d): uid %d may not bind it (no CAP_NET_BIND_SERVICE)",
		proto, name, port, start, c.Uid)
}

// unprivilegedPortStart reads the first port anyone may bind.
func unprivilegedPortStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_unprivileged_port_start")
	if err != nil {
		return 1024
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 1024
	}
	return n
}

// canBindPrivileged reports whether process pid has CAP_NET_BIND_SERVICE
// in its effective set, in the daemon's user namespace (a capability of
// another user namespace does not count for the daemon's network).
func canBindPrivileged(pid uint32) bool {
	if pid == 0 {
		return false // the door could not say who asked
	}
	proc := "/proc/" + strconv.FormatUint(uint64(pid), 10)
	theirs, err1 := os.Readlink(proc + "/ns/user")
	ours, err2 := os.Readlink("/proc/self/ns/user")
	if err1 != nil || err2 != nil || theirs != ours {
		return false
	}
	s, err := procstatus.Read(pid)
	return err == nil && s.HasCap(unix.CAP_NET_BIND_SERVICE)
}
