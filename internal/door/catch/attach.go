package catch

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"wirefs/internal/ns"
)

// Attach takes over the running process pid (x86-64): it stops the
// process with ptrace, makes it set no_new_privs and install the trapping
// filter itself with a listener and thread sync, copies the listener
// with pidfd_getfd, closes the process's copy, restores its registers and
// lets it go; then it serves the listener as Run does until the process
// exits. o.Args is not used.
//
// What it cannot cover: children that exist already (the filter reaches
// the process's threads and the children it starts from now on); a
// process that is traced already (gdb, strace), that cannot be traced
// (Yama ptrace_scope 2 or 3, or 1 when wirefs attach is not its
// ancestor; PR_SET_DUMPABLE 0; setuid), or that runs under a seccomp
// listener already (wirefs run). Descriptors the process opened before
// are not touched, and its working directory stays where it is.
func Attach(n *ns.Namespace, pid int, o Options) error {
	if o.Log == nil {
		return errors.New("catch.Attach: no logger")
	}
	names, err := newNames(o.Prefix, o.Roots, o.URLName)
	if err != nil {
		return err
	}
	nsize, err := notifSizes()
	if err != nil {
		return fmt.Errorf("%w on this system (%v)", ErrUnavailable, err)
	}
	pidfd, err := pidfdOpen(pid)
	if err != nil {
		return fmt.Errorf("process %d: %w", pid, err)
	}
	defer syscall.Close(pidfd)

	mnt, sv, closeDoor, err := privateDoor(n, o)
	if err != nil {
		return err
	}
	defer closeDoor()

	listener, err := injectFilter(pid, pidfd)
	if err != nil {
		return fmt.Errorf("cannot take over process %d: %w", pid, err)
	}
	defer syscall.Close(listener)
	syncMode := setSyncWakeUp(listener, o)
	o.Log.Debug("catch: attached", "pid", pid, "door", mnt, "sync-wake-up", syncMode)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newServer(ctx, listener, n, names, mnt, sv, new(sync.Mutex), o.Log, nsize)
	s.tm = newTiming(o)
	defer s.ids.close()
	go s.receive()
	// A pidfd polls readable when its process exits.
	fds := []pollFd{{fd: int32(pidfd), events: 1 /* POLLIN */}}
	for {
		_, _, e := syscall.Syscall(syscall.SYS_POLL, uintptr(unsafe.Pointer(&fds[0])), 1, ^uintptr(0))
		if e == syscall.EINTR {
			continue
		}
		break
	}
	o.Log.Debug("catch: the attached process exited", "pid", pid, "continued", s.nCont.Load(), "served", s.nServed.Load())
	if s.tm != nil {
		s.tm.report(o.Timing)
	}
	return nil
}

type pollFd struct {
	fd             int32
	events, revent int16
}

const (
	sysPidfdOpen  = 434
	sysPidfdGetfd = 438

	filterFlagTsync      = 1
	filterFlagTsyncESRCH = 1 << 4

	sysMmap   = 9
	sysMunmap = 11
	sysClose  = 3
	sysPrctl  = 157
)

func pidfdOpen(pid int) (int, error) {
	r, _, e := syscall.Syscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

// injectFilter makes process pid install the filter and returns a copy of
// its listener.
func injectFilter(pid, pidfd int) (int, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t, err := seize(pid)
	if err != nil {
		return -1, err
	}
	listener, err := t.installFilter(pidfd)
	if derr := t.detach(); err == nil && derr != nil {
		err = fmt.Errorf("detaching: %w", derr)
	}
	return listener, err
}

// installFilter runs, in the tracee: mmap a page, write the filter there,
// prctl(PR_SET_NO_NEW_PRIVS), seccomp(SET_MODE_FILTER, NEW_LISTENER |
// TSYNC | TSYNC_ESRCH), then (after pidfd_getfd) close and munmap.
func (t *tracee) installFilter(pidfd int) (int, error) {
	errno := func(what string, r int64) error {
		return fmt.Errorf("%s in the process: %w", what, syscall.Errno(-r))
	}
	page, err := t.call(sysMmap, 0, pageSize, syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS, ^uint64(0), 0)
	if err != nil {
		return -1, err
	}
	if page < 0 && page > -4096 {
		return -1, errno("mmap", page)
	}
	defer t.call(sysMunmap, uint64(page), pageSize)

	prog := buildFilter(trappedNumbers(trapNamespace), 0)
	size := len(prog) * int(unsafe.Sizeof(prog[0]))
	if 16+size > pageSize {
		return -1, errors.New("the filter does not fit in a page")
	}
	b := make([]byte, 16+size)
	*(*uint16)(unsafe.Pointer(&b[0])) = uint16(len(prog))               // struct sock_fprog: len,
	*(*uint64)(unsafe.Pointer(&b[8])) = uint64(page) + 16               // filter pointer,
	copy(b[16:], unsafe.Slice((*byte)(unsafe.Pointer(&prog[0])), size)) // then the filter
	if err := t.write(uint64(page), b); err != nil {
		return -1, err
	}
	if r, err := t.call(sysPrctl, prSetNoNewPrivs, 1, 0, 0, 0); err != nil || r < 0 {
		if err == nil {
			err = errno("prctl(PR_SET_NO_NEW_PRIVS)", r)
		}
		return -1, err
	}
	fd, err := t.call(sysSeccomp, seccompSetModeFilt, filterFlagNewListener|filterFlagTsync|filterFlagTsyncESRCH, uint64(page))
	if err != nil {
		return -1, err
	}
	if fd < 0 {
		if fd == -int64(syscall.EBUSY) {
			return -1, errors.New("it runs under a seccomp listener already (wirefs run?)")
		}
		return -1, errno("seccomp", fd)
	}
	r, _, e := syscall.Syscall(sysPidfdGetfd, uintptr(pidfd), uintptr(fd), 0)
	t.call(sysClose, uint64(fd))
	if e != 0 {
		return -1, fmt.Errorf("pidfd_getfd: %w", e)
	}
	syscall.CloseOnExec(int(r))
	return int(r), nil
}
