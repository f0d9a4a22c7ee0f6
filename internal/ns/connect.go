package ns

import (
	"context"
	"os"
	"sync"
	"time"

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

//
// A door whose opener can also make the socket (the fast-path library,
// in the supervisor's network namespace) says so with WithSocketByOpener;
// a provider may then answer with MakeSocket: a recipe of the socket
// (family, type, options) and the address to connect it to, and no socket
// at all in the daemon. The program's own socket(2) spares the daemon the
// socket, its hand-over and its close — and the hand-over's wake-ups of
// the waiting program (SECCOMP_IOCTL_NOTIF_ADDFD), which are most of what
// a connect through open costs beyond the program's own — and the socket
// belongs to the program's cgroup, as one it made by itself would (the
// VIF shaping classifies packets by it). What needs the daemon's rights
// (a bind to a local address or port) stays an Unconnected socket.

type connectByOpenerKey struct{}

// What an opener can do with a client socket, as the door says.
const (
	openerConnects = 1 + iota // connects a socket it is given (Unconnected)
	openerMakes               // also makes it from a recipe (SocketToMake)
)

// WithConnectByOpener returns ctx saying that the opener will connect a
// socket it is given unconnected (an Unconnected handle).
func WithConnectByOpener(ctx context.Context) context.Context {
	return context.WithValue(ctx, connectByOpenerKey{}, openerConnects)
}

// WithSocketByOpener returns ctx saying that the opener will make and
// connect a socket from a recipe (a SocketToMake handle), or connect one
// it is given (Unconnected).
func WithSocketByOpener(ctx context.Context) context.Context {
	return context.WithValue(ctx, connectByOpenerKey{}, openerMakes)
}

// ConnectByOpener says whether the door asked with WithConnectByOpener or
// WithSocketByOpener.
func ConnectByOpener(ctx context.Context) bool {
	v, _ := ctx.Value(connectByOpenerKey{}).(int)
	return v >= openerConnects
}

// SocketByOpener says whether the door asked with WithSocketByOpener.
func SocketByOpener(ctx context.Context) bool {
	v, _ := ctx.Value(connectByOpenerKey{}).(int)
	return v >= openerMakes
}

// SocketRecipe is a client socket for the opener to make and connect:
// socket(2) of To's family with Type and Protocol, TCP_NODELAY if NoDelay,
// then connect(2) to To with UserTimeout (if not 0) as TCP_USER_TIMEOUT,
// which bounds the handshake and is cleared once it is done.
//
// Reusable says that the name always gives this recipe: it depends on
// nothing that can change while the daemon runs (a literal address,
// nothing resolved) nor on the caller. An opener may then keep it and
// make the socket again for the same name without asking, so that
// reconnecting costs what socket(2) and connect(2) cost.
type SocketRecipe struct {
	Type, Protocol int
	To             unix.Sockaddr // *unix.SockaddrInet4 or *unix.SockaddrInet6
	NoDelay        bool
	UserTimeout    time.Duration
	Reusable       bool
}

// SocketToMake is a handle of a socket that the opener makes (only a door
// that asked with WithSocketByOpener gets one). The daemon holds nothing
// but what the provider keeps of the open (its live endpoint), which Close
// releases; the door closes it once the opener has the recipe.
type SocketToMake interface {
	Handle
	Recipe() SocketRecipe
}

// MakeSocket returns the handle of a socket to make by recipe r; release,
// if not nil, runs at Close.
func MakeSocket(r SocketRecipe, release func()) Handle {
	return &toMake{r: r, release: release}
}

type toMake struct {
	r       SocketRecipe
	release func()
}

func (m *toMake) Recipe() SocketRecipe { return m.r }

func (m *toMake) Close() error {
	if m.release != nil {
		m.release()
	}
	return nil
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
