package ns

import (
	"context"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// A client socket's connect(2) can be left to the program that opens the
// name. A door that hands the program the socket itself, and knows that
// the program will connect it (the catcher door, for an open made by its
// fast-path library), says so with WithConnectByOpener; a provider may
// then answer with UnconnectedSocket: a socket it made, bound and set up
// as for its own connect, with the address to connect it to. What the
// name means (which address, which source, who may bind it, the connect
// timeout) is still the provider's to decide; only the wait for the
// handshake moves into the program's thread, where socket(2) and
// connect(2) would have put it — so the server's accept runs beside the
// program, as for a program that connects by itself, instead of
// preempting the supervisor while the program waits for it.

type connectByOpenerKey struct{}

// WithConnectByOpener returns ctx saying that the opener will connect a
// socket it is given unconnected (an Unconnected handle).
func WithConnectByOpener(ctx context.Context) context.Context {
	return context.WithValue(ctx, connectByOpenerKey{}, true)
}

// ConnectByOpener says whether the door asked with WithConnectByOpener.
func ConnectByOpener(ctx context.Context) bool {
	b, _ := ctx.Value(connectByOpenerKey{}).(bool)
	return b
}

// Unconnected is a handle of a socket whose connect(2) is left to the
// opener; only a door that asked with WithConnectByOpener gets one.
// Socket is the socket's descriptor (blocking, set up and bound), which
// the handle owns and Close closes; KernelFile wraps it in a file, made
// only for a door that asks (a door handing the descriptor over as it is
// spares the os.File's making and closing, and a system call). The opener
// connects it to ConnectTo, and then sets its TCP_USER_TIMEOUT to 0 (the
// provider's connect timeout, which bounds the handshake, and nothing
// after it).
type Unconnected interface {
	KernelObject
	Socket() int
	ConnectTo() unix.Sockaddr
}

// UnconnectedSocket makes fd, a socket to be connected to to by the
// opener, a handle that owns it. release, if not nil, runs at Close.
func UnconnectedSocket(fd int, to unix.Sockaddr, release func()) Handle {
	return &unconnected{fd: fd, to: to, release: release}
}

type unconnected struct {
	fd      int
	to      unix.Sockaddr
	release func()
	mu      sync.Mutex
	f       *os.File // made by KernelFile
}

func (u *unconnected) Socket() int              { return u.fd }
func (u *unconnected) ConnectTo() unix.Sockaddr { return u.to }

func (u *unconnected) KernelFile() (*os.File, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.f == nil {
		u.f = os.NewFile(uintptr(u.fd), "tcp")
	}
	return u.f, nil
}

func (u *unconnected) Close() error {
	if u.release != nil {
		u.release()
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.f != nil {
		return u.f.Close()
	}
	return unix.Close(u.fd)
}
