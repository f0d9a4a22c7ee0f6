package netstream

import (
	"bufio"
	"context"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"wirefs/internal/leakcheck"
	"wirefs/internal/ns"
	"wirefs/internal/testsrv"
)

// fullListener returns the port of a listening socket whose accept queue
// is full: the kernel drops the SYN of every further connect, which then
// waits.
func fullListener(t *testing.T) int {
	t.Helper()
	port, _ := testsrv.FullBacklog(t)
	return port
}

// awaitSynSent waits until a connect to port is in progress (SYN_SENT in
// /proc/net/tcp): the connect is then blocked in the kernel.
func awaitSynSent(t *testing.T, port int) {
	t.Helper()
	want := fmt.Sprintf(":%04X 02 ", port) // remote port, state SYN_SENT
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		f, err := os.Open("/proc/net/tcp")
		if err != nil {
			t.Skip("no /proc/net/tcp:", err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local_address rem_address st ...
			if fields := strings.Fields(sc.Text()); len(fields) > 3 && strings.HasSuffix(fields[2]+" "+fields[3]+" ", want) {
				f.Close()
				return
			}
		}
		f.Close()
		time.Sleep(time.Millisecond)
	}
	t.Fatal("no connect in progress")
}

// A connect blocked in the kernel (the server never answers) ends when
// the open is cancelled (Ctrl-C), as EINTR, and leaves nothing behind.
func TestTCPConnectCancelled(t *testing.T) {
	e := newEnv(t)
	port := fullListener(t)
	base := leakcheck.Take(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		h, err := e.openAs(ctx, e.self, "tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			h.Close()
		}
		done <- err
	}()
	awaitSynSent(t, port)
	cancel()
	select {
	case err := <-done:
		wantErrno(t, "cancelled connect", err, syscall.EINTR)
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled connect did not return")
	}
	base.Check(t)
}

// A cancellation that comes before the connect has begun still ends it.
func TestTCPConnectCancelledBefore(t *testing.T) {
	e := newEnv(t)
	port := fullListener(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := e.openAs(ctx, e.self, "tcp", fmt.Sprintf("127.0.0.1:%d", port))
	wantErrno(t, "connect cancelled before it began", err, syscall.EINTR)
}

// The connect timeout bounds a connect to a server that never answers.
func TestTCPConnectTimeout(t *testing.T) {
	e := newEnv(t)
	e.p.ConnectTimeout = 50 * time.Millisecond
	port := fullListener(t)
	_, err := e.open("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	wantErrno(t, "connect to a server that never answers", err, syscall.ETIMEDOUT)
}

// The socket a client open returns is what socket(2) and connect(2) give a
// program: blocking, without a send timeout, with TCP_NODELAY set as on
// every socket the daemon serves.
func TestTCPClientKernelFileIsPlainSocket(t *testing.T) {
	e := newEnv(t)
	ln := listenTCP(t, "127.0.0.1:0")
	h := e.mustOpen("tcp", fmt.Sprintf("127.0.0.1:%d", portOf(ln.Addr())))
	acceptOne(t, ln)
	f, err := h.(ns.KernelObject).KernelFile()
	if err != nil {
		t.Fatal(err)
	}
	fd := int(f.Fd())
	if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK != 0 {
		t.Fatalf("file status flags %#x, %v: want a blocking socket", fl, err)
	}
	if v, err := unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY); err != nil || v == 0 {
		t.Fatalf("TCP_NODELAY = %d, %v", v, err)
	}
	// The connect timeout was the socket's own for the connect only.
	if tv, err := unix.GetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO); err != nil || tv.Sec != 0 || tv.Usec != 0 {
		t.Fatalf("SO_SNDTIMEO = %+v, %v; want none", tv, err)
	}
}

// A connect interrupted by signals (with a send timeout set the kernel
// does not restart it) goes on waiting: it still times out with
// ETIMEDOUT, and still completes when the server answers.
func TestTCPConnectInterruptedBySignals(t *testing.T) {
	for _, answer := range []bool{false, true} {
		t.Run(fmt.Sprintf("answered=%v", answer), func(t *testing.T) {
			port, lfd := testsrv.FullBacklog(t)
			timeout := 300 * time.Millisecond
			if answer {
				timeout = 10 * time.Second
			}
			tids := make(chan int, 1)
			done := make(chan error, 1)
			go func() {
				runtime.LockOSThread() // signals go to this thread
				defer runtime.UnlockOSThread()
				tids <- unix.Gettid()
				f, err := connectTCP(context.Background(), netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port)), netip.AddrPort{}, timeout)
				if err == nil {
					f.Close()
				}
				done <- err
			}()
			tid := <-tids
			awaitSynSent(t, port)
			if answer {
				// Room in the accept queue: the next SYN (a second
				// later) is answered.
				c, _, err := unix.Accept(lfd)
				if err != nil {
					t.Fatal(err)
				}
				defer unix.Close(c)
			}
			signals := time.NewTicker(time.Millisecond)
			defer signals.Stop()
			// Far beyond the timeout, far below the kernel's own bound
			// (SYN retries, 127 s) that restarting the full timeout at
			// every signal would end at.
			bound := time.After(20 * time.Second)
			for {
				select {
				case <-bound:
					t.Fatal("a connect interrupted by signals outlived its timeout")
				case err := <-done:
					if answer && err != nil {
						t.Fatalf("connect interrupted by signals, then answered: %v", err)
					}
					if !answer {
						wantErrno(t, "connect interrupted by signals", err, syscall.ETIMEDOUT)
					}
					return
				case <-signals.C:
					unix.Tgkill(os.Getpid(), tid, unix.SIGURG)
				}
			}
		})
	}
}

// An opener that connects sockets itself (ns.WithConnectByOpener) gets a
// client's socket unconnected, set up as for the daemon's own connect,
// with the address to connect it to and the connect timeout as its
// TCP_USER_TIMEOUT; it shows as a live endpoint until closed. Names with
// several addresses, and timeouts the kernel would round up to a second,
// are still connected by the daemon.
func TestTCPConnectByOpener(t *testing.T) {
	e := newEnv(t)
	e.p.ConnectTimeout = 2 * time.Second
	ln := listenTCP(t, "127.0.0.1:0")
	port := portOf(ln.Addr())
	ctx := ns.WithConnectByOpener(tctx(t))
	h, err := e.openAs(ctx, e.self, "tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	u, ok := h.(heldHandle).Handle.(ns.Unconnected)
	if !ok {
		t.Fatalf("handle %T, want ns.Unconnected", h.(heldHandle).Handle)
	}
	f, _ := u.KernelFile()
	fd := int(f.Fd())
	if _, err := unix.Getpeername(fd); err != unix.ENOTCONN {
		t.Fatalf("getpeername = %v, want ENOTCONN: the socket is the opener's to connect", err)
	}
	if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK != 0 {
		t.Fatalf("file status flags %#x, %v: want a blocking socket", fl, err)
	}
	if v, err := unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY); err != nil || v == 0 {
		t.Fatalf("TCP_NODELAY = %d, %v", v, err)
	}
	if v, err := unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT); err != nil || v != 2000 {
		t.Fatalf("TCP_USER_TIMEOUT = %d, %v; want the connect timeout, 2000 ms", v, err)
	}
	if e.p.Live() != 1 {
		t.Errorf("%d live endpoints, want 1", e.p.Live())
	}
	to, ok := u.ConnectTo().(*unix.SockaddrInet4)
	if !ok || to.Port != port || to.Addr != [4]byte{127, 0, 0, 1} {
		t.Fatalf("ConnectTo = %#v, want 127.0.0.1:%d", u.ConnectTo(), port)
	}
	if err := unix.Connect(fd, to); err != nil {
		t.Fatalf("connect: %v", err)
	}
	acceptOne(t, ln)
	h.Close()
	if e.p.Live() != 0 {
		t.Errorf("%d live endpoints after close, want 0", e.p.Live())
	}

	// Two addresses (::1 and 127.0.0.1): the daemon tries them in turn.
	ln6 := listenTCP(t, "[::1]:0")
	h2, err := e.openAs(ctx, e.self, "tcp", fmt.Sprintf("localhost.test:%d", portOf(ln6.Addr())))
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close()
	if _, ok := h2.(heldHandle).Handle.(ns.Unconnected); ok {
		t.Error("a name of two addresses gave an unconnected socket")
	}
	// A timeout below a second stays the daemon's.
	e.p.ConnectTimeout = 500 * time.Millisecond
	h3, err := e.openAs(ctx, e.self, "tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer h3.Close()
	if _, ok := h3.(heldHandle).Handle.(ns.Unconnected); ok {
		t.Error("a connect timeout of 500 ms gave an unconnected socket")
	}
}

// An opener that makes sockets itself (ns.WithSocketByOpener) gets a
// client's recipe — the address, TCP_NODELAY, the connect timeout as its
// user timeout — and no socket in the daemon; it shows as a live endpoint
// until closed. A fixed source address or port (the daemon's bind, after
// its rights check) gives an unconnected socket; several addresses and
// sub-second timeouts a connected one, as for WithConnectByOpener.
func TestTCPSocketByOpener(t *testing.T) {
	e := newEnv(t)
	e.p.ConnectTimeout = 2 * time.Second
	ln := listenTCP(t, "127.0.0.1:0")
	port := portOf(ln.Addr())
	ctx := ns.WithSocketByOpener(tctx(t))
	base := leakcheck.Take(t)
	h, err := e.openAs(ctx, e.self, "tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	m, ok := h.(heldHandle).Handle.(ns.SocketToMake)
	if !ok {
		t.Fatalf("handle %T, want ns.SocketToMake", h.(heldHandle).Handle)
	}
	r := m.Recipe()
	to, ok := r.To.(*unix.SockaddrInet4)
	if !ok || to.Port != port || to.Addr != [4]byte{127, 0, 0, 1} || r.Type != unix.SOCK_STREAM || r.Protocol != 0 ||
		!r.NoDelay || r.UserTimeout != 2*time.Second {
		t.Fatalf("recipe %+v (to %#v), want a TCP socket with TCP_NODELAY to 127.0.0.1:%d, 2 s to connect", r, r.To, port)
	}
	if e.p.Live() != 1 {
		t.Errorf("%d live endpoints, want 1", e.p.Live())
	}
	h.Close()
	if e.p.Live() != 0 {
		t.Errorf("%d live endpoints after close, want 0", e.p.Live())
	}
	base.Check(t) // no socket was made

	ln6 := listenTCP(t, "[::1]:0")
	h6, err := e.openAs(ctx, e.self, "tcp", fmt.Sprintf("[::1]:%d", portOf(ln6.Addr())))
	if err != nil {
		t.Fatal(err)
	}
	defer h6.Close()
	if m, ok := h6.(heldHandle).Handle.(ns.SocketToMake); !ok {
		t.Errorf("handle %T for [::1], want ns.SocketToMake", h6.(heldHandle).Handle)
	} else if to6, ok := m.Recipe().To.(*unix.SockaddrInet6); !ok || to6.Addr != [16]byte{15: 1} {
		t.Errorf("recipe to %#v, want [::1]", m.Recipe().To)
	}

	// A fixed source address: the daemon binds it.
	lport := freePort(t, "tcp")
	hb, err := e.openAs(ctx, e.self, "tcp", fmt.Sprintf("127.0.0.1:%d:127.0.0.1:%d", lport, port))
	if err != nil {
		t.Fatal(err)
	}
	defer hb.Close()
	if u, ok := hb.(heldHandle).Handle.(ns.Unconnected); !ok {
		t.Errorf("handle %T with a fixed source, want ns.Unconnected", hb.(heldHandle).Handle)
	} else if sa, err := unix.Getsockname(u.Socket()); err != nil || sa.(*unix.SockaddrInet4).Port != lport {
		t.Errorf("the daemon's socket is bound to %v, %v; want port %d", sa, err, lport)
	}
	// Two addresses (::1 and 127.0.0.1): the daemon tries them in turn.
	h2, err := e.openAs(ctx, e.self, "tcp", fmt.Sprintf("localhost.test:%d", portOf(ln6.Addr())))
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close()
	if _, ok := h2.(heldHandle).Handle.(ns.KernelObject); !ok {
		t.Errorf("handle %T for a name of two addresses, want a connected socket", h2.(heldHandle).Handle)
	}
	e.p.ConnectTimeout = 500 * time.Millisecond
	h3, err := e.openAs(ctx, e.self, "tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer h3.Close()
	if _, ok := h3.(heldHandle).Handle.(ns.SocketToMake); ok {
		t.Error("a connect timeout of 500 ms gave a socket to make")
	}
}

// Without the door's word, a client open connects (the FUSE door, a
// static program under the catcher).
func TestTCPConnectNotByOpener(t *testing.T) {
	e := newEnv(t)
	ln := listenTCP(t, "127.0.0.1:0")
	h := e.mustOpen("tcp", fmt.Sprintf("127.0.0.1:%d", portOf(ln.Addr())))
	if _, ok := h.(heldHandle).Handle.(ns.Unconnected); ok {
		t.Fatal("an unconnected socket for a door that did not ask")
	}
}
