package catch

import (
	"runtime"
	"syscall"
	"unsafe"
)

// Changes to names (mkdir, unlink, rmdir, rename, symlink, link, mknod) and
// to attributes (truncate, chmod, chown, utimes) of namespace paths are
// made on the private FUSE door, which passes them to the provider (stored
// files) or refuses them as the mounted door does (EROFS, EPERM): the
// catcher decides nothing itself.

// mutate serves mkdir(at), mknod(at), unlink(at), rmdir and symlink(at).
func (s *server) mutate(n *notif, c call, w where) {
	name := s.private(w)
	var err error
	switch n.Nr {
	case syscall.SYS_MKDIR, syscall.SYS_MKDIRAT:
		mode := n.Args[1]
		if n.Nr == syscall.SYS_MKDIRAT {
			mode = n.Args[2]
		}
		s.withUmaskOf(n.Pid, func() { err = syscall.Mkdir(name, uint32(mode)) })
	case syscall.SYS_MKNOD:
		s.withUmaskOf(n.Pid, func() { err = syscall.Mknod(name, uint32(n.Args[1]), int(n.Args[2])) })
	case syscall.SYS_MKNODAT:
		s.withUmaskOf(n.Pid, func() { err = syscall.Mknod(name, uint32(n.Args[2]), int(n.Args[3])) })
	case syscall.SYS_UNLINK:
		err = syscall.Unlink(name)
	case syscall.SYS_UNLINKAT:
		if n.Args[2]&atRemoveDir != 0 {
			err = syscall.Rmdir(name)
		} else {
			err = syscall.Unlink(name)
		}
	case syscall.SYS_RMDIR:
		err = syscall.Rmdir(name)
	case syscall.SYS_SYMLINK, syscall.SYS_SYMLINKAT:
		var target string
		if target, err = readPath(n.Pid, n.Args[0]); err == nil {
			err = syscall.Symlink(target, name)
		}
	}
	s.respondErr(n, err)
}

// withUmaskOf runs create, which makes a name on the private door, with
// the umask of thread tid: the kernel masks the mode of a FUSE create or
// mkdir with the umask of the thread that makes the call, and the
// program's umask is what it expects to see applied, not the
// supervisor's. A umask belongs to all the threads of a process, so a
// different one is set on a thread of its own: a goroutine locked to its
// thread leaves the process's file-system context (unshare CLONE_FS),
// creates, and ends, taking the thread with it.
func (s *server) withUmaskOf(tid uint32, create func()) {
	u, err := umaskOf(tid)
	if err != nil || u == s.umask {
		create()
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := syscall.Unshare(syscall.CLONE_FS); err != nil {
			s.warn("umask", "names are created with the supervisor's umask", "err", err.Error())
		} else {
			syscall.Umask(u)
		}
		create()
	}()
	<-done
}

// two serves rename, renameat, renameat2, link and linkat with both names
// in the namespace.
func (s *server) two(n *notif, c call, w, w2 where) {
	from, to := s.private(w), s.private(w2)
	var err error
	switch n.Nr {
	case syscall.SYS_RENAME, syscall.SYS_RENAMEAT:
		err = syscall.Rename(from, to)
	case sysRenameat2:
		err = renameat2(from, to, uint(n.Args[4]))
	default: // link, linkat
		err = syscall.Link(from, to)
	}
	s.respondErr(n, err)
}

func renameat2(from, to string, flags uint) error {
	f, err := syscall.BytePtrFromString(from)
	if err != nil {
		return err
	}
	t, err := syscall.BytePtrFromString(to)
	if err != nil {
		return err
	}
	_, _, e := syscall.Syscall6(sysRenameat2, atFDCWDu, uintptr(unsafe.Pointer(f)), atFDCWDu, uintptr(unsafe.Pointer(t)), uintptr(flags), 0)
	if e != 0 {
		return e
	}
	return nil
}

// respondErr answers with err's errno (0 for nil).
func (s *server) respondErr(n *notif, err error) {
	var errno syscall.Errno
	if err != nil {
		var ok bool
		if errno, ok = err.(syscall.Errno); !ok {
			errno = syscall.EIO
		}
	}
	s.respond(n.ID, 0, errno)
}

// setattr runs truncate, chmod, chown and the utime calls on the private
// door.
func (s *server) setattr(n *notif, c call, w where) {
	name := s.private(w)
	var err error
	switch n.Nr {
	case syscall.SYS_TRUNCATE:
		err = syscall.Truncate(name, int64(n.Args[1]))
	case syscall.SYS_CHMOD:
		err = syscall.Chmod(name, uint32(n.Args[1]))
	case syscall.SYS_FCHMODAT, sysFchmodat2:
		err = syscall.Chmod(name, uint32(n.Args[2]))
	case syscall.SYS_CHOWN:
		err = syscall.Chown(name, int(int32(n.Args[1])), int(int32(n.Args[2])))
	case syscall.SYS_LCHOWN:
		err = syscall.Lchown(name, int(int32(n.Args[1])), int(int32(n.Args[2])))
	case syscall.SYS_FCHOWNAT:
		err = syscall.Fchownat(atFDCWD, name, int(int32(n.Args[2])), int(int32(n.Args[3])), int(n.Args[4])&^atEmptyPath)
	default:
		var ts []syscall.Timespec
		if ts, err = s.times(n); err == nil {
			err = syscall.UtimesNano(name, ts)
		}
	}
	s.respondErr(n, err)
}

// times reads the times argument of utime, utimes, futimesat or utimensat
// (NULL: now).
func (s *server) times(n *notif) ([]syscall.Timespec, error) {
	now := []syscall.Timespec{{Nsec: utimeNow}, {Nsec: utimeNow}}
	var addr uint64
	switch n.Nr {
	case syscall.SYS_UTIME, syscall.SYS_UTIMES:
		addr = n.Args[1]
	default: // futimesat, utimensat
		addr = n.Args[2]
	}
	if addr == 0 {
		return now, nil
	}
	var b [4]int64 // two timespecs, two timevals, or a utimbuf (first two)
	raw := unsafe.Slice((*byte)(unsafe.Pointer(&b[0])), len(b)*8)
	size := 32
	if n.Nr == syscall.SYS_UTIME {
		size = 16
	}
	if got, err := readRemote(n.Pid, addr, raw[:size]); err != nil || got != size {
		return nil, syscall.EFAULT
	}
	switch n.Nr {
	case syscall.SYS_UTIME: // struct utimbuf: actime, modtime in seconds
		return []syscall.Timespec{{Sec: b[0]}, {Sec: b[1]}}, nil
	case syscall.SYS_UTIMES, syscall.SYS_FUTIMESAT: // struct timeval[2]
		return []syscall.Timespec{{Sec: b[0], Nsec: b[1] * 1000}, {Sec: b[2], Nsec: b[3] * 1000}}, nil
	}
	return []syscall.Timespec{{Sec: b[0], Nsec: b[1]}, {Sec: b[2], Nsec: b[3]}}, nil
}

const (
	utimeNow    = (1 << 30) - 1 // UTIME_NOW
	atRemoveDir = 0x200
)
