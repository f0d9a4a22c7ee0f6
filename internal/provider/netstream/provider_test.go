package netstream

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"wirefs/internal/leakcheck"
	"wirefs/internal/ns"
	"wirefs/internal/resolve"
)

// env is a provider with a resolver that never leaves the process:
// "localhost.test" is 127.0.0.1 and ::1, everything else does not exist.
type env struct {
	t       *testing.T
	p       *Provider
	lookups atomic.Int64
	self    ns.Caller // this process, holding every handle opened as self

	mu   sync.Mutex
	held map[ns.Handle]bool
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, held: map[ns.Handle]bool{}}
	// The door answers Holds from /proc/PID/fd; in process, this test
	// "holds" whatever it opened as self and has not closed.
	e.self = ns.Caller{Pid: uint32(os.Getpid()), Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid()), Holds: e.holds}
	r := &resolve.Resolver{TTL: time.Minute, NegTTL: time.Minute, Timeout: 5 * time.Second,
		Lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
			e.lookups.Add(1)
			if host == "localhost.test" {
				return []netip.Addr{netip.MustParseAddr("::1"), netip.MustParseAddr("127.0.0.1")}, nil
			}
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}}
	e.p = New(r, 5*time.Second, slog.New(slog.DiscardHandler))
	t.Cleanup(func() {
		if n := e.p.Live(); n != 0 && !t.Failed() {
			t.Errorf("%d endpoints still live at the end of the test", n)
		}
	})
	return e
}

func (e *env) dir(proto string) ns.Dir {
	if proto == "udp" {
		return e.p.UDP()
	}
	return e.p.TCP()
}

func (e *env) holds(h ns.Handle) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.held[h]
}

// heldHandle is what a process holding a descriptor of the open file has:
// closing it is the last close (FUSE RELEASE), and it is held no more.
type heldHandle struct {
	ns.Handle
	e *env
}

func (h heldHandle) Close() error {
	h.e.mu.Lock()
	delete(h.e.held, h.Handle)
	h.e.mu.Unlock()
	return h.Handle.Close()
}

func (h heldHandle) Read(ctx context.Context, p []byte) (int, error) {
	return h.Handle.(ns.Reader).Read(ctx, p)
}

func (h heldHandle) Write(ctx context.Context, p []byte) (int, error) {
	return h.Handle.(ns.Writer).Write(ctx, p)
}

func (h heldHandle) KernelFile() (*os.File, error) {
	return h.Handle.(ns.KernelObject).KernelFile()
}

// openAs opens proto/name on behalf of c. Handles opened as e.self are
// held by e.self until closed.
func (e *env) openAs(ctx context.Context, c ns.Caller, proto, name string) (ns.Handle, error) {
	n, err := e.dir(proto).Lookup(ctx, name)
	if err != nil {
		return nil, err
	}
	h, err := n.(ns.Opener).Open(ctx, c, syscall.O_RDWR)
	if err != nil || c.Pid != e.self.Pid || c.Holds == nil {
		return h, err
	}
	e.mu.Lock()
	e.held[h] = true
	e.mu.Unlock()
	return heldHandle{h, e}, nil
}

func (e *env) open(proto, name string) (ns.Handle, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return e.openAs(ctx, e.self, proto, name)
}

func (e *env) mustOpen(proto, name string) ns.Handle {
	e.t.Helper()
	h, err := e.open(proto, name)
	if err != nil {
		e.t.Fatalf("open %s/%s: %v", proto, name, err)
	}
	e.t.Cleanup(func() { h.Close() })
	return h
}

func wantErrno(t *testing.T, what string, err error, want syscall.Errno) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want %v", what, want)
	}
	if got := ns.Errno(err); got != want {
		t.Fatalf("%s: %v (errno %v), want %v", what, err, got, want)
	}
}

func tctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func hread(t *testing.T, h ns.Handle, n int) string {
	t.Helper()
	buf := make([]byte, n)
	k, err := h.(ns.Reader).Read(tctx(t), buf)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return string(buf[:k])
}

// hreadFull reads exactly n bytes from a stream handle.
func hreadFull(t *testing.T, h ns.Handle, n int) string {
	t.Helper()
	var b []byte
	for len(b) < n {
		buf := make([]byte, n-len(b))
		k, err := h.(ns.Reader).Read(tctx(t), buf)
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		if k == 0 {
			t.Fatalf("EOF after %q, want %d bytes", b, n)
		}
		b = append(b, buf[:k]...)
	}
	return string(b)
}

func hwrite(t *testing.T, h ns.Handle, s string) {
	t.Helper()
	k, err := h.(ns.Writer).Write(tctx(t), []byte(s))
	if err != nil || k != len(s) {
		t.Fatalf("Write(%q) = %d, %v", s, k, err)
	}
}

func connReadFull(t *testing.T, c net.Conn, n int) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, n)
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatalf("peer read: %v", err)
	}
	return string(buf)
}

// freePort returns a port that was free on the wildcard address.
func freePort(t *testing.T, proto string) int {
	t.Helper()
	if proto == "udp" {
		c, err := net.ListenUDP("udp", &net.UDPAddr{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.LocalAddr().(*net.UDPAddr).Port
	}
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func listenTCP(t *testing.T, addr string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

func acceptOne(t *testing.T, ln net.Listener) net.Conn {
	t.Helper()
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(10 * time.Second))
	c, err := ln.Accept()
	if err != nil {
		t.Fatalf("accept: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func dial(t *testing.T, network, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout(network, addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s %s: %v", network, addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func portOf(a net.Addr) int { return int(addrPortOf(a).Port()) }

func names(ents []ns.DirEntry) string {
	var s []string
	for _, e := range ents {
		s = append(s, e.Name)
	}
	return strings.Join(s, " ")
}

func TestLookupMalformedIsEINVAL(t *testing.T) {
	e := newEnv(t)
	for _, proto := range []string{"tcp", "udp"} {
		for _, name := range []string{"", "0", "::1:80", "h:80!", "a:b:c:d:e"} {
			_, err := e.dir(proto).Lookup(context.Background(), name)
			wantErrno(t, proto+"/"+name, err, syscall.EINVAL)
		}
		n, err := e.dir(proto).Lookup(context.Background(), "127.0.0.1:80")
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := n.(ns.Volatile); !ok || !v.Volatile() {
			t.Fatalf("%s endpoint is not volatile", proto)
		}
		a, _ := n.Attr(context.Background())
		if a.Mode != 0o666 {
			t.Fatalf("fresh endpoint attr %+v", a)
		}
	}
	// Lookups leave nothing behind.
	if e.p.Live() != 0 {
		t.Fatalf("lookups created %d live endpoints", e.p.Live())
	}
	ents, _ := e.p.TCP().ReadDir(context.Background())
	if len(ents) != 0 {
		t.Fatalf("tcp/ lists %q after lookups only", names(ents))
	}
}

func TestTCPClient(t *testing.T) {
	for _, tc := range []struct{ listen, name string }{
		{"127.0.0.1:0", "127.0.0.1:%d"},
		{"[::1]:0", "[::1]:%d"},
		{"127.0.0.1:0", "localhost.test:%d"}, // symbolic: IPv4 first
		{"[::1]:0", "localhost.test:%d"},     // 127.0.0.1 refused: falls back to ::1
	} {
		t.Run(tc.listen+"/"+tc.name, func(t *testing.T) {
			e := newEnv(t)
			ln := listenTCP(t, tc.listen)
			name := fmt.Sprintf(tc.name, portOf(ln.Addr()))
			h := e.mustOpen("tcp", name)
			peer := acceptOne(t, ln)
			hwrite(t, h, "hello")
			if got := connReadFull(t, peer, 5); got != "hello" {
				t.Fatalf("peer got %q", got)
			}
			peer.Write([]byte("world"))
			if got := hreadFull(t, h, 5); got != "world" {
				t.Fatalf("read %q", got)
			}
			if e.p.Live() != 1 {
				t.Fatalf("Live() = %d, want 1", e.p.Live())
			}
			ents, _ := e.p.TCP().ReadDir(context.Background())
			if names(ents) != name {
				t.Fatalf("tcp/ lists %q, want %q", names(ents), name)
			}
			if ents[0].Attr.Uid != e.self.Uid {
				t.Fatalf("listing attr %+v", ents[0].Attr)
			}
			if ents, _ := e.p.UDP().ReadDir(context.Background()); len(ents) != 0 {
				t.Fatalf("udp/ lists %q", names(ents))
			}
			ko, ok := h.(heldHandle).Handle.(ns.KernelObject)
			if !ok {
				t.Fatal("TCP client handle is not a kernel object")
			}
			f, err := ko.KernelFile()
			if err != nil || f == nil {
				t.Fatalf("KernelFile: %v", err)
			}
			// The kernel file is the same socket.
			if _, err := f.Write([]byte("!")); err != nil {
				t.Fatal(err)
			}
			if got := connReadFull(t, peer, 1); got != "!" {
				t.Fatalf("peer got %q through the kernel file", got)
			}
			if err := h.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if e.p.Live() != 0 {
				t.Fatalf("Live() = %d after close", e.p.Live())
			}
			peer.SetReadDeadline(time.Now().Add(5 * time.Second))
			if n, err := peer.Read(make([]byte, 1)); n != 0 || err != io.EOF {
				t.Fatalf("peer after close: %d, %v; want EOF", n, err)
			}
		})
	}
}

func TestTCPClientPeerCloseIsEOF(t *testing.T) {
	e := newEnv(t)
	ln := listenTCP(t, "127.0.0.1:0")
	h := e.mustOpen("tcp", fmt.Sprintf("127.0.0.1:%d", portOf(ln.Addr())))
	peer := acceptOne(t, ln)
	peer.Write([]byte("bye"))
	peer.Close()
	if got := hreadFull(t, h, 3); got != "bye" {
		t.Fatalf("read %q", got)
	}
	if n, err := h.(ns.Reader).Read(tctx(t), make([]byte, 10)); n != 0 || err != nil {
		t.Fatalf("read at EOF = %d, %v; want 0, nil", n, err)
	}
}

func TestTCPClientFixedLocal(t *testing.T) {
	e := newEnv(t)
	ln := listenTCP(t, "127.0.0.1:0")
	port := portOf(ln.Addr())
	lport := freePort(t, "tcp")
	h := e.mustOpen("tcp", fmt.Sprintf("%d:127.0.0.1:%d", lport, port))
	peer := acceptOne(t, ln)
	if got := portOf(peer.RemoteAddr()); got != lport {
		t.Fatalf("client port %d, want %d", got, lport)
	}
	h.Close()

	lport = freePort(t, "tcp")
	h = e.mustOpen("tcp", fmt.Sprintf("127.0.0.1:%d:127.0.0.1:%d", lport, port))
	peer = acceptOne(t, ln)
	if got := peer.RemoteAddr().String(); got != fmt.Sprintf("127.0.0.1:%d", lport) {
		t.Fatalf("client address %s, want 127.0.0.1:%d", got, lport)
	}
	h.Close()

	ln6 := listenTCP(t, "[::1]:0")
	lport = freePort(t, "tcp")
	h = e.mustOpen("tcp", fmt.Sprintf("%d:[::1]:%d", lport, portOf(ln6.Addr())))
	peer = acceptOne(t, ln6)
	if got := peer.RemoteAddr().String(); got != fmt.Sprintf("[::1]:%d", lport) {
		t.Fatalf("client address %s, want [::1]:%d", got, lport)
	}
	h.Close()
}

func TestTCPConnRefused(t *testing.T) {
	e := newEnv(t)
	for _, f := range []string{"127.0.0.1:%d", "[::1]:%d", "localhost.test:%d"} {
		name := fmt.Sprintf(f, freePort(t, "tcp"))
		_, err := e.open("tcp", name)
		wantErrno(t, "tcp/"+name, err, syscall.ECONNREFUSED)
	}
}

func TestUnknownHostENOENT(t *testing.T) {
	e := newEnv(t)
	for _, proto := range []string{"tcp", "udp"} {
		for _, name := range []string{"nosuch.invalid:80", "NoSuch.Invalid.:80", "1234:nosuch.invalid:80", "nosuch.invalid:80::", "127.0.0.1:2000:nosuch.invalid:80"} {
			_, err := e.open(proto, name)
			wantErrno(t, proto+"/"+name, err, syscall.ENOENT)
		}
	}
	if n := e.lookups.Load(); n != 0 {
		t.Fatalf(".invalid names made %d lookups", n)
	}
	_, err := e.open("tcp", "missing.test:80")
	wantErrno(t, "tcp/missing.test:80", err, syscall.ENOENT)
	_, err = e.open("tcp", "127.0.0.1:2000:missing.test:80")
	wantErrno(t, "tcp/127.0.0.1:2000:missing.test:80", err, syscall.ENOENT)
	_, err = e.open("tcp", fmt.Sprintf("missing.test:%d:127.0.0.1:%d", freePort(t, "tcp"), freePort(t, "tcp")))
	wantErrno(t, "client from an unknown local host", err, syscall.ENOENT)
}

func TestTCPSimpleServer(t *testing.T) {
	e := newEnv(t)
	port := freePort(t, "tcp")
	name := strconv.Itoa(port)
	h, err := e.open("tcp", name)
	if err != nil {
		t.Fatal(err)
	}
	if e.p.Live() != 1 {
		t.Fatalf("Live() = %d after bind", e.p.Live())
	}
	ents, _ := e.p.TCP().ReadDir(context.Background())
	if names(ents) != name {
		t.Fatalf("tcp/ lists %q", names(ents))
	}
	// Opening binds and listens: a client can connect before any read.
	c := dial(t, "tcp", fmt.Sprintf("127.0.0.1:%d", port))
	c.Write([]byte("ping"))
	// The first read accepts.
	if got := hreadFull(t, h, 4); got != "ping" {
		t.Fatalf("server read %q", got)
	}
	hwrite(t, h, "pong")
	if got := connReadFull(t, c, 4); got != "pong" {
		t.Fatalf("client got %q", got)
	}
	// EOF when the client closes.
	c.Close()
	if n, err := h.(ns.Reader).Read(tctx(t), make([]byte, 4)); n != 0 || err != nil {
		t.Fatalf("server read after client close = %d, %v; want EOF", n, err)
	}
	// Close unbinds: the port can be bound again, by anyone.
	if err := h.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if e.p.Live() != 0 {
		t.Fatalf("Live() = %d after close", e.p.Live())
	}
	ln, err := net.Listen("tcp", fmt.Sprintf(":%d", port))
	if err != nil {
		t.Fatalf("rebind after Close: %v", err)
	}
	ln.Close()
	h2, err := e.open("tcp", name)
	if err != nil {
		t.Fatalf("reopen after Close: %v", err)
	}
	h2.Close()
}

func TestTCPSimpleServerFirstWriteAccepts(t *testing.T) {
	e := newEnv(t)
	port := freePort(t, "tcp")
	h := e.mustOpen("tcp", fmt.Sprintf("[::1]:%d::", port))
	done := make(chan net.Conn, 1)
	go func() {
		// Queued in the listen backlog until the write accepts it.
		c, err := net.Dial("tcp", fmt.Sprintf("[::1]:%d", port))
		if err != nil {
			done <- nil
			return
		}
		done <- c
	}()
	hwrite(t, h, "hi")
	c := <-done
	if c == nil {
		t.Fatal("dial failed")
	}
	defer c.Close()
	if got := connReadFull(t, c, 2); got != "hi" {
		t.Fatalf("client got %q", got)
	}
	// The server bound ::1 only.
	if _, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second); err == nil {
		t.Fatalf("server on [::1] accepted on 127.0.0.1")
	}
}

func TestTCPConcurrentServer(t *testing.T) {
	e := newEnv(t)
	port := freePort(t, "tcp")
	name := strconv.Itoa(port)
	h0 := e.mustOpen("tcp", name)
	addr := fmt.Sprintf("127.0.0.1:%d", port)

	var hs []ns.Handle
	var cs []net.Conn
	for i := 0; i < 3; i++ {
		c := dial(t, "tcp", addr)
		fmt.Fprintf(c, "client%d", i)
		h, err := e.open("tcp", name) // reopen by the same process: accept
		if err != nil {
			t.Fatalf("reopen %d: %v", i, err)
		}
		t.Cleanup(func() { h.Close() })
		if got := hreadFull(t, h, 7); got != fmt.Sprintf("client%d", i) {
			t.Fatalf("reopen %d got %q", i, got)
		}
		hs = append(hs, h)
		cs = append(cs, c)
	}
	if e.p.Live() != 4 {
		t.Fatalf("Live() = %d, want 4 (listener + 3 clients)", e.p.Live())
	}
	ents, _ := e.p.TCP().ReadDir(context.Background())
	if names(ents) != name {
		t.Fatalf("tcp/ lists %q, want one row %q", names(ents), name)
	}
	// The first handle is still a simple server of its own client.
	c := dial(t, "tcp", addr)
	c.Write([]byte("first"))
	if got := hreadFull(t, h0, 5); got != "first" {
		t.Fatalf("h0 read %q", got)
	}
	// Closing the bound handle unbinds, but accepted clients live on.
	h0.Close()
	for i, h := range hs {
		hwrite(t, h, "ok")
		if got := connReadFull(t, cs[i], 2); got != "ok" {
			t.Fatalf("client %d got %q after the listener closed", i, got)
		}
	}
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Fatal("listener still accepting after Close")
	}
	// The name is free: opening it binds afresh.
	h1, err := e.open("tcp", name)
	if err != nil {
		t.Fatalf("open after unbind: %v", err)
	}
	h1.Close()
	for _, h := range hs {
		h.Close()
	}
}

// startSleep starts another process and returns its pid.
func startSleep(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sleep", "5")
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start sleep: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process.Pid
}

// TestServerReopenByNonHolderEACCES: only processes holding the server
// file may open its name again; anyone else, after the grace period in
// which a just-closed server may still be releasing, gets EACCES.
func TestServerReopenByNonHolderEACCES(t *testing.T) {
	for _, proto := range []string{"tcp", "udp"} {
		t.Run(proto, func(t *testing.T) {
			e := newEnv(t)
			port := freePort(t, proto)
			name := strconv.Itoa(port)
			h := e.mustOpen(proto, name)
			if proto == "udp" {
				c := dial(t, "udp", fmt.Sprintf("127.0.0.1:%d", port))
				c.Write([]byte("x"))
				hread(t, h, 10)
			}
			other := startSleep(t)
			e2 := newEnv(t) // a handle of another provider: held, but not this server
			h2 := e2.mustOpen(proto, strconv.Itoa(freePort(t, proto)))
			callers := map[string]ns.Caller{
				"an unrelated process (door cannot tell)": {Pid: uint32(other)},
				"an unrelated process holding nothing":    {Pid: uint32(other), Holds: func(ns.Handle) bool { return false }},
				"this pid, but not holding the file":      {Pid: uint32(os.Getpid()), Holds: func(x ns.Handle) bool { return x == h2.(heldHandle).Handle }},
			}
			errs := make(chan error, len(callers))
			for what, c := range callers {
				go func() {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					defer cancel()
					start := time.Now()
					rh, err := e.openAs(ctx, c, proto, name)
					if err == nil {
						rh.Close()
						errs <- fmt.Errorf("reopen by %s succeeded", what)
						return
					}
					if ns.Errno(err) != syscall.EACCES {
						errs <- fmt.Errorf("reopen by %s: %v, want EACCES", what, err)
						return
					}
					if d := time.Since(start); d > 3*time.Second {
						errs <- fmt.Errorf("reopen by %s took %v to fail", what, d)
						return
					}
					errs <- nil
				}()
			}
			for range callers {
				if err := <-errs; err != nil {
					t.Error(err)
				}
			}
			// The server is untouched.
			if proto == "tcp" {
				c := dial(t, "tcp", fmt.Sprintf("127.0.0.1:%d", port))
				c.Write([]byte("still"))
				if got := hreadFull(t, h, 5); got != "still" {
					t.Fatalf("server read %q", got)
				}
			}
		})
	}
}

// TestNonHolderOpenWaitsForRelease: `exec 3<&-; exec 3< tcp/PORT` — the
// kernel releases the old server file after close(2) returns, so an open by
// a non-holder that finds the server still bound waits for it to go and
// binds anew.
func TestNonHolderOpenWaitsForRelease(t *testing.T) {
	for _, proto := range []string{"tcp", "udp"} {
		t.Run(proto, func(t *testing.T) {
			e := newEnv(t)
			port := freePort(t, proto)
			name := strconv.Itoa(port)
			h, err := e.open(proto, name)
			if err != nil {
				t.Fatal(err)
			}
			// A lag far longer than the test: the open returns when
			// the server goes, not when the lag ends. Whether it finds
			// the server still bound or already gone, it must succeed.
			stranger := ns.Caller{Pid: uint32(os.Getpid()), ReleaseLag: time.Hour}
			res := make(chan error, 1)
			var got ns.Handle
			go func() {
				var err error
				got, err = e.openAs(tctx(t), stranger, proto, name)
				res <- err
			}()
			h.Close()
			select {
			case err := <-res:
				if err != nil {
					t.Fatalf("open after the server closed: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("open never returned")
			}
			defer got.Close()
			// It is a new server of its own.
			if proto == "tcp" {
				c := dial(t, "tcp", fmt.Sprintf("127.0.0.1:%d", port))
				c.Write([]byte("new"))
				if s := hreadFull(t, got, 3); s != "new" {
					t.Fatalf("new server read %q", s)
				}
			} else {
				c := dial(t, "udp", fmt.Sprintf("127.0.0.1:%d", port))
				c.Write([]byte("new"))
				if s := hread(t, got, 10); s != "new" {
					t.Fatalf("new server read %q", s)
				}
			}
		})
	}
}

// TestServerReopenByHolder: a holder other than the opener (a child that
// inherited the descriptor) may reopen.
func TestServerReopenByHolder(t *testing.T) {
	e := newEnv(t)
	port := freePort(t, "tcp")
	name := strconv.Itoa(port)
	h := e.mustOpen("tcp", name)
	child := startSleep(t)
	inner := h.(heldHandle).Handle
	c := dial(t, "tcp", fmt.Sprintf("127.0.0.1:%d", port))
	c.Write([]byte("x"))
	caller := ns.Caller{Pid: uint32(child), Holds: func(x ns.Handle) bool { return x == inner }}
	rh, err := e.openAs(tctx(t), caller, "tcp", name)
	if err != nil {
		t.Fatalf("reopen by a holder: %v", err)
	}
	defer rh.Close()
	if got := hreadFull(t, rh, 1); got != "x" {
		t.Fatalf("read %q", got)
	}
}

func TestTCPExplicitServer(t *testing.T) {
	e := newEnv(t)
	port := freePort(t, "tcp")
	name := strconv.Itoa(port) + "!"
	h := e.mustOpen("tcp", name)
	c := dial(t, "tcp", fmt.Sprintf("127.0.0.1:%d", port))
	c.Write([]byte("data"))
	hdr := fmt.Sprintf("127.0.0.1 %d\n", portOf(c.LocalAddr()))
	// A short buffer gets the header in pieces, never mixed with data.
	var got string
	for len(got) < len(hdr) {
		got += hread(t, h, 4)
	}
	if got != hdr {
		t.Fatalf("header %q, want %q", got, hdr)
	}
	if got := hreadFull(t, h, 4); got != "data" {
		t.Fatalf("data %q", got)
	}

	// The concurrent server's reopen gets the header too, IPv6 unbracketed.
	c6 := dial(t, "tcp", fmt.Sprintf("[::1]:%d", port))
	c6.Write([]byte("six"))
	h6, err := e.open("tcp", name)
	if err != nil {
		t.Fatal(err)
	}
	defer h6.Close()
	hdr6 := fmt.Sprintf("::1 %d\n", portOf(c6.LocalAddr()))
	if got := hread(t, h6, 100); got != hdr6 {
		t.Fatalf("header %q, want %q", got, hdr6)
	}
	if got := hreadFull(t, h6, 3); got != "six" {
		t.Fatalf("data %q", got)
	}
	hwrite(t, h6, "back")
	if got := connReadFull(t, c6, 4); got != "back" {
		t.Fatalf("client got %q", got)
	}
}

func TestAddrInUse(t *testing.T) {
	e := newEnv(t)
	ln := listenTCP(t, "127.0.0.1:0")
	port := portOf(ln.Addr())
	for _, name := range []string{strconv.Itoa(port), fmt.Sprintf("127.0.0.1:%d::", port), fmt.Sprintf("%d!", port)} {
		_, err := e.open("tcp", name)
		wantErrno(t, "tcp/"+name, err, syscall.EADDRINUSE)
	}
	uc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	uport := portOf(uc.LocalAddr())
	for _, name := range []string{strconv.Itoa(uport), fmt.Sprintf("127.0.0.1:%d::", uport)} {
		_, err := e.open("udp", name)
		wantErrno(t, "udp/"+name, err, syscall.EADDRINUSE)
	}
	// A fixed client port already bound by a listener.
	ln2 := listenTCP(t, "127.0.0.1:0")
	_, err = e.open("tcp", fmt.Sprintf("127.0.0.1:%d:127.0.0.1:%d", portOf(ln2.Addr()), port))
	wantErrno(t, "client from a port in use", err, syscall.EADDRINUSE)
	if e.p.Live() != 0 {
		t.Fatalf("failed opens left %d live endpoints", e.p.Live())
	}
}

func TestTCPCancel(t *testing.T) {
	e := newEnv(t)
	port := freePort(t, "tcp")
	name := strconv.Itoa(port)
	h := e.mustOpen("tcp", name)

	cancelAfter := func(d time.Duration) context.Context {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(d, cancel)
		t.Cleanup(cancel)
		return ctx
	}
	// A read waiting for a client (accept).
	start := time.Now()
	_, err := h.(ns.Reader).Read(cancelAfter(50*time.Millisecond), make([]byte, 1))
	wantErrno(t, "cancelled accept-read", err, syscall.EINTR)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("cancel took %v", d)
	}
	// A write waiting for a client.
	_, err = h.(ns.Writer).Write(cancelAfter(50*time.Millisecond), []byte("x"))
	wantErrno(t, "cancelled accept-write", err, syscall.EINTR)
	// A reopen waiting for a client.
	_, err = e.openAs(cancelAfter(50*time.Millisecond), e.self, "tcp", name)
	wantErrno(t, "cancelled reopen", err, syscall.EINTR)

	// No client was lost: the next one is served.
	c := dial(t, "tcp", fmt.Sprintf("127.0.0.1:%d", port))
	c.Write([]byte("a"))
	if got := hreadFull(t, h, 1); got != "a" {
		t.Fatalf("read %q", got)
	}
	// A read waiting for data on the accepted client.
	_, err = h.(ns.Reader).Read(cancelAfter(50*time.Millisecond), make([]byte, 1))
	wantErrno(t, "cancelled data read", err, syscall.EINTR)
	// And the connection still works.
	c.Write([]byte("b"))
	if got := hreadFull(t, h, 1); got != "b" {
		t.Fatalf("read after cancel %q", got)
	}

	// A client handle.
	ln := listenTCP(t, "127.0.0.1:0")
	ch := e.mustOpen("tcp", fmt.Sprintf("127.0.0.1:%d", portOf(ln.Addr())))
	peer := acceptOne(t, ln)
	_, err = ch.(ns.Reader).Read(cancelAfter(50*time.Millisecond), make([]byte, 1))
	wantErrno(t, "cancelled client read", err, syscall.EINTR)
	peer.Write([]byte("z"))
	if got := hreadFull(t, ch, 1); got != "z" {
		t.Fatalf("client read after cancel %q", got)
	}
	// An already-cancelled open does not connect.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = e.openAs(ctx, e.self, "tcp", fmt.Sprintf("127.0.0.1:%d", portOf(ln.Addr())))
	wantErrno(t, "open with a cancelled context", err, syscall.EINTR)
}

func TestTCPCloseWakesAcceptingRead(t *testing.T) {
	e := newEnv(t)
	port := freePort(t, "tcp")
	h, err := e.open("tcp", strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	res := make(chan error, 1)
	go func() {
		_, err := h.(ns.Reader).Read(context.Background(), make([]byte, 1))
		res <- err
	}()
	waitForStack(t, "Accept") // the read waits for a client now
	closed := make(chan error, 1)
	go func() { closed <- h.Close() }()
	select {
	case err := <-res:
		wantErrno(t, "read across Close", err, syscall.EBADF)
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not wake a read waiting in accept")
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hung")
	}
}

func udpPeer(t *testing.T, addr string) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(addr)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

func recvFrom(t *testing.T, c *net.UDPConn) (string, netip.AddrPort) {
	t.Helper()
	buf := make([]byte, 70000)
	n, from, err := c.ReadFromUDPAddrPort(buf)
	if err != nil {
		t.Fatalf("peer recv: %v", err)
	}
	return string(buf[:n]), from
}

func TestUDPClient(t *testing.T) {
	for _, tc := range []struct{ peer, name string }{
		{"127.0.0.1:0", "127.0.0.1:%d"},
		{"[::1]:0", "[::1]:%d"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			peer := udpPeer(t, tc.peer)
			h := e.mustOpen("udp", fmt.Sprintf(tc.name, portOf(peer.LocalAddr())))
			// Each write is one datagram.
			for _, s := range []string{"a", "bb", "ccc"} {
				hwrite(t, h, s)
			}
			var from netip.AddrPort
			for _, want := range []string{"a", "bb", "ccc"} {
				var got string
				got, from = recvFrom(t, peer)
				if got != want {
					t.Fatalf("peer got datagram %q, want %q", got, want)
				}
			}
			// A read returns bytes of one datagram only; a short buffer
			// leaves the rest for the next read.
			for _, d := range []string{"hello", "", "world!", "x"} {
				peer.WriteToUDPAddrPort([]byte(d), from)
			}
			var reads []string
			for i := 0; i < 5; i++ {
				reads = append(reads, hread(t, h, 3))
			}
			if want := "hel lo wor ld! x"; strings.Join(reads, " ") != want {
				t.Fatalf("reads %q, want %q (empty datagrams skipped)", reads, want)
			}
			big := bytes.Repeat([]byte("0123456789"), 6000)
			peer.WriteToUDPAddrPort(big, from)
			peer.WriteToUDPAddrPort([]byte("next"), from)
			if got := hread(t, h, 70000); got != string(big) {
				t.Fatalf("big datagram: read %d bytes, want %d", len(got), len(big))
			}
			if got := hread(t, h, 70000); got != "next" {
				t.Fatalf("after big datagram: %q", got)
			}
			if e.p.Live() != 1 {
				t.Fatalf("Live() = %d", e.p.Live())
			}
			h.Close()
			if e.p.Live() != 0 {
				t.Fatalf("Live() = %d after Close", e.p.Live())
			}
		})
	}
}

func TestUDPDatagramTooBig(t *testing.T) {
	e := newEnv(t)
	peer := udpPeer(t, "127.0.0.1:0")
	h := e.mustOpen("udp", fmt.Sprintf("127.0.0.1:%d", portOf(peer.LocalAddr())))
	_, err := h.(ns.Writer).Write(tctx(t), make([]byte, 70000))
	wantErrno(t, "70000-byte datagram", err, syscall.EMSGSIZE)
	hwrite(t, h, "fine")
	if got, _ := recvFrom(t, peer); got != "fine" {
		t.Fatalf("peer got %q", got)
	}
}

func TestUDPClientFixedLocalPort(t *testing.T) {
	e := newEnv(t)
	peer := udpPeer(t, "127.0.0.1:0")
	lport := freePort(t, "udp")
	h := e.mustOpen("udp", fmt.Sprintf("%d:127.0.0.1:%d", lport, portOf(peer.LocalAddr())))
	hwrite(t, h, "x")
	if _, from := recvFrom(t, peer); int(from.Port()) != lport {
		t.Fatalf("datagram from port %d, want %d", from.Port(), lport)
	}
}

func TestUDPClientCancel(t *testing.T) {
	e := newEnv(t)
	peer := udpPeer(t, "127.0.0.1:0")
	h := e.mustOpen("udp", fmt.Sprintf("127.0.0.1:%d", portOf(peer.LocalAddr())))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := h.(ns.Reader).Read(ctx, make([]byte, 10))
	wantErrno(t, "cancelled UDP read", err, syscall.EINTR)
	hwrite(t, h, "q")
	_, from := recvFrom(t, peer)
	peer.WriteToUDPAddrPort([]byte("r"), from)
	if got := hread(t, h, 10); got != "r" {
		t.Fatalf("read after cancel %q", got)
	}
}

func TestUDPServer(t *testing.T) {
	e := newEnv(t)
	port := freePort(t, "udp")
	name := strconv.Itoa(port)
	h, err := e.open("udp", name)
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.(ns.Writer).Write(tctx(t), []byte("x"))
	wantErrno(t, "write before any datagram", err, syscall.EDESTADDRREQ)

	a := dial(t, "udp", fmt.Sprintf("127.0.0.1:%d", port))
	b := dial(t, "udp", fmt.Sprintf("[::1]:%d", port))
	a.Write([]byte("from-a"))
	if got := hread(t, h, 100); got != "from-a" {
		t.Fatalf("read %q", got)
	}
	hwrite(t, h, "to-a")
	a.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 100)
	if n, err := a.Read(buf); err != nil || string(buf[:n]) != "to-a" {
		t.Fatalf("a got %q, %v", buf[:n], err)
	}
	// The reply goes to the last sender.
	b.Write([]byte("from-b"))
	if got := hread(t, h, 3); got != "fro" {
		t.Fatalf("short read %q", got)
	}
	if got := hread(t, h, 100); got != "m-b" {
		t.Fatalf("rest of datagram %q", got)
	}
	hwrite(t, h, "to-b")
	b.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := b.Read(buf); err != nil || string(buf[:n]) != "to-b" {
		t.Fatalf("b got %q, %v", buf[:n], err)
	}
	// Close unbinds.
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := net.ListenUDP("udp", &net.UDPAddr{Port: port})
	if err != nil {
		t.Fatalf("rebind after Close: %v", err)
	}
	c.Close()
	h2, err := e.open("udp", name)
	if err != nil {
		t.Fatalf("reopen after Close: %v", err)
	}
	h2.Close()
}

func TestUDPServerCancel(t *testing.T) {
	e := newEnv(t)
	h := e.mustOpen("udp", strconv.Itoa(freePort(t, "udp")))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := h.(ns.Reader).Read(ctx, make([]byte, 10))
	wantErrno(t, "cancelled UDP server read", err, syscall.EINTR)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("cancel took %v", d)
	}
}

func TestUDPExplicitServer(t *testing.T) {
	e := newEnv(t)
	port := freePort(t, "udp")
	h := e.mustOpen("udp", strconv.Itoa(port)+"!")
	a := dial(t, "udp", fmt.Sprintf("127.0.0.1:%d", port)).(*net.UDPConn)
	b := dial(t, "udp", fmt.Sprintf("[::1]:%d", port)).(*net.UDPConn)
	aport, bport := portOf(a.LocalAddr()), portOf(b.LocalAddr())

	a.Write([]byte("hi"))
	b.Write([]byte("there"))
	recA := fmt.Sprintf("127.0.0.1 %d 2\nhi", aport)
	if got := hread(t, h, 1000); got != recA {
		t.Fatalf("record %q, want %q", got, recA)
	}
	// Short reads: pieces of one record, never two.
	recB := fmt.Sprintf("::1 %d 5\nthere", bport)
	var pieces []string
	for got := ""; len(got) < len(recB); {
		p := hread(t, h, 4)
		pieces = append(pieces, p)
		got += p
	}
	if strings.Join(pieces, "") != recB {
		t.Fatalf("pieces %q, want %q", pieces, recB)
	}

	// Writes carry the destination; records may be split or combined.
	hwrite(t, h, fmt.Sprintf("127.0.0.1 %d 3\nabc::1 %d 4\nwxyz", aport, bport))
	hwrite(t, h, fmt.Sprintf("127.0.0.1 %d 5\nsp", aport))
	hwrite(t, h, "lit")
	buf := make([]byte, 100)
	for _, tc := range []struct {
		c    *net.UDPConn
		want string
	}{{a, "abc"}, {b, "wxyz"}, {a, "split"}} {
		tc.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := tc.c.Read(buf)
		if err != nil || string(buf[:n]) != tc.want {
			t.Fatalf("peer got %q, %v; want %q", buf[:n], err, tc.want)
		}
	}
	_, err := h.(ns.Writer).Write(tctx(t), []byte("not a header\n"))
	wantErrno(t, "bad header", err, syscall.EINVAL)
	// After an error the next record is parsed afresh.
	hwrite(t, h, fmt.Sprintf("[::1] %d 2\nok", bport))
	b.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := b.Read(buf); err != nil || string(buf[:n]) != "ok" {
		t.Fatalf("b got %q, %v", buf[:n], err)
	}
}

func TestUDPReopenWriteOnlyChannel(t *testing.T) {
	e := newEnv(t)
	port := freePort(t, "udp")
	name := strconv.Itoa(port)
	h := e.mustOpen("udp", name)
	_, err := e.open("udp", name)
	wantErrno(t, "reopen before any datagram", err, syscall.EDESTADDRREQ)

	a := dial(t, "udp", fmt.Sprintf("127.0.0.1:%d", port))
	a.Write([]byte("req"))
	if got := hread(t, h, 100); got != "req" {
		t.Fatalf("read %q", got)
	}
	ch, err := e.open("udp", name)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if e.p.Live() != 2 {
		t.Fatalf("Live() = %d, want 2", e.p.Live())
	}
	_, err = ch.(ns.Reader).Read(tctx(t), make([]byte, 10))
	wantErrno(t, "read on the write-only channel", err, syscall.EBADF)
	hwrite(t, ch, "resp1")
	hwrite(t, ch, "resp2")
	buf := make([]byte, 100)
	for _, want := range []string{"resp1", "resp2"} {
		a.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := a.Read(buf)
		if err != nil || string(buf[:n]) != want {
			t.Fatalf("a got %q, %v; want %q", buf[:n], err, want)
		}
	}
	// The channel keeps its peer when another client writes to the server.
	b := dial(t, "udp", fmt.Sprintf("127.0.0.1:%d", port))
	b.Write([]byte("other"))
	hread(t, h, 100)
	hwrite(t, ch, "still-a")
	a.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := a.Read(buf); err != nil || string(buf[:n]) != "still-a" {
		t.Fatalf("a got %q, %v", buf[:n], err)
	}
	if err := ch.Close(); err != nil {
		t.Fatal(err)
	}
	if e.p.Live() != 1 {
		t.Fatalf("Live() = %d after closing the channel", e.p.Live())
	}
	// Closing the channel leaves the server bound and working.
	b.Write([]byte("again"))
	if got := hread(t, h, 100); got != "again" {
		t.Fatalf("read %q", got)
	}
	hwrite(t, h, "to-b")
	b.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := b.Read(buf); err != nil || string(buf[:n]) != "to-b" {
		t.Fatalf("b got %q, %v", buf[:n], err)
	}
	// A process that does not hold the server file may not open a channel.
	_, err = e.openAs(tctx(t), ns.Caller{Pid: 1}, "udp", name)
	wantErrno(t, "reopen by a non-holder", err, syscall.EACCES)
}

// TestUDPChannelWriteKeepsReplyPeer is the complex connectionless server of
// seed 000 §2.3.4: the server reads a request from B, meanwhile answers A
// through a channel opened earlier, then replies to B on the original
// handle. "The write call will send the reply packet to the client address
// corresponding to the most recent read" (§2.3.2), and reopening uses "the
// last communication (read or write) on the original file handle" (§2.4):
// a write on a secondary handle must change neither.
func TestUDPChannelWriteKeepsReplyPeer(t *testing.T) {
	e := newEnv(t)
	port := freePort(t, "udp")
	name := strconv.Itoa(port)
	h := e.mustOpen("udp", name)
	a := dial(t, "udp", fmt.Sprintf("127.0.0.1:%d", port))
	b := dial(t, "udp", fmt.Sprintf("127.0.0.1:%d", port))
	a.Write([]byte("req-a"))
	hread(t, h, 100)
	chA := e.mustOpen("udp", name) // channel to A
	b.Write([]byte("req-b"))
	hread(t, h, 100) // most recent read: B
	hwrite(t, chA, "late-answer-to-a")
	hwrite(t, h, "reply-to-b")
	buf := make([]byte, 100)
	a.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := a.Read(buf); err != nil || string(buf[:n]) != "late-answer-to-a" {
		t.Fatalf("a got %q, %v", buf[:n], err)
	}
	b.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, err := b.Read(buf)
	if err != nil || string(buf[:n]) != "reply-to-b" {
		a.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		m, _ := a.Read(buf[n:])
		t.Fatalf("the original handle's reply went astray: B got %q (%v), A got %q; a write on the reopened channel to A changed the reply peer", buf[:n], err, buf[n:n+m])
	}
	// And a reopen now addresses B, the last communication on the original handle.
	chB := e.mustOpen("udp", name)
	hwrite(t, chB, "via-channel-b")
	b.SetReadDeadline(time.Now().Add(2 * time.Second))
	if n, err := b.Read(buf); err != nil || string(buf[:n]) != "via-channel-b" {
		t.Fatalf("b got %q, %v from the second channel", buf[:n], err)
	}
}

func TestNoLeaks(t *testing.T) {
	e := newEnv(t)
	port := freePort(t, "tcp")
	name := strconv.Itoa(port)
	client := fmt.Sprintf("127.0.0.1:%d", port)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	buf := make([]byte, 1)

	cycle := func(srv ns.Handle) {
		c, err := e.openAs(ctx, e.self, "tcp", client)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		s, err := e.openAs(ctx, e.self, "tcp", name)
		if err != nil {
			t.Fatalf("accept: %v", err)
		}
		if _, err := c.(ns.Writer).Write(ctx, []byte("x")); err != nil {
			t.Fatal(err)
		}
		if n, err := s.(ns.Reader).Read(ctx, buf); n != 1 || err != nil {
			t.Fatalf("read = %d, %v", n, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// Warm up: let the runtime create its poller and helper goroutines.
	srv, err := e.openAs(ctx, e.self, "tcp", name)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		cycle(srv)
	}
	srv.Close()
	time.Sleep(50 * time.Millisecond)
	base := leakcheck.Take(t)

	srv, err = e.openAs(ctx, e.self, "tcp", name)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1000; i++ {
		cycle(srv)
	}
	srv.Close()
	// Simple servers and UDP too.
	for i := 0; i < 100; i++ {
		h, err := e.openAs(ctx, e.self, "tcp", name)
		if err != nil {
			t.Fatal(err)
		}
		c, err := e.openAs(ctx, e.self, "tcp", client)
		if err != nil {
			t.Fatal(err)
		}
		c.(ns.Writer).Write(ctx, []byte("y"))
		h.(ns.Reader).Read(ctx, buf)
		c.Close()
		h.Close()
		u, err := e.openAs(ctx, e.self, "udp", name)
		if err != nil {
			t.Fatal(err)
		}
		uc, err := e.openAs(ctx, e.self, "udp", client)
		if err != nil {
			t.Fatal(err)
		}
		uc.(ns.Writer).Write(ctx, []byte("z"))
		u.(ns.Reader).Read(ctx, buf)
		u.(ns.Writer).Write(ctx, []byte("z"))
		uc.(ns.Reader).Read(ctx, buf)
		uc.Close()
		u.Close()
	}
	if e.p.Live() != 0 {
		t.Fatalf("Live() = %d after all closed", e.p.Live())
	}
	base.Check(t)
	ents, _ := e.p.TCP().ReadDir(context.Background())
	if len(ents) != 0 {
		t.Fatalf("tcp/ still lists %q", names(ents))
	}
}

// TestCloseTwice: a second Close of any handle may return an error but must
// not panic (a panic takes the whole daemon down) nor untrack twice.
func TestCloseTwice(t *testing.T) {
	e := newEnv(t)
	ln := listenTCP(t, "127.0.0.1:0")
	peer := udpPeer(t, "127.0.0.1:0")
	tport, uport := freePort(t, "tcp"), freePort(t, "udp")
	opens := []struct{ proto, name string }{
		{"tcp", fmt.Sprintf("127.0.0.1:%d", portOf(ln.Addr()))},
		{"tcp", strconv.Itoa(tport)},
		{"udp", fmt.Sprintf("127.0.0.1:%d", portOf(peer.LocalAddr()))},
		{"udp", strconv.Itoa(uport)},
		{"udp", strconv.Itoa(uport)}, // the reopened channel
	}
	var hs []ns.Handle
	for _, o := range opens {
		if o.proto == "udp" && o.name == strconv.Itoa(uport) && len(hs) == 4 {
			c := dial(t, "udp", fmt.Sprintf("127.0.0.1:%d", uport))
			c.Write([]byte("x"))
			hread(t, hs[3], 10)
		}
		h, err := e.open(o.proto, o.name)
		if err != nil {
			t.Fatalf("open %s/%s: %v", o.proto, o.name, err)
		}
		hs = append(hs, h.(heldHandle).Handle)
	}
	for i := len(hs) - 1; i >= 0; i-- {
		h := hs[i]
		for k := 0; k < 2; k++ {
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("Close #%d of %s/%s (%T) panicked: %v", k+1, opens[i].proto, opens[i].name, h, r)
					}
				}()
				h.Close()
			}()
		}
	}
	if n := e.p.Live(); n != 0 {
		t.Fatalf("Live() = %d after closing everything twice", n)
	}
}

// waitForStack waits until some goroutine's stack shows fn: a blocked
// call is an event no channel reports.
func waitForStack(t *testing.T, fn string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); runtime.Gosched() {
		if strings.Contains(string(buf[:runtime.Stack(buf, true)]), fn) {
			return
		}
	}
	t.Fatalf("no goroutine reached %s", fn)
}

// TestPrivilegedPortNeedsPrivilege: a daemon run as root for other users
// binds no privileged port for a caller without the privilege, servers
// and fixed client source ports alike; nothing is left open.
func TestPrivilegedPortNeedsPrivilege(t *testing.T) {
	if unprivilegedPortStart() <= 80 {
		t.Skip("net.ipv4.ip_unprivileged_port_start is low: no port below 80 is privileged here")
	}
	e := newEnv(t)
	stranger := ns.Caller{Uid: 65534, Gid: 65534} // pid 0: no process to ask for capabilities
	ctx := context.Background()
	for _, tt := range []struct{ proto, name string }{
		{"tcp", "80"}, {"udp", "53!"}, {"tcp", "127.0.0.1:79::"}, {"tcp", "127.0.0.1+79++"},
		{"tcp", "79:127.0.0.1:9"}, {"udp", "79+127.0.0.1+9"}, {"tcp", "127.0.0.1:79:127.0.0.1:9"},
	} {
		h, err := e.openAs(ctx, stranger, tt.proto, tt.name)
		if err == nil {
			h.Close()
		}
		if ns.Errno(err) != syscall.EACCES {
			t.Errorf("%s/%s as uid 65534: %v, want EACCES", tt.proto, tt.name, err)
		}
	}
}
