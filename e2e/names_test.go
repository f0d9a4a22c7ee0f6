package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// socatExchange runs argv (socat - ADDRESS, perhaps under wirefs run)
// with "hello\n" already waiting on its standard input, which stays open
// until socat exits, so socat ends only at the network side's EOF. It
// returns what socat printed.
func socatExchange(t *testing.T, argv ...string) Result {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.WriteString("hello\n")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := command(ctx, argv[0], argv[1:]...)
	var so, se bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r, &so, &se
	err = cmd.Run()
	r.Close()
	res := Result{Stdout: so.String(), Stderr: se.String(), Err: err, Code: -1}
	if cmd.ProcessState != nil && ctx.Err() == nil {
		res.Code = cmd.ProcessState.ExitCode()
	}
	return res
}

// sendOnce connects to 127.0.0.1:port as soon as server listens there,
// sends msg and closes.
func sendOnce(t *testing.T, port int, msg, server string) {
	t.Helper()
	var c net.Conn
	if !waitFor(10*time.Second, func() bool {
		var err error
		c, err = net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
		return err == nil
	}) {
		t.Fatalf("%s never listened on port %d", server, port)
	}
	defer c.Close()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatalf("sending to %s: %v", server, err)
	}
}

// TestColonFreeNamesSocat: socat, which splits its addresses on ':',
// opens the colon-free names ('+' for ':') through the mount with no
// symlink: a client both ways over IPv4 and IPv6, a client from a fixed
// source port, UDP, and a server on one address.
func TestColonFreeNamesSocat(t *testing.T) {
	m := mount(t)
	for _, host := range []string{"127.0.0.1", "::1"} {
		greet := tcpServer(t, host, freePort(t), "greet")
		spelled := host
		if host == "::1" {
			spelled = "[++1]"
		}
		name := fmt.Sprintf("tcp/%s+%d", spelled, greet.Port)
		r := socatExchange(t, "socat", "-", "GOPEN:"+m.P(name))
		fs := strings.Fields(r.Stdout)
		if r.Code != 0 || len(fs) != 2 || fs[0] != host {
			t.Errorf("socat - GOPEN:%s: %s; want the greeting \"%s PORT\"", name, r, host)
		}
		e := greet.next(t, 10*time.Second)
		equal(t, "what the server got from socat through "+name, e["data"], any("hello\n"))
	}

	// A fixed source port: lport+addr+port.
	greet := tcpServer(t, "127.0.0.1", freePort(t), "greet")
	lport := freePort(t)
	name := fmt.Sprintf("tcp/%d+127.0.0.1+%d", lport, greet.Port)
	r := mustOK(t, "socat -u GOPEN:"+name, run(t, 10*time.Second, "", "socat", "-u", "GOPEN:"+m.P(name), "-"))
	equal(t, "the greeting through "+name, r.Stdout, fmt.Sprintf("127.0.0.1 %d\n", lport))
	greet.next(t, 10*time.Second)

	// UDP: one write, one datagram.
	peer := udpPeer(t, "127.0.0.1", 0, false)
	name = fmt.Sprintf("udp/127.0.0.1+%d", peer.Port)
	mustOK(t, "socat to "+name, run(t, 10*time.Second, "datagram\n", "socat", "-u", "-", "GOPEN:"+m.P(name)))
	equal(t, "datagram through "+name, peer.next(t, 10*time.Second)["data"], any("datagram\n"))

	// A server on the loopback address only: addr+port++.
	port := freePort(t)
	name = fmt.Sprintf("tcp/127.0.0.1+%d++", port)
	srv := start(t, 20*time.Second, "", nil, "socat", "-u", "GOPEN:"+m.P(name), "-")
	sendOnce(t, port, "to the server\n", "socat -u GOPEN:"+name)
	r = srv.wait(t, 10*time.Second)
	equal(t, "what socat served on "+name+" printed", r.Stdout, "to the server\n")
	m.waitLive(t, 0)
}

// TestColonFreeNamesSocatUnderRun: the same spelling under wirefs run,
// where socat gets the socket itself: an exchange both ways, and a server.
func TestColonFreeNamesSocatUnderRun(t *testing.T) {
	needCatch(t)
	run1 := []string{wirefsBin, "run", "--cache-dir", t.TempDir(), "--"}
	greet := tcpServer(t, "::1", freePort(t), "greet")
	name := fmt.Sprintf("/net/tcp/[++1]+%d", greet.Port)
	r := socatExchange(t, append(run1, "socat", "-", "GOPEN:"+name)...)
	if fs := strings.Fields(r.Stdout); r.Code != 0 || len(fs) != 2 || fs[0] != "::1" {
		t.Errorf("wirefs run -- socat - GOPEN:%s: %s; want the greeting \"::1 PORT\"", name, r)
	}
	equal(t, "what the server got from socat under run", greet.next(t, 10*time.Second)["data"], any("hello\n"))

	port := freePort(t)
	name = fmt.Sprintf("/net/tcp/127.0.0.1+%d++", port)
	srv := start(t, 20*time.Second, "", nil, wirefsBin, append(run1[1:], "socat", "-u", "GOPEN:"+name, "-")...)
	sendOnce(t, port, "to the server\n", "wirefs run -- socat -u GOPEN:"+name)
	r = srv.wait(t, 10*time.Second)
	equal(t, "what socat served under run printed", r.Stdout, "to the server\n")
}
