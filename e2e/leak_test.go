package e2e

import (
	"strconv"
	"testing"
	"time"
)

// waitBaseline waits until the daemon's goroutines and fds are back within
// a small tolerance of base and nothing is live.
func waitBaseline(t *testing.T, m *Mount, base map[string]int, what string) {
	t.Helper()
	const tolG, tolFD = 4, 3
	var cur map[string]int
	ok := waitFor(8*time.Second, func() bool {
		cur = m.Stats(t)
		return cur["goroutines"] <= base["goroutines"]+tolG && cur["fds"] <= base["fds"]+tolFD && cur["live"] == 0
	})
	t.Logf("%s: baseline %v, now %v", what, base, cur)
	if !ok {
		t.Errorf("%s: daemon did not return to baseline (goroutines ≤ %d, fds ≤ %d, live 0): %v",
			what, base["goroutines"]+tolG, base["fds"]+tolFD, cur)
	}
}

// TestNoLeaks: after 1000 sequential TCP connections (a client opening
// through the mount, a server accepting through the mount) and 500 UDP
// exchanges and server binds, the daemon's goroutines and descriptors
// return to their baseline.
func TestNoLeaks(t *testing.T) {
	t.Parallel()
	m := mount(t)
	port, uport := freePort(t), freePort(t)
	peer := udpPeer(t, "127.0.0.1", 0, true)

	// Warm up once so lazily created daemon state is in the baseline.
	const warm = `
import os, sys
m, port = sys.argv[1], sys.argv[2]
srv = os.open(m + "/tcp/" + port, os.O_RDONLY)
c = os.open(m + "/tcp/127.0.0.1:" + port, os.O_RDWR)
a = os.open(m + "/tcp/" + port, os.O_RDWR)
os.close(c); os.close(a); os.close(srv)
`
	mustOK(t, "warm-up", py(t, m, 20*time.Second, warm, strconv.Itoa(port)))
	waitFor(3*time.Second, func() bool { return m.Stats(t)["live"] == 0 })
	time.Sleep(200 * time.Millisecond)
	base := m.Stats(t)

	const tcpScript = `
import os, sys
m, port, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
srv = os.open(m + "/tcp/" + port, os.O_RDONLY)         # bind
for i in range(n):
    c = os.open(m + "/tcp/127.0.0.1:" + port, os.O_RDWR) # connect
    a = os.open(m + "/tcp/" + port, os.O_RDWR)           # accept
    os.write(c, b"x")
    assert os.read(a, 1) == b"x"
    os.write(a, b"y")
    assert os.read(c, 1) == b"y"
    os.close(c)
    assert os.read(a, 1) == b""                          # EOF
    os.close(a)
os.close(srv)
print("done", n)
`
	r := mustOK(t, "1000 connections", py(t, m, 90*time.Second, tcpScript, strconv.Itoa(port), "1000"))
	equal(t, "python", r.Stdout, "done 1000\n")
	waitBaseline(t, m, base, "after 1000 TCP connections")

	const udpScript = `
import os, sys, time, errno
m, peer, port, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
for i in range(n):
    c = os.open(m + "/udp/127.0.0.1:" + peer, os.O_RDWR)
    os.write(c, b"noreply")
    os.close(c)
    # Workaround for the release race (see TestServerReopenAfterClose):
    # a reopen right after close may still find the old server.
    for attempt in range(200):
        try:
            s = os.open(m + "/udp/" + port, os.O_RDONLY)
            break
        except OSError as e:
            if e.errno != errno.EDESTADDRREQ:
                raise
            time.sleep(0.005)
    os.close(s)
print("done", n)
`
	r = mustOK(t, "500 udp", py(t, m, 60*time.Second, udpScript, strconv.Itoa(peer.Port), strconv.Itoa(uport), "500"))
	equal(t, "python", r.Stdout, "done 500\n")
	waitBaseline(t, m, base, "after 500 UDP clients and servers")
	// Drain the peer's log.
	for i := 0; i < 500; i++ {
		peer.next(t, 5*time.Second)
	}

	// Interrupted and refused opens leak nothing either.
	free := freePort(t)
	r = bash(t, m, 30*time.Second, `
for i in $(seq 100); do cat "$M/tcp/127.0.0.1:$1" 2>/dev/null; done
for i in $(seq 50); do timeout -s INT 0.05 cat "$M/tcp/$2"; done
true`, strconv.Itoa(free), strconv.Itoa(freePort(t)))
	mustOK(t, "refused and interrupted opens", r)
	waitBaseline(t, m, base, "after refused and interrupted opens")
}
