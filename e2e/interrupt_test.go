package e2e

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ctrlC sends SIGINT to p's process group, as a terminal does, and checks
// that p exits within 3 s.
func ctrlC(t *testing.T, p *Proc, what string) {
	t.Helper()
	t0 := time.Now()
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGINT)
	r := p.wait(t, 3*time.Second)
	if r.Code == -1 && r.Err != nil && strings.Contains(r.Err.Error(), "still running") {
		t.Fatalf("%s: still running 3s after SIGINT", what)
	}
	t.Logf("%s returned %v after SIGINT", what, time.Since(t0).Round(time.Millisecond))
}

// blockedInFUSE waits until pid sleeps in the kernel, so a signal hits
// a blocked call rather than process start-up.
func blockedInFUSE(t *testing.T, pid int) {
	t.Helper()
	ok := waitFor(5*time.Second, func() bool {
		// A FUSE request waits in request_wait_answer (fs/fuse/dev.c).
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/wchan", pid))
		return strings.Contains(string(b), "request_wait_answer") || strings.Contains(string(b), "fuse")
	})
	if !ok {
		time.Sleep(300 * time.Millisecond) // wchan unavailable: give it time
	}
}

// TestInterrupt: Ctrl-C on programs blocked in the mount returns at once
// and releases what they held.
func TestInterrupt(t *testing.T) {
	t.Parallel()
	m := mount(t)

	t.Run("server waiting for a client", func(t *testing.T) {
		port := freePort(t)
		p := start(t, 30*time.Second, "", nil, "cat", m.P(fmt.Sprintf("tcp/%d", port)))
		waitListening(t, "tcp", port, p)
		blockedInFUSE(t, p.cmd.Process.Pid)
		ctrlC(t, p, "cat tcp/PORT")
		if !waitFor(3*time.Second, func() bool { return bindable(port) }) {
			t.Fatalf("port %d not bindable 3s after Ctrl-C", port)
		}
		// The name works again.
		p = start(t, 30*time.Second, "", nil, "cat", m.P(fmt.Sprintf("tcp/%d", port)))
		waitListening(t, "tcp", port, p)
		mustOK(t, "socat", socatClient(t, fmt.Sprintf("TCP:127.0.0.1:%d", port), "again\n"))
		equal(t, "cat read", p.wait(t, 10*time.Second).Stdout, "again\n")
	})

	t.Run("client blocked in read", func(t *testing.T) {
		sink := tcpServer(t, "127.0.0.1", freePort(t), "sink")
		p := start(t, 30*time.Second, "", nil, "cat", m.P(fmt.Sprintf("tcp/127.0.0.1:%d", sink.Port)))
		if !waitFor(5*time.Second, func() bool { return m.Stats(t)["live"] == 1 }) {
			t.Fatal("cat did not connect")
		}
		blockedInFUSE(t, p.cmd.Process.Pid)
		ctrlC(t, p, "cat tcp/127.0.0.1:PORT")
		e := sink.next(t, 3*time.Second) // the server sees the connection end
		equal(t, "server got", e["data"], any(""))
		m.waitLive(t, 0)
	})

	t.Run("udp reads", func(t *testing.T) {
		peer := udpPeer(t, "127.0.0.1", 0, false)
		p := start(t, 30*time.Second, "", nil, "cat", m.P(fmt.Sprintf("udp/127.0.0.1:%d", peer.Port)))
		if !waitFor(5*time.Second, func() bool { return m.Stats(t)["live"] == 1 }) {
			t.Fatal("cat did not open")
		}
		blockedInFUSE(t, p.cmd.Process.Pid)
		ctrlC(t, p, "cat udp/127.0.0.1:PORT")

		port := freePort(t)
		p = start(t, 30*time.Second, "", nil, "cat", m.P(fmt.Sprintf("udp/%d", port)))
		waitListening(t, "udp", port, p)
		blockedInFUSE(t, p.cmd.Process.Pid)
		ctrlC(t, p, "cat udp/PORT")
		waitNotListening(t, "udp", port)
		m.waitLive(t, 0)
	})

	// A handled SIGINT (python's KeyboardInterrupt) needs the daemon to
	// answer the FUSE interrupt with EINTR; the handle stays usable.
	t.Run("handled signal", func(t *testing.T) {
		sink := tcpServer(t, "127.0.0.1", freePort(t), "sink")
		port := freePort(t)
		const script = `
import os, sys
m = sys.argv[1]
c = os.open(m + "/tcp/127.0.0.1:" + sys.argv[2], os.O_RDWR)
s = os.open(m + "/tcp/" + sys.argv[3], os.O_RDWR)
for what, fd in (("client read", c), ("server accept", s)):
    print("blocked in", what, flush=True)
    try:
        os.read(fd, 100)
        print(what, "returned", flush=True)
    except KeyboardInterrupt:
        print(what, "interrupted", flush=True)
os.write(c, b"still usable\n")
os.close(c)
print("server read", os.read(s, 100).decode().strip(), flush=True)
`
		p := startPy(t, m, script, strconv.Itoa(sink.Port), strconv.Itoa(port))
		for _, what := range []string{"client read", "server accept"} {
			p.waitOutput(t, 10*time.Second, "blocked in "+what)
			blockedInFUSE(t, p.cmd.Process.Pid)
			syscall.Kill(p.cmd.Process.Pid, syscall.SIGINT)
			p.waitOutput(t, 3*time.Second, what+" interrupted")
		}
		equal(t, "sink got", sink.next(t, 5*time.Second)["data"], any("still usable\n"))
		mustOK(t, "socat", socatClient(t, fmt.Sprintf("TCP:127.0.0.1:%d", port), "late client\n"))
		p.waitOutput(t, 5*time.Second, "server read late client")
		equal(t, "python exit", p.wait(t, 10*time.Second).Code, 0)
		waitNotListening(t, "tcp", port)
	})

	// A process of a concurrent server interrupted while its open waits
	// for a client: the open gives up, and the next client goes to the
	// next open, not lost.
	t.Run("concurrent accept", func(t *testing.T) {
		port := freePort(t)
		const script = `
import os, sys, signal
path = sys.argv[1] + "/tcp/" + sys.argv[2]
srv = os.open(path, os.O_RDONLY)
pid = os.fork()
if pid == 0:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.open(path, os.O_RDWR)
    os._exit(3)
print("child", pid, flush=True)
_, status = os.waitpid(pid, 0)
print("status", status, flush=True)
fd = os.open(path, os.O_RDWR)
os.write(fd, b"accepted by the opener\n")
os.close(fd)
`
		p := startPy(t, m, script, strconv.Itoa(port))
		p.waitOutput(t, 10*time.Second, "child ")
		var child int
		fmt.Sscanf(strings.TrimPrefix(p.out.String(), "child "), "%d", &child)
		blockedInFUSE(t, child)
		t0 := time.Now()
		syscall.Kill(child, syscall.SIGINT)
		p.waitOutput(t, 3*time.Second, "status ")
		t.Logf("child returned %v after SIGINT", time.Since(t0).Round(time.Millisecond))
		contains(t, "child status", p.out.String(), fmt.Sprintf("status %d\n", int(syscall.SIGINT)))
		r := mustOK(t, "socat", socatClient(t, fmt.Sprintf("TCP:127.0.0.1:%d", port), ""))
		equal(t, "client read", r.Stdout, "accepted by the opener\n")
		equal(t, "server exit", p.wait(t, 10*time.Second).Code, 0)
		waitNotListening(t, "tcp", port)
	})
	m.waitLive(t, 0)
}
