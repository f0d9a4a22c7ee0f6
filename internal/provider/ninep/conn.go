package ninep

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/hugelgupf/p9/linux"
	"github.com/hugelgupf/p9/p9"

	"wirefs/internal/ns"
	"wirefs/internal/remote/session"
)

const (
	// wantMsize is the message size we ask for; the server may lower it
	// (diod: 64 KiB).
	wantMsize = 1 << 20
	minMsize  = 4096
	// ioOverhead is the part of a message that is not data in Tread,
	// Rread, Twrite and Treaddir answers (P9_IOHDRSZ, rounded up).
	ioOverhead = 32
)

// conn is one connection to the server: the p9 client, the roots
// attached on it and, once asked for, the server's export list. Fids
// belong to a connection, so all of this is dropped with it. The shared
// connection, its watchdog, retries and abandoned calls are the
// session core's (internal/remote/session).
type conn struct {
	*session.Line
	client *p9.Client
	msize  uint32

	mu      sync.Mutex // serializes attaches (one round trip each)
	roots   map[string]p9.File
	exports *exportList // nil until fetched
}

// dial connects, negotiates the message size and starts the p9 client.
// ctx ends when the session closes.
func (b *Backend) dial(ctx context.Context) (*conn, error) {
	d := net.Dialer{Timeout: b.srv.ConnectTimeout}
	raw, err := d.DialContext(ctx, "tcp", b.addr)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { raw.Close() })
	defer stop()
	raw.SetDeadline(time.Now().Add(b.srv.ConnectTimeout))
	msize, err := handshake(raw, wantMsize)
	if err != nil {
		raw.Close()
		if session.Timeout(err) {
			return nil, ns.Errorf(syscall.ETIMEDOUT, "no version handshake within %v", b.srv.ConnectTimeout)
		}
		return nil, ns.Errorf(syscall.EIO, "%v", err)
	}
	// From now on the watchdog bounds every Read and Write.
	raw.SetDeadline(time.Time{})
	c := &conn{msize: msize, roots: map[string]p9.File{}}
	wire := newWireConn(raw, b.srv.Timeout, b.user, func() { b.s.Drop(c, b.srv.Stalled()) })
	c.Line = session.NewLine(func() { wire.Close() }, nil)
	c.client, err = p9.NewClient(wire, p9.WithMessageSize(msize))
	if err != nil {
		c.End(session.ErrClosed)
		if ctx.Err() != nil || session.Timeout(err) {
			return nil, err
		}
		return nil, ns.Errorf(syscall.EIO, "the server refused version %s with msize %d: %v", version, msize, err)
	}
	b.log.Debug("9p: connected", "server", b.addr, "msize", msize)
	return c, nil
}

// attach returns the root fid for aname on this connection, attaching
// once. A linux.Errno error is the server's refusal.
func (c *conn) attach(aname string) (p9.File, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f, ok := c.roots[aname]; ok {
		return f, nil
	}
	f, err := c.client.Attach(aname)
	if err != nil {
		return nil, err
	}
	c.roots[aname] = f
	return f, nil
}

// payload is the largest data block one Tread or Twrite carries.
func (c *conn) payload() int { return int(c.msize) - ioOverhead }

// serverErrno returns the errno the server answered with (Rlerror), if
// err is one. The library reports those, and only those, as linux.Errno;
// a syscall.Errno inside err is a local socket error (ECONNRESET).
func serverErrno(err error) (syscall.Errno, bool) {
	var e linux.Errno
	if errors.As(err, &e) {
		return syscall.Errno(e), true
	}
	return 0, false
}

// answer is the session's Answer hook: the server's errno (Rlerror) and
// end of file are answers; anything else broke the connection.
func (b *Backend) answer(op, p string, err error) (error, bool) {
	if err == io.EOF {
		return err, true
	}
	if errno, ok := serverErrno(err); ok {
		return b.srv.Error(errno, op, p, errno), true
	}
	return nil, false
}

// call runs fn on the session's connection (see session.Call); reads and
// changes that come out the same when repeated are retried once on a new
// connection when an idle one turns out dead.
func call[T any](ctx context.Context, b *Backend, op, p string, idempotent bool, fn func(*conn) (T, error), release func(T)) (T, error) {
	var retry session.Retry
	if idempotent {
		retry = session.Always
	}
	return session.Call(ctx, b.s, op, p, retry, fn, release)
}
