package e2e

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// clientForm is a client name of seed 000, Table 3, and the address the
// server should see the connection come from.
type clientForm struct {
	label    string
	name     func(remotePort int) string
	peerHost string
	peerPort int // 0: any
}

// clientForms returns the client name forms for a server on host:port
// (host "127.0.0.1" or "::1"), each with fresh fixed local ports.
func clientForms(t *testing.T, v6 bool) []clientForm {
	// The colon-free spelling ('+' for ':', inside brackets too) of each
	// form means the same.
	if v6 {
		l1, l2, l3, l4 := freePort(t), freePort(t), freePort(t), freePort(t)
		return []clientForm{
			{"[addr]:port", func(p int) string { return fmt.Sprintf("[::1]:%d", p) }, "::1", 0},
			{"lport:[addr]:port", func(p int) string { return fmt.Sprintf("%d:[::1]:%d", l1, p) }, "::1", l1},
			{"[laddr]:lport:[addr]:port", func(p int) string { return fmt.Sprintf("[::1]:%d:[::1]:%d", l2, p) }, "::1", l2},
			{"[addr]+port", func(p int) string { return fmt.Sprintf("[++1]+%d", p) }, "::1", 0},
			{"lport+[addr]+port", func(p int) string { return fmt.Sprintf("%d+[++1]+%d", l3, p) }, "::1", l3},
			{"[laddr]+lport+[addr]+port", func(p int) string { return fmt.Sprintf("[++1]+%d+[++1]+%d", l4, p) }, "::1", l4},
		}
	}
	l1, l2, l3, l4, l5 := freePort(t), freePort(t), freePort(t), freePort(t), freePort(t)
	return []clientForm{
		{"addr:port", func(p int) string { return fmt.Sprintf("127.0.0.1:%d", p) }, "127.0.0.1", 0},
		{"host:port (localhost)", func(p int) string { return fmt.Sprintf("localhost:%d", p) }, "127.0.0.1", 0},
		{"lport:addr:port", func(p int) string { return fmt.Sprintf("%d:127.0.0.1:%d", l1, p) }, "127.0.0.1", l1},
		{"laddr:lport:addr:port", func(p int) string { return fmt.Sprintf("127.0.0.2:%d:127.0.0.1:%d", l2, p) }, "127.0.0.2", l2},
		{"lhost:lport:host:port (localhost)", func(p int) string { return fmt.Sprintf("localhost:%d:localhost:%d", l3, p) }, "127.0.0.1", l3},
		{"addr+port", func(p int) string { return fmt.Sprintf("127.0.0.1+%d", p) }, "127.0.0.1", 0},
		{"host+port (localhost)", func(p int) string { return fmt.Sprintf("localhost+%d", p) }, "127.0.0.1", 0},
		{"lport+addr+port", func(p int) string { return fmt.Sprintf("%d+127.0.0.1+%d", l4, p) }, "127.0.0.1", l4},
		{"laddr+lport+addr+port", func(p int) string { return fmt.Sprintf("127.0.0.2+%d+127.0.0.1+%d", l5, p) }, "127.0.0.2", l5},
	}
}

func checkPeer(t *testing.T, what, host string, port int, f clientForm) {
	t.Helper()
	if host != f.peerHost || (f.peerPort != 0 && port != f.peerPort) {
		want := f.peerHost + " " + strconv.Itoa(f.peerPort)
		if f.peerPort == 0 {
			want = f.peerHost + " (any port)"
		}
		t.Errorf("%s: server saw the client as %s %d, want %s", what, host, port, want)
	}
}

// TestTCPClientForms: every client form of Table 3 (numeric, symbolic,
// fixed local port, fixed local address and port; IPv4 and IPv6) connects,
// from the right local address, reading with cat and writing with echo.
func TestTCPClientForms(t *testing.T) {
	t.Parallel()
	m := mount(t)
	for _, v6 := range []bool{false, true} {
		host := "127.0.0.1"
		if v6 {
			host = "::1"
		}
		greet := tcpServer(t, host, freePort(t), "greet")
		sink := tcpServer(t, host, freePort(t), "sink")
		for _, f := range clientForms(t, v6) {
			t.Run(f.label, func(t *testing.T) {
				// Read: the greet server sends the address it sees.
				name := "tcp/" + f.name(greet.Port)
				r := mustOK(t, "cat "+name, bash(t, m, 10*time.Second, `cat "$M/$1"`, name))
				fs := strings.Fields(r.Stdout)
				if len(fs) != 2 || !strings.HasSuffix(r.Stdout, "\n") {
					t.Fatalf("cat %s = %q, want \"HOST PORT\\n\"", name, r.Stdout)
				}
				port, _ := strconv.Atoi(fs[1])
				checkPeer(t, "cat "+name, fs[0], port, f)
				if e := greet.next(t, 5*time.Second); e["data"] != "" {
					t.Errorf("greet server got %q from cat, want nothing", e["data"])
				}

				// Write: echo (O_WRONLY|O_CREAT|O_TRUNC) sends a line.
				name = "tcp/" + f.name(sink.Port)
				msg := "hello via " + f.label
				mustOK(t, "echo > "+name, bash(t, m, 10*time.Second, `echo "$2" > "$M/$1"`, name, msg))
				e := sink.next(t, 5*time.Second)
				equal(t, "data received from echo > "+name, e["data"], any(msg+"\n"))
				h, p := peerOf(e)
				checkPeer(t, "echo > "+name, h, p, f)
			})
		}
	}
	m.waitLive(t, 0)
}

// TestUDPClientForms: the same forms under udp/: a datagram goes out from
// the right local address and the reply comes back.
func TestUDPClientForms(t *testing.T) {
	t.Parallel()
	m := mount(t)
	const script = `
import os, sys
fd = os.open(sys.argv[1] + "/" + sys.argv[2], os.O_RDWR)
os.write(fd, sys.argv[3].encode())
sys.stdout.write(os.read(fd, 65536).decode())
os.close(fd)
`
	for _, v6 := range []bool{false, true} {
		host := "127.0.0.1"
		if v6 {
			host = "::1"
		}
		peer := udpPeer(t, host, 0, true)
		for _, f := range clientForms(t, v6) {
			t.Run(f.label, func(t *testing.T) {
				name := "udp/" + f.name(peer.Port)
				msg := "ping via " + f.label
				r := mustOK(t, "query "+name, py(t, m, 10*time.Second, script, name, msg))
				equal(t, "reply read from "+name, r.Stdout, "echo:"+msg)
				e := peer.next(t, 5*time.Second)
				equal(t, "datagram", e["data"], any(msg))
				h, p := peerOf(e)
				checkPeer(t, name, h, p, f)
			})
		}
	}
	m.waitLive(t, 0)
}

// TestOpenModes: stream files exist on demand and open in any mode:
// without O_CREAT (python os.open, "cat < file", dd), O_RDWR, and with
// O_CREAT|O_TRUNC or O_APPEND from shell redirections.
func TestOpenModes(t *testing.T) {
	t.Parallel()
	m := mount(t)
	greet := tcpServer(t, "127.0.0.1", freePort(t), "greet")
	sink := tcpServer(t, "127.0.0.1", freePort(t), "sink")
	gname := fmt.Sprintf("tcp/127.0.0.1:%d", greet.Port)
	sname := fmt.Sprintf("tcp/127.0.0.1:%d", sink.Port)
	readers := []struct{ label, script string }{
		{"cat < file", `cat < "$M/$1"`},
		{"cat file", `cat "$M/$1"`},
		{"head -n1", `head -n1 "$M/$1"`},
		{"dd if=", `dd if="$M/$1" bs=64k status=none`},
		{"exec 3<>", `exec 3<> "$M/$1"; cat <&3`},
		{"python O_RDONLY", `exec /usr/bin/python3 -c 'import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); sys.stdout.write(os.read(fd, 100).decode())' "$M/$1"`},
	}
	for _, rd := range readers {
		r := mustOK(t, rd.label, bash(t, m, 10*time.Second, rd.script, gname))
		if !strings.HasPrefix(r.Stdout, "127.0.0.1 ") {
			t.Errorf("%s read %q, want \"127.0.0.1 PORT\\n\"", rd.label, r.Stdout)
		}
		greet.next(t, 5*time.Second)
	}
	writers := []struct{ label, script string }{
		{"echo >", `echo "$2" > "$M/$1"`},
		{"echo >>", `echo "$2" >> "$M/$1"`},
		{"dd of=", `echo "$2" | dd of="$M/$1" status=none`},
		{"dd of= conv=notrunc oflag=append", `echo "$2" | dd of="$M/$1" conv=notrunc oflag=append status=none`},
		{"exec 3>", `exec 3> "$M/$1"; echo "$2" >&3`},
		{"python O_WRONLY", `exec /usr/bin/python3 -c 'import os,sys; fd=os.open(sys.argv[1], os.O_WRONLY); os.write(fd, (sys.argv[2]+"\n").encode())' "$M/$1" "$2"`},
		{"python O_WRONLY|O_CREAT|O_EXCL-free O_TRUNC", `exec /usr/bin/python3 -c 'import os,sys; fd=os.open(sys.argv[1], os.O_WRONLY|os.O_CREAT|os.O_TRUNC, 0o600); os.write(fd, (sys.argv[2]+"\n").encode())' "$M/$1" "$2"`},
	}
	for _, w := range writers {
		mustOK(t, w.label, bash(t, m, 10*time.Second, w.script, sname, "via "+w.label))
		e := sink.next(t, 5*time.Second)
		equal(t, w.label+": data", e["data"], any("via "+w.label+"\n"))
	}
	// What a stream file looks like.
	r := mustOK(t, "stat", bash(t, m, 5*time.Second, `stat -c '%F %a' "$M/$1"`, sname))
	equal(t, "stat of a stream name", strings.TrimSpace(r.Stdout), "regular empty file 666")
	m.waitLive(t, 0)
}

// TestLookupLeavesNoClutter: ls and stat of a name neither connect, nor
// bind, nor leave an entry behind.
func TestLookupLeavesNoClutter(t *testing.T) {
	t.Parallel()
	m := mount(t)
	sink := tcpServer(t, "127.0.0.1", freePort(t), "sink")
	srvPort := freePort(t)
	names := []string{
		fmt.Sprintf("tcp/127.0.0.1:%d", sink.Port),
		fmt.Sprintf("tcp/%d", srvPort),
		fmt.Sprintf("tcp/%d!", srvPort),
		fmt.Sprintf("udp/127.0.0.1:%d", sink.Port),
		fmt.Sprintf("udp/%d", srvPort),
		"tcp/nosuchhost.invalid:80",
	}
	for _, n := range names {
		r := mustOK(t, "ls -l "+n, bash(t, m, 5*time.Second, `ls -l "$M/$1" && stat "$M/$1" >/dev/null && test -e "$M/$1"`, n))
		if !strings.HasPrefix(r.Stdout, "-rw-rw-rw-") {
			t.Errorf("ls -l %s = %q, want a -rw-rw-rw- file", n, r.Stdout)
		}
	}
	for _, dir := range []string{"tcp", "udp"} {
		r := mustOK(t, "ls "+dir, bash(t, m, 5*time.Second, `ls -A "$M/$1"`, dir))
		equal(t, "ls "+dir+" after lookups", r.Stdout, "")
	}
	if listening("tcp", srvPort) || listening("udp", srvPort) {
		t.Errorf("ls of a server name bound port %d", srvPort)
	}
	sink.none(t, 300*time.Millisecond)
	equal(t, "live endpoints after lookups", m.Stats(t)["live"], 0)
}

// TestListing: ls -l tcp/ and udp/ show the live connections and
// listeners, and forget them when they close.
func TestListing(t *testing.T) {
	t.Parallel()
	m := mount(t)
	sink := tcpServer(t, "127.0.0.1", freePort(t), "sink")
	peer := udpPeer(t, "127.0.0.1", 0, false)
	lport, uport := freePort(t), freePort(t)
	client := fmt.Sprintf("127.0.0.1:%d", sink.Port)
	uclient := fmt.Sprintf("127.0.0.1:%d", peer.Port)
	holder := startBash(t, m, `
exec 3<> "$M/tcp/$1" 4< "$M/tcp/$2" 5<> "$M/udp/$3" 6< "$M/udp/$4" || exit 1
echo ready
sleep 60`, client, strconv.Itoa(lport), uclient, strconv.Itoa(uport))
	holder.waitOutput(t, 10*time.Second, "ready")

	r := mustOK(t, "ls -l tcp", bash(t, m, 5*time.Second, `ls -l "$M/tcp"`))
	for _, n := range []string{client, strconv.Itoa(lport)} {
		found := false
		for _, line := range strings.Split(r.Stdout, "\n") {
			if strings.HasSuffix(line, " "+n) && strings.HasPrefix(line, "-rw-rw-rw-") {
				found = true
			}
		}
		if !found {
			t.Errorf("ls -l tcp/ does not show %s:\n%s", n, r.Stdout)
		}
	}
	r = mustOK(t, "ls udp", bash(t, m, 5*time.Second, `ls "$M/udp"`))
	equal(t, "ls udp/", r.Stdout, strings.Join(sortedStrings(uclient, strconv.Itoa(uport)), "\n")+"\n")
	equal(t, "live endpoints", m.Stats(t)["live"], 4)

	holder.kill()
	if !waitFor(5*time.Second, func() bool {
		r := bash(t, m, 5*time.Second, `ls -A "$M/tcp"; ls -A "$M/udp"`)
		return r.Code == 0 && r.Stdout == ""
	}) {
		t.Errorf("listing still shows endpoints after they closed: %s", bash(t, m, 5*time.Second, `ls -l "$M/tcp" "$M/udp"`))
	}
	m.waitLive(t, 0)
}

func sortedStrings(s ...string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

// pickService returns a service name from /etc/services for proto whose
// port is free here (servers bind it through the mount).
func pickService(t *testing.T, proto string, candidates ...string) (string, int) {
	t.Helper()
	for _, s := range candidates {
		port, err := net.LookupPort(proto, s)
		if err != nil {
			continue
		}
		var ok bool
		if proto == "tcp" {
			ok = bindable(port)
		} else if c, err := net.ListenPacket("udp", ":"+strconv.Itoa(port)); err == nil {
			c.Close()
			ok = true
		}
		if ok {
			return s, port
		}
	}
	t.Skipf("no free %s port among the services %v", proto, candidates)
	return "", 0
}

// TestServiceNames: ports may be /etc/services names, for servers
// (tcp/http binds port 80) and clients (tcp/localhost:http).
func TestServiceNames(t *testing.T) {
	t.Parallel()
	m := mount(t)
	t.Run("tcp", func(t *testing.T) {
		svc, port := pickService(t, "tcp", "http", "gopher", "finger")
		srv := startBash(t, m, `cat "$M/tcp/$1"`, svc)
		waitListening(t, "tcp", port, srv)
		mustOK(t, "echo > tcp/localhost:"+svc, bash(t, m, 10*time.Second, `echo "hello $1" > "$M/tcp/localhost:$1"`, svc))
		r := srv.wait(t, 10*time.Second)
		equal(t, "server tcp/"+svc+" read", r.Stdout, "hello "+svc+"\n")
		waitNotListening(t, "tcp", port)

		// addr:service:: and a client with a numeric port to it.
		srv = startBash(t, m, `cat "$M/tcp/127.0.0.1:$1::"`, svc)
		waitListening(t, "tcp", port, srv)
		mustOK(t, "client", bash(t, m, 10*time.Second, `echo hi > "$M/tcp/127.0.0.1:$1"`, strconv.Itoa(port)))
		equal(t, "server read", srv.wait(t, 10*time.Second).Stdout, "hi\n")
	})
	t.Run("udp", func(t *testing.T) {
		svc, port := pickService(t, "udp", "tftp", "daytime", "ntp", "syslog")
		srv := startBash(t, m, `dd if="$M/udp/$1" bs=65536 count=1 status=none`, svc)
		waitListening(t, "udp", port, srv)
		mustOK(t, "echo > udp/localhost:"+svc, bash(t, m, 10*time.Second, `echo "hello $1" > "$M/udp/localhost:$1"`, svc))
		r := srv.wait(t, 10*time.Second)
		equal(t, "server udp/"+svc+" read", r.Stdout, "hello "+svc+"\n")
	})
	m.waitLive(t, 0)
}
