package netstream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"wirefs/internal/ns"
)

func (p *Provider) openTCP(ctx context.Context, name string, n Name, c ns.Caller) (ns.Handle, error) {
	if n.Role == Client {
		return p.dialTCP(ctx, name, n, c)
	}
	binds, err := p.resolveEndpoint(ctx, n.Local)
	if err != nil {
		return nil, err
	}
	key := bindKey("tcp", binds[0])
	for {
		if l, ok := p.server(key).(*tcpListener); ok {
			h, err := l.reopen(ctx, name, n.Explicit, c)
			if err == errRebind {
				continue
			}
			return h, err
		}
		h, err := p.listenTCP(ctx, key, name, n.Explicit, binds[0], c)
		if errors.Is(err, syscall.EADDRINUSE) && p.server(key) != nil {
			continue // lost a race with another opener of the same name
		}
		return h, err
	}
}

func (p *Provider) dialTCP(ctx context.Context, name string, n Name, c ns.Caller) (ns.Handle, error) {
	remotes, err := p.resolveEndpoint(ctx, n.Remote)
	if err != nil {
		return nil, err
	}
	var local netip.AddrPort
	if n.Local.Host != "" || n.Local.Port != 0 {
		local, err = p.localAddr(ctx, "tcp", name, n.Local, remotes[0].Addr(), c)
		if err != nil {
			return nil, err
		}
	}
	if len(remotes) == 1 && !local.IsValid() && ns.SocketByOpener(ctx) && openerBounds(p.ConnectTimeout) {
		// Nothing of the daemon's in the socket (no bind, no rights
		// to check): the opener makes it.
		r := recipeTCP(remotes[0], p.ConnectTimeout)
		_, err := netip.ParseAddr(n.Remote.Host)
		r.Reusable = err == nil // a literal address: nothing resolved
		return ns.MakeSocket(r, p.track("tcp", name, c)), nil
	}
	if len(remotes) == 1 && ns.ConnectByOpener(ctx) && openerBounds(p.ConnectTimeout) {
		fd, to, err := socketForOpener(remotes[0], local, p.ConnectTimeout)
		if err != nil {
			return nil, dialError("tcp", name, err)
		}
		return ns.UnconnectedSocket(fd, to, p.track("tcp", name, c)), nil
	}
	var lastErr error
	for _, r := range remotes {
		f, err := connectTCP(ctx, r, local, p.ConnectTimeout)
		if err == nil {
			return ns.SocketFile(f, p.track("tcp", name, c)), nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		lastErr = err
	}
	return nil, dialError("tcp", name, lastErr)
}

// connectTCP connects a new socket to remote (from local, if valid) with
// a blocking connect(2) on the calling goroutine's thread, and returns it
// in blocking mode, as socket(2) and connect(2) leave it for a program
// (the catcher door injects it as it is). Against a net.Dialer this
// spares the poller's round trip, a goroutine switch and a duplicate per
// connection (on loopback the handshake is done before connect returns).
// TCP_NODELAY is set, as Go sets it on every socket the daemon serves, so
// both doors put the same segments on the wire. The end of ctx aborts
// the connect; timeout, if not 0, bounds it.
func connectTCP(ctx context.Context, remote, local netip.AddrPort, timeout time.Duration) (*os.File, error) {
	fd, to, err := socketTCP(remote, local)
	if err == nil {
		if err = connectAbortable(ctx, fd, to, timeout); err != nil {
			unix.Close(fd)
		}
	}
	if err != nil {
		return nil, dialOpError(remote, local, err)
	}
	return os.NewFile(uintptr(fd), "tcp:"+remote.String()), nil
}

// socketTCP makes the socket of a connection to remote (from local, if
// valid), set up (setupTCP) but not connected, and the address to
// connect it to.
func socketTCP(remote, local netip.AddrPort) (int, unix.Sockaddr, error) {
	family := tcpFamily(remote, local)
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, nil, os.NewSyscallError("socket", err)
	}
	if err := setupTCP(fd, family, local); err != nil {
		unix.Close(fd)
		return -1, nil, err
	}
	return fd, sockaddr(family, remote), nil
}

// tcpFamily is the address family of a connection to remote from local
// (if valid): IPv4 when both are.
func tcpFamily(remote, local netip.AddrPort) int {
	if remote.Addr().Unmap().Is4() && (!local.IsValid() || local.Addr().Unmap().Is4()) {
		return unix.AF_INET
	}
	return unix.AF_INET6
}

// recipeTCP is the socket of a connection to remote, with no fixed
// source, for an opener that makes it (ns.SocketToMake): set up as
// socketForOpener's.
func recipeTCP(remote netip.AddrPort, timeout time.Duration) ns.SocketRecipe {
	return ns.SocketRecipe{
		Type:        unix.SOCK_STREAM,
		To:          sockaddr(tcpFamily(remote, netip.AddrPort{}), remote),
		NoDelay:     true,
		UserTimeout: timeout,
	}
}

// socketForOpener is socketTCP for an opener that connects the socket
// itself (ns.Unconnected): the connect timeout is the socket's
// TCP_USER_TIMEOUT, which the kernel applies to a connect in progress
// (its SYN retransmissions) whoever waits for it, and which the opener
// clears once connected. A signal to the opener is then the kernel's
// affair, as for any connect(2): a handler with SA_RESTART resumes the
// wait, one without makes the open fail with EINTR.
func socketForOpener(remote, local netip.AddrPort, timeout time.Duration) (int, unix.Sockaddr, error) {
	fd, to, err := socketTCP(remote, local)
	if err != nil {
		return -1, nil, dialOpError(remote, local, err)
	}
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(timeout.Milliseconds())); err != nil {
		unix.Close(fd)
		return -1, nil, dialOpError(remote, local, os.NewSyscallError("setsockopt", err))
	}
	return fd, to, nil
}

// openerBounds says whether TCP_USER_TIMEOUT bounds a connect as timeout
// does: the kernel checks it when a SYN would be sent again, the first
// time a second after the connect began (TCP_TIMEOUT_INIT), so a shorter
// timeout would run for a second; such connects stay the daemon's.
func openerBounds(timeout time.Duration) bool {
	return timeout == 0 || timeout >= time.Second
}

// dialOpError words a failed connect as Go's dialer does (a *net.OpError:
// "dial tcp 127.0.0.1:9: connect: connection refused"), which is what
// wirefs splice and the log say of it.
func dialOpError(remote, local netip.AddrPort, err error) error {
	oe := &net.OpError{Op: "dial", Net: "tcp", Addr: net.TCPAddrFromAddrPort(remote), Err: err}
	if local.IsValid() {
		oe.Source = net.TCPAddrFromAddrPort(local)
	}
	return oe
}

// setupTCP sets TCP_NODELAY and binds to local, if valid: a fixed source
// port is usually reused at once, and without SO_REUSEADDR a connection
// in TIME_WAIT would block it.
func setupTCP(fd, family int, local netip.AddrPort) error {
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
		return os.NewSyscallError("setsockopt", err)
	}
	if !local.IsValid() {
		return nil
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		return os.NewSyscallError("setsockopt", err)
	}
	if err := unix.Bind(fd, sockaddr(family, local)); err != nil {
		return os.NewSyscallError("bind", err)
	}
	return nil
}

// sockaddr is a in the socket address of family (IPv4 addresses mapped
// for AF_INET6).
func sockaddr(family int, a netip.AddrPort) unix.Sockaddr {
	if family == unix.AF_INET {
		return &unix.SockaddrInet4{Port: int(a.Port()), Addr: a.Addr().Unmap().As4()}
	}
	sa := &unix.SockaddrInet6{Port: int(a.Port()), Addr: a.Addr().As16()}
	if z := a.Addr().Zone(); z != "" {
		if ifi, err := net.InterfaceByName(z); err == nil {
			sa.ZoneId = uint32(ifi.Index)
		}
	}
	return sa
}

// connectAbortable runs a blocking connect(2) of fd to sa; the end of ctx
// wakes it with shutdown(2), which turns a connect in progress into a
// reset. shutdown before the connect has begun would do nothing, so it is
// repeated until the connect returns. The descriptor is not closed or
// reused before the aborting goroutine has finished. The timeout is the
// socket's own (SO_SNDTIMEO bounds a blocking connect), not a Go timer:
// arming one wakes Go's network poller, a thread switch per connection.
func connectAbortable(ctx context.Context, fd int, sa unix.Sockaddr, timeout time.Duration) error {
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
		if err := setSendTimeout(fd, timeout); err != nil {
			return err
		}
		// The program gets the socket without it.
		defer setSendTimeout(fd, 0)
	}
	connected := make(chan struct{})
	aborted := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(aborted)
		for {
			unix.Shutdown(fd, unix.SHUT_RDWR)
			select {
			case <-connected:
				return
			case <-time.After(abortEvery):
			}
		}
	})
	err := unix.Connect(fd, sa)
	for err == unix.EINTR {
		// A signal (the catcher's SIGCHLD, say) cut the wait short: with
		// a send timeout the kernel does not restart the call. Connecting
		// again waits for the connect in progress, for what is left of
		// the timeout; it says EISCONN if the connect completed
		// meanwhile and EALREADY if the timeout ran out.
		if timeout > 0 {
			left := time.Until(deadline)
			if left < time.Microsecond { // a zero timeval is no timeout at all
				err = unix.EINPROGRESS
				break
			}
			if err = setSendTimeout(fd, left); err != nil {
				break
			}
		}
		switch err = unix.Connect(fd, sa); err {
		case unix.EISCONN:
			err = nil
		case unix.EALREADY:
			err = unix.EINPROGRESS
		}
	}
	close(connected)
	if !stop() {
		<-aborted
		return ctx.Err()
	}
	if err == unix.EINPROGRESS {
		err = unix.ETIMEDOUT // SO_SNDTIMEO ran out
	}
	if err != nil {
		return os.NewSyscallError("connect", err)
	}
	return nil
}

// setSendTimeout sets SO_SNDTIMEO, which bounds a blocking connect; 0
// clears it.
func setSendTimeout(fd int, d time.Duration) error {
	tv := unix.NsecToTimeval(d.Nanoseconds())
	if d > 0 && tv.Sec == 0 && tv.Usec == 0 {
		tv.Usec = 1
	}
	return os.NewSyscallError("setsockopt", unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv))
}

// abortEvery is how often an aborted connect is shut down again until it
// returns.
const abortEvery = 10 * time.Millisecond

// dialError keeps the errno and says what failed.
func dialError(proto, name string, err error) error {
	errno := ns.Errno(err)
	if errno == syscall.EIO {
		return err
	}
	return ns.Errorf(errno, "%s/%s: %v", proto, name, err)
}

// localAddr resolves a client's fixed source address, picking the family of
// the remote address, for a caller that may bind its port.
func (p *Provider) localAddr(ctx context.Context, proto, name string, ep Endpoint, remote netip.Addr, c ns.Caller) (netip.AddrPort, error) {
	if err := mayBind(proto, name, ep.Port, c); err != nil {
		return netip.AddrPort{}, err
	}
	if ep.Host == "" {
		if remote.Unmap().Is4() {
			return netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(ep.Port)), nil
		}
		return netip.AddrPortFrom(netip.IPv6Unspecified(), uint16(ep.Port)), nil
	}
	locals, err := p.resolveEndpoint(ctx, ep)
	if err != nil {
		return netip.AddrPort{}, err
	}
	return locals[0], nil
}

// reuseAddr sets SO_REUSEADDR through a dialer's Control.
func reuseAddr(network, address string, rc syscall.RawConn) error {
	var serr error
	err := rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
	})
	if err != nil {
		return err
	}
	return serr
}

// trackedConn forgets its live entry when closed.
type trackedConn struct {
	net.Conn
	untrack func()
}

func (t *trackedConn) Close() error {
	t.untrack()
	return t.Conn.Close()
}

// File exposes the socket for doors that inject fds (see ns.KernelObject).
func (t *trackedConn) File() (*os.File, error) {
	f, ok := t.Conn.(interface{ File() (*os.File, error) })
	if !ok {
		return nil, ns.Errorf(syscall.EOPNOTSUPP, "no kernel file")
	}
	return f.File()
}

// tcpListener is a bound server name. A single goroutine accepts, one
// client ahead at most, and hands clients to whichever open or read wants
// one next; waiters can give up (Ctrl-C) without losing a client.
type tcpListener struct {
	p       *Provider
	key     string
	ln      net.Listener
	handle  ns.Handle // the server file: holders of it may reopen
	opener  uint32    // pid of the opener, for messages
	ready   chan net.Conn
	done    chan struct{}
	once    sync.Once
	untrack func()

	// waiting: a client is accepted and waits in ready; wakes are the
	// pollers to wake when one does (Poll).
	mu      sync.Mutex
	waiting bool
	wakes   []func()
}

// listenTCP binds and returns the handle of the server file.
func (p *Provider) listenTCP(ctx context.Context, key, name string, explicit bool, bind netip.AddrPort, c ns.Caller) (ns.Handle, error) {
	if err := mayBind("tcp", name, int(bind.Port()), c); err != nil {
		return nil, err
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", bind.String())
	if err != nil {
		return nil, dialError("tcp", name, err)
	}
	l := &tcpListener{
		p: p, key: key, ln: ln, opener: c.Pid,
		ready: make(chan net.Conn), done: make(chan struct{}),
	}
	h := &tcpServerHandle{l: l, name: name, explicit: explicit, caller: c, g: newGate()}
	l.handle = h
	if p.claimServer(key, l) != nil {
		ln.Close()
		return nil, syscall.EADDRINUSE
	}
	l.untrack = p.track("tcp", name, c)
	go l.acceptLoop()
	return h, nil
}

func (l *tcpListener) acceptLoop() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			select {
			case <-l.done:
				return
			default:
			}
			// EMFILE and friends: the listener is fine, resources are not.
			l.p.Log.Warn("accept failed", "listener", l.key, "err", err)
			select {
			case <-l.done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		l.setWaiting(true)
		select {
		case l.ready <- c:
			l.setWaiting(false)
		case <-l.done:
			c.Close()
			return
		}
	}
}

// setWaiting records whether a client waits, and wakes pollers when one
// starts to.
func (l *tcpListener) setWaiting(w bool) {
	l.mu.Lock()
	l.waiting = w
	var wakes []func()
	if w {
		wakes, l.wakes = l.wakes, nil
	}
	l.mu.Unlock()
	for _, wake := range wakes {
		wake()
	}
}

// poll: a read or write of the server file returns at once (it accepts)
// when a client waits.
func (l *tcpListener) poll(want uint32, wake func()) uint32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.waiting {
		return want & (unix.POLLIN | unix.POLLOUT)
	}
	if wake != nil {
		l.wakes = append(l.wakes, wake)
	}
	return 0
}

// accept waits for the next client.
func (l *tcpListener) accept(ctx context.Context) (net.Conn, error) {
	select {
	case c := <-l.ready:
		return c, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-l.done:
		return nil, ns.Errorf(syscall.EBADF, "%s: listener closed", l.key)
	}
}

func (l *tcpListener) close() {
	l.once.Do(func() {
		close(l.done)
		l.ln.Close()
		l.p.dropServer(l.key, l)
		l.untrack()
	})
}

// reopen is the concurrent server: opening a bound name again, by a
// process that holds the server file, accepts the next client.
func (l *tcpListener) reopen(ctx context.Context, name string, explicit bool, c ns.Caller) (ns.Handle, error) {
	if !c.HoldsHandle(l.handle) {
		return nil, awaitRelease(ctx, c, l.done, "tcp/"+name, l.opener)
	}
	conn, err := l.accept(ctx)
	if err != nil {
		return nil, err
	}
	return l.p.acceptedHandle(conn, name, explicit, c), nil
}

// acceptedHandle wraps an accepted client; with "!" its first read returns
// "HOST PORT\n".
func (p *Provider) acceptedHandle(conn net.Conn, name string, explicit bool, c ns.Caller) ns.Handle {
	h := ns.Socket(&trackedConn{Conn: conn, untrack: p.track("tcp", name, c)})
	if !explicit {
		return h
	}
	peer := addrPortOf(conn.RemoteAddr())
	return &headerFirst{Handle: h, header: []byte(fmt.Sprintf("%s %d\n", peerHost(peer.Addr()), peer.Port()))}
}

// headerFirst returns header on the first read(s), then the stream.
type headerFirst struct {
	ns.Handle
	mu     sync.Mutex
	header []byte
}

func (h *headerFirst) Poll(want uint32, wake func()) uint32 {
	h.mu.Lock()
	held := len(h.header) > 0
	h.mu.Unlock()
	if held && want&unix.POLLIN != 0 {
		return want & (unix.POLLIN | unix.POLLOUT)
	}
	return ns.Poll(h.Handle, want, wake)
}

func (h *headerFirst) Read(ctx context.Context, p []byte) (int, error) {
	h.mu.Lock()
	if len(h.header) > 0 {
		n := copy(p, h.header)
		h.header = h.header[n:]
		h.mu.Unlock()
		return n, nil
	}
	h.mu.Unlock()
	return h.Handle.(ns.Reader).Read(ctx, p)
}

func (h *headerFirst) Write(ctx context.Context, p []byte) (int, error) {
	return h.Handle.(ns.Writer).Write(ctx, p)
}

// tcpServerHandle is the handle of the open that bound the name: a simple
// server whose first read or write accepts a client. Closing it unbinds.
type tcpServerHandle struct {
	l        *tcpListener
	name     string
	explicit bool
	caller   ns.Caller
	g        gate
	conn     ns.Handle // the accepted client, once there is one
	// accepted is conn for Poll, which must not wait for g (a read
	// holds it while it waits for a client).
	accepted atomic.Pointer[ns.Handle]
}

func (h *tcpServerHandle) client(ctx context.Context) (ns.Handle, error) {
	if err := h.g.lock(ctx); err != nil {
		return nil, err
	}
	defer h.g.unlock()
	if h.conn == nil {
		c, err := h.l.accept(ctx)
		if err != nil {
			return nil, err
		}
		h.conn = h.l.p.acceptedHandle(c, h.name, h.explicit, h.caller)
		conn := h.conn
		h.accepted.Store(&conn)
	}
	return h.conn, nil
}

func (h *tcpServerHandle) Poll(want uint32, wake func()) uint32 {
	if c := h.accepted.Load(); c != nil {
		return ns.Poll(*c, want, wake)
	}
	return h.l.poll(want, wake)
}

func (h *tcpServerHandle) Read(ctx context.Context, p []byte) (int, error) {
	c, err := h.client(ctx)
	if err != nil {
		return 0, err
	}
	return c.(ns.Reader).Read(ctx, p)
}

func (h *tcpServerHandle) Write(ctx context.Context, p []byte) (int, error) {
	c, err := h.client(ctx)
	if err != nil {
		return 0, err
	}
	return c.(ns.Writer).Write(ctx, p)
}

func (h *tcpServerHandle) Close() error {
	h.l.close()
	// A read or write may hold the gate while it waits in accept; the
	// listener is closed now, so it returns soon.
	h.g <- struct{}{}
	defer h.g.unlock()
	if h.conn != nil {
		return h.conn.Close()
	}
	return nil
}
