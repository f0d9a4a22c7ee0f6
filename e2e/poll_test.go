package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Programs that multiplex see /net files through the mount as they see
// sockets: poll, select, epoll (also edge-triggered) and O_NONBLOCK.

// pollCase runs one case of testdata/poll.py against the mount.
func pollCase(t *testing.T, m *Mount, name string, ports ...int) {
	t.Helper()
	args := []string{filepath.Join(testdata, "poll.py"), m.Dir, name}
	for _, p := range ports {
		args = append(args, strconv.Itoa(p))
	}
	r := mustOK(t, name, run(t, 60*time.Second, "", python, args...))
	t.Log(strings.TrimSpace(r.Stdout))
}

func TestPoll(t *testing.T) {
	t.Parallel()
	m := mount(t)
	echo1 := tcpServer(t, "127.0.0.1", freePort(t), "echo")
	echo2 := tcpServer(t, "127.0.0.1", freePort(t), "echo")
	for _, c := range []string{"selectors", "nonblock", "epollet", "asyncio"} {
		t.Run(c, func(t *testing.T) { pollCase(t, m, c, echo1.Port, echo2.Port) })
	}
	t.Run("server", func(t *testing.T) { pollCase(t, m, "server", freePort(t)) })
	t.Run("hangup", func(t *testing.T) {
		pollCase(t, m, "hangup", tcpServer(t, "127.0.0.1", freePort(t), "greet").Port)
	})
	t.Run("udp", func(t *testing.T) { pollCase(t, m, "udp", udpPeer(t, "127.0.0.1", 0, true).Port) })
	m.waitLive(t, 0)
}

// TestPollGoDeadline: Go's runtime puts the files it opens in its
// edge-triggered epoll when they poll; a read deadline on a /net file
// then works as on a socket, and reads after it wake on data.
func TestPollGoDeadline(t *testing.T) {
	t.Parallel()
	m := mount(t)
	echo := tcpServer(t, "127.0.0.1", freePort(t), "echo")
	f, err := os.OpenFile(m.P(fmt.Sprintf("tcp/127.0.0.1:%d", echo.Port)), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := f.Read(make([]byte, 10)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read of an idle connection with a deadline: %v, want a deadline error", err)
	}
	f.SetReadDeadline(time.Time{})
	for i := 0; i < 20; i++ {
		msg := fmt.Sprintf("go %d\n", i)
		if _, err := f.WriteString(msg); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, len(msg))
		if _, err := readFull(f, buf); err != nil || string(buf) != msg {
			t.Fatalf("echo %d: %q, %v", i, buf, err)
		}
	}
}

func readFull(f *os.File, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		k, err := f.Read(b[n:])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// TestPollSocat: socat multiplexes its two addresses with select. Through
// the mount, it relays a timed exchange both ways — each line must come
// back before the next is sent (before poll, socat hung after the first):
// as a client (stdio ↔ /net file) and as a relay (TCP listener ↔ /net
// file).
func TestPollSocat(t *testing.T) {
	t.Parallel()
	m := mount(t)
	echo := tcpServer(t, "127.0.0.1", freePort(t), "echo")
	exchange := `
for i in $(seq 1 20); do
	echo "line $i" >&${C[1]}
	read -r -t 10 reply <&${C[0]} || { echo "no reply to line $i"; exit 1; }
	[ "$reply" = "line $i" ] || { echo "line $i came back as '$reply'"; exit 1; }
done
echo exchanged 20`
	t.Run("client", func(t *testing.T) {
		r := mustOK(t, "socat client", bash(t, m, 60*time.Second,
			`coproc C { exec socat - GOPEN:"$M/tcp/127.0.0.1+$1"; }`+exchange, strconv.Itoa(echo.Port)))
		t.Log(strings.TrimSpace(r.Stdout))
	})
	t.Run("relay", func(t *testing.T) {
		port := freePort(t)
		relay := start(t, 60*time.Second, "", nil, "socat",
			"TCP-LISTEN:"+strconv.Itoa(port)+",bind=127.0.0.1,reuseaddr",
			"GOPEN:"+m.P("tcp/127.0.0.1+"+strconv.Itoa(echo.Port)))
		defer relay.kill()
		if !waitFor(10*time.Second, func() bool { return listening("tcp", port) }) {
			t.Fatal("socat never listened")
		}
		r := mustOK(t, "socat relay", bash(t, m, 60*time.Second,
			`coproc C { exec socat - TCP:127.0.0.1:$1; }`+exchange, strconv.Itoa(port)))
		t.Log(strings.TrimSpace(r.Stdout))
	})
	m.waitLive(t, 0)
}

// TestPollBashRead: bash's `read -t 0` asks select whether a line waits.
// (bash ignores other timeouts on anything fstat calls a regular file,
// which a FUSE file always is; under wirefs run the program has the
// socket itself, and `read -t 0.3` times out as on any socket.)
func TestPollBashRead(t *testing.T) {
	t.Parallel()
	m := mount(t)
	echo := tcpServer(t, "127.0.0.1", freePort(t), "echo")
	script := `
exec 5<>"$N/tcp/127.0.0.1:$1"
if read -t 0 -u 5; then echo "idle connection said ready"; exit 1; fi
echo hi >&5
until read -t 0 -u 5; do :; done
read -r -u 5 line; [ "$line" = hi ] || { echo "got '$line'"; exit 1; }
echo ok`
	r := mustOK(t, "read -t 0 through the mount", bash(t, m, 30*time.Second, "N=$M"+script, strconv.Itoa(echo.Port)))
	t.Log(strings.TrimSpace(r.Stdout))
	needCatch(t)
	r = mustOK(t, "read -t under run", catchRun(t, t.TempDir(), `N=/net`+script+`
exec 6<>/net/tcp/127.0.0.1:$1
read -t 0.3 -u 6; [ $? -gt 128 ] || { echo "read -t 0.3 did not time out"; exit 1; }
echo timed out`, strconv.Itoa(echo.Port)))
	t.Log(strings.TrimSpace(r.Stdout))
}
