package ftp

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	ftplib "github.com/jlaffaye/ftp"

	"wirefs/internal/ns"
	"wirefs/internal/remote"
	"wirefs/internal/remote/session"
)

// DefaultConnections is how many logged-in control connections a session
// keeps at most (Options.Connections, the ftp_connections mount option).
// FTP carries one transfer per connection, and a small file costs about
// two and a half round trips however small (EPSV, the data connection,
// RETR), so files are fetched in parallel over many connections: far from
// the server, a cold grep -r of a few thousand files needs tens of them.
// Of the connections, one is kept for metadata (Stat, List and Mkdir
// never wait behind reads), and one more for foreground transfers:
// background ones (remote.Background, the cache's prefetch) hold at most
// all but two, so a read a program waits for never queues behind them.
// Servers that allow fewer logins per address refuse the others (421);
// the session then keeps what it has (see refusedLogin).
const DefaultConnections = 32

// poolTimes are the pool's clocks; tests shorten them.
type poolTimes struct {
	keepAlive   time.Duration // NOOP on a connection idle this long, so the server keeps it
	idleTimeout time.Duration // close a connection unused this long
	park        time.Duration // a transfer waits this long for the next range (read.go)
	gapGrace    time.Duration // and this long once a range waits beyond a gap
	// Round trips count as at least this long (bound): tests treat a
	// loopback server as a far one, whose sessions use every
	// connection Options.Connections allows.
	rttFloor time.Duration
}

var defaultPoolTimes = poolTimes{keepAlive: 30 * time.Second, idleTimeout: 5 * time.Minute,
	park: 500 * time.Millisecond, gapGrace: 20 * time.Millisecond}

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
	arm    *arm     // the data connection made ahead for the next transfer (arm.go)
	arming bool     // the next transfer's passive command is sent, its reply not read
	killed bool

	capture io.Writer         // when set, data read by the next listing is copied here
	replies *textproto.Reader // replies to what send sent (reply)

	broken    bool  // a follow-up command lost the connection: discard, do not reuse
	lease     lease // the bounds it is leased under
	reused    bool  // came from the idle list (it may have gone stale)
	lastUsed  time.Time
	lastAlive time.Time
}

// lease is what a leased connection holds of the pool's bounds.
type lease struct {
	transfer bool // a transfer: at most limit-1 at once
	ahead    bool // a background transfer: at most limit-2 at once
}

// fits reports whether one more lease l stays within the bounds; b.mu is
// held.
func (b *Backend) fits(l lease) bool { return b.fitsIn(l, b.bound()) }

// fitsIn reports whether one more lease l stays within the bounds of a
// pool of n connections; b.mu is held.
func (b *Backend) fitsIn(l lease, n int) bool {
	transfers := max(n-1, 1) // with one connection, everything shares it
	return b.leased < n &&
		(!l.transfer || b.leasedTransfers < transfers) &&
		(!l.ahead || b.leasedAhead < n-2)
}

// Connections hide round trips, and only those: a small file keeps a
// connection for about two and a half round trips of waiting plus the
// server's work on it (accept, open, send, close: about a millisecond
// for vsftpd), so beyond 1 + waiting/work connections the transfers
// queue at the server, and each login costs it a process. Near the
// server (loopback, a LAN) a few connections are as fast as many, and
// logging in 30 made a cold ls -lR or cp -r slower; far from it the
// session needs all ftp_connections. So the pool uses at most
// minConns + RTT/rttPerConn connections (RTT: the shortest round trip
// the session has seen), and never more than limit: 6 on loopback, 9
// at 1 ms, all 32 from 10 ms.
const (
	minConns   = 6 // metadata, the program's reads, four ahead
	rttPerConn = time.Millisecond / 3
)

// bound is how many connections the session may lease at once: limit,
// or fewer where the round trips are short (above); b.mu is held.
func (b *Backend) bound() int { return min(b.limit, b.worth()) }

// worth is how many connections the round trips make worth having (any
// number before the first sample).
func (b *Backend) worth() int {
	rtt := max(time.Duration(b.rtt.Load()), b.times.rttFloor)
	if rtt <= 0 {
		return math.MaxInt
	}
	return minConns + int(rtt/rttPerConn)
}

// noteRTT takes d, the time a command took to be answered, as a sample
// of the round-trip time: the session keeps the shortest.
func (b *Backend) noteRTT(d time.Duration) {
	for {
		old := b.rtt.Load()
		if old > 0 && old <= int64(d) || b.rtt.CompareAndSwap(old, max(int64(d), 1)) {
			return
		}
	}
}

// take counts lease l in (give: out) and wakes the waiters when a lease
// ends; b.mu is held.
func (b *Backend) take(l lease, n int) {
	b.leased += n
	if l.transfer {
		b.leasedTransfers += n
	}
	if l.ahead {
		b.leasedAhead += n
	}
	if n < 0 {
		b.wakeWaiters()
	}
}

// wakeWaiters wakes every get waiting for the bounds to change; b.mu is
// held.
func (b *Backend) wakeWaiters() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// get leases a connection for op on p: an idle one or a new one (or
// waits for one, while the logins under way are as many as the pool's
// connections).
// transfer selects the slot class: transfers may hold at most limit-1
// connections, background transfers (remote.IsBackground(ctx)) limit-2;
// a background transfer on a server that allows fewer than three
// connections fails at once (a prefetch is given up, never queued for
// ever).
func (b *Backend) get(ctx context.Context, transfer bool, op, p string) (*pconn, error) {
	l := lease{transfer: transfer, ahead: transfer && remote.IsBackground(ctx)}
	for {
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			return nil, b.srv.Wrap(op, p, session.ErrClosed)
		}
		if l.ahead && b.limit < 3 {
			b.mu.Unlock()
			return nil, b.srv.Errorf(syscall.EAGAIN, op, p, "no connection to spare for a transfer ahead (the server allows %d)", b.limit)
		}
		// Logins ramp up as TCP's slow start does: at most as many
		// under way as there are connections (two at first), so that
		// a burst of short requests that connections returned
		// meanwhile serve does not log in the whole pool (each login
		// costs a server process and five round trips).
		ramp := len(b.idle) == 0 && b.dialing >= max(2, len(b.live))
		fits := b.fits(l)
		// A bound lowered by a refusal is a guess: the refusal may
		// have been for a connection the server was still ending,
		// or for another client's from the same address. A lease
		// that only the guess keeps out has one more connection
		// logged in (one such login at a time) to find out, rather
		// than wait for ever for leases its own caller may hold.
		probe := !fits && !ramp && b.guessKeepsOut(l)
		login := probe || fits && len(b.idle) == 0 && !ramp
		var backoff time.Duration // after a refusal, logins wait this long (refusedLogin)
		if login {
			backoff = time.Until(b.loginAt)
		}
		if !fits && !probe || ramp || backoff > 0 {
			changed := b.changed
			b.mu.Unlock()
			if err := b.await(ctx, changed, backoff); err != nil {
				return nil, b.srv.Wrap(op, p, err)
			}
			continue
		}
		if !probe {
			b.take(l, 1)
			if len(b.idle) > 0 {
				pc := b.takeIdle(l)
				b.mu.Unlock()
				pc.lease, pc.reused = l, true
				return pc, nil
			}
		}
		b.dialing++
		b.probing = b.probing || probe
		b.mu.Unlock()
		pc, err := b.dial(ctx, op, p)
		b.mu.Lock()
		b.dialing--
		if probe {
			b.probing = false
		}
		b.wakeWaiters() // more logins may start
		if err == nil && !b.closed {
			b.loggedIn(pc)
			if probe {
				// Within the raised bound the lease may fit
				// now: the connection waits idle for it (or
				// for another lease that fits).
				b.idle = append(b.idle, pc)
				b.mu.Unlock()
				continue
			}
			b.mu.Unlock()
			pc.lease = l
			return pc, nil
		}
		if !probe {
			b.take(l, -1)
		}
		again := err != nil && b.refusedLogin(err)
		b.mu.Unlock()
		switch {
		case err == nil: // closed meanwhile
			pc.kill()
			return nil, b.srv.Wrap(op, p, session.ErrClosed)
		case again && ctx.Err() == nil:
			continue // wait for one of the connections it has
		}
		return nil, err
	}
}

// takeIdle takes an idle connection for lease l; there is one, and b.mu
// is held. It is the most recently used (the least likely to be stale),
// except that a transfer takes the most recent whose data connection made
// ahead is ready (arm.go): the server takes a data connection, and its
// bytes, only once its handshake is done, a round trip after the port was
// announced, so back-to-back transfers on one connection each waited for
// the handshake of the one the last had made. When a transfer finds its
// data connection not ready yet, a second connection is logged in beside
// it (loginAhead), and such transfers alternate between the two from then
// on: a burst of small files (cp -r in, fresh.go) costs one round trip
// each, not one and a half.
func (b *Backend) takeIdle(l lease) *pconn {
	n := len(b.idle)
	at := n - 1
	if l.transfer && !l.ahead {
		rtt := max(time.Duration(b.rtt.Load()), b.times.rttFloor)
		now := time.Now()
		for i := n - 1; i >= 0; i-- {
			if b.idle[i].armAge(now) >= rtt {
				at = i
				break
			}
		}
		if age := b.idle[at].armAge(now); age >= 0 && age < rtt && n == 1 {
			b.loginAhead()
		}
	}
	pc := b.idle[at]
	b.idle = slices.Delete(b.idle, at, at+1)
	return pc
}

// loginAhead logs in one more connection in the background, with a data
// connection made ahead, and puts it idle (takeIdle says why), unless a
// login is under way or the bound has no room; b.mu is held.
func (b *Backend) loginAhead() {
	if b.dialing > 0 || len(b.live) >= b.bound() {
		return
	}
	b.dialing++
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() { // the session's end ends the login
			select {
			case <-b.done:
				cancel()
			case <-ctx.Done():
			}
		}()
		pc, err := b.dial(ctx, "login", "")
		if err == nil {
			if err = pc.sendArm(); err == nil {
				pc.readArm()
			}
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		b.dialing--
		b.wakeWaiters()
		if err != nil {
			b.refusedLogin(err)
			b.log.Debug("ftp: a connection logged in ahead failed", "server", b.srv.Host, "err", err)
			if pc != nil { // logged in; its passive command failed
				pc.kill()
			}
			return
		}
		if pc.broken || b.closed {
			pc.kill()
			return
		}
		b.loggedIn(pc)
		pc.lastUsed, pc.lastAlive = time.Now(), time.Now()
		b.idle = append(b.idle, pc)
	}()
}

// loggedIn counts pc, just logged in, live; b.mu is held.
func (b *Backend) loggedIn(pc *pconn) {
	b.live[pc] = struct{}{}
	b.peak = max(b.peak, len(b.live))
	// A lowered bound was a guess (refusedLogin): the server accepts at
	// least what it logged in.
	b.limit = max(b.limit, min(len(b.live), b.max))
	b.loginBackoff = 0
}

// await waits until the bounds change (changed is closed), or retry
// (when > 0) passed, or ctx or the session ends.
func (b *Backend) await(ctx context.Context, changed <-chan struct{}, retry time.Duration) error {
	var again <-chan time.Time
	if retry > 0 {
		t := time.NewTimer(retry)
		defer t.Stop()
		again = t.C
	}
	select {
	case <-changed:
	case <-again:
	case <-ctx.Done():
		return session.Interrupted(ctx)
	case <-b.done:
		return session.ErrClosed
	}
	return nil
}

// guessKeepsOut reports whether only a bound lowered by a refusal keeps
// lease l out (the pool the round trips make worth having would take
// it), and no login beyond the bound is under way; b.mu is held.
func (b *Backend) guessKeepsOut(l lease) bool {
	n := min(b.max, b.worth())
	return !b.probing && b.limit < n && b.fitsIn(l, n)
}

// Logins after a refusal back off: the first waits loginBackoffMin, each
// one refused again twice as long, up to loginBackoffMax; a connection
// given back meanwhile serves at once.
const (
	loginBackoffMin = 50 * time.Millisecond
	loginBackoffMax = 5 * time.Second
)

// refusedLogin handles a login the server refused because the client
// has too many connections (vsftpd's max_per_ip, pyftpdlib's
// max_cons_per_ip: "421 too many connections"): when the session has
// others, it keeps those (the bound becomes their number, logged once)
// and reports true: the lease waits for one of them. b.mu is held.
func (b *Backend) refusedLogin(err error) bool {
	if ns.Errno(err) != syscall.EUSERS || len(b.live) == 0 {
		return false
	}
	// The server allows those it logged in, and perhaps the logins
	// still under way: each refusal guesses again, each success raises
	// the guess (dial), so once the logins settle it is what the server
	// took. Never fewer than it once held at the same time: a refusal
	// right after ours closed means the server has not ended them yet
	// (vsftpd's session process exits after the client closes), and a
	// guess of two would have turned prefetch off for good on a server
	// that allows three (TestServerLimitsLogins saw it under load).
	if guess := max(len(b.live)+b.dialing, b.peak); guess < b.limit {
		b.limit = guess
		b.wakeWaiters() // a background lease may have to give up now
	}
	b.loginBackoff = min(max(2*b.loginBackoff, loginBackoffMin), loginBackoffMax)
	b.loginAt = time.Now().Add(b.loginBackoff)
	if !b.warnedLimit {
		b.warnedLimit = true
		b.log.Warn("ftp: the server refuses more logins from this client; using the connections it has",
			"server", b.srv.Host, "connections", b.limit, "err", err)
	}
	return true
}

// release gives back the bounds a lease held.
func (b *Backend) release(l lease) {
	b.mu.Lock()
	b.take(l, -1)
	b.mu.Unlock()
}

// put returns a connection to the idle list, or discards it when it
// turned out broken.
func (b *Backend) put(pc *pconn) {
	if pc.broken {
		b.discard(pc)
		return
	}
	pc.lastAlive = time.Now()
	// Read before pc is idle: another goroutine may lease it at once.
	l := pc.lease
	b.mu.Lock()
	closed := b.closed
	if !closed {
		b.idle = append(b.idle, pc)
	}
	b.take(l, -1)
	b.mu.Unlock()
	if closed {
		pc.quit()
	}
}

// discard closes a connection that failed; it is not reused.
func (b *Backend) discard(pc *pconn) {
	pc.kill()
	b.forget(pc)
	b.release(pc.lease)
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

// dial opens and logs in a new control connection for op on p; get
// counts it live.
func (b *Backend) dial(ctx context.Context, op, p string) (*pconn, error) {
	pc := &pconn{b: b}
	stop := context.AfterFunc(ctx, pc.kill)
	defer stop()
	lc := &loginConn{} // login.go
	if script := b.loginScript(); script != nil {
		lc.script, lc.scripted = slices.Clone(script), true
	}
	opts := []ftplib.DialOption{
		ftplib.DialWithDialFunc(func(_, addr string) (net.Conn, error) {
			if pc.ctrl == nil {
				c, err := pc.dialControl(ctx)
				if err != nil {
					return nil, err
				}
				lc.Conn = c
				return lc, nil
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
		if tooManyConnections(err) && ctx.Err() == nil {
			return nil, b.srv.Errorf(syscall.EUSERS, op, p, "the server refuses more connections from this client: %v", err)
		}
		var nsErr *ns.Error // dialControl's own: no FTPS
		if errors.As(err, &nsErr) && ctx.Err() == nil {
			return nil, b.srv.Error(nsErr.Errno, op, p, err)
		}
		return nil, b.srv.Failure(ctx, op, p, err, true)
	}
	pc.sc = sc
	err = sc.Login(b.user, b.password)
	rec, lerr := lc.done()
	if errors.Is(err, errLoginOutOfStep) || err == nil && lerr != nil {
		pc.kill()
		b.dropLoginScript()
		if ctx.Err() == nil {
			return b.dial(ctx, op, p)
		}
		return nil, b.srv.Failure(ctx, op, p, errLoginOutOfStep, true)
	}
	if err != nil {
		pc.kill()
		if tooManyConnections(err) && ctx.Err() == nil {
			return nil, b.srv.Errorf(syscall.EUSERS, op, p, "the server refuses more logins from this client: %v", err)
		}
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
	b.keepLoginScript(rec)
	pc.ctrl.SetTimeout(b.srv.Timeout)
	now := time.Now()
	pc.lastUsed, pc.lastAlive = now, now
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
	return pc.useData(raw)
}

// useData makes raw, a connected data socket, the one a transfer on pc
// reads or writes (and kill closes).
func (pc *pconn) useData(raw net.Conn) (net.Conn, error) {
	b := pc.b
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
	if pc.arm != nil && pc.arm.raw != nil {
		pc.arm.raw.Close()
	}
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
	if err := pc.send(cmd); err != nil {
		return "", err
	}
	_, msg, err := pc.reply(2)
	return msg, err
}

// send writes commands in one write: a server reads and answers them in
// order, so several cost one round trip, not one each (RFC 959 lets a
// client send the next command before the reply; vsftpd, ProFTPD and
// pyftpdlib read commands as a stream). Only commands whose outcome the
// next ones may ignore go together.
func (pc *pconn) send(cmds ...string) error {
	var b strings.Builder
	for _, cmd := range cmds {
		if strings.ContainsAny(cmd, "\r\n") {
			return ftplib.ErrInvalidCommand
		}
		b.WriteString(cmd + "\r\n")
	}
	_, err := io.WriteString(pc.cmds, b.String())
	return err
}

// reply reads the server's next reply to a command sent with send; a
// code that is not of class want (1-5) is a *textproto.Error, as
// jlaffaye's are. Between commands jlaffaye's own reader has nothing
// buffered (it reads each reply whole, and the server sends nothing
// unasked), and so has this one once every reply to what send sent was
// read: the two take turns on the control connection.
func (pc *pconn) reply(want int) (int, string, error) {
	if pc.replies == nil {
		pc.replies = textproto.NewReader(bufio.NewReader(pc.cmds))
	}
	return pc.replies.ReadResponse(want)
}

// openData sends EPSV (PASV once EPSV failed) and cmds in one write, reads
// the passive reply and connects the data connection it announces: one
// round trip less than asking for the port first, since a server reads the
// transfer command after the passive one and accepts the data connection
// once it arrives (as it would had the command come later). The replies to
// cmds are the caller's to read, except when the passive command is
// refused: then cmds were refused too (there is no data connection) and
// their replies are read here.
func (pc *pconn) openData(cmds ...string) (net.Conn, error) {
	b := pc.b
	pasv := b.noEPSV.Load()
	verb := "EPSV"
	if pasv {
		verb = "PASV"
	}
	sent := time.Now()
	if err := pc.send(append([]string{verb}, cmds...)...); err != nil {
		return nil, err
	}
	code, msg, err := pc.reply(2)
	if err != nil {
		var reply *textproto.Error
		if !errors.As(err, &reply) {
			return nil, err
		}
		for range cmds {
			if _, _, cerr := pc.reply(1); cerr != nil && !errors.As(cerr, new(*textproto.Error)) {
				return nil, cerr
			}
		}
		if !pasv && reply.Code/100 == 5 {
			if !b.noEPSV.Swap(true) {
				b.log.Info("ftp: the server refuses EPSV; using PASV from now on", "server", b.srv.Host, "err", err)
			}
			return pc.openData(cmds...)
		}
		return nil, err
	}
	// A sample of the round trip (bound): only a reply to what was
	// just sent (a refusal may have come before, with a dying session).
	b.noteRTT(time.Since(sent))
	addr, err := b.dataAddr(code, msg)
	if err != nil {
		pc.broken = true // the command waits for a connection that never comes
		return nil, err
	}
	data, err := pc.dialData(addr)
	if err != nil {
		pc.broken = true // the control connection is out of step: lost
		return nil, err
	}
	return data, nil
}

// transfer is the data of one RETR: Read reads the data connection, Close
// closes it and reads the server's final reply (226, or why the transfer
// failed), as jlaffaye's Response does, and then the reply to the
// passive command sent after the RETR (arm.go).
type transfer struct {
	pc     *pconn
	data   net.Conn
	closed bool
}

func (t *transfer) Read(p []byte) (int, error) { return t.data.Read(p) }

func (t *transfer) Close() error {
	if t.closed {
		return nil
	}
	t.closed = true
	cerr := t.data.Close()
	_, _, err := t.pc.reply(2)
	if !isConnLoss(err) {
		t.pc.readArm()
	}
	return errors.Join(cerr, err)
}

// transferData sends cmds, whose last is a transfer command, and returns
// its data connection: the one made ahead when pc has it (with the passive
// command of the next transfer behind cmds, arm.go: the data flow one
// round trip after), else through openData (the caller sends the next
// passive command with sendArm once the transfer started: sent with cmds,
// the server could take it before the client connected for this one, if
// this one fails at once, and replace the listener).
func (pc *pconn) transferData(cmds ...string) (data net.Conn, ahead bool, err error) {
	if data = pc.takeArm(); data != nil {
		if err := pc.send(append(cmds, pc.b.passiveVerb())...); err != nil {
			data.Close()
			return nil, false, err
		}
		pc.arming = true
		return data, true, nil
	}
	data, err = pc.openData(cmds...)
	return data, false, err
}

// retr starts the transfer of the file sp from off: REST (at an offset)
// and RETR after a passive command, or on the data connection made
// ahead (transferData): one round trip to the data, or two and a half,
// where jlaffaye's RetrFrom, which waits for each reply, takes three and
// a half.
func (pc *pconn) retr(sp string, off int64) (*transfer, error) {
	cmds := []string{"RETR " + sp}
	if off > 0 {
		cmds = []string{"REST " + strconv.FormatInt(off, 10), cmds[0]}
	}
	data, ahead, err := pc.transferData(cmds...)
	if err != nil {
		return nil, err
	}
	if off > 0 {
		if _, _, err := pc.reply(3); err != nil {
			// The RETR went anyway and sends from the start:
			// its replies are still to come.
			data.Close()
			pc.broken = true
			return nil, err
		}
	}
	if _, _, err := pc.reply(1); err != nil { // 150 (or 125), or a refusal
		data.Close()
		if isConnLoss(err) {
			return nil, err
		}
		pc.readArm()
		if ahead && cantOpenData(err) && !pc.broken {
			// The server no longer took the connection made
			// ahead: once more, on a new one.
			pc.disarm()
			return pc.retr(sp, off)
		}
		return nil, err
	}
	if !ahead {
		if err := pc.sendArm(); err != nil {
			data.Close()
			return nil, err
		}
	}
	return &transfer{pc: pc, data: data}, nil
}

// stor sends r to the file sp (on the server) and returns the bytes sent:
// STOR after a passive command, or on the data connection made ahead
// (transferData), and the data as soon as the data connection is up,
// without waiting for the server's 150, which tells only that it
// accepted the connection: two or three round trips less than
// jlaffaye's Stor. A refusal (553, 550) arriving while the data are sent
// stops them.
//
// before, when not empty, is a command sent ahead of the STOR in the same
// write, whose reply readBefore reads (the STOR's comes after it); an
// error readBefore returns (a lost connection) ends the transfer.
func (pc *pconn) stor(sp string, r io.Reader, before string, readBefore func() error) error {
	cmds := []string{"STOR " + sp}
	if before != "" {
		cmds = append([]string{before}, cmds...)
	}
	data, ahead, err := pc.transferData(cmds...)
	if err != nil {
		return err
	}
	first := make(chan error, 1)
	go func() {
		var err error
		if before != "" {
			err = readBefore()
		}
		if err == nil {
			_, _, err = pc.reply(1) // 150 (or 125), or a refusal
		}
		if err == nil && !ahead {
			err = pc.sendArm()
		}
		if err != nil {
			data.Close() // the server will not read: stop the copy
		}
		first <- err
	}()
	n, cerr := io.Copy(data, r)
	if hs, ok := data.(interface{ Handshake() error }); ok && n == 0 && cerr == nil {
		// An empty file over TLS: the handshake that a first write
		// would have made (ProFTPD refuses the transfer without it).
		cerr = hs.Handshake()
	}
	if err := data.Close(); err != nil && cerr == nil {
		cerr = err
	}
	if err := <-first; err != nil {
		if !isConnLoss(err) {
			pc.readArm()
		}
		return err
	}
	_, _, err = pc.reply(2) // 226, or why the transfer failed
	if !isConnLoss(err) {
		pc.readArm()
	}
	if err != nil {
		return errors.Join(err, cerr)
	}
	return cerr
}

// dataAddr is the address of the data connection that an EPSV (229) or
// PASV (227) reply announces; like jlaffaye (and for the same reason: NAT
// and hostile servers), the host is always the control connection's.
func (b *Backend) dataAddr(code int, msg string) (string, error) {
	host, _, err := net.SplitHostPort(b.addr)
	if err != nil {
		return "", err
	}
	port, err := passivePort(code, msg)
	if err != nil {
		return "", ns.Errorf(syscall.EIO, "the server's passive reply is not understood: %d %s", code, msg)
	}
	return net.JoinHostPort(host, strconv.Itoa(port)), nil
}

// passivePort reads the port of an EPSV reply, "229 Entering Extended
// Passive Mode (|||PORT|)", or of a PASV reply, "227 Entering Passive
// Mode (h1,h2,h3,h4,p1,p2)".
func passivePort(code int, msg string) (int, error) {
	open, end := strings.IndexByte(msg, '('), strings.LastIndexByte(msg, ')')
	if open < 0 || end < open {
		return 0, errors.New("no parenthesis")
	}
	inner := msg[open+1 : end]
	var port int
	switch code {
	case ftplib.StatusExtendedPassiveMode:
		// The delimiter is the first character (RFC 2428: any of
		// 33-126; "|" in practice): d d d PORT d.
		if len(inner) < 5 {
			return 0, errors.New("too short")
		}
		d := inner[:1]
		f := strings.Split(inner, d)
		if len(f) != 5 || f[1] != "" || f[2] != "" || f[4] != "" {
			return 0, errors.New("not (|||PORT|)")
		}
		p, err := strconv.Atoi(f[3])
		if err != nil {
			return 0, err
		}
		port = p
	case ftplib.StatusPassiveMode:
		f := strings.Split(inner, ",")
		if len(f) != 6 {
			return 0, errors.New("not six numbers")
		}
		var hi, lo int
		var err error
		if hi, err = strconv.Atoi(strings.TrimSpace(f[4])); err != nil {
			return 0, err
		}
		if lo, err = strconv.Atoi(strings.TrimSpace(f[5])); err != nil {
			return 0, err
		}
		if hi < 0 || hi > 255 || lo < 0 || lo > 255 {
			return 0, errors.New("port byte out of range")
		}
		port = hi<<8 | lo
	default:
		return 0, fmt.Errorf("reply %d", code)
	}
	if port < 1 || port > 65535 {
		return 0, fmt.Errorf("port %d", port)
	}
	return port, nil
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
		case now.Sub(pc.lastAlive) >= b.times.keepAlive || pc.staleArm(now):
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
		b.mu.Lock()
		if !b.fits(lease{}) {
			b.idle = append(b.idle, pc)
			b.mu.Unlock()
			continue
		}
		b.take(lease{}, 1)
		b.mu.Unlock()
		pc.lease = lease{}
		if err := pc.keepAlive(now); err != nil {
			b.log.Debug("ftp: idle connection lost", "server", b.srv.Host, "err", err)
			b.discard(pc)
		} else {
			b.put(pc)
		}
	}
}

// keepAlive sends an idle connection's server a command so that it keeps
// the connection: ABOR where a data connection made ahead went stale (it
// ends the server's listener too, arm.go), else NOOP.
func (pc *pconn) keepAlive(now time.Time) error {
	if pc.staleArm(now) {
		return pc.endArm()
	}
	return pc.sc.NoOp()
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
