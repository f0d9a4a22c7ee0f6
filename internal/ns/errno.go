package ns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
)

// Error is an error with the errno a program should see, a sentence for
// the log that says why, and, like os.PathError, what was being done to
// which name and the error that caused it, so that errors.Is and
// errors.As see through it (a context's cancellation, a *net.OpError).
type Error struct {
	Op    string // what was being done ("open", "store"), when known
	Path  string // the name it was done to, when known
	Errno syscall.Errno
	Msg   string // the sentence for the log
	Err   error  // the cause, when another error was one
}

func (e *Error) Error() string { return e.Msg }

// Unwrap lets errors.Is(err, syscall.ECONNREFUSED) work, and errors.Is
// and errors.As reach the cause.
func (e *Error) Unwrap() []error {
	if e.Err != nil {
		return []error{e.Errno, e.Err}
	}
	return []error{e.Errno}
}

// Errorf returns an *Error with the given errno and message. Its cause is
// the error a %w verb wraps, or else the last error among args: a cause
// formatted with %v is kept too, not only its text.
func Errorf(errno syscall.Errno, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	e := &Error{Errno: errno, Msg: err.Error(), Err: errors.Unwrap(err)}
	for i := len(args) - 1; i >= 0 && e.Err == nil; i-- {
		if cause, ok := args[i].(error); ok {
			e.Err = cause
		}
	}
	return e
}

// OpError returns an *Error about op on path caused by cause, whose
// message reads "who: op path: cause" (who: "sftp me@host", say).
func OpError(errno syscall.Errno, who, op, path string, cause error) error {
	return &Error{Op: op, Path: path, Errno: errno, Err: cause,
		Msg: fmt.Sprintf("%s: %s %s: %v", who, op, path, cause)}
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
