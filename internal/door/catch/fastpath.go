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
// connect answer and connectMagic. The library makes the answer "none"
// (a length of 0) before the open; the supervisor, before it hands over a
// descriptor, writes there the address of a socket that the library is
// to connect in the program's thread (ns.Unconnected), and nothing for a
// descriptor that is ready as it is. The answer is fastpath.c's struct
// connect_answer: a u32 length of the address (0: none), a u32 of zeros,
// then the struct sockaddr.
const (
	trampConnectIP   = trampAddr + 32 + 25
	connectMagic     = 0x77666361_6e737772 // "wfcanswr"
	connectAnswerMax = 8 + 32
)

// connectAnswerAt is where the library that made the open n takes its
// connect answer, or 0 when the library did not make it.
func connectAnswerAt(n *notif) uint64 {
	if n.IP != trampConnectIP || n.Args[5] != connectMagic || n.Args[4] == 0 {
		return 0
	}
	return n.Args[4]
}

// writeConnectAnswer writes the connect answer to at addr in process pid.
func writeConnectAnswer(pid uint32, addr uint64, to unix.Sockaddr) error {
	var a [connectAnswerMax]byte
	sn, err := putSockaddr(a[8:], to)
	if err != nil {
		return err
	}
	binary.LittleEndian.PutUint32(a[0:], uint32(sn))
	n := 8 + sn
	got, err := writeRemote(pid, addr, a[:n])
	if err == nil && got != n {
		err = syscall.EFAULT
	}
	return err
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
