package portal

import (
	"os"
	"runtime"
	"syscall"
	"unsafe"
)

// as runs fn with the file-system credentials of id: the kernel checks
// every path lookup and open fn makes exactly as it would for the opener
// itself, so an fs portal never lends the daemon's rights.
//
// Linux keeps credentials per thread, and setfsuid(2), setfsgid(2) and
// the raw setgroups(2) system call change only the calling thread's (the
// libc and Go wrappers change every thread's). fn therefore runs on a
// thread locked to this goroutine, which gets the daemon's credentials
// back before it is unlocked. If they cannot be restored the thread is
// left locked, and Go ends it with the goroutine: no other goroutine ever
// runs with the opener's credentials. (Go starts new threads from a
// clean template thread while a thread is locked, so none inherits them.)
//
// When the daemon need not switch (mustSwitch), fn runs as it is.
func as(id identity, fn func() error) error {
	switching, err := mustSwitch(id)
	if err != nil {
		return err
	}
	if !switching {
		return fn()
	}
	runtime.LockOSThread()
	own, err := threadGroups()
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	back := func() {
		if become(uint32(os.Geteuid()), uint32(os.Getegid()), own) == nil {
			runtime.UnlockOSThread()
		}
	}
	if err := become(id.uid, id.gid, id.groups); err != nil {
		back()
		return err
	}
	defer back()
	return fn()
}

// become sets the calling thread's supplementary groups, fsgid and fsuid
// (in that order: changing the fsuid away from 0 drops the capabilities
// the other two need) and checks that they took.
func become(uid, gid uint32, groups []uint32) error {
	var p unsafe.Pointer
	if len(groups) > 0 {
		p = unsafe.Pointer(&groups[0])
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_SETGROUPS, uintptr(len(groups)), uintptr(p), 0); e != 0 {
		return e
	}
	// setfsuid/setfsgid return the previous value and never fail
	// visibly: asking again with the same value returns the new one.
	syscall.RawSyscall(syscall.SYS_SETFSGID, uintptr(gid), 0, 0)
	if got, _, _ := syscall.RawSyscall(syscall.SYS_SETFSGID, uintptr(gid), 0, 0); uint32(got) != gid {
		return syscall.EPERM
	}
	syscall.RawSyscall(syscall.SYS_SETFSUID, uintptr(uid), 0, 0)
	if got, _, _ := syscall.RawSyscall(syscall.SYS_SETFSUID, uintptr(uid), 0, 0); uint32(got) != uid {
		return syscall.EPERM
	}
	return nil
}

// threadGroups are the calling thread's supplementary groups.
func threadGroups() ([]uint32, error) {
	n, _, e := syscall.RawSyscall(syscall.SYS_GETGROUPS, 0, 0, 0)
	if e != 0 {
		return nil, e
	}
	gs := make([]uint32, n+1) // +1: never a nil pointer
	n, _, e = syscall.RawSyscall(syscall.SYS_GETGROUPS, uintptr(len(gs)), uintptr(unsafe.Pointer(&gs[0])), 0)
	if e != 0 {
		return nil, e
	}
	return gs[:n], nil
}
