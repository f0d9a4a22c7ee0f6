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
