package catch

import (
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"wirefs/internal/ns"
)

// The fast path: a library preloaded into the command's dynamically linked
// programs (fastpath/fastpath.c) makes their path calls whose name cannot
// be a namespace name — by the same cheap tests the supervisor makes first
// (names.mayReach, relMayReach, mayBeURL) — through a syscall instruction
// at trampAddr, and the filter lets calls from there through: no trap, no
// round trip to the supervisor for local files. Every other call traps as
// before, so static programs, programs that drop LD_PRELOAD and calls the
// library does not wrap (the C library's internal ones: opendir, fopen,
// realpath's readlinks) behave as they always did, only slower.
//
// It is not a way around the catcher that a program did not have before:
// wirefs run is not a sandbox (a name relative to a real directory
// descriptor was never trapped either).

//go:embed fastpath/fastpath.so
var fastpathLib []byte

// trampAddr is where the library maps its trampoline, and trampIP the
// instruction pointer of a system call made from it (the address after
// its syscall instruction): fastpath.c's TRAMP_ADDR and layout. The
// address is far from where the kernel puts programs, their heaps and
// mappings; if it is taken, the library maps nothing and every call
// traps.
const (
	trampAddr = 0x100000000000
	trampIP   = trampAddr + 25
)

// An open of a name the library does not find local is made from a
// second copy of the trampoline, at trampAddr + 32, which the filter
// traps as any other call: from there, the open's fifth and sixth
// arguments (which openat ignores) are the address of the library's
// connect answer and a magic number. connectMagic: the library connects a
// socket it is given; socketMagic: it also makes one. The answer says
// "none" until the supervisor writes it:
//   - for a socket the library is to connect (ns.Unconnected), the
//     address, before the descriptor is handed over (answerConnect);
//   - for a socket it is to make (ns.SocketToMake), the recipe, and the
//     open is answered with socketMagic instead of a descriptor
//     (answerMake): no descriptor changes hands;
//   - nothing for a descriptor that is ready as it is.
//
// The answer is fastpath.c's struct connect_answer, whose layout is
// described there; these are its offsets.
const (
	trampConnectIP = trampAddr + 32 + 25
	connectMagic   = 0x77666361_6e737772 // "wfcanswr"
	socketMagic    = 0x7766736f_636b6574 // "wfsocket"

	answerKind        = 4  // u32 after the address's u32 length
	answerAddr        = 8  // [32]byte: struct sockaddr_in or sockaddr_in6
	answerNetns       = 40 // u64: the supervisor's SO_NETNS_COOKIE
	answerType        = 48 // i32: socket(2)'s type
	answerProtocol    = 52 // i32: and protocol
	answerOptions     = 56 // u32: the opt* bits below
	answerUserTimeout = 60 // u32: TCP_USER_TIMEOUT in ms while connecting
	answerSize        = 64

	answerConnect = 0 // the kinds
	answerMake    = 1

	optNoDelay  = 1 // set TCP_NODELAY
	optReusable = 2 // the recipe is the name's for good (ns.SocketRecipe.Reusable): the library keeps it
)

// connectAnswerAt is where the library that made the open n takes its
// connect answer (0 when the library did not make it), and whether it
// makes sockets too.
func connectAnswerAt(n *notif) (at uint64, makes bool) {
	if n.IP != trampConnectIP || n.Args[4] == 0 {
		return 0, false
	}
	switch n.Args[5] {
	case connectMagic:
		return n.Args[4], false
	case socketMagic:
		return n.Args[4], true
	}
	return 0, false
}

// writeConnectAnswer writes the connect answer to at addr in process pid.
func writeConnectAnswer(pid uint32, addr uint64, to unix.Sockaddr) error {
	var a [answerSize]byte
	n, err := putAnswer(&a, answerConnect, to)
	if err != nil {
		return err
	}
	return writeAnswer(pid, addr, a[:n])
}

// writeSocketAnswer writes the recipe r to at addr in process pid, with
// netns, the supervisor's network namespace, which the library checks its
// socket against.
func writeSocketAnswer(pid uint32, addr uint64, r ns.SocketRecipe, netns uint64) error {
	var a [answerSize]byte
	if _, err := putAnswer(&a, answerMake, r.To); err != nil {
		return err
	}
	binary.LittleEndian.PutUint64(a[answerNetns:], netns)
	binary.LittleEndian.PutUint32(a[answerType:], uint32(r.Type))
	binary.LittleEndian.PutUint32(a[answerProtocol:], uint32(r.Protocol))
	var opts uint32
	if r.NoDelay {
		opts |= optNoDelay
	}
	if r.Reusable {
		opts |= optReusable
	}
	binary.LittleEndian.PutUint32(a[answerOptions:], opts)
	binary.LittleEndian.PutUint32(a[answerUserTimeout:], uint32(r.UserTimeout.Milliseconds()))
	return writeAnswer(pid, addr, a[:])
}

// putAnswer puts an answer's length, kind and address in a and returns
// how many bytes of a they take.
func putAnswer(a *[answerSize]byte, kind uint32, to unix.Sockaddr) (int, error) {
	sn, err := putSockaddr(a[answerAddr:answerNetns], to)
	if err != nil {
		return 0, err
	}
	binary.LittleEndian.PutUint32(a[0:], uint32(sn))
	binary.LittleEndian.PutUint32(a[answerKind:], kind)
	return answerAddr + sn, nil
}

func writeAnswer(pid uint32, addr uint64, b []byte) error {
	got, err := writeRemote(pid, addr, b)
	if err == nil && got != len(b) {
		err = syscall.EFAULT
	}
	return err
}

// netnsCookie is the network namespace of this process (SO_NETNS_COOKIE
// of a socket of its), or 0 when the kernel cannot tell (before Linux
// 5.14): the library then makes no sockets.
func netnsCookie() uint64 {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	defer unix.Close(fd)
	c, err := unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_NETNS_COOKIE)
	if err != nil {
		return 0
	}
	return c
}

// putSockaddr writes sa into b as struct sockaddr_in or sockaddr_in6 and
// returns its length.
func putSockaddr(b []byte, sa unix.Sockaddr) (int, error) {
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		b = b[:unix.SizeofSockaddrInet4]
		clear(b)
		binary.LittleEndian.PutUint16(b[0:], unix.AF_INET)
		binary.BigEndian.PutUint16(b[2:], uint16(sa.Port))
		copy(b[4:], sa.Addr[:])
		return len(b), nil
	case *unix.SockaddrInet6:
		b = b[:unix.SizeofSockaddrInet6]
		clear(b)
		binary.LittleEndian.PutUint16(b[0:], unix.AF_INET6)
		binary.BigEndian.PutUint16(b[2:], uint16(sa.Port))
		copy(b[8:], sa.Addr[:])
		binary.LittleEndian.PutUint32(b[24:], sa.ZoneId)
		return len(b), nil
	}
	return 0, fmt.Errorf("no connect answer for a %T", sa)
}

// Environment of the command's programs for the fast path.
const (
	fastFirstsEnv = "WIREFS_CATCH_FIRSTS" // "/net/src": the first components of names' local roots
	fastURLEnv    = "WIREFS_CATCH_URL"    // "1": URL names are caught
	ldPreload     = "LD_PRELOAD"
)

const stNoexec = 8 // ST_NOEXEC of statfs(2)'s f_flags

// fastPath writes the library into a new directory that every user can
// read (a program that changes its uid must still load it), in the
// temporary directory or else in runtimeDir, whichever allows
// executables, and returns the command's environment, env with the
// library preloaded after any library the user preloads (an interposer
// of theirs keeps coming first), and the cleanup that removes the
// directory. Libraries left there by supervisors that were killed are
// removed first, unless doorBase, where the private door's directory
// is, is the same directory (hiddenDir cleaned it already).
func fastPath(runtimeDir, doorBase string, env []string, m *names, log *slog.Logger) ([]string, func(), error) {
	base := ""
	for _, d := range []string{os.TempDir(), runtimeDir} {
		var st syscall.Statfs_t
		if d != "" && syscall.Statfs(d, &st) == nil && st.Flags&stNoexec == 0 {
			base = d
			break
		}
	}
	if base == "" {
		return nil, nil, errors.New("no directory that allows executables for the library")
	}
	if real, err := filepath.EvalSymlinks(base); err != nil || real != doorBase {
		removeStale(base, log)
	}
	dir, err := os.MkdirTemp(base, hiddenPrefix+strconv.Itoa(os.Getpid())+"-lib-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	lib := filepath.Join(dir, "fastpath.so")
	if strings.ContainsAny(lib, " :") { // LD_PRELOAD's separators
		cleanup()
		return nil, nil, fmt.Errorf("%s cannot be named in LD_PRELOAD", lib)
	}
	if err := os.WriteFile(lib, fastpathLib, 0o644); err == nil {
		err = os.Chmod(dir, 0o755) // MkdirTemp made it 0700
	}
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return fastEnv(env, lib, m), cleanup, nil
}

// fastEnv is env with the library lib preloaded and the names' cheap
// tests described for it.
func fastEnv(env []string, lib string, m *names) []string {
	firsts := make([]string, 0, len(m.firsts))
	for f := range m.firsts {
		firsts = append(firsts, f)
	}
	slices.Sort(firsts)
	preload := lib
	out := make([]string, 0, len(env)+3)
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case ldPreload:
			if v != "" {
				preload = v + " " + lib
			}
			continue
		case fastFirstsEnv, fastURLEnv:
			continue
		}
		out = append(out, kv)
	}
	out = append(out, ldPreload+"="+preload, fastFirstsEnv+"=/"+strings.Join(firsts, "/"))
	if m.url != nil {
		out = append(out, fastURLEnv+"=1")
	}
	return out
}
