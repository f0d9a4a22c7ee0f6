package catch

import (
	"strconv"
	"syscall"
	"unsafe"
)

// Kernel ABI of seccomp user notification (linux/seccomp.h). Debian 12's
// headers predate some of it (SYNC_WAKE_UP is Linux 6.6), so everything is
// defined here.
const (
	sysSeccomp         = 317
	sysProcessVMReadv  = 310
	sysProcessVMWritev = 311
	seccompSetModeFilt = 1
	seccompGetNotifSz  = 3

	filterFlagNewListener = 1 << 3

	retKillProcess = 0x80000000
	retErrno       = 0x00050000
	retUserNotif   = 0x7fc00000
	retAllow       = 0x7fff0000

	auditArchX8664 = 0xc000003e
	x32SyscallBit  = 0x40000000

	notifFlagContinue = 1 // SECCOMP_USER_NOTIF_FLAG_CONTINUE
	addfdFlagSend     = 1 << 1
	fdSyncWakeUp      = 1 // SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP

	// ioctls: _IOWR('!', 0, struct seccomp_notif) and friends.
	ioctlNotifRecv     = 0xc0502100
	ioctlNotifSend     = 0xc0182101
	ioctlNotifIDValid  = 0x40082102
	ioctlNotifAddfd    = 0x40182103
	ioctlNotifSetFlags = 0x40082104

	prSetNoNewPrivs    = 38
	prSetChildSubreap  = 36
	bpfLdWAbs          = 0x20
	bpfJmpJeqK         = 0x15
	bpfJmpJgeK         = 0x35
	bpfJmpJsetK        = 0x45
	bpfJmpJa           = 0x05
	bpfRetK            = 0x06
	seccompDataNrOff   = 0
	seccompDataArchOff = 4
	seccompDataIPOff   = 8
)

// notif is struct seccomp_notif (80 bytes on every kernel so far; the
// receive buffer is sized from SECCOMP_GET_NOTIF_SIZES all the same).
type notif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Nr    int32
	Arch  uint32
	IP    uint64
	Args  [6]uint64
}

// notifResp is struct seccomp_notif_resp.
type notifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// notifAddfd is struct seccomp_notif_addfd.
type notifAddfd struct {
	ID         uint64
	Flags      uint32
	Srcfd      uint32
	Newfd      uint32
	NewfdFlags uint32
}

func ioctl(fd int, req uintptr, arg uintptr) (uintptr, syscall.Errno) {
	r, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), req, arg)
	return r, e
}

// rawIoctl is ioctl for a request that never waits (at most for a lock
// held as briefly): a raw call spares the scheduler's bookkeeping of a
// system call, on the path of every served call.
func rawIoctl(fd int, req uintptr, arg uintptr) (uintptr, syscall.Errno) {
	r, _, e := syscall.RawSyscall(syscall.SYS_IOCTL, uintptr(fd), req, arg)
	return r, e
}

// notifSizes returns the kernel's size of struct seccomp_notif.
func notifSizes() (int, error) {
	var sz [3]uint16
	_, _, e := syscall.RawSyscall(sysSeccomp, seccompGetNotifSz, 0, uintptr(unsafe.Pointer(&sz[0])))
	if e != 0 {
		return 0, e
	}
	return int(sz[0]), nil
}

// buildFilter returns the BPF program: x86-64 calls in trapped are sent to
// the listener, x32 calls fail with ENOSYS (they would slip past the
// numbers below), and everything else, including 32-bit (i386) calls,
// runs untouched. A call that takes a directory descriptor traps only
// when that descriptor is AT_FDCWD (either one, for rename and link): a
// name relative to a real descriptor stays where the descriptor is — on
// the private door when it came from the namespace, else in local files,
// since no local directory but / holds the prefix — and glibc's fstat,
// newfstatat(fd, "", AT_EMPTY_PATH), is the most frequent call of all.
// What that misses is listed in the package's Limits. With fastIP not 0,
// a call that would trap runs untouched when it was made from the
// instruction before fastIP: the fast path's trampoline (fastpath.go).
// The filter reads only the architecture, the call number, those
// arguments and, for calls that would trap, the instruction pointer, so
// the kernel's action cache skips it entirely for all other calls.
func buildFilter(trapped []int, fastIP uint64) []syscall.SockFilter {
	a := bpfAsm{labels: map[string]int{}}
	argLo := func(i int) uint32 { return uint32(16 + 8*i) } // low word, little endian

	a.stmt(bpfLdWAbs, seccompDataArchOff)
	a.jump(bpfJmpJeqK, auditArchX8664, "", "allow")
	a.stmt(bpfLdWAbs, seccompDataNrOff)
	a.jump(bpfJmpJgeK, x32SyscallBit, "enosys", "")
	for _, nr := range trapped {
		target := "notif"
		if c, _ := trappedCall(nr); c.dirfd >= 0 {
			target = "dirfd" + strconv.Itoa(nr)
		}
		a.jump(bpfJmpJeqK, uint32(nr), target, "")
	}
	// Jumps only go forward: the argument checks sit between the chain
	// and the returns.
	a.jump(bpfJmpJa, 0, "allow", "")
	for _, nr := range trapped {
		c, _ := trappedCall(nr)
		if c.dirfd < 0 {
			continue
		}
		a.label("dirfd" + strconv.Itoa(nr))
		a.stmt(bpfLdWAbs, argLo(c.dirfd))
		a.jump(bpfJmpJeqK, uint32(0xffffff9c) /* AT_FDCWD */, "notif", "")
		if c.kind == kTwo && c.dirfd2 >= 0 {
			a.stmt(bpfLdWAbs, argLo(c.dirfd2))
			a.jump(bpfJmpJeqK, uint32(0xffffff9c), "notif", "")
		}
		a.jump(bpfJmpJa, 0, "allow", "")
	}
	a.label("notif")
	if fastIP != 0 {
		a.stmt(bpfLdWAbs, seccompDataIPOff)
		a.jump(bpfJmpJeqK, uint32(fastIP), "", "trap")
		a.stmt(bpfLdWAbs, seccompDataIPOff+4)
		a.jump(bpfJmpJeqK, uint32(fastIP>>32), "allow", "trap")
	}
	a.label("trap")
	a.stmt(bpfRetK, retUserNotif)
	a.label("allow")
	a.stmt(bpfRetK, retAllow)
	a.label("enosys")
	a.stmt(bpfRetK, retErrno|uint32(syscall.ENOSYS))
	return a.link()
}

// bpfAsm assembles a BPF program whose jumps name labels.
type bpfAsm struct {
	prog   []bpfIns
	labels map[string]int // label -> index of the instruction it marks
}

// bpfIns is an instruction with its jump targets as labels.
type bpfIns struct {
	f      syscall.SockFilter
	jt, jf string // label targets, "" = next
}

// label marks the next instruction.
func (a *bpfAsm) label(l string) { a.labels[l] = len(a.prog) }

func (a *bpfAsm) stmt(code uint16, k uint32) {
	a.prog = append(a.prog, bpfIns{f: syscall.SockFilter{Code: code, K: k}})
}

func (a *bpfAsm) jump(code uint16, k uint32, jt, jf string) {
	a.prog = append(a.prog, bpfIns{f: syscall.SockFilter{Code: code, K: k}, jt: jt, jf: jf})
}

// link returns the program with its labels turned into jump offsets.
func (a *bpfAsm) link() []syscall.SockFilter {
	out := make([]syscall.SockFilter, len(a.prog))
	for i, in := range a.prog {
		out[i] = in.f
		for _, j := range []struct {
			l   string
			dst *uint8
		}{{in.jt, &out[i].Jt}, {in.jf, &out[i].Jf}} {
			if j.l == "" {
				continue
			}
			off := a.labels[j.l] - i - 1
			if in.f.Code == bpfJmpJa {
				out[i].K = uint32(off) // unconditional: the offset is K
				break
			}
			if off < 0 || off > 255 {
				panic("catch: BPF jump out of range")
			}
			*j.dst = uint8(off)
		}
	}
	return out
}
