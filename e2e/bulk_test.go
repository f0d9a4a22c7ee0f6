package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBulkData: 16 MiB through the mount in each direction arrive intact
// (large writes are split by FUSE, never reordered or truncated), and a
// near-maximal UDP datagram stays one datagram.
func TestBulkData(t *testing.T) {
	t.Parallel()
	m := mount(t)
	src := m.Dir + ".data"
	t.Cleanup(func() { run(t, 5*time.Second, "", "rm", "-f", src) })
	r := mustOK(t, "make data", bash(t, nil, 20*time.Second, `head -c 16M /dev/urandom > "$1" && sha256sum < "$1"`, src))
	sum := strings.Fields(r.Stdout)[0]

	t.Run("into a server", func(t *testing.T) {
		port := freePort(t)
		srv := startBash(t, m, `cat "$M/tcp/$1" | sha256sum`, strconv.Itoa(port))
		waitListening(t, "tcp", port, srv)
		mustOK(t, "socat", run(t, 30*time.Second, "", "socat", "-u", "OPEN:"+src, fmt.Sprintf("TCP:127.0.0.1:%d", port)))
		r := srv.wait(t, 30*time.Second)
		equal(t, "sha256 of what the server read", strings.Fields(r.Stdout + " x")[0], sum)
	})
	t.Run("out of a server", func(t *testing.T) {
		port := freePort(t)
		srv := startBash(t, m, `dd if="$2" of="$M/tcp/$1" bs=1M status=none`, strconv.Itoa(port), src)
		waitListening(t, "tcp", port, srv)
		r := mustOK(t, "socat", run(t, 30*time.Second, "", "bash", "-c", `socat -u TCP:127.0.0.1:$1 - | sha256sum`, "bash", strconv.Itoa(port)))
		equal(t, "sha256 of what the client read", strings.Fields(r.Stdout + " x")[0], sum)
		equal(t, "dd exit", srv.wait(t, 30*time.Second).Code, 0)
	})
	t.Run("client round trip", func(t *testing.T) {
		echo := tcpServer(t, "127.0.0.1", freePort(t), "echo")
		// Write and read concurrently on one descriptor (FOPEN_STREAM: a
		// blocked read must not hold up the write).
		r := mustOK(t, "round trip", bash(t, m, 60*time.Second, `
exec 3<> "$M/tcp/127.0.0.1:$1"
head -c 4M "$2" >&3 &
head -c 4M <&3 | sha256sum
wait`, strconv.Itoa(echo.Port), src))
		want := strings.Fields(mustOK(t, "sha", bash(t, nil, 20*time.Second, `head -c 4M "$1" | sha256sum`, src)).Stdout)[0]
		equal(t, "sha256 of the echo", strings.Fields(r.Stdout + " x")[0], want)
	})
	t.Run("big udp datagram", func(t *testing.T) {
		peer := udpPeer(t, "127.0.0.1", 0, true)
		const script = `
import os, sys
fd = os.open(sys.argv[1] + "/udp/127.0.0.1:" + sys.argv[2], os.O_RDWR)
os.write(fd, b"z" * 60000)
r = os.read(fd, 1 << 20)
print(len(r), r[:5].decode())
`
		r := mustOK(t, "python", py(t, m, 10*time.Second, script, strconv.Itoa(peer.Port)))
		equal(t, "reply", r.Stdout, "60005 echo:\n")
		equal(t, "datagram length", len(peer.next(t, 5*time.Second)["data"].(string)), 60000)
	})
	m.waitLive(t, 0)
}

// TestDNS: dns/HOST reads the addresses of HOST; unknown names do not exist.
func TestDNS(t *testing.T) {
	t.Parallel()
	m := mount(t)
	r := mustOK(t, "cat dns/localhost", bash(t, m, 10*time.Second, `cat "$M/dns/localhost"`))
	contains(t, "dns/localhost", r.Stdout, "127.0.0.1\n")
	expectFail(t, m, "cat dns/nosuchhost.invalid", `cat "$M/$1"`, "dns/nosuchhost.invalid", "No such file or directory")
	r = mustOK(t, "ls dns", bash(t, m, 10*time.Second, `ls "$M/dns"`))
	contains(t, "ls dns/ (cached names)", r.Stdout, "localhost")
}
