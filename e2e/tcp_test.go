package e2e

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// socatClient runs socat as a TCP client of a server under the mount,
// sending input (then half-closing) and returning what it read.
func socatClient(t *testing.T, addr, input string) Result {
	t.Helper()
	return run(t, 15*time.Second, input, "socat", "-t5", "-T10", "-", addr)
}

// TestTCPSimpleServer: open of "port" binds and listens; the first read
// (cat) or write (echo) accepts one client; EOF when the client closes;
// close unbinds.
func TestTCPSimpleServer(t *testing.T) {
	t.Parallel()
	m := mount(t)

	t.Run("read", func(t *testing.T) {
		port := freePort(t)
		srv := startBash(t, m, `exec cat "$M/tcp/$1"`, strconv.Itoa(port))
		waitListening(t, "tcp", port, srv)
		equal(t, "bound addresses", strings.Join(boundAddrs("tcp", port), ","), "00000000000000000000000000000000") // [::], dual stack
		mustOK(t, "socat", socatClient(t, fmt.Sprintf("TCP:127.0.0.1:%d", port), "hello\nworld\n"))
		r := srv.wait(t, 10*time.Second)
		equal(t, "cat exit", r.Code, 0)
		equal(t, "cat read", r.Stdout, "hello\nworld\n")
		waitNotListening(t, "tcp", port)
	})

	t.Run("write", func(t *testing.T) {
		port := freePort(t)
		srv := startBash(t, m, `echo srv-hello > "$M/tcp/$1"`, strconv.Itoa(port))
		waitListening(t, "tcp", port, srv)
		r := mustOK(t, "socat", run(t, 15*time.Second, "", "socat", "-u", fmt.Sprintf("TCP:127.0.0.1:%d", port), "-"))
		equal(t, "client read", r.Stdout, "srv-hello\n")
		equal(t, "echo exit", srv.wait(t, 10*time.Second).Code, 0)
		waitNotListening(t, "tcp", port)
	})

	t.Run("read-write", func(t *testing.T) {
		port := freePort(t)
		srv := startBash(t, m, `exec 3<> "$M/tcp/$1"; read -r line <&3; echo "got $line" >&3`, strconv.Itoa(port))
		waitListening(t, "tcp", port, srv)
		r := mustOK(t, "socat", socatClient(t, fmt.Sprintf("TCP:127.0.0.1:%d", port), "ping\n"))
		equal(t, "client read", r.Stdout, "got ping\n")
		equal(t, "server exit", srv.wait(t, 10*time.Second).Code, 0)
		waitNotListening(t, "tcp", port)
	})

	// addr:port:: binds one address only.
	for _, c := range []struct{ label, name, hexAddr, dial string }{
		{"addr:port::", "127.0.0.1:%d::", "0100007F", "TCP:127.0.0.1:%d"},
		{"host:port:: (localhost)", "localhost:%d::", "0100007F", "TCP:127.0.0.1:%d"},
		{"[::1]:port::", "[::1]:%d::", "00000000000000000000000001000000", "TCP6:[::1]:%d"},
	} {
		t.Run(c.label, func(t *testing.T) {
			port := freePort(t)
			srv := startBash(t, m, `exec cat "$M/tcp/$1"`, fmt.Sprintf(c.name, port))
			waitListening(t, "tcp", port, srv)
			equal(t, "bound addresses", strings.Join(boundAddrs("tcp", port), ","), c.hexAddr)
			mustOK(t, "socat", socatClient(t, fmt.Sprintf(c.dial, port), "hi "+c.label+"\n"))
			equal(t, "server read", srv.wait(t, 10*time.Second).Stdout, "hi "+c.label+"\n")
			waitNotListening(t, "tcp", port)
		})
	}
	m.waitLive(t, 0)
}

// TestTCPExplicit: with "!", the first read of a server returns the
// client's "HOST PORT\n" (numeric, IPv6 without brackets).
func TestTCPExplicit(t *testing.T) {
	t.Parallel()
	m := mount(t)
	for _, c := range []struct{ label, name, dial, host string }{
		{"port!", "%d!", "TCP4:127.0.0.1:%d", "127.0.0.1"},
		{"port! over IPv6", "%d!", "TCP6:[::1]:%d", "::1"},
		{"addr:port::!", "127.0.0.1:%d::!", "TCP4:127.0.0.1:%d", "127.0.0.1"},
		{"[::1]:port::!", "[::1]:%d::!", "TCP6:[::1]:%d", "::1"},
	} {
		t.Run(c.label, func(t *testing.T) {
			port, src := freePort(t), freePort(t)
			srv := startBash(t, m, `exec cat "$M/tcp/$1"`, fmt.Sprintf(c.name, port))
			waitListening(t, "tcp", port, srv)
			mustOK(t, "socat", socatClient(t, fmt.Sprintf(c.dial+",sourceport=%d", port, src), "payload\n"))
			r := srv.wait(t, 10*time.Second)
			equal(t, "server read", r.Stdout, fmt.Sprintf("%s %d\npayload\n", c.host, src))
		})
	}
	// The header may be read in pieces; data follows it.
	t.Run("header in 4-byte reads", func(t *testing.T) {
		port, src := freePort(t), freePort(t)
		hdr := fmt.Sprintf("127.0.0.1 %d\n", src) + "payload\n"
		reads := len(hdr) / 4 // past the header, whatever the port's digits
		srv := startBash(t, m, `{ for i in $(seq $2); do dd bs=4 count=1 status=none; echo "|"; done; cat; } < "$M/tcp/$1!"`,
			strconv.Itoa(port), strconv.Itoa(reads))
		waitListening(t, "tcp", port, srv)
		mustOK(t, "socat", socatClient(t, fmt.Sprintf("TCP4:127.0.0.1:%d,sourceport=%d", port, src), "payload\n"))
		var want strings.Builder
		for i := 0; i < reads; i++ {
			want.WriteString(hdr[4*i:4*i+4] + "|\n")
		}
		want.WriteString(hdr[4*reads:])
		equal(t, "server read", srv.wait(t, 10*time.Second).Stdout, want.String())
	})
	// Writes are not affected, and a read after the header is data.
	t.Run("header then data, write plain", func(t *testing.T) {
		port, src := freePort(t), freePort(t)
		srv := startBash(t, m, `exec 3<> "$M/tcp/$1!"; read -r host port <&3; read -r line <&3; echo "$host/$port/$line" >&3`, strconv.Itoa(port))
		waitListening(t, "tcp", port, srv)
		r := mustOK(t, "socat", socatClient(t, fmt.Sprintf("TCP4:127.0.0.1:%d,sourceport=%d", port, src), "data\n"))
		equal(t, "client read", r.Stdout, fmt.Sprintf("127.0.0.1/%d/data\n", src))
		equal(t, "server exit", srv.wait(t, 10*time.Second).Code, 0)
	})
	m.waitLive(t, 0)
}

// TestTCPConcurrentServer: while the server file is open, opening it again
// from the opener or from processes it forked accepts the next client
// (seed 000 §2.3); with "!" each accepted connection starts with the
// client's address.
func TestTCPConcurrentServer(t *testing.T) {
	t.Parallel()
	m := mount(t)
	const script = `
import os, sys
path = sys.argv[1] + "/tcp/" + sys.argv[2]
srv = os.open(path, os.O_RDONLY)      # bind and listen
print("bound", flush=True)

def serve(who):
    fd = os.open(path, os.O_RDWR)     # accept the next client
    os.write(fd, ("hello from %s\n" % who).encode())
    data = b""
    while True:
        b = os.read(fd, 4096)
        if not b:
            break
        data += b
    os.close(fd)
    os.write(1, ("%s got %s\n" % (who, data.decode().strip().replace("\n", "|"))).encode())

kids = []
for i in range(3):
    pid = os.fork()
    if pid == 0:
        try:
            serve("child%d" % i)
        finally:
            os._exit(0)
    kids.append(pid)
serve("opener")
for pid in kids:
    os.waitpid(pid, 0)
os.close(srv)
`
	for _, explicit := range []bool{false, true} {
		t.Run(fmt.Sprintf("explicit=%v", explicit), func(t *testing.T) {
			port := freePort(t)
			name := strconv.Itoa(port)
			if explicit {
				name += "!"
			}
			srv := startPy(t, m, script, name)
			srv.waitOutput(t, 10*time.Second, "bound")
			waitListening(t, "tcp", port, srv)
			results := make(chan Result, 4)
			srcs := map[int]bool{}
			for i := 0; i < 4; i++ {
				src := freePort(t)
				srcs[src] = true
				go func(i int) {
					results <- socatClient(t, fmt.Sprintf("TCP4:127.0.0.1:%d,sourceport=%d", port, src), fmt.Sprintf("client%d\n", i))
				}(i)
			}
			var greetings []string
			for i := 0; i < 4; i++ {
				r := <-results
				if r.Code != 0 {
					t.Errorf("client: %s", r)
				}
				lines := strings.Split(strings.TrimSuffix(r.Stdout, "\n"), "\n")
				greetings = append(greetings, lines...)
			}
			sort.Strings(greetings)
			equal(t, "greetings", strings.Join(greetings, "|"), "hello from child0|hello from child1|hello from child2|hello from opener")
			r := srv.wait(t, 15*time.Second)
			equal(t, "server exit", r.Code, 0)
			got := strings.Split(strings.TrimSpace(r.Stdout), "\n")[1:]
			sort.Strings(got)
			if len(got) != 4 {
				t.Fatalf("server output %q", r.Stdout)
			}
			for _, line := range got {
				if explicit {
					// The server's first read on an explicit handle is the
					// client's address; the client's data follows.
					var who string
					var src int
					if _, err := fmt.Sscanf(line, "%s got 127.0.0.1 %d|client", &who, &src); err != nil || !srcs[src] {
						t.Errorf("server line %q: want \"WHO got 127.0.0.1 SRCPORT|clientN\" with SRCPORT one of %v", line, srcs)
					}
				} else if !strings.Contains(line, " got client") {
					t.Errorf("server line %q: want a client message", line)
				}
			}
			waitNotListening(t, "tcp", port)
		})
	}
	m.waitLive(t, 0)
}

// Test200Connections: 200 TCP connections open at once through the mount
// (python threads), then 200 parallel shell clients.
func Test200Connections(t *testing.T) {
	t.Parallel()
	m := mount(t)
	echo := tcpServer(t, "127.0.0.1", freePort(t), "echo")
	const script = `
import os, sys, threading
path = sys.argv[1] + "/tcp/127.0.0.1:" + sys.argv[2]
N = 200
held = threading.Barrier(N + 1, timeout=60)
release = threading.Event()
errs = []
def worker(i):
    fd = None
    try:
        fd = os.open(path, os.O_RDWR)
        msg = b"conn %d\n" % i
        os.write(fd, msg)
        got = b""
        while len(got) < len(msg):
            b = os.read(fd, 100)
            if not b:
                break
            got += b
        if got != msg:
            errs.append("conn %d read %r" % (i, got))
    except OSError as e:
        errs.append("conn %d: %s" % (i, e))
    held.wait()
    release.wait(60)
    if fd is not None:
        os.close(fd)
ts = [threading.Thread(target=worker, args=(i,)) for i in range(N)]
for th in ts:
    th.start()
held.wait()
print("open %d errors %d" % (N, len(errs)), flush=True)
for e in errs[:10]:
    print(e, flush=True)
sys.stdin.readline()
release.set()
for th in ts:
    th.join()
print("done", flush=True)
`
	p := start(t, 90*time.Second, "", nil, python, "-c", script, m.Dir, strconv.Itoa(echo.Port))
	p.waitOutput(t, 60*time.Second, "open 200 ")
	contains(t, "python", p.out.String(), "errors 0")
	if live := m.Stats(t)["live"]; live != 200 {
		t.Errorf("live endpoints with 200 connections open = %d, want 200", live)
	}
	r := mustOK(t, "ls tcp", bash(t, m, 5*time.Second, `ls "$M/tcp"`))
	equal(t, "ls tcp/ (one row per name)", r.Stdout, fmt.Sprintf("127.0.0.1:%d\n", echo.Port))
	p.stdin.Write([]byte("\n"))
	r = p.wait(t, 30*time.Second)
	equal(t, "python exit", r.Code, 0)
	seen := map[string]bool{}
	for i := 0; i < 200; i++ {
		e := echo.next(t, 10*time.Second)
		seen[e["data"].(string)] = true
	}
	equal(t, "distinct connections seen by the server", len(seen), 200)
	m.waitLive(t, 0)

	// 200 parallel shell clients.
	sink := tcpServer(t, "127.0.0.1", freePort(t), "sink")
	mustOK(t, "200 parallel echo", bash(t, m, 60*time.Second, `
for i in $(seq 200); do
  (echo "bash $i" > "$M/tcp/127.0.0.1:$1") &
done
fail=0
for job in $(jobs -p); do wait $job || fail=1; done
exit $fail`, strconv.Itoa(sink.Port)))
	seen = map[string]bool{}
	for i := 0; i < 200; i++ {
		e := sink.next(t, 10*time.Second)
		seen[e["data"].(string)] = true
	}
	equal(t, "distinct shell clients seen by the server", len(seen), 200)
	m.waitLive(t, 0)
}

// TestServerReopenAfterClose: a process that closes a server name and
// opens it again (a simple server serving one client after another) gets
// a fresh server every time, however quickly it reopens. FUSE sends the
// release of the old handle asynchronously, after close(2) returns.
func TestServerReopenAfterClose(t *testing.T) {
	t.Parallel()
	m := mount(t)
	const script = `
import os, sys, errno
m, proto, port, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
fails = {}
for i in range(n):
    try:
        fd = os.open(m + "/" + proto + "/" + port, os.O_RDONLY)
        os.close(fd)
    except OSError as e:
        k = errno.errorcode[e.errno]
        fails[k] = fails.get(k, 0) + 1
print(sorted(fails.items()))
`
	for _, proto := range []string{"tcp", "udp"} {
		t.Run(proto, func(t *testing.T) {
			r := mustOK(t, "python", py(t, m, 30*time.Second, script, proto, strconv.Itoa(freePort(t)), "300"))
			if strings.TrimSpace(r.Stdout) != "[]" {
				t.Errorf("300 × open+close of %s/PORT in one process: failures %s, want none", proto, strings.TrimSpace(r.Stdout))
			}
		})
	}
	// The same with clients: one bash process serves three clients in a row.
	t.Run("bash serving clients in a row", func(t *testing.T) {
		port := freePort(t)
		srv := startBash(t, m, `
for i in 1 2 3 4 5 6 7 8 9 10; do
  exec 3<> "$M/tcp/$1" || exit 1
  read -r line <&3 && echo "served $line" >&3
  exec 3<&-
done`, strconv.Itoa(port))
		for i := 1; i <= 10; i++ {
			var r Result
			waitFor(5*time.Second, func() bool {
				r = socatClient(t, fmt.Sprintf("TCP:127.0.0.1:%d", port), fmt.Sprintf("client%d\n", i))
				return r.Code == 0
			})
			if r.Stdout != fmt.Sprintf("served client%d\n", i) {
				t.Fatalf("client %d: %s\nserver: %q %q", i, r, srv.out.String(), srv.errb.String())
			}
		}
		equal(t, "server exit", srv.wait(t, 10*time.Second).Code, 0)
	})
	m.waitLive(t, 0)
}

// TestConcurrentServerOrphanedChild: a process the opener forked while
// holding the server file may reopen it even after the opener exited (its
// parent is then init, but it still holds the file it inherited).
func TestConcurrentServerOrphanedChild(t *testing.T) {
	t.Parallel()
	m := mount(t)
	port := freePort(t)
	status := m.Dir + ".orphan"
	t.Cleanup(func() { run(t, 5*time.Second, "", "rm", "-f", status) })
	p := startBash(t, m, `
exec 3< "$M/tcp/$1"
( sleep 0.5; echo "hello from the orphan" 1<> "$M/tcp/$1"; echo "orphan's open: exit $?" ) >"$2" 2>&1 &
exit 0`, strconv.Itoa(port), status)
	waitListening(t, "tcp", port, p)
	equal(t, "opener exit", p.wait(t, 5*time.Second).Code, 0)
	// The client waits in the listen backlog until the orphan's open
	// accepts it, whichever comes first.
	r := socatClient(t, fmt.Sprintf("TCP:127.0.0.1:%d", port), "")
	if r.Stdout != "hello from the orphan\n" {
		t.Errorf("client of the orphaned child: want its greeting, got %s\norphan: %q", r, readFile(status))
	}
}
