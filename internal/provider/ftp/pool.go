package ftp

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/textproto"
	"strings"
	"sync"
	"syscall"
	"time"

	ftplib "github.com/jlaffaye/ftp"

	"wirefs/internal/ns"
	"wirefs/internal/remote"
	"wirefs/internal/remote/session"
)

// MaxConns bounds the logged-in control connections of one session. FTP
// carries one transfer per connection, so this is also how many transfers
// run at once; one connection is kept for metadata (MaxConns-1 transfers
// at most) so that Stat, List and Mkdir never wait behind reads, and one
// more for foreground transfers: background ones (remote.Background, the
// cache's prefetch) hold at most MaxConns-2, so a read a program waits
// for never queues behind them.
const MaxConns = 4

// poolTimes are the pool's clocks; tests shorten them.
type poolTimes struct {
	keepAlive   time.Duration // NOOP on a connection idle this long, so the server keeps it
	idleTimeout time.Duration // close a connection unused this long
}

var defaultPoolTimes = poolTimes{keepAlive: 30 * time.Second, idleTimeout: 5 * time.Minute}

// abortWait bounds the wait for the server's reply after a transfer the
// client abandoned; a server that does not answer costs its connection,
// never the caller's time.
const abortWait = 2 * time.Second

// pconn is one logged-in control connection. Only the goroutine that
// leased it from the pool uses it, except kill, which any goroutine may
// call to break a blocked operation.
type pconn struct {
	b    *Backend
	sc   *ftplib.ServerConn
	ctrl *session.Watched // the control connection's TCP socket
	cmds net.Conn         // where raw commands go: ctrl, or TLS over it

	mu     sync.Mutex
	data   net.Conn // the open data connection, closed by kill
	killed bool

	capture io.Writer // when set, data read by the next listing is copied here

	broken    bool // a follow-up command lost the connection: discard, do not reuse
	transfer  bool // leased with a transfer slot
	ahead     bool // and a background one
	reused    bool // came from the idle list (it may have gone stale)
	lastUsed  time.Time
	lastAlive time.Time
}

// get leases a connection for op on p: an idle one or a new one.
// transfer selects the slot class: transfers may hold at most MaxConns-1
// connections, background transfers (remote.IsBackground(ctx)) MaxConns-2.
func (b *Backend) get(ctx context.Context, transfer bool, op, p string) (*pconn, error) {
	ahead := transfer && remote.IsBackground(ctx)
	var sems []chan struct{}
	if ahead {
		sems = append(sems, b.background)
	}
	if transfer {
		sems = append(sems, b.transfers)
	}
	sems = append(sems, b.slots)
	for i, sem := range sems {
		select {
		case sem <- struct{}{}:
			continue
		case <-ctx.Done():
		case <-b.done:
		}
		for _, held := range sems[:i] {
			<-held
		}
		if ctx.Err() != nil {
			return nil, b.srv.Wrap(op, p, session.Interrupted(ctx))
		}
		return nil, b.srv.Wrap(op, p, session.ErrClosed)
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		b.release(transfer, ahead)
		return nil, b.srv.Wrap(op, p, session.ErrClosed)
	}
	if n := len(b.idle); n > 0 {
		pc := b.idle[n-1] // the most recently used: the least likely to be stale
		b.idle = b.idle[:n-1]
		b.mu.Unlock()
		pc.transfer, pc.ahead, pc.reused = transfer, ahead, true
		return pc, nil
	}
	b.mu.Unlock()
	pc, err := b.dial(ctx, op, p)
	if err != nil {
		b.release(transfer, ahead)
		return nil, err
	}
	pc.transfer, pc.ahead = transfer, ahead
	return pc, nil
}

// release gives back the slots of a lease.
func (b *Backend) release(transfer, ahead bool) {
	<-b.slots
	if transfer {
		<-b.transfers
	}
	if ahead {
		<-b.background
	}
}

// put returns a healthy connection to the idle list.
func (b *Backend) put(pc *pconn) {
	pc.lastAlive = time.Now()
	// Read before pc is idle: another goroutine may lease it at once.
	transfer, ahead := pc.transfer, pc.ahead
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		pc.quit()
	} else {
		b.idle = append(b.idle, pc)
		b.mu.Unlock()
	}
	b.release(transfer, ahead)
}

// discard closes a connection that failed; it is not reused.
func (b *Backend) discard(pc *pconn) {
	pc.kill()
	b.forget(pc)
	b.release(pc.transfer, pc.ahead)
}

// dropIdle closes every idle connection: after one turned out dead, the
// others (same server) most likely are too.
func (b *Backend) dropIdle() {
	b.mu.Lock()
	idle := b.idle
	b.idle = nil
	b.mu.Unlock()
	for _, pc := range idle {
		pc.kill()
		b.forget(pc)
	}
}

func (b *Backend) forget(pc *pconn) {
	b.mu.Lock()
	delete(b.live, pc)
	b.mu.Unlock()
}

// dial opens and logs in a new control connection for op on p.
func (b *Backend) dial(ctx context.Context, op, p string) (*pconn, error) {
	pc := &pconn{b: b}
	stop := context.AfterFunc(ctx, pc.kill)
	defer stop()
	opts := []ftplib.DialOption{
		ftplib.DialWithDialFunc(func(_, addr string) (net.Conn, error) {
			if pc.ctrl == nil {
				return pc.dialControl(ctx)
			}
			return pc.dialData(addr)
		}),
		ftplib.DialWithDisabledEPSV(b.noEPSV.Load()),
	}
	if b.tls != nil {
		// With our own dial function jlaffaye leaves the control
		// connection to it (dialControl does AUTH TLS) and sends PBSZ
		// and PROT P after login; dialData protects data connections.
		opts = append(opts, ftplib.DialWithTLS(b.tls))
	}
	sc, err := ftplib.Dial(b.addr, opts...)
	if err != nil {
		pc.kill()
		var nsErr *ns.Error // dialControl's own: no FTPS
		if errors.As(err, &nsErr) && ctx.Err() == nil {
			return nil, b.srv.Error(nsErr.Errno, op, p, err)
		}
		return nil, b.srv.Failure(ctx, op, p, err, true)
	}
	pc.sc = sc
	if err := sc.Login(b.user, b.password); err != nil {
		pc.kill()
		var reply *textproto.Error
		if !errors.As(err, &reply) && isRefusalText(err) && ctx.Err() == nil {
			// jlaffaye reports a refused USER with the reply's text alone.
			return nil, b.srv.Errorf(syscall.EACCES, op, p, "the server refused the login as %q: %v", b.user, err)
		}
		if errors.As(err, &reply) && ctx.Err() == nil {
			errno, _ := replyErrno(reply.Code, reply.Msg)
			if reply.Code/100 == 5 {
				errno = syscall.EACCES
			}
			return nil, b.srv.Errorf(errno, op, p, "the server refused the login as %q: %d %s", b.user, reply.Code, strings.TrimSpace(reply.Msg))
		}
		return nil, b.srv.Failure(ctx, op, p, err, true)
	}
	pc.ctrl.SetTimeout(b.srv.Timeout)
	now := time.Now()
	pc.lastUsed, pc.lastAlive = now, now
	b.mu.Lock()
	closed := b.closed
	if !closed {
		b.live[pc] = struct{}{}
	}
	b.mu.Unlock()
	if closed {
		pc.kill()
		return nil, b.srv.Wrap(op, p, session.ErrClosed)
	}
	return pc, nil
}

// dialControl connects the control connection and, for FTPS, upgrades it
// with AUTH TLS. jlaffaye can do the upgrade itself, but then the TLS
// connection is out of reach, and SITE CHMOD (which jlaffaye lacks) must
// be sent on it.
func (pc *pconn) dialControl(ctx context.Context) (net.Conn, error) {
	b := pc.b
	d := net.Dialer{Timeout: b.srv.ConnectTimeout}
	raw, err := d.DialContext(ctx, "tcp", b.addr)
	if err != nil {
		return nil, err
	}
	pc.mu.Lock()
	pc.ctrl = session.Watch(raw, b.srv.ConnectTimeout, nil)
	killed := pc.killed
	pc.mu.Unlock()
	if killed {
		raw.Close()
		return nil, net.ErrClosed
	}
	if b.tls == nil {
		pc.cmds = pc.ctrl
		return pc.ctrl, nil
	}
	r := textproto.NewReader(bufio.NewReader(pc.ctrl))
	if _, _, err := r.ReadResponse(ftplib.StatusReady); err != nil {
		return nil, err
	}
	if _, err := io.WriteString(pc.ctrl, "AUTH TLS\r\n"); err != nil {
		return nil, err
	}
	if code, msg, err := r.ReadResponse(ftplib.StatusAuthOK); err != nil {
		if code != 0 {
			return nil, ns.Errorf(syscall.ENOTSUP, "the server does not offer FTPS (AUTH TLS): %d %s", code, msg)
		}
		return nil, err
	}
	tc := tls.Client(pc.ctrl, b.tls)
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, err
	}
	pc.cmds = tc
	// jlaffaye reads the greeting first; it was read above.
	return &greetedConn{Conn: tc, greeting: strings.NewReader("220 TLS session established\r\n")}, nil
}

// dialData opens a data connection to the address the server gave in its
// EPSV/PASV reply (jlaffaye uses the control connection's IP: never
// another host).
func (pc *pconn) dialData(addr string) (net.Conn, error) {
	b := pc.b
	raw, err := net.DialTimeout("tcp", addr, b.srv.ConnectTimeout)
	if err != nil {
		// A server (or a middlebox) that answers EPSV with a port
		// that cannot be reached: new connections use PASV instead.
		if !b.noEPSV.Swap(true) {
			b.log.Info("ftp: data connection failed; using PASV instead of EPSV from now on", "server", b.srv.Host, "err", err)
		}
		return nil, err
	}
	var c net.Conn = session.Watch(raw, b.srv.Timeout, nil)
	if b.tls != nil {
		c = &tlsDataConn{Conn: tls.Client(c, b.tls)}
	}
	if pc.capture != nil {
		c = &teeConn{Conn: c, to: pc.capture}
	}
	pc.mu.Lock()
	pc.data = raw
	killed := pc.killed
	pc.mu.Unlock()
	if killed {
		raw.Close()
		return nil, net.ErrClosed
	}
	return c, nil
}

// kill closes the connection's sockets at once, so that whatever blocks on
// them returns; the connection is not usable afterwards.
func (pc *pconn) kill() {
	pc.mu.Lock()
	pc.killed = true
	ctrl, data := pc.ctrl, pc.data
	pc.mu.Unlock()
	if data != nil {
		data.Close()
	}
	if ctrl != nil {
		ctrl.Close()
	}
}

// quit says goodbye to the server (without waiting long) and closes.
func (pc *pconn) quit() {
	pc.ctrl.SetTimeout(abortWait)
	pc.sc.Quit()
	pc.kill()
	pc.b.forget(pc)
}

// raw sends a command jlaffaye has no method for and reads the reply;
// errors are *textproto.Error for refusals, like jlaffaye's.
func (pc *pconn) raw(cmd string) (string, error) {
	if strings.ContainsAny(cmd, "\r\n") {
		return "", ftplib.ErrInvalidCommand
	}
	if _, err := io.WriteString(pc.cmds, cmd+"\r\n"); err != nil {
		return "", err
	}
	// Between commands jlaffaye's reader has nothing buffered (each
	// reply is read whole), and the server sends nothing unasked, so a
	// reader of our own sees exactly this reply.
	_, msg, err := textproto.NewReader(bufio.NewReader(pc.cmds)).ReadResponse(2)
	return msg, err
}

// janitor keeps idle connections alive with NOOPs and closes those unused
// for idleTimeout.
func (b *Backend) janitor() {
	defer b.wg.Done()
	tick := time.NewTicker(b.times.keepAlive / 2)
	defer tick.Stop()
	for {
		select {
		case <-b.done:
			return
		case <-tick.C:
			b.tidy()
		}
	}
}

func (b *Backend) tidy() {
	now := time.Now()
	var drop, ping []*pconn
	b.mu.Lock()
	keep := b.idle[:0]
	for _, pc := range b.idle {
		switch {
		case now.Sub(pc.lastUsed) >= b.times.idleTimeout:
			drop = append(drop, pc)
		case now.Sub(pc.lastAlive) >= b.times.keepAlive:
			ping = append(ping, pc)
		default:
			keep = append(keep, pc)
		}
	}
	b.idle = keep
	b.mu.Unlock()
	for _, pc := range drop {
		pc.quit()
	}
	for _, pc := range ping {
		// A NOOP occupies the connection: it takes a slot like any
		// operation, or waits for the next round.
		select {
		case b.slots <- struct{}{}:
		default:
			b.mu.Lock()
			b.idle = append(b.idle, pc)
			b.mu.Unlock()
			continue
		}
		pc.transfer, pc.ahead = false, false
		if err := pc.sc.NoOp(); err != nil {
			b.log.Debug("ftp: idle connection lost", "server", b.srv.Host, "err", err)
			b.discard(pc)
		} else {
			b.put(pc)
		}
	}
}

// greetedConn replays the greeting that dialControl consumed before AUTH
// TLS, then reads the TLS connection.
type greetedConn struct {
	net.Conn
	greeting *strings.Reader
}

func (c *greetedConn) Read(p []byte) (int, error) {
	if c.greeting.Len() > 0 {
		return c.greeting.Read(p)
	}
	return c.Conn.Read(p)
}

// tlsDataConn ends an upload's TLS data connection gracefully. A TLS 1.3
// server sends session tickets the uploading client never reads; closing a
// socket with unread data makes the kernel send a reset, and the server
// (vsftpd, proftpd) then reports the upload failed: "426 Failure reading
// network stream". So after writing, Close sends close_notify and reads
// to the server's end (bounded by abortWait) first. Downloads are closed
// at once: reading to the end would fetch the rest of the file.
type tlsDataConn struct {
	*tls.Conn
	wrote bool
}

func (c *tlsDataConn) Write(p []byte) (int, error) {
	c.wrote = true
	return c.Conn.Write(p)
}

func (c *tlsDataConn) Close() error {
	if c.wrote {
		if c.CloseWrite() == nil {
			c.SetReadDeadline(time.Now().Add(abortWait))
			io.Copy(io.Discard, c.Conn)
		}
	}
	return c.Conn.Close()
}

// teeConn copies what is read to a buffer (the raw listing).
type teeConn struct {
	net.Conn
	to io.Writer
}

func (c *teeConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.to.Write(p[:n])
	return n, err
}
