package ns

import (
	"context"
	"testing"
	"time"

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
	if SocketByOpener(ctx) || SocketByOpener(WithConnectByOpener(ctx)) {
		t.Fatal("a context that did not say asks for sockets to make")
	}
	// An opener that makes sockets connects given ones too (a provider
	// that must bind one gives it unconnected).
	if m := WithSocketByOpener(ctx); !SocketByOpener(m) || !ConnectByOpener(m) {
		t.Fatal("WithSocketByOpener is not seen")
	}
}

// A socket to make gives its recipe; Close runs release, once per Close.
func TestMakeSocket(t *testing.T) {
	r := SocketRecipe{Type: unix.SOCK_STREAM, To: &unix.SockaddrInet4{Port: 9, Addr: [4]byte{127, 0, 0, 1}}, NoDelay: true, UserTimeout: time.Second}
	released := 0
	h := MakeSocket(r, func() { released++ })
	m, ok := h.(SocketToMake)
	if !ok {
		t.Fatalf("%T is not a SocketToMake", h)
	}
	if _, ok := h.(KernelObject); ok {
		t.Fatal("a socket to make is a kernel object: a door that cannot make it would inject nothing")
	}
	if got := m.Recipe(); got != r {
		t.Fatalf("Recipe = %+v, want %+v", got, r)
	}
	if err := h.Close(); err != nil || released != 1 {
		t.Fatalf("Close: %v, release ran %d times", err, released)
	}
	if err := MakeSocket(r, nil).Close(); err != nil {
		t.Fatal(err)
	}
}

// An unconnected socket's handle gives the descriptor, the address and,
// if asked, a file of the descriptor; Close runs release and closes the
// socket, with or without a file made.
func TestUnconnectedSocket(t *testing.T) {
	for _, file := range []bool{false, true} {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		to := &unix.SockaddrInet4{Port: 9, Addr: [4]byte{127, 0, 0, 1}}
		released := 0
		h := UnconnectedSocket(fd, to, func() { released++ })
		u := h.(Unconnected)
		if u.Socket() != fd {
			t.Fatalf("Socket = %d, want %d", u.Socket(), fd)
		}
		if file {
			if kf, err := u.KernelFile(); err != nil || int(kf.Fd()) != fd {
				t.Fatalf("KernelFile = %v, %v; want a file of the socket", kf, err)
			}
			if kf, _ := u.KernelFile(); int(kf.Fd()) != fd {
				t.Fatal("a second KernelFile is another file")
			}
		}
		if u.ConnectTo() != to {
			t.Fatalf("ConnectTo = %v, want %v", u.ConnectTo(), to)
		}
		if err := h.Close(); err != nil || released != 1 {
			t.Fatalf("Close (file %v): %v, release ran %d times", file, err, released)
		}
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != unix.EBADF {
			t.Fatalf("the socket is still open after Close (file %v: %v)", file, err)
		}
	}
}
