package ns

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// Socket makes a connected socket a handle. It is a KernelObject: the
// catcher door injects the fd itself; the FUSE door serves it with Read and
// Write, which honour cancellation.
func Socket(c net.Conn) Handle { return &socketHandle{conn: c} }

type socketHandle struct {
	conn     net.Conn
	fileOnce sync.Once
	file     *os.File
	fileErr  error
}

func (s *socketHandle) Read(ctx context.Context, p []byte) (int, error) {
	return Interruptible(ctx, s.conn.SetReadDeadline, func() (int, error) {
		n, err := s.conn.Read(p)
		if errors.Is(err, net.ErrClosed) {
			return n, nil // closed by our own shutdown: EOF
		}
		if n == 0 && errors.Is(err, io.EOF) {
			return 0, nil
		}
		return n, err
	})
}

func (s *socketHandle) Write(ctx context.Context, p []byte) (int, error) {
	return Interruptible(ctx, s.conn.SetWriteDeadline, func() (int, error) { return s.conn.Write(p) })
}

func (s *socketHandle) Close() error {
	if s.file != nil {
		s.file.Close()
	}
	return s.conn.Close()
}

func (s *socketHandle) KernelFile() (*os.File, error) {
	s.fileOnce.Do(func() {
		f, ok := s.conn.(interface{ File() (*os.File, error) })
		if !ok {
			s.fileErr = Errorf(syscall.EOPNOTSUPP, "%T has no kernel file", s.conn)
			return
		}
		s.file, s.fileErr = f.File()
	})
	return s.file, s.fileErr
}

// NetConner is a socket handle's connection as Go's poller serves it:
// non-blocking, woken by deadlines. For an engine in the daemon that waits
// on the socket and must be woken (splice), where a door that injects
// the socket into a program takes KernelFile as it is.
type NetConner interface {
	NetConn() (net.Conn, error)
}

var (
	_ NetConner = (*socketHandle)(nil)
	_ NetConner = (*socketFile)(nil)
)

func (s *socketHandle) NetConn() (net.Conn, error) { return s.conn, nil }

// NetConn is the socket made non-blocking (a duplicate in Go's poller,
// sharing its open file description), as for Read and Write.
func (s *socketFile) NetConn() (net.Conn, error) {
	c, err := s.served()
	if err != nil {
		return nil, err
	}
	return c.conn, nil
}

// SocketFile makes a connected socket that a provider made itself (a
// blocking connect(2)) a handle, as Socket does for a net.Conn, with
// nothing spent on what a door that injects it never uses: KernelFile is
// f as it is (no duplicate, no registration with Go's poller, its
// blocking mode kept), which is what the catcher door gives the program.
// Read and Write, for a door that serves the socket, go through a
// net.Conn made from f when first needed. release, if not nil, runs at
// Close.
func SocketFile(f *os.File, release func()) Handle {
	return &socketFile{f: f, release: release}
}

type socketFile struct {
	f        *os.File
	release  func()
	connOnce sync.Once
	conn     *socketHandle // served through Go's poller, once Read or Write asked
	connErr  error
}

func (s *socketFile) KernelFile() (*os.File, error) { return s.f, nil }

// served is the socket as a net.Conn, made at the first Read or Write.
// It shares f's open file description, which it makes non-blocking: only
// the daemon holds a socket it serves.
func (s *socketFile) served() (*socketHandle, error) {
	s.connOnce.Do(func() {
		c, err := net.FileConn(s.f)
		if err != nil {
			s.connErr = err
			return
		}
		s.conn = &socketHandle{conn: c}
	})
	return s.conn, s.connErr
}

func (s *socketFile) Read(ctx context.Context, p []byte) (int, error) {
	c, err := s.served()
	if errors.Is(err, net.ErrClosed) {
		return 0, nil // closed by our own shutdown: EOF, as Socket's
	}
	if err != nil {
		return 0, err
	}
	return c.Read(ctx, p)
}

func (s *socketFile) Write(ctx context.Context, p []byte) (int, error) {
	c, err := s.served()
	if err != nil {
		return 0, err
	}
	return c.Write(ctx, p)
}

func (s *socketFile) Close() error {
	if s.release != nil {
		s.release()
	}
	s.connOnce.Do(func() { s.connErr = net.ErrClosed }) // no net.Conn from now on
	if s.conn != nil {
		s.conn.conn.Close()
	}
	return s.f.Close()
}

// pastDeadline is any time in the past: setting it as a deadline wakes a
// blocked call at once.
var pastDeadline = time.Unix(1, 0)

// Interruptible runs a blocking I/O call op that can be woken by setting a
// deadline, and wakes it when ctx is cancelled (a FUSE INTERRUPT, Ctrl-C).
// The call then fails with context.Canceled, which maps to EINTR.
func Interruptible(ctx context.Context, setDeadline func(time.Time) error, op func() (int, error)) (int, error) {
	if ctx.Done() == nil {
		return op()
	}
	woken := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		setDeadline(pastDeadline)
		close(woken)
	})
	n, err := op()
	if !stop() {
		// ctx fired: once the wake-up has set its deadline, clear it so
		// the handle stays usable.
		<-woken
		setDeadline(time.Time{})
		if n == 0 && errors.Is(err, os.ErrDeadlineExceeded) {
			return 0, context.Canceled
		}
	}
	return n, err
}
