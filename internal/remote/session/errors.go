package session

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"wirefs/internal/ns"
	"wirefs/internal/remote"
)

// Server names one server in messages, "PROTO HOST", and holds the bounds
// they quote.
type Server struct {
	Proto string // as the user wrote it: "sftp", "ftp", "ftps", "9p", "http", "https"
	Host  string // the server as the user named it: [user@]host[:port], or an alias
	// ConnectTimeout bounds making a connection; Timeout a wait without
	// progress (remote.Options).
	ConnectTimeout, Timeout time.Duration
}

// Where is the start of every message about op on p: "PROTO HOST: OP PATH"
// (op and p may be empty).
func (s Server) Where(op, p string) string {
	w := s.Proto + " " + s.Host
	switch {
	case op != "" && p != "":
		return w + ": " + op + " " + p
	case op != "" || p != "":
		return w + ": " + op + p
	}
	return w
}

// Error returns the error of op on p: errno, and the message
// "PROTO HOST: OP PATH: cause"; errors.Is and errors.As reach the cause
// (ns.OpError).
func (s Server) Error(errno syscall.Errno, op, p string, cause error) error {
	if op != "" && p != "" {
		return ns.OpError(errno, s.Where("", ""), op, p, cause)
	}
	return ns.Errorf(errno, "%s: %v", s.Where(op, p), cause)
}

// Errorf is Error with a cause made from format and args (%w keeps an
// error as the cause's cause).
func (s Server) Errorf(errno syscall.Errno, op, p, format string, args ...any) error {
	return s.Error(errno, op, p, fmt.Errorf(format, args...))
}

// Wrap returns the error of op on p whose cause, an error such as
// Stalled, Lost or Unreachable return, carries the errno.
func (s Server) Wrap(op, p string, cause error) error {
	return s.Error(ns.Errno(cause), op, p, cause)
}

// The causes below are *ns.Error without "PROTO HOST: OP PATH"; Wrap puts
// it before them.

// ErrClosed is the cause of a call on a session that was closed.
var ErrClosed = ns.Errorf(syscall.EIO, "the session is closed")

// Stalled is why a connection whose server made no progress for Timeout
// was dropped.
func (s Server) Stalled() error {
	return ns.Errorf(syscall.ETIMEDOUT, "the server made no progress for %v; the connection was dropped", s.Timeout)
}

// Lost is why a connection that broke under a call was dropped.
func Lost(err error) error {
	return ns.Errorf(syscall.EIO, "lost the connection: %v", err)
}

// Interrupted is the cause of a call whose caller's ctx ended: EINTR when
// it was cancelled, ETIMEDOUT when its deadline passed.
func Interrupted(ctx context.Context) error {
	return ns.Errorf(ns.Errno(ctx.Err()), "%v", context.Cause(ctx))
}

// Unreachable is why a connection could not be made, from the error of
// the dial (or of the handshake after it): ENOENT for a host the resolver
// does not know, EACCES for a certificate that is not trusted, ETIMEDOUT
// for no answer in time, else the socket's errno (ECONNREFUSED...) or EIO.
func (s Server) Unreachable(err error) error {
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	switch {
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return ns.Errorf(syscall.ENOENT, "unknown host: %v", err)
	case errors.As(err, &certErr):
		return ns.Errorf(syscall.EACCES, "the server's TLS certificate is not trusted: %v", certErr.Err)
	case Timeout(err):
		return ns.Errorf(syscall.ETIMEDOUT, "no answer in time (connect timeout %v): %v", s.ConnectTimeout, err)
	}
	return ns.Errorf(remote.ConnErrno(err), "cannot connect: %v", err)
}

// Cause returns why a call failed whose connection could not be made
// (connecting) or broke under it with err: Interrupted when ctx ended,
// Unreachable while connecting, else Stalled after a timeout, an
// untrusted certificate, or Lost.
func (s Server) Cause(ctx context.Context, err error, connecting bool) error {
	var certErr *tls.CertificateVerificationError
	switch {
	case ctx.Err() != nil:
		return Interrupted(ctx)
	case connecting, errors.As(err, &certErr):
		return s.Unreachable(err)
	case Timeout(err):
		return s.Stalled()
	}
	return Lost(err)
}

// Failure is the error of op on p that failed as Cause says.
func (s Server) Failure(ctx context.Context, op, p string, err error, connecting bool) error {
	return s.Wrap(op, p, s.Cause(ctx, err, connecting))
}

// Timeout reports whether err is a timeout: a deadline (the watchdog's,
// the socket's), a context's deadline, or the kernel's ETIMEDOUT.
func Timeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, syscall.ETIMEDOUT) || errors.As(err, &ne) && ne.Timeout()
}

// Retry says whether a call may run once more on a new connection after
// its connection broke under it; a nil Retry never does (a change that
// must not happen twice).
type Retry func() bool

// Always is the Retry of calls that may run twice: reads, and changes
// that come out the same when repeated.
func Always() bool { return true }

// Unsent is the Retry of a call that must not run twice once it sent
// data: sent says how much it did.
func Unsent(sent func() int64) Retry { return func() bool { return sent() == 0 } }

// Again is the one retry rule: a call whose connection broke with why
// runs once more when this was its first attempt, on a reused connection
// (one that may have died while idle), why is no timeout, and retry
// allows it.
func Again(attempt int, reused bool, why error, retry Retry) bool {
	return attempt == 0 && reused && retry != nil && ns.Errno(why) != syscall.ETIMEDOUT && !Timeout(why) && retry()
}
