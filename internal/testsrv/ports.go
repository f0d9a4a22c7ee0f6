package testsrv

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Ports for servers that are told theirs before they start.
//
// A port the kernel picks (bind to port 0) comes from the ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range), the range it also picks the
// source port of every outgoing connection from: closed again and handed
// to a server, it could be any test's next connection's source port by
// the time the server binds it (EADDRINUSE). FreePort picks outside that
// range, where only explicit binds compete; a server that lost its port to
// one all the same is started again on another (onFreePort).

var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{}
)

// FreePort returns a port outside the kernel's ephemeral range that TCP
// and UDP could bind on every address a moment ago, and that no other
// caller in this process was given: a port for a server to listen on, or
// one where nothing listens (connections are refused).
func FreePort(t testing.TB) int {
	t.Helper()
	low, high, err := ephemeralRange()
	if err != nil {
		t.Fatal(err)
	}
	// The ports a server may take: those from 10000 (above the ports
	// of well-known services) below and above the ephemeral range.
	const first = 10000
	below, above := max(low-first, 0), max(65535-max(high, first-1), 0)
	if below+above == 0 {
		t.Fatalf("testsrv: the ephemeral range %d-%d leaves no port to pick", low, high)
	}
	portsMu.Lock()
	defer portsMu.Unlock()
	for try := 0; try < 1000; try++ {
		port := first + rand.IntN(below+above)
		if port >= low {
			port = max(high, first-1) + 1 + (port - first - below)
		}
		if portsGiven[port] || !bindable(port) {
			continue
		}
		portsGiven[port] = true
		return port
	}
	t.Fatal("testsrv: no free port outside the ephemeral range after 1000 tries")
	return 0
}

// ephemeralRange reads the kernel's range of automatically chosen ports.
func ephemeralRange() (low, high int, err error) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0, err
	}
	f := strings.Fields(string(b))
	if len(f) == 2 {
		low, err1 := strconv.Atoi(f[0])
		high, err2 := strconv.Atoi(f[1])
		if err1 == nil && err2 == nil && 1024 <= low && low <= high && high <= 65535 {
			return low, high, nil
		}
	}
	return 0, 0, fmt.Errorf("testsrv: ip_local_port_range is %q", b)
}

// bindable reports whether TCP and UDP can bind port on every address
// now (which also covers 127.0.0.1 and ::1).
func bindable(port int) bool {
	addr := ":" + strconv.Itoa(port)
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	defer l.Close()
	u, err := net.ListenPacket("udp", addr)
	if err != nil {
		return false
	}
	u.Close()
	return true
}

// errPortTaken is a server's start that failed because another process
// bound its port first.
var errPortTaken = errors.New("its port was taken")

// startOnFreePort calls start with a FreePort until it has started a
// server there and returns that port. A start whose port another process
// bound in the meantime (errPortTaken) is tried again on another; any
// other error fails the test.
func startOnFreePort(t testing.TB, start func(port int) error) int {
	t.Helper()
	const tries = 5
	for try := 1; ; try++ {
		port := FreePort(t)
		err := start(port)
		if err == nil {
			return port
		}
		if !errors.Is(err, errPortTaken) || try == tries {
			t.Fatal(err)
		}
		t.Logf("testsrv: port %d: %v; trying another", port, err)
	}
}

// bindFailed reports whether a server's log says it could not bind its
// port because another socket had it: the errno's text (sshd, nginx,
// python, diod), or vsftpd's "could not bind listening" message.
func bindFailed(log string) bool {
	return strings.Contains(log, "Address already in use") || strings.Contains(log, "could not bind listening")
}

// listensOn reports whether process pid itself holds a socket that
// listens on TCP port of 127.0.0.1: the server the test started, not
// another that took the port first.
func listensOn(pid, port int) bool {
	inodes := map[string]bool{}
	fds, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	for _, fd := range fds {
		link, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + fd.Name())
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	if len(inodes) == 0 {
		return false
	}
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return false
	}
	defer f.Close()
	local := fmt.Sprintf("0100007F:%04X", port) // 127.0.0.1 as the kernel prints it
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		fs := strings.Fields(sc.Text())
		if len(fs) >= 10 && fs[1] == local && fs[3] == "0A" && inodes[fs[9]] {
			return true
		}
	}
	return false
}
