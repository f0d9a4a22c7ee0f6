package ns

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"wirefs/internal/leakcheck"
)

func socketPair(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	return os.NewFile(uintptr(fds[0]), "a"), os.NewFile(uintptr(fds[1]), "b")
}

// TestPollConnWakes: an idle socket is not readable but writable; a
// waiter registered while it is idle is woken once data arrives; and the
// watcher's goroutine and descriptor go away when nothing is watched.
func TestPollConnWakes(t *testing.T) {
	base := leakcheck.Take(t)
	a, b := socketPair(t)
	if got := PollConn(a, unix.POLLIN|unix.POLLOUT, nil); got != unix.POLLOUT {
		t.Fatalf("idle socket: %#x, want POLLOUT", got)
	}
	woken := make(chan struct{}, 2)
	if got := PollConn(a, unix.POLLIN, func() { woken <- struct{}{} }); got != 0 {
		t.Fatalf("idle socket with a waiter: %#x", got)
	}
	b.Write([]byte("x"))
	<-woken
	if got := PollConn(a, unix.POLLIN, nil); got&unix.POLLIN == 0 {
		t.Fatalf("after the wake: %#x, want POLLIN", got)
	}
	b.Close()
	if got := PollConn(a, unix.POLLIN, nil); got&(unix.POLLIN|unix.POLLHUP) == 0 {
		t.Fatalf("peer closed: %#x", got)
	}
	a.Close()
	base.Check(t)
}

// TestPollClosedWhileWatched: a descriptor closed while a waiter waits is
// forgotten (epoll dropped it silently), so the watcher ends.
func TestPollClosedWhileWatched(t *testing.T) {
	base := leakcheck.Take(t)
	a, b := socketPair(t)
	if got := PollConn(a, unix.POLLIN, func() {}); got != 0 {
		t.Fatalf("idle socket: %#x", got)
	}
	a.Close()
	b.Close()
	base.Check(t)
}

func TestPollAlwaysReady(t *testing.T) {
	if got := Poll(nil, unix.POLLIN|unix.POLLOUT, func() { t.Error("woken") }); got != unix.POLLIN|unix.POLLOUT {
		t.Fatalf("a handle without readiness: %#x", got)
	}
}
