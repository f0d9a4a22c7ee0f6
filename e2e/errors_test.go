package e2e

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// expectFail runs a bash script that must fail, printing the strerror
// text msg for the file name as the last line of its stderr (cat: "cat:
// PATH: MSG"; bash redirections: "bash: line N: PATH: MSG").
func expectFail(t *testing.T, m *Mount, label, script, name, msg string, args ...string) {
	t.Helper()
	r := bash(t, m, 15*time.Second, script, append([]string{name}, args...)...)
	if r.Code <= 0 {
		t.Errorf("%s: want a failure, got %s", label, r)
		return
	}
	lines := strings.Split(strings.TrimRight(r.Stderr, "\n"), "\n")
	last := lines[len(lines)-1]
	if !strings.HasSuffix(last, ": "+msg) || !strings.Contains(last, name) {
		t.Errorf("%s: stderr %q, want a line naming %s and ending in %q", label, r.Stderr, name, ": "+msg)
	}
}

// TestErrors: each failure reaches programs as the right errno, so cat
// and bash print the usual messages.
func TestErrors(t *testing.T) {
	t.Parallel()
	m := mount(t)
	free := freePort(t)

	t.Run("connection refused", func(t *testing.T) {
		for _, n := range []string{
			fmt.Sprintf("tcp/127.0.0.1:%d", free),
			fmt.Sprintf("tcp/localhost:%d", free),
			fmt.Sprintf("tcp/[::1]:%d", free),
			fmt.Sprintf("tcp/%d:127.0.0.1:%d", freePort(t), free),
		} {
			expectFail(t, m, "cat "+n, `cat "$M/$1"`, n, "Connection refused")
			expectFail(t, m, "echo > "+n, `echo hi > "$M/$1"`, n, "Connection refused")
		}
		// UDP reports a refusal (ICMP port unreachable) on the read after a write.
		n := fmt.Sprintf("udp/127.0.0.1:%d", free)
		r := bash(t, m, 10*time.Second, `exec 3<> "$M/$1"; echo hi >&3; sleep 0.2; cat <&3`, n)
		if r.Code == 0 || !strings.HasSuffix(r.Stderr, ": Connection refused\n") {
			t.Errorf("UDP read after a write to a closed port: want Connection refused, got %s", r)
		}
	})

	t.Run("unknown host", func(t *testing.T) {
		for _, n := range []string{
			"tcp/nosuchhost.invalid:80",
			"udp/nosuchhost.invalid:53",
			"tcp/nosuchhost.invalid:80::",
			fmt.Sprintf("tcp/nosuchhost.invalid:%d:127.0.0.1:%d", freePort(t), free),
		} {
			expectFail(t, m, "cat "+n, `cat "$M/$1"`, n, "No such file or directory")
		}
		expectFail(t, m, "echo > unknown host", `echo hi > "$M/$1"`, "tcp/nosuchhost.invalid:http", "No such file or directory")
	})

	t.Run("malformed name", func(t *testing.T) {
		for _, n := range []string{
			"tcp/1:2:3:4:5",
			"tcp/70000",
			"tcp/0",
			"tcp/127.0.0.1:0",
			"tcp/[::1",
			"tcp/::1:80",
			"tcp/127.0.0.1:80!",
			"tcp/no-such-service-xyz",
			"udp/localhost:no-such-service-xyz",
			"tcp/a b:80",
			"udp/[127.0.0.1]:80",
			"tcp/:80",
		} {
			expectFail(t, m, "cat "+n, `cat "$M/$1"`, n, "Invalid argument")
		}
		expectFail(t, m, "echo > malformed", `echo hi > "$M/$1"`, "tcp/1:2:3:4:5", "Invalid argument")
		expectFail(t, m, "ls malformed", `ls "$M/$1"`, "tcp/1:2:3:4:5", "Invalid argument")
	})

	t.Run("address in use", func(t *testing.T) {
		port := freePort(t)
		l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		u, err := net.ListenPacket("udp", ":"+strconv.Itoa(port))
		if err != nil {
			t.Fatal(err)
		}
		defer u.Close()
		for _, n := range []string{
			fmt.Sprintf("tcp/%d", port),
			fmt.Sprintf("tcp/%d!", port),
			fmt.Sprintf("tcp/127.0.0.1:%d::", port),
			fmt.Sprintf("udp/%d", port),
			fmt.Sprintf("udp/127.0.0.1:%d::!", port),
		} {
			expectFail(t, m, "cat "+n, `cat "$M/$1"`, n, "Address already in use")
		}
		// A port bound through the mount under another spelling.
		port2 := freePort(t)
		holder := startBash(t, m, `exec 3< "$M/tcp/$1"; echo ready; sleep 60`, strconv.Itoa(port2))
		holder.waitOutput(t, 10*time.Second, "ready")
		n := fmt.Sprintf("tcp/127.0.0.1:%d::", port2)
		expectFail(t, m, "cat "+n, `cat "$M/$1"`, n, "Address already in use")
		holder.kill()
	})

	t.Run("foreign reopen", func(t *testing.T) {
		for _, proto := range []string{"tcp", "udp"} {
			port := freePort(t)
			name := fmt.Sprintf("%s/%d", proto, port)
			holder := startBash(t, m, `exec 3< "$M/$1"; echo ready; sleep 60`, name)
			holder.waitOutput(t, 10*time.Second, "ready")
			// Neither the test's own children nor a new session descend
			// from the opener.
			expectFail(t, m, "cat "+name, `cat "$M/$1"`, name, "Permission denied")
			expectFail(t, m, "setsid cat "+name, `setsid -w cat "$M/$1"`, name, "Permission denied")
			expectFail(t, m, "echo > "+name, `echo hi > "$M/$1"`, name, "Permission denied")
			holder.kill()
			waitNotListening(t, proto, port)
		}
		// A child forked before the open is not admitted either.
		port := freePort(t)
		name := fmt.Sprintf("tcp/%d", port)
		r := bash(t, m, 15*time.Second, `
(sleep 1; cat "$M/$1") &
sleep 0.3
exec 3< "$M/$1"
wait $!`, name)
		if r.Code == 0 || !strings.HasSuffix(strings.TrimSpace(r.Stderr), ": Permission denied") {
			t.Errorf("reopen by a child forked before the open: want Permission denied, got %s", r)
		}
	})

	t.Run("udp without a peer", func(t *testing.T) {
		port := freePort(t)
		name := fmt.Sprintf("udp/%d", port)
		// Writing on a simple server before any datagram: no peer.
		r := bash(t, m, 10*time.Second, `exec 3<> "$M/$1"; echo hi >&3`, name)
		if r.Code == 0 || !strings.HasSuffix(r.Stderr, "echo: write error: Destination address required\n") {
			t.Errorf("write before any datagram: want Destination address required, got %s", r)
		}
		// Reopening before any datagram: no peer to make a channel to.
		expectFail(t, m, "reopen before any datagram", `exec 3< "$M/$1"; cat "$M/$1"`, name, "Destination address required")
	})

	t.Run("udp channel read", func(t *testing.T) {
		a := udpPeer(t, "127.0.0.1", 0, false)
		port := freePort(t)
		name := fmt.Sprintf("udp/%d", port)
		srv := startBash(t, m, `
exec 3< "$M/$1"
echo bound
dd bs=65536 count=1 status=none <&3 >/dev/null
cat "$M/$1"`, name)
		srv.waitOutput(t, 10*time.Second, "bound")
		a.send(t, "127.0.0.1", port, "hi")
		r := srv.wait(t, 10*time.Second)
		if r.Code == 0 || !strings.HasSuffix(strings.TrimSpace(r.Stderr), name+": Bad file descriptor") {
			t.Errorf("cat of a reopened UDP server: want Bad file descriptor, got %s", r)
		}
	})

	t.Run("bad explicit header", func(t *testing.T) {
		port := freePort(t)
		name := fmt.Sprintf("udp/%d!", port)
		for _, hdr := range []string{"garbage", "127.0.0.1 80", "nosuchhost.invalid 80 2", "127.0.0.1 0 2", "127.0.0.1 80 70000"} {
			r := bash(t, m, 10*time.Second, `exec 3<> "$M/$1"; printf '%s\nxx' "$2" >&3`, name, hdr)
			if r.Code == 0 || !strings.HasSuffix(strings.TrimSpace(r.Stderr), "write error: Invalid argument") {
				t.Errorf("header %q: want write error: Invalid argument, got %s", hdr, r)
			}
		}
	})
	m.waitLive(t, 0)
}
