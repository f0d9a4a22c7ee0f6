package catch

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Per-socket pacing, wirefs nice's fallback without CAP_NET_ADMIN (issue
// 11): with Options.Pace, connect and listen are trapped too; before the
// call runs, the supervisor takes a copy of the socket (pidfd_getfd: it is
// the command's parent, so ptrace access holds) and sets
// SO_MAX_PACING_RATE on it, which TCP honours on its own (internal pacing,
// no fq qdisc needed). A listening socket passes it on to the connections
// it accepts. Static binaries are paced too: the trap is in the kernel,
// not in a library. It is cooperative — the program may set the option
// back — and per socket: N connections may send N times the rate.

// paced are the calls trapped when sockets are paced: the socket gets its
// rate, then the call runs as if nothing had trapped it.
var paced = map[int]call{
	syscall.SYS_CONNECT: {name: "connect", kind: kPace, dirfd: -1, path: -1},
	syscall.SYS_LISTEN:  {name: "listen", kind: kPace, dirfd: -1, path: -1},
}

// pidfdThread (PIDFD_THREAD, Linux 6.9) opens a pidfd for a thread: a
// notification names the calling thread.
const pidfdThread = unix.O_EXCL

// paceSocket sets the pacing rate on the socket that the trapped call of
// thread tid names in fd. A socket that is not TCP is left alone (only
// TCP paces itself), and so is one the call would fail on anyway.
func paceSocket(tid uint32, fd int, bytesPerSecond uint64) error {
	pidfd, err := pidfdOpenThread(tid)
	if err != nil {
		return os.NewSyscallError("pidfd_open", err)
	}
	defer syscall.Close(pidfd)
	r, _, e := syscall.Syscall(sysPidfdGetfd, uintptr(pidfd), uintptr(fd), 0)
	if e != 0 {
		return os.NewSyscallError("pidfd_getfd", e)
	}
	sock := int(r)
	defer syscall.Close(sock)
	if proto, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_PROTOCOL); err != nil || proto != unix.IPPROTO_TCP {
		return nil
	}
	return os.NewSyscallError("setsockopt(SO_MAX_PACING_RATE)",
		unix.SetsockoptUint64(sock, unix.SOL_SOCKET, unix.SO_MAX_PACING_RATE, bytesPerSecond))
}

// pace answers a trapped connect or listen: the socket is paced, then the
// call runs. A socket that cannot be paced is logged once, never refused.
func (s *server) pace(n *notif) {
	if err := paceSocket(n.Pid, int(int32(n.Args[0])), s.pacing); err != nil {
		s.warn("pace", "a socket could not be paced; it sends unpaced", "call", paced[int(n.Nr)].name, "err", err)
	}
	s.cont(n.ID)
}
