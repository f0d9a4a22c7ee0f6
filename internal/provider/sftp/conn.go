package sftp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"

	"wirefs/internal/ns"
	"wirefs/internal/remote"
)

// conn is one SSH connection with its SFTP session. It dies once, for a
// reason (why); the backend then dials a new one for the next operation.
//
// pkg/sftp requests never time out, so conn watches them: while any
// request is outstanding (busy > 0), some byte must arrive from the
// server every timeout, or the connection is closed, which fails every
// outstanding request. While idle, a keepalive@openssh.com request every
// timeout notices a server that vanished without closing the connection.
type conn struct {
	ssh         *ssh.Client
	sftp        *sftp.Client
	posixRename bool
	timeout     time.Duration

	busy     atomic.Int32
	lastByte atomic.Int64 // unix nanoseconds of the last byte received
	probing  atomic.Bool  // a keepalive is outstanding

	dead chan struct{}
	once sync.Once
	why  *ns.Error // set before dead is closed; Msg without the "sftp: op file" prefix
}

// progressConn records when bytes arrive from the server.
type progressConn struct {
	net.Conn
	last *atomic.Int64
}

func (p progressConn) Read(b []byte) (int, error) {
	n, err := p.Conn.Read(b)
	if n > 0 {
		p.last.Store(time.Now().UnixNano())
	}
	return n, err
}

// begin and end bracket a request to the server.
func (c *conn) begin() {
	if c.busy.Add(1) == 1 {
		// Idle time before the request is not a stall.
		c.lastByte.Store(time.Now().UnixNano())
	}
}

func (c *conn) end() { c.busy.Add(-1) }

// kill closes the connection for the reason why (the first reason wins).
func (c *conn) kill(why *ns.Error) {
	c.once.Do(func() {
		c.why = why
		close(c.dead)
		c.ssh.Close()
	})
}

// failed returns why the connection died, or nil while it lives.
func (c *conn) failed() *ns.Error {
	select {
	case <-c.dead:
		return c.why
	default:
		return nil
	}
}

// watch runs until the connection dies: it kills a stalled connection,
// probes an idle one, and notices when the server closes it.
func (c *conn) watch(wg *sync.WaitGroup) {
	wg.Add(2)
	go func() {
		defer wg.Done()
		err := c.ssh.Wait()
		c.kill(&ns.Error{Errno: syscall.EIO, Msg: fmt.Sprintf("connection lost (%v)", err)})
		// Ends pkg/sftp's receiving goroutine.
		c.sftp.Close()
	}()
	go func() {
		defer wg.Done()
		tick := time.NewTicker(min(c.timeout/4, time.Second))
		defer tick.Stop()
		for {
			select {
			case <-c.dead:
				return
			case <-tick.C:
			}
			silent := time.Since(time.Unix(0, c.lastByte.Load()))
			switch {
			case silent <= c.timeout:
			case c.busy.Load() > 0:
				c.kill(&ns.Error{Errno: syscall.ETIMEDOUT, Msg: fmt.Sprintf(
					"the server sent nothing for %v; dropped the connection", c.timeout)})
				return
			case c.probing.CompareAndSwap(false, true):
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer c.probing.Store(false)
					c.begin()
					defer c.end()
					// OpenSSH answers with a failure: any answer is a sign of life.
					c.ssh.SendRequest("keepalive@openssh.com", true, nil)
				}()
			}
		}
	}()
}

// dial connects, authenticates and starts the SFTP subsystem.
func (b *backend) dial(ctx context.Context) (*conn, error) {
	h := b.h
	name := h.name()
	dctx, cancel := context.WithTimeout(ctx, b.connectTimeout)
	defer cancel()
	var d net.Dialer
	raw, err := d.DialContext(dctx, "tcp", h.addr())
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, netError(name, h.addr(), b.connectTimeout, err)
	}

	// The handshake and the SFTP start take no context: a deadline on
	// the socket bounds them, and cancellation moves it to now. It is
	// suspended while a person types a password.
	var deadlineMu sync.Mutex
	setDeadline := func(t time.Time) {
		deadlineMu.Lock()
		defer deadlineMu.Unlock()
		if ctx.Err() == nil {
			raw.SetDeadline(t)
		}
	}
	setDeadline(time.Now().Add(b.connectTimeout))
	stop := context.AfterFunc(ctx, func() {
		deadlineMu.Lock()
		defer deadlineMu.Unlock()
		raw.SetDeadline(time.Unix(1, 0))
	})
	defer stop()

	keys, err := newHostKeys(h, b.o.Home, b.o.AcceptNewHostKeys, b.log)
	if err != nil {
		raw.Close()
		return nil, ns.Errorf(syscall.EIO, "sftp: %s: cannot read known_hosts: %v", name, err)
	}
	a := &auth{h: h, home: b.o.Home, log: b.log, askpass: b.o.Askpass,
		pause: func(ask func() (string, error)) (string, error) {
			setDeadline(time.Time{})
			defer setDeadline(time.Now().Add(b.connectTimeout))
			return ask()
		}}
	defer a.close()
	c := &conn{dead: make(chan struct{}), timeout: b.timeout}
	c.lastByte.Store(time.Now().UnixNano())
	config := &ssh.ClientConfig{
		User:              h.user,
		Auth:              a.methods(),
		HostKeyCallback:   keys.callback,
		HostKeyAlgorithms: keys.algorithms(),
	}
	sc, chans, reqs, err := ssh.NewClientConn(progressConn{raw, &c.lastByte}, h.addr(), config)
	if err != nil {
		raw.Close()
		var hk *hostKeyError
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.As(err, &hk):
			return nil, ns.Errorf(syscall.EACCES, "%s", hk.msg)
		case strings.Contains(err.Error(), "unable to authenticate") || a.triedAny() && !isNetError(err):
			return nil, ns.Errorf(syscall.EACCES, "sftp: %s: authentication failed (tried: %s)", name, a.triedList())
		}
		return nil, netError(name, h.addr(), b.connectTimeout, err)
	}
	c.ssh = ssh.NewClient(sc, chans, reqs)
	c.sftp, err = sftp.NewClient(c.ssh,
		sftp.UseConcurrentReads(true),
		sftp.UseConcurrentWrites(true),
		sftp.MaxConcurrentRequestsPerFile(maxRequests),
		sftp.MaxPacketUnchecked(packetSize),
		// Fstat on the open handle: the path may be renamed meanwhile.
		sftp.UseFstat(true),
	)
	if err != nil {
		c.ssh.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if isNetError(err) {
			return nil, netError(name, h.addr(), b.connectTimeout, err)
		}
		return nil, ns.Errorf(syscall.EIO, "sftp: %s: the server does not start SFTP: %v", name, err)
	}
	if !stop() {
		c.sftp.Close()
		c.ssh.Close()
		return nil, ctx.Err()
	}
	raw.SetDeadline(time.Time{})
	_, c.posixRename = c.sftp.HasExtension("posix-rename@openssh.com")
	c.watch(&b.wg)
	b.log.Debug("sftp: connected", "server", name, "addr", h.addr(), "version", string(c.ssh.ServerVersion()))
	return c, nil
}

func isNetError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// netError describes a failure to reach the server.
func netError(name, addr string, timeout time.Duration, err error) error {
	var dnsErr *net.DNSError
	var ne net.Error
	switch {
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return ns.Errorf(syscall.ENOENT, "sftp: %s: unknown host (not in DNS, nor a Host in ~/.ssh/config)", name)
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return ns.Errorf(syscall.ETIMEDOUT, "sftp: %s: no answer from %s within %v", name, addr, timeout)
	}
	return ns.Errorf(remote.ConnErrno(err), "sftp: %s: cannot connect to %s: %v", name, addr, err)
}
