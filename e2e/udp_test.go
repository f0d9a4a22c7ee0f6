package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestUDPClient: each write is one datagram; a read returns one datagram
// only, and a short buffer leaves the rest of it for the next read.
func TestUDPClient(t *testing.T) {
	t.Parallel()
	m := mount(t)
	peer := udpPeer(t, "127.0.0.1", 0, true)
	name := fmt.Sprintf("udp/127.0.0.1:%d", peer.Port)

	t.Run("query-reply", func(t *testing.T) {
		const script = `
import os, sys, json
fd = os.open(sys.argv[1] + "/" + sys.argv[2], os.O_RDWR)
os.write(fd, b"ping")
print(json.dumps(os.read(fd, 65536).decode()))
`
		r := mustOK(t, "python", py(t, m, 10*time.Second, script, name))
		equal(t, "reply", strings.TrimSpace(r.Stdout), `"echo:ping"`)
		equal(t, "datagram", peer.next(t, 5*time.Second)["data"], any("ping"))
	})

	t.Run("one datagram per write and per read", func(t *testing.T) {
		const script = `
import os, sys, json, time
fd = os.open(sys.argv[1] + "/" + sys.argv[2], os.O_RDWR)
for d in (b"a", b"bb", b"ccc"):
    os.write(fd, d)
time.sleep(0.3)  # let all three replies queue up
print(json.dumps([os.read(fd, 65536).decode() for _ in range(3)]))
`
		r := mustOK(t, "python", py(t, m, 10*time.Second, script, name))
		equal(t, "three reads", strings.TrimSpace(r.Stdout), `["echo:a", "echo:bb", "echo:ccc"]`)
		for _, want := range []string{"a", "bb", "ccc"} {
			equal(t, "datagram", peer.next(t, 5*time.Second)["data"], any(want))
		}
	})

	t.Run("short buffer", func(t *testing.T) {
		const script = `
import os, sys, json, time
fd = os.open(sys.argv[1] + "/" + sys.argv[2], os.O_RDWR)
os.write(fd, b"0123456789")
os.write(fd, b"xy")
time.sleep(0.3)
out = [os.read(fd, 4).decode() for _ in range(4)]   # the first datagram, in pieces
out.append(os.read(fd, 100).decode())                # the second, not merged
print(json.dumps(out))
`
		r := mustOK(t, "python", py(t, m, 10*time.Second, script, name))
		equal(t, "reads of 4 bytes, then 100", strings.TrimSpace(r.Stdout), `["echo", ":012", "3456", "789", "echo:xy"]`)
		peer.next(t, 5*time.Second)
		peer.next(t, 5*time.Second)
	})

	t.Run("shell tools", func(t *testing.T) {
		// echo: one datagram; dd with a short block size reads part of one.
		mustOK(t, "echo", bash(t, m, 10*time.Second, `echo hello > "$M/$1"`, name))
		equal(t, "datagram from echo", peer.next(t, 5*time.Second)["data"], any("hello\n"))
		r := mustOK(t, "bash", bash(t, m, 10*time.Second, `
exec 3<> "$M/$1"
printf query >&3
dd bs=6 count=1 status=none <&3; echo
dd bs=100 count=1 status=none <&3; echo
printf second >&3
head -c 11 <&3; echo`, name))
		equal(t, "reads", r.Stdout, "echo:q\nuery\necho:second\n")
		peer.next(t, 5*time.Second)
		peer.next(t, 5*time.Second)
	})
	m.waitLive(t, 0)
}

// TestUDPServer: a simple UDP server reads datagrams and replies to the
// last sender; reopening the name (by the opener or its children) is a
// write-only channel to that sender; reads on it fail with EBADF.
func TestUDPServer(t *testing.T) {
	t.Parallel()
	m := mount(t)
	a := udpPeer(t, "127.0.0.1", 0, false)
	b := udpPeer(t, "127.0.0.1", 0, false)
	for _, form := range []string{"%d", "127.0.0.1:%d::", "localhost:%d::"} {
		t.Run(form, func(t *testing.T) {
			port := freePort(t)
			name := "udp/" + fmt.Sprintf(form, port)
			const script = `
import os, sys, errno
path = sys.argv[1] + "/" + sys.argv[2]
fd = os.open(path, os.O_RDWR)
print("bound", flush=True)
for round in range(2):
    d = os.read(fd, 65536)
    print("got", d.decode(), flush=True)
    os.write(fd, b"reply:" + d)            # to the last sender
    ch = os.open(path, os.O_WRONLY)        # reopen: channel to the last sender
    os.write(ch, b"channel:" + d)
    os.close(ch)
ro = os.open(path, os.O_RDONLY)
try:
    os.read(ro, 10)
    print("read on the channel succeeded", flush=True)
except OSError as e:
    print("channel read:", errno.errorcode[e.errno], flush=True)
# A forked child may reopen too.
pid = os.fork()
if pid == 0:
    ch = os.open(path, os.O_WRONLY)
    os.write(ch, b"from child")
    os._exit(0)
os.waitpid(pid, 0)
`
			srv := startPy(t, m, script, name)
			srv.waitOutput(t, 10*time.Second, "bound")
			waitListening(t, "udp", port, srv)
			a.send(t, "127.0.0.1", port, "hi-a")
			srv.waitOutput(t, 5*time.Second, "got hi-a")
			for _, want := range []string{"reply:hi-a", "channel:hi-a"} {
				e := a.next(t, 5*time.Second)
				equal(t, "a received", e["data"], any(want))
				_, p := peerOf(e)
				equal(t, "reply source port", p, port)
			}
			b.send(t, "127.0.0.1", port, "hi-b")
			for _, want := range []string{"reply:hi-b", "channel:hi-b", "from child"} {
				equal(t, "b received", b.next(t, 5*time.Second)["data"], any(want))
			}
			r := srv.wait(t, 10*time.Second)
			equal(t, "server exit", r.Code, 0)
			contains(t, "server output", r.Stdout, "channel read: EBADF")
			a.none(t, 100*time.Millisecond)
			waitNotListening(t, "udp", port)
		})
	}
	t.Run("[::1]:port::", func(t *testing.T) {
		port := freePort(t)
		c := udpPeer(t, "::1", 0, false)
		srv := startBash(t, m, `exec 3<> "$M/udp/[::1]:$1::"; echo bound; dd bs=65536 count=1 status=none <&3 | tr a-z A-Z >&3`, strconv.Itoa(port))
		srv.waitOutput(t, 10*time.Second, "bound")
		equal(t, "bound addresses", strings.Join(boundAddrs("udp", port), ","), "00000000000000000000000001000000")
		c.send(t, "::1", port, "shout")
		equal(t, "reply", c.next(t, 5*time.Second)["data"], any("SHOUT"))
		equal(t, "server exit", srv.wait(t, 10*time.Second).Code, 0)
	})
	m.waitLive(t, 0)
}

// TestUDPExplicit: on a "!" server every read is "HOST PORT LENGTH\n" and
// the datagram; every write carries its destination the same way (also
// split over writes, or several in one write).
func TestUDPExplicit(t *testing.T) {
	t.Parallel()
	m := mount(t)

	t.Run("with an outside peer", func(t *testing.T) {
		a := udpPeer(t, "127.0.0.1", 0, false)
		port := freePort(t)
		const script = `
import os, sys, json
fd = os.open(sys.argv[1] + "/udp/" + sys.argv[2] + "!", os.O_RDWR)
print("bound", flush=True)
rec = os.read(fd, 65536)
print(json.dumps(rec.decode()), flush=True)
peer = sys.argv[3]
os.write(fd, ("127.0.0.1 %s 5\nhello" % peer).encode())
os.write(fd, ("127.0.0.1 %s 3\none127.0.0.1 %s 3\ntwo" % (peer, peer)).encode())  # two in one write
os.write(fd, ("127.0.0.1 %s 10\nsplit" % peer).encode())                           # one over two writes
os.write(fd, b" over")
# A short read leaves the rest of the record for the next read.
parts = [os.read(fd, 8).decode() for _ in range(3)]
print(json.dumps(parts), flush=True)
`
		srv := startPy(t, m, script, strconv.Itoa(port), strconv.Itoa(a.Port))
		srv.waitOutput(t, 10*time.Second, "bound")
		a.send(t, "127.0.0.1", port, "hi")
		srv.waitOutput(t, 5*time.Second, fmt.Sprintf(`"127.0.0.1 %d 2\nhi"`, a.Port))
		for _, want := range []string{"hello", "one", "two", "split over"} {
			e := a.next(t, 5*time.Second)
			equal(t, "peer received", e["data"], any(want))
			_, p := peerOf(e)
			equal(t, "source port", p, port)
		}
		a.send(t, "127.0.0.1", port, "abcdefgh")
		hdr := fmt.Sprintf("127.0.0.1 %d 8\n", a.Port) // 20 bytes + 8
		rec := hdr + "abcdefgh"
		want := fmt.Sprintf(`[%q, %q, %q]`, rec[:8], rec[8:16], rec[16:24])
		srv.waitOutput(t, 5*time.Second, want)
		equal(t, "server exit", srv.wait(t, 10*time.Second).Code, 0)
	})

	t.Run("IPv6 [::1]:port::!", func(t *testing.T) {
		a := udpPeer(t, "::1", 0, false)
		port := freePort(t)
		srv := startBash(t, m, `
exec 3<> "$M/udp/[::1]:$1::!"
echo bound
dd bs=65536 count=1 status=none <&3; echo
printf '::1 %s 4\npong' "$2" >&3
printf '[::1] %s 5\npong2' "$2" >&3`, strconv.Itoa(port), strconv.Itoa(a.Port))
		srv.waitOutput(t, 10*time.Second, "bound")
		a.send(t, "::1", port, "ping")
		equal(t, "peer received", a.next(t, 5*time.Second)["data"], any("pong"))
		equal(t, "peer received", a.next(t, 5*time.Second)["data"], any("pong2"))
		r := srv.wait(t, 10*time.Second)
		equal(t, "server read", r.Stdout, fmt.Sprintf("bound\n::1 %d 4\nping\n", a.Port))
	})

	// Peer to peer: two processes under the mount, each a "!" server,
	// talk to each other through their own ports.
	t.Run("peer to peer", func(t *testing.T) {
		px, py := freePort(t), freePort(t)
		y := startBash(t, m, `
exec 3<> "$M/udp/$1!"
echo bound
dd bs=65536 count=1 status=none <&3; echo
printf '127.0.0.1 %s 3\nack' "$2" >&3`, strconv.Itoa(py), strconv.Itoa(px))
		y.waitOutput(t, 10*time.Second, "bound")
		x := startBash(t, m, `
exec 3<> "$M/udp/$1!"
printf '127.0.0.1 %s 5\nhello' "$2" >&3
dd bs=65536 count=1 status=none <&3; echo`, strconv.Itoa(px), strconv.Itoa(py))
		rx, ry := x.wait(t, 10*time.Second), y.wait(t, 10*time.Second)
		equal(t, "y read", ry.Stdout, fmt.Sprintf("bound\n127.0.0.1 %d 5\nhello\n", px))
		equal(t, "x read", rx.Stdout, fmt.Sprintf("127.0.0.1 %d 3\nack\n", py))
		equal(t, "x exit", rx.Code, 0)
		equal(t, "y exit", ry.Code, 0)
	})

	// Reopening a "!" server gives a plain write-only channel to the last
	// peer of the original handle (no header).
	t.Run("reopen", func(t *testing.T) {
		a := udpPeer(t, "127.0.0.1", 0, false)
		port := freePort(t)
		srv := startBash(t, m, `
exec 3<> "$M/udp/$1!"
echo bound
dd bs=65536 count=1 status=none <&3 >/dev/null
echo "plain reply" > "$M/udp/$1!"`, strconv.Itoa(port))
		srv.waitOutput(t, 10*time.Second, "bound")
		a.send(t, "127.0.0.1", port, "hi")
		equal(t, "peer received", a.next(t, 5*time.Second)["data"], any("plain reply\n"))
		equal(t, "server exit", srv.wait(t, 10*time.Second).Code, 0)
	})
	m.waitLive(t, 0)
}
