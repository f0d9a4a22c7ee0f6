package ns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
)

// Error is an error with the errno a program should see and a sentence for
// the log that says why.
type Error struct {
	Errno syscall.Errno
	Msg   string
}

func (e *Error) Error() string { return e.Msg }

// Unwrap lets errors.Is(err, syscall.ECONNREFUSED) work.
func (e *Error) Unwrap() error { return e.Errno }

// Errorf returns an *Error with the given errno and message.
func Errorf(errno syscall.Errno, format string, args ...any) error {
	return &Error{Errno: errno, Msg: fmt.Sprintf(format, args...)}
}

// Errno maps any error a provider returns to the errno a program sees.
// The mapping is documented in docs/wirefs.md ("Errors").
func Errno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Errno
	}
	switch {
	case errors.Is(err, context.Canceled):
		return syscall.EINTR
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return syscall.ETIMEDOUT
	case errors.Is(err, net.ErrClosed), errors.Is(err, os.ErrClosed):
		return syscall.EBADF
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		switch {
		case dnsErr.IsNotFound:
			return syscall.ENOENT
		case dnsErr.IsTimeout:
			return syscall.ETIMEDOUT
		default:
			return syscall.EAGAIN
		}
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return syscall.ETIMEDOUT
	}
	return syscall.EIO
}
