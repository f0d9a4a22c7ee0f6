package catch

import (
	"bytes"
	"strconv"
	"sync"
	"syscall"
	"unsafe"
)

// credSource gives the filesystem uid and gid of a target thread, the
// identity the kernel would check (the FUSE door sees the same ones).
// Every namespace open asks, so the answer must be cheap: the kernel's
// PIDFD_GET_INFO (Linux 6.13) on a pidfd of the thread (PIDFD_THREAD,
// Linux 6.9) costs one ioctl, 0.7 µs here, against 15-20 µs for reading
// /proc/TID/status (which the kernel writes out whole for each read) and
// 3.8 µs for opening and closing a pidfd each time. So pidfds are kept,
// one per thread that asked, up to maxPidfds. A pidfd names one thread,
// never a later one with the same id: once that thread is gone the ioctl
// fails with ESRCH, and a new pidfd is opened. Older kernels read /proc.
type credSource struct {
	mu     sync.Mutex
	pidfds map[uint32]int // thread id -> pidfd of that thread
	off    bool           // no PIDFD_GET_INFO, or closed: read /proc
}

// maxPidfds bounds the pidfds kept: a program with more threads asking
// starts the set again.
const maxPidfds = 64

// creds returns the filesystem uid and gid of thread tid.
func (c *credSource) creds(tid uint32) (uid, gid uint32, err error) {
	c.mu.Lock()
	if !c.off {
		uid, gid, err, ok := c.fromPidfd(tid)
		if ok {
			c.mu.Unlock()
			return uid, gid, err
		}
	}
	c.mu.Unlock()
	return credsFromProc(tid)
}

// fromPidfd asks the kernel through a pidfd; ok is false when this kernel
// cannot say (c.off is then set).
func (c *credSource) fromPidfd(tid uint32) (uid, gid uint32, err error, ok bool) {
	for fresh := false; ; fresh = true {
		fd, known := c.pidfds[tid]
		if !known {
			if len(c.pidfds) >= maxPidfds {
				c.closeAll()
			}
			fd, err = pidfdOpenThread(tid)
			switch err {
			case nil:
			case syscall.EINVAL, syscall.ENOSYS:
				c.off = true // no thread pidfds (before 6.9)
				return 0, 0, nil, false
			default:
				return 0, 0, err, true // ESRCH: gone
			}
			if c.pidfds == nil {
				c.pidfds = map[uint32]int{}
			}
			c.pidfds[tid] = fd
		}
		info := pidfdInfo{Mask: pidfdInfoCreds}
		_, e := rawIoctl(fd, ioctlPidfdGetInfo, uintptr(unsafe.Pointer(&info)))
		switch {
		case e == 0 && info.Mask&pidfdInfoCreds != 0:
			return info.Fsuid, info.Fsgid, nil, true
		case e == syscall.ESRCH && !fresh:
			// The thread this pidfd named is gone; tid may be
			// another one now.
			syscall.Close(fd)
			delete(c.pidfds, tid)
			continue
		case e == syscall.ESRCH:
			return 0, 0, e, true
		}
		c.off = true // ENOTTY, EINVAL: no PIDFD_GET_INFO (before 6.13)
		c.closeAll()
		return 0, 0, nil, false
	}
}

// close closes the pidfds kept; later questions read /proc.
func (c *credSource) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.off = true
	c.closeAll()
}

func (c *credSource) closeAll() {
	for tid, fd := range c.pidfds {
		syscall.Close(fd)
		delete(c.pidfds, tid)
	}
}

// pidfdOpenThread opens a pidfd of thread tid (PIDFD_THREAD), close-on-exec
// as every pidfd is.
func pidfdOpenThread(tid uint32) (int, error) {
	r, _, e := syscall.Syscall(sysPidfdOpen, uintptr(tid), pidfdThread, 0)
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

// pidfdInfo is struct pidfd_info as of Linux 6.13 (PIDFD_INFO_SIZE_VER0,
// 64 bytes; later kernels accept the shorter struct).
type pidfdInfo struct {
	Mask, CgroupID           uint64
	Pid, Tgid, Ppid          uint32
	Ruid, Rgid, Euid, Egid   uint32
	Suid, Sgid, Fsuid, Fsgid uint32
	ExitCode                 int32
}

const (
	pidfdInfoCreds    = 1 << 1     // PIDFD_INFO_CREDS
	ioctlPidfdGetInfo = 0xc040ff0b // _IOWR(0xFF, 11, struct pidfd_info), 64 bytes
)

// credsFromProc is creds without pidfds. It first tries one stat of
// /proc/TID, whose owner is the thread's effective uid and gid while it
// is dumpable (several times cheaper than status). The filesystem ids are
// the effective ones unless the program called setfsuid or setfsgid, and
// without privilege those can only be one of its own ids. A thread that
// is not dumpable (it changed its credentials, or asked not to be) shows
// root as the owner, and so does root: then the status file says, read
// once into a stack buffer (the Uid and Gid lines come early in it).
func credsFromProc(tid uint32) (uid, gid uint32, err error) {
	var st syscall.Stat_t
	if err := syscall.Stat(procPath(tid, ""), &st); err == nil && st.Uid != 0 && st.Gid != 0 {
		return st.Uid, st.Gid, nil
	}
	var buf [1024]byte
	b, err := procStatus(tid, &buf)
	if err != nil {
		return 0, 0, err
	}
	id := func(name string) uint32 {
		f := bytes.Fields(statusField(b, name))
		if len(f) < 4 {
			return 0
		}
		v, _ := strconv.ParseUint(string(f[3]), 10, 32) // real, effective, saved, fs
		return uint32(v)
	}
	return id("Uid"), id("Gid"), nil
}
