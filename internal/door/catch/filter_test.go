package catch

import (
	"context"
	"encoding/binary"
	"log/slog"
	"os"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// runBPF interprets the subset of classic BPF the filter uses, over a
// struct seccomp_data.
func runBPF(t *testing.T, prog []syscall.SockFilter, nr int32, arch uint32, args [6]uint64) uint32 {
	return runBPFAt(t, prog, nr, arch, 0, args)
}

// runBPFAt is runBPF of a call made at instruction pointer ip.
func runBPFAt(t *testing.T, prog []syscall.SockFilter, nr int32, arch uint32, ip uint64, args [6]uint64) uint32 {
	t.Helper()
	var data [64]byte
	binary.LittleEndian.PutUint32(data[0:], uint32(nr))
	binary.LittleEndian.PutUint32(data[4:], arch)
	binary.LittleEndian.PutUint64(data[8:], ip)
	for i, a := range args {
		binary.LittleEndian.PutUint64(data[16+8*i:], a)
	}
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case bpfLdWAbs:
			acc = binary.LittleEndian.Uint32(data[in.K:])
		case bpfJmpJeqK, bpfJmpJgeK, bpfJmpJsetK:
			var cond bool
			switch in.Code {
			case bpfJmpJeqK:
				cond = acc == in.K
			case bpfJmpJgeK:
				cond = acc >= in.K
			default:
				cond = acc&in.K != 0
			}
			if cond {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case bpfJmpJa:
			pc += int(in.K)
		case bpfRetK:
			return in.K
		default:
			t.Fatalf("unexpected BPF code %#x at %d", in.Code, pc)
		}
	}
	t.Fatal("fell off the end of the program")
	return 0
}

func TestFilter(t *testing.T) {
	prog := buildFilter(trappedNumbers(trapNamespace), 0)
	if len(prog) > 255 {
		t.Fatalf("program of %d instructions", len(prog))
	}
	var none [6]uint64
	fd := uint64(3)
	cwd := uint64(0xffffffffffffff9c)
	for nr, c := range calls {
		// Every trapped call traps with its names relative to AT_FDCWD,
		// and with a real directory descriptor it runs untouched.
		var args, real [6]uint64
		dirfds := []int{c.dirfd}
		if c.kind == kTwo {
			dirfds = append(dirfds, c.dirfd2)
		}
		for _, i := range dirfds {
			if i >= 0 {
				args[i], real[i] = cwd, fd
			}
		}
		if got := runBPF(t, prog, int32(nr), auditArchX8664, args); got != retUserNotif {
			t.Errorf("%s (%d): %#x, want USER_NOTIF", c.name, nr, got)
		}
		want := uint32(retUserNotif)
		if c.dirfd >= 0 {
			want = retAllow
		}
		if got := runBPF(t, prog, int32(nr), auditArchX8664, real); got != want {
			t.Errorf("%s (%d) on a real descriptor: %#x, want %#x", c.name, nr, got, want)
		}
	}
	for _, nr := range []int32{syscall.SYS_READ, syscall.SYS_WRITE, syscall.SYS_CLOSE, syscall.SYS_FSTAT, syscall.SYS_GETDENTS64, syscall.SYS_MMAP, 500} {
		if got := runBPF(t, prog, nr, auditArchX8664, none); got != retAllow {
			t.Errorf("%d: %#x, want ALLOW", nr, got)
		}
	}
	// x32 calls would slip past the numbers: ENOSYS.
	if got := runBPF(t, prog, x32SyscallBit|syscall.SYS_OPENAT, auditArchX8664, none); got != retErrno|uint32(syscall.ENOSYS) {
		t.Errorf("x32 openat: %#x", got)
	}
	// i386 (int 0x80): allowed, documented.
	if got := runBPF(t, prog, 5, 0x40000003, none); got != retAllow {
		t.Errorf("i386 open: %#x", got)
	}
	// fstat as newfstatat(fd, "", AT_EMPTY_PATH) and statx likewise do
	// not trap, nor does any name relative to a real descriptor; rename
	// and link trap when either of their descriptors is AT_FDCWD.
	for _, tc := range []struct {
		nr   int32
		args [6]uint64
		want uint32
	}{
		{syscall.SYS_NEWFSTATAT, [6]uint64{fd, 0, 0, atEmptyPath}, retAllow},
		{syscall.SYS_NEWFSTATAT, [6]uint64{fd, 0, 0, atEmptyPath | atSymlinkNofollow}, retAllow},
		{syscall.SYS_NEWFSTATAT, [6]uint64{cwd, 0, 0, atEmptyPath}, retUserNotif},
		{syscall.SYS_NEWFSTATAT, [6]uint64{fd, 0, 0, 0}, retAllow},
		{syscall.SYS_OPENAT, [6]uint64{fd, 0, 0, 0}, retAllow},
		{syscall.SYS_OPENAT, [6]uint64{0xffffff9c, 0, 0, 0}, retUserNotif}, // AT_FDCWD as a 32-bit int
		{syscall.SYS_RENAMEAT, [6]uint64{fd, 0, cwd, 0}, retUserNotif},
		{syscall.SYS_RENAMEAT, [6]uint64{cwd, 0, fd, 0}, retUserNotif},
		{syscall.SYS_RENAMEAT, [6]uint64{fd, 0, fd, 0}, retAllow},
		{syscall.SYS_SYMLINKAT, [6]uint64{0, cwd, 0}, retUserNotif},
		{syscall.SYS_SYMLINKAT, [6]uint64{0, fd, 0}, retAllow},
		{sysStatx, [6]uint64{fd, 0, atEmptyPath, 0x7ff}, retAllow},
		{sysStatx, [6]uint64{cwd, 0, atEmptyPath, 0x7ff}, retUserNotif},
		{sysStatx, [6]uint64{fd, 0, 0, 0x7ff}, retAllow},
	} {
		if got := runBPF(t, prog, tc.nr, auditArchX8664, tc.args); got != tc.want {
			t.Errorf("%d %x: %#x, want %#x", tc.nr, tc.args, got, tc.want)
		}
	}
}

// TestFilterFastPath: with the fast path, a call that would trap runs
// when it comes from the trampoline, and only then; the rest of the
// filter is unchanged.
func TestFilterFastPath(t *testing.T) {
	prog := buildFilter(trappedNumbers(trapNamespace), trampIP)
	cwd := [6]uint64{0xffffffffffffff9c}
	for _, tc := range []struct {
		nr   int32
		ip   uint64
		args [6]uint64
		want uint32
	}{
		{syscall.SYS_OPENAT, trampIP, cwd, retAllow},
		{syscall.SYS_OPENAT, trampIP - 2, cwd, retUserNotif},
		{syscall.SYS_OPENAT, trampConnectIP, cwd, retUserNotif},  // the library's opens of namespace names
		{syscall.SYS_OPENAT, trampIP + 1<<32, cwd, retUserNotif}, // the low word alone does not do
		{syscall.SYS_OPENAT, 0x7f0000001234, cwd, retUserNotif},
		{syscall.SYS_STAT, trampIP, [6]uint64{}, retAllow},
		{syscall.SYS_STAT, 0x401000, [6]uint64{}, retUserNotif},
		{syscall.SYS_GETXATTR, trampIP, [6]uint64{}, retAllow},
		{syscall.SYS_OPENAT, 0x7f0000001234, [6]uint64{3}, retAllow},
		{syscall.SYS_READ, 0x7f0000001234, [6]uint64{}, retAllow},
		{x32SyscallBit | syscall.SYS_OPENAT, trampIP, cwd, retErrno | uint32(syscall.ENOSYS)},
	} {
		if got := runBPFAt(t, prog, tc.nr, auditArchX8664, tc.ip, tc.args); got != tc.want {
			t.Errorf("%d at %#x: %#x, want %#x", tc.nr, tc.ip, got, tc.want)
		}
	}
}

func TestSyscallTable(t *testing.T) {
	for nr, c := range calls {
		if c.kind == kGetcwd {
			continue
		}
		if c.path < 0 || c.path > 5 || c.dirfd > 5 {
			t.Errorf("%s (%d): bad argument positions", c.name, nr)
		}
		if c.kind == kTwo && (c.path2 <= 0 || c.path2 > 5) {
			t.Errorf("%s: no second path", c.name)
		}
	}
}

// TestReceiveEndsWithItsProcesses: once no process is left under the
// filter, the receiver returns instead of spinning on the kernel's
// ENOENT until the supervisor exits.
func TestReceiveEndsWithItsProcesses(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd, err := startCommand(self, []*os.File{os.Stdin, os.Stdout, os.Stderr}, []string{"true"}, trapNamespace, os.Environ())
	// startCommand made this process the child subreaper: the later
	// tests' orphans would become its zombies, which still count as
	// processes left behind.
	defer syscall.RawSyscall6(syscall.SYS_PRCTL, prSetChildSubreap, 0, 0, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer cmd.stop()
	listener, msg, err := receiveListener(cmd.sock)
	if err != nil || listener < 0 {
		t.Skipf("no seccomp listener here: %v %s", err, msg)
	}
	defer syscall.Close(listener)
	names, err := newNames("/net", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := newServer(context.Background(), listener, nil, names, "", nil, cmd.ptraceMu, slog.Default(), int(unsafe.Sizeof(notif{})))
	done := make(chan struct{})
	go func() { s.receive(); close(done) }()
	if status := <-cmd.exited; status != 0 {
		t.Fatalf("true: status %d", status)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the receiver still runs with no process left under its filter")
	}
}
