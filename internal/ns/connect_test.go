package ns

import (
	"context"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

func TestConnectByOpener(t *testing.T) {
	ctx := context.Background()
	if ConnectByOpener(ctx) {
		t.Fatal("a context that did not say asks for unconnected sockets")
	}
	if !ConnectByOpener(WithConnectByOpener(ctx)) {
		t.Fatal("WithConnectByOpener is not seen")
	}
}

// An unconnected socket's handle gives the file and the address, and
// Close runs release and closes the file.
func TestUnconnectedSocket(t *testing.T) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "socket")
	to := &unix.SockaddrInet4{Port: 9, Addr: [4]byte{127, 0, 0, 1}}
	released := 0
	h := UnconnectedSocket(f, to, func() { released++ })
	u := h.(Unconnected)
	if kf, err := u.KernelFile(); kf != f || err != nil {
		t.Fatalf("KernelFile = %v, %v; want the file itself", kf, err)
	}
	if u.ConnectTo() != to {
		t.Fatalf("ConnectTo = %v, want %v", u.ConnectTo(), to)
	}
	if err := h.Close(); err != nil || released != 1 {
		t.Fatalf("Close: %v, release ran %d times", err, released)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != unix.EBADF {
		t.Fatalf("the socket is still open after Close (%v)", err)
	}
}
