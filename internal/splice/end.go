// Package splice moves bytes between two or more open objects inside the
// kernel, as seed 002's dsplice does: splice(2) through a pipe, tee(2) to
// several sinks, sendfile(2) from a file to a socket, copy_file_range(2)
// between files; paced by a token bucket (a rate) or by the seed's
// schedule (N blocks, then a pause d). It knows kernel objects (*os.File,
// the fds of net.Conns) and pacing, nothing of FUSE, the namespace's
// doors or any protocol.
//
// An end that is served by a daemon (an ns.Handle that is not an
// ns.KernelObject) has no fd: its bytes are copied through user space,
// and the transfer says so (Stats.UserCopy). Every blocking step waits in
// Go's poller, or in the kernel on a thread that a cancellation signals,
// and honours its context: cancelling it wakes the transfer, which
// returns the context's error.
package splice

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"wirefs/internal/ns"
)

// kind is what the kernel object of an end is.
type kind int

const (
	kindUser    kind = iota // no fd: daemon-served, copied in user space
	kindRegular             // a regular file: never blocks, has offsets
	kindStream              // a socket, pipe, FIFO, character device
)

// End is one side of a transfer. Make one with File, Conn, Handle or
// Stream; the caller keeps ownership of the object and closes it.
type End struct {
	Name string // how errors name it: a path, "tcp/host:80", "-"
	kind kind

	// kernel ends
	rc       syscall.RawConn
	deadline interface {
		SetReadDeadline(time.Time) error
		SetWriteDeadline(time.Time) error
	}
	off  int64 // regular source: the next offset to read
	size int64 // regular file: its size when opened (-1: unknown)

	// user ends
	r ns.Reader
	w ns.Writer

	closeWrite func() error
	noSplice   bool // the kernel refused a splice here: copy in user space

	// kernelTID is the thread of a call of the end that waits in the
	// kernel (inKernel), 0 when there is none: wake interrupts it.
	kernelTID atomic.Int32
}

// deadliner is what both *os.File and net.Conn offer.
type deadliner interface {
	syscall.Conn
	SetReadDeadline(time.Time) error
	SetWriteDeadline(time.Time) error
}

// Kernel makes an end of a kernel object: an *os.File, a *net.TCPConn or
// *net.UnixConn. Sockets and pipes must be in non-blocking mode (as Go
// makes its own) for cancellation to wake them; a blocking *os.File (a
// terminal, an inherited blocking pipe) is copied in user space instead.
func Kernel(name string, obj deadliner) (*End, error) {
	rc, err := obj.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	e := &End{Name: name, rc: rc, deadline: obj, size: -1}
	var st unix.Stat_t
	var serr error
	var nonblock bool
	cerr := rc.Control(func(fd uintptr) {
		serr = unix.Fstat(int(fd), &st)
		if serr != nil {
			return
		}
		fl, _ := unix.FcntlInt(fd, unix.F_GETFL, 0)
		nonblock = fl&unix.O_NONBLOCK != 0
		if st.Mode&unix.S_IFMT == unix.S_IFREG {
			e.off, serr = unix.Seek(int(fd), 0, io.SeekCurrent)
		}
	})
	if err := errors.Join(cerr, serr); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		e.kind, e.size = kindRegular, st.Size
	case unix.S_IFSOCK:
		e.kind = kindStream
		e.closeWrite = func() error {
			var err error
			rc.Control(func(fd uintptr) { err = unix.Shutdown(int(fd), unix.SHUT_WR) })
			return err
		}
	default:
		e.kind = kindStream
	}
	// A character device that the poller refused (/dev/null, /dev/zero,
	// a terminal) stays a kernel end: such devices do not block, or
	// refuse splice and are copied through their fd.
	if e.kind == kindStream && !nonblock && st.Mode&unix.S_IFMT != unix.S_IFCHR {
		// A blocking fd could not be woken: copy it in user space
		// through its file, whose calls the poller cannot interrupt
		// either, so say so in the name of the mode.
		f, ok := obj.(*os.File)
		if !ok {
			return nil, fmt.Errorf("%s: blocking descriptor", name)
		}
		u := &End{Name: name, kind: kindUser, size: -1, r: fileRW{f}, w: fileRW{f}}
		return u, nil
	}
	return e, nil
}

// File is Kernel for an *os.File.
func File(name string, f *os.File) (*End, error) { return Kernel(name, f) }

// Handle makes an end of a namespace handle: its kernel object when it is
// one (a socket as Go's poller serves it, ns.NetConner, else
// ns.KernelObject), else a user-space end of its Reader and Writer.
func Handle(name string, h ns.Handle) (*End, error) {
	if nc, ok := h.(ns.NetConner); ok {
		// A provider's socket may be in blocking mode (made for a
		// program to be injected with, ns.SocketFile), which Kernel
		// could only copy in user space.
		if c, err := nc.NetConn(); err == nil {
			if d, ok := c.(deadliner); ok {
				return Kernel(name, d)
			}
		}
	}
	if ko, ok := h.(ns.KernelObject); ok {
		if f, err := ko.KernelFile(); err == nil {
			return Kernel(name, f)
		}
	}
	r, _ := h.(ns.Reader)
	w, _ := h.(ns.Writer)
	if ra, ok := h.(ns.ReaderAt); ok && r == nil {
		r = &sequential{ra: ra}
	}
	if wa, ok := h.(ns.WriterAt); ok && w == nil {
		w = &sequential{wa: wa}
	}
	if r == nil && w == nil {
		return nil, fmt.Errorf("%s: %w", name, ns.Errorf(syscall.EINVAL, "not a stream"))
	}
	e := &End{Name: name, kind: kindUser, size: -1, r: r, w: w}
	if cw, ok := h.(interface{ CloseWrite() error }); ok {
		e.closeWrite = cw.CloseWrite
	}
	return e, nil
}

// Stream makes a user-space end of a reader and/or writer that honour a
// context (ns.Reader, ns.Writer); either may be nil.
func Stream(name string, r ns.Reader, w ns.Writer, closeWrite func() error) *End {
	return &End{Name: name, kind: kindUser, size: -1, r: r, w: w, closeWrite: closeWrite}
}

// Size is the size of a regular file end from its current offset, -1 when
// unknown (a stream).
func (e *End) Size() int64 {
	if e.kind != kindRegular {
		return -1
	}
	return max(e.size-e.off, 0)
}

// UserSpace reports whether the end's bytes go through user space.
func (e *End) UserSpace() bool { return e.kind == kindUser }

// CloseWrite half-closes a socket end (shutdown SHUT_WR); other ends
// have nothing to do.
func (e *End) CloseWrite() error {
	if e.closeWrite == nil {
		return nil
	}
	return e.closeWrite()
}

// wake sets the end's deadlines in the past, which wakes a call waiting
// in the poller, and interrupts a call waiting in the kernel; ends that
// cannot have deadlines (regular files) never wait.
func (e *End) wake() {
	if e.deadline != nil {
		past := time.Unix(1, 0)
		e.deadline.SetReadDeadline(past)
		e.deadline.SetWriteDeadline(past)
	}
	e.interrupt()
}

// inKernel runs call, a blocking call of the end in waitInKernel's mode,
// on a thread that wake can signal, until it moves something, fails, or
// ctx ends. The signal is SIGURG, the one Go's runtime preempts threads
// with (its handler ignores one that preempts nothing); the send timeout
// makes the kernel return EINTR for it, where without a timeout it would
// restart the wait.
func (e *End) inKernel(ctx context.Context, call func() (int, error)) (int, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	e.kernelTID.Store(int32(unix.Gettid()))
	defer e.kernelTID.Store(0)
	// Stored before ctx is looked at: either this sees the cancellation
	// or interrupt sees the thread.
	for ctx.Err() == nil {
		n, err := call()
		if err != unix.EINTR && err != unix.EAGAIN {
			return n, err
		}
		// A signal, or kernelWait without progress: a look at ctx.
	}
	return 0, ctx.Err()
}

// interrupt signals the thread of a call of the end waiting in the
// kernel, again every millisecond until the call has returned: a signal
// that lands just before the call starts to wait does not stop it.
func (e *End) interrupt() {
	pid := unix.Getpid()
	for tid := e.kernelTID.Load(); tid != 0; tid = e.kernelTID.Load() {
		unix.Tgkill(pid, int(tid), unix.SIGURG)
		time.Sleep(time.Millisecond)
	}
}

// sequential reads or writes a file handle (ReaderAt, WriterAt: a stored
// remote file) from its start on.
type sequential struct {
	ra  ns.ReaderAt
	wa  ns.WriterAt
	off int64
}

func (s *sequential) Read(ctx context.Context, p []byte) (int, error) {
	n, err := s.ra.ReadAt(ctx, p, s.off)
	s.off += int64(n)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}

func (s *sequential) Write(ctx context.Context, p []byte) (int, error) {
	n, err := s.wa.WriteAt(ctx, p, s.off)
	s.off += int64(n)
	return n, err
}

// fileRW reads and writes a blocking *os.File; it cannot be woken.
type fileRW struct{ f *os.File }

func (f fileRW) Read(_ context.Context, p []byte) (int, error) {
	n, err := f.f.Read(p)
	if errors.Is(err, io.EOF) {
		return n, nil
	}
	return n, err
}
func (f fileRW) Write(_ context.Context, p []byte) (int, error) { return f.f.Write(p) }

// Error is a failure of one end: "write tcp/127.0.0.1:9000: connection
// reset by peer".
type Error struct {
	Op  string // read, write
	End string
	Err error
}

func (e *Error) Error() string { return e.Op + " " + e.End + ": " + Cause(e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// Cause is an error's cause as cp and socat print it: an errno as
// strerror(3) words it, other errors as they are.
func Cause(err error) string {
	var en syscall.Errno
	if errors.As(err, &en) {
		s := en.Error()
		if s != "" && s[0] >= 'a' && s[0] <= 'z' {
			s = string(s[0]-'a'+'A') + s[1:]
		}
		return s
	}
	return err.Error()
}

// kernelWait is the send timeout of an end that waits in the kernel
// (waitInKernel), and how long a call that nothing can interrupt
// (copy_file_range) lasts: how late a cancellation is seen.
const kernelWait = 100 * time.Millisecond

// waitInKernel puts a socket end in blocking mode with a send timeout of
// kernelWait, until restore. An unpaced sendfile then sleeps inside the
// call, as a C loop does: waiting in Go's poller instead costs an EAGAIN,
// a netpoll event and a goroutine switch (often a wake-up of another CPU)
// each time the socket buffer fills, 1.8× the C loop's CPU on a shaped
// link. A cancellation interrupts the call (inKernel); the timeout is
// the fallback that brings it back to look at its context. Nagle's algorithm is on meanwhile (a C socket's default; Go and
// netstream turn it off): without it the kernel pushes a segment as each
// piece of the file lands in the socket, ~10 % more CPU on the shaped
// link, where the stream's end is the only place it could delay. Only
// for an end nothing else uses meanwhile: its reads would block too.
func (e *End) waitInKernel() (restore func(), err error) {
	var flags, nodelay int
	cerr := e.rc.Control(func(fd uintptr) {
		if flags, err = unix.FcntlInt(fd, unix.F_GETFL, 0); err != nil {
			return
		}
		tv := unix.NsecToTimeval(kernelWait.Nanoseconds())
		if err = unix.SetsockoptTimeval(int(fd), unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv); err != nil {
			return
		}
		// A Unix socket has no TCP_NODELAY: nothing to turn on.
		if nd, gerr := unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NODELAY); gerr == nil && nd != 0 {
			nodelay = nd
			unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NODELAY, 0)
		}
		_, err = unix.FcntlInt(fd, unix.F_SETFL, flags&^unix.O_NONBLOCK)
	})
	if err = errors.Join(cerr, err); err != nil {
		return nil, err
	}
	return func() {
		e.rc.Control(func(fd uintptr) {
			unix.SetsockoptTimeval(int(fd), unix.SOL_SOCKET, unix.SO_SNDTIMEO, &unix.Timeval{})
			if nodelay != 0 {
				unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NODELAY, nodelay)
			}
			unix.FcntlInt(fd, unix.F_SETFL, flags)
		})
	}, nil
}
