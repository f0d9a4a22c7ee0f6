package ns

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
)

// TestErrorKeepsItsCause: an *Error keeps the error that caused it,
// whether wrapped with %w or formatted with %v, and its errno still
// decides what the program sees.
func TestErrorKeepsItsCause(t *testing.T) {
	op := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for _, err := range []error{
		Errorf(syscall.EIO, "sftp h: read /f: %v", context.Canceled),
		Errorf(syscall.EIO, "sftp h: read /f: %w", context.Canceled),
		OpError(syscall.EIO, "sftp me@h", "read", "/f", context.Canceled),
	} {
		if !errors.Is(err, context.Canceled) || !errors.Is(err, syscall.EIO) || Errno(err) != syscall.EIO {
			t.Errorf("%q: Is(Canceled) %v, Is(EIO) %v, Errno %v", err, errors.Is(err, context.Canceled), errors.Is(err, syscall.EIO), Errno(err))
		}
	}
	err := Errorf(syscall.EHOSTUNREACH, "tcp/h:1: %v", op)
	var got *net.OpError
	if !errors.As(err, &got) || got != op {
		t.Fatalf("errors.As does not reach the cause of %q", err)
	}
	if err.Error() != "tcp/h:1: dial tcp: connection refused" {
		t.Fatalf("Error() = %q", err)
	}
	e := OpError(syscall.ENOENT, "9P server h:564", "stat", "/x", syscall.ENOENT).(*Error)
	if e.Op != "stat" || e.Path != "/x" || e.Error() != "9P server h:564: stat /x: no such file or directory" {
		t.Fatalf("OpError = %+v", e)
	}
	if plain := Errorf(syscall.EPERM, "no cause").(*Error); plain.Err != nil {
		t.Fatalf("a message without an error argument has a cause: %v", plain.Err)
	}
}
