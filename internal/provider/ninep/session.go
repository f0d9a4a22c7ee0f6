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
	"wirefs/internal/remote"
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

// session is one connection to the server: the p9 client, the roots
// attached on it and, once asked for, the server's export list. Fids
// belong to a connection, so all of this is dropped with it.
type session struct {
	wire   *wireConn
	client *p9.Client
	msize  uint32

	mu      sync.Mutex // serializes attaches (one round trip each)
	roots   map[string]p9.File
	exports *exportList // nil until fetched
}

func (b *Backend) dial() (*session, error) {
	d := net.Dialer{Timeout: b.connectTimeout}
	c, err := d.Dial("tcp", b.addr)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil, ns.Errorf(syscall.ETIMEDOUT, "9P server %s did not answer within %v", b.addr, b.connectTimeout)
		}
		return nil, ns.Errorf(remote.ConnErrno(err), "cannot connect to 9P server %s: %v", b.addr, errors.Unwrap(err))
	}
	// From the next Read or Write on, wireConn sets the deadlines.
	c.SetDeadline(time.Now().Add(b.connectTimeout))
	msize, err := handshake(c, wantMsize)
	if err != nil {
		c.Close()
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil, ns.Errorf(syscall.ETIMEDOUT, "9P server %s did not complete the version handshake within %v", b.addr, b.connectTimeout)
		}
		return nil, ns.Errorf(syscall.EIO, "9P server %s: %v", b.addr, err)
	}
	wire := newWireConn(c, b.timeout, b.user)
	client, err := p9.NewClient(wire, p9.WithMessageSize(msize))
	if err != nil {
		c.Close()
		return nil, ns.Errorf(syscall.EIO, "9P server %s refused version %s with msize %d: %v", b.addr, version, msize, err)
	}
	b.log.Debug("9p: connected", "server", b.addr, "msize", msize)
	return &session{wire: wire, client: client, msize: msize, roots: map[string]p9.File{}}, nil
}

func (s *session) close() { s.wire.Close() }

// attach returns the root fid for aname on this connection, attaching
// once. A linux.Errno error is the server's refusal.
func (s *session) attach(aname string) (p9.File, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.roots[aname]; ok {
		return f, nil
	}
	f, err := s.client.Attach(aname)
	if err != nil {
		return nil, err
	}
	s.roots[aname] = f
	return f, nil
}

// payload is the largest data block one Tread or Twrite carries.
func (s *session) payload() int { return int(s.msize) - ioOverhead }

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

// async runs fn in its own goroutine and returns its result, or ctx's
// error as soon as ctx is done. The p9 library cannot flush a request, and
// closing the connection would fail every other request sharing it, so a
// cancelled caller abandons fn instead: fn runs to its end (which the
// no-progress timeout bounds) and release frees what it produced (an open
// fid). fn must not touch memory the caller keeps using.
func async[T any](ctx context.Context, fn func() (T, error), release func(T)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := fn()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		go func() {
			if r := <-done; r.err == nil && release != nil {
				release(r.v)
			}
		}()
		return zero, ctx.Err()
	}
}

// call runs fn on the current connection (dialing one if needed), in the
// manner of async, and turns its error into an *ns.Error about op on p.
//
// A connection-level failure drops the connection, so that the next call
// reconnects and attaches again. Idempotent calls that fail that way on a
// connection that was already open (a server restarted while we were
// idle) are retried once on a fresh one; a timeout is never retried.
func call[T any](ctx context.Context, b *Backend, op, p string, idempotent bool, fn func(*session) (T, error), release func(T)) (T, error) {
	return async(ctx, func() (T, error) {
		for attempt := 0; ; attempt++ {
			s, fresh, err := b.session()
			if err != nil {
				var zero T
				return zero, err
			}
			v, err := fn(s)
			retry := isConnError(err) && idempotent && !fresh && attempt == 0
			err = b.classify(s, err, op, p)
			if !retry || s.wire.timedOut.Load() {
				return v, err
			}
		}
	}, release)
}

// classify turns an error from the p9 library into an *ns.Error: the
// server's errno passes through; anything else broke the connection,
// which is dropped. io.EOF (end of file) and *ns.Error pass unchanged.
func (b *Backend) classify(s *session, err error, op, p string) error {
	if isConnError(err) {
		return b.dropped(s, err, op, p)
	}
	if errno, ok := serverErrno(err); ok && !isNSError(err) {
		return ns.Errorf(errno, "9P server %s: %s %s: %s", b.addr, op, p, errno.Error())
	}
	return err
}

// isConnError reports whether err broke the connection: it is neither
// the server's errno, nor end of file, nor our own *ns.Error.
func isConnError(err error) bool {
	if err == nil || err == io.EOF || isNSError(err) {
		return false
	}
	_, ok := serverErrno(err)
	return !ok
}

func isNSError(err error) bool {
	var e *ns.Error
	return errors.As(err, &e)
}

// session returns the current connection, dialing one if there is none;
// fresh says it was dialed by this call. Dialing holds dialMu, not mu, so
// that Close never waits for a dial; concurrent first calls share one
// connection.
func (b *Backend) session() (s *session, fresh bool, err error) {
	if s, err := b.current(); s != nil || err != nil {
		return s, false, err
	}
	b.dialMu.Lock()
	defer b.dialMu.Unlock()
	if s, err := b.current(); s != nil || err != nil {
		return s, false, err
	}
	if s, err = b.dial(); err != nil {
		return nil, false, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		s.close()
		return nil, false, errClosed(b.addr)
	}
	b.cur = s
	return s, true, nil
}

func (b *Backend) current() (*session, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, errClosed(b.addr)
	}
	return b.cur, nil
}

func errClosed(addr string) error {
	return ns.Errorf(syscall.EIO, "the 9P session with %s is closed", addr)
}

// dropped closes a connection that failed under a request and returns the
// error for it: ETIMEDOUT when the server made no progress, EIO otherwise.
func (b *Backend) dropped(s *session, cause error, op, p string) error {
	b.mu.Lock()
	if b.cur == s {
		b.cur = nil
	}
	closed := b.closed
	b.mu.Unlock()
	s.close()
	switch {
	case closed:
		return errClosed(b.addr)
	case s.wire.timedOut.Load():
		b.log.Warn("9p: server made no progress; connection dropped", "server", b.addr, "timeout", b.timeout)
		return ns.Errorf(syscall.ETIMEDOUT, "9P %s %s: server %s made no progress for %v; the connection was dropped and the next request reconnects", op, p, b.addr, b.timeout)
	default:
		b.log.Warn("9p: connection lost", "server", b.addr, "err", cause)
		return ns.Errorf(syscall.EIO, "9P %s %s: lost the connection to %s: %v", op, p, b.addr, cause)
	}
}
