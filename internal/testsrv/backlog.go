package testsrv

import (
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// FullBacklog listens on a loopback port with a backlog of one and fills
// it: the kernel drops the SYN of every further connect, which waits for
// a SYN-ACK that never comes, like a connect to an unreachable host. It
// returns the port and the listening socket (accepting from it makes
// room for the next SYN).
func FullBacklog(t testing.TB) (int, int) {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	port := sa.(*syscall.SockaddrInet4).Port
	for i := 0; ; i++ {
		c, err := net.DialTimeout("tcp4", "127.0.0.1:"+strconv.Itoa(port), 500*time.Millisecond)
		if err != nil {
			return port, fd // the queue is full
		}
		t.Cleanup(func() { c.Close() })
		if i == 8 {
			t.Fatal("the listen backlog never fills")
		}
	}
}
