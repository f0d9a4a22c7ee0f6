package catch

import (
	"os"
	"syscall"
	"unsafe"

	"wirefs/internal/ns"
)

// The stat family, readlink and access run on the private door; their
// results are written into the target.

// writeTarget copies b to addr in the target. /proc/TID/mem is opened
// first and the notification checked after, so the fd is known to be the
// target's memory even if its pid was reused.
func (s *server) writeTarget(n *notif, addr uint64, b []byte) syscall.Errno {
	f, err := os.OpenFile(procPath(n.Pid, "mem"), os.O_RDWR, 0)
	if err != nil {
		return syscall.ESRCH
	}
	defer f.Close()
	if !s.valid(n.ID) {
		return syscall.ESRCH
	}
	if _, err := f.WriteAt(b, int64(addr)); err != nil {
		return syscall.EFAULT
	}
	return 0
}

// statCall is a decoded call of the stat family or readlink: the call
// run on the private door, and where its result goes in the target.
type statCall struct {
	nr    uintptr // SYS_NEWFSTATAT, sysStatx, SYS_STATFS or SYS_READLINKAT
	flags uintptr // newfstatat's and statx's flags
	mask  uintptr // statx's mask
	addr  uint64  // the target's buffer
	size  int     // the result's size (readlink: the link's length)
	limit uint64  // readlink: the size of the target's buffer
}

// decodeStat reads the arguments of stat, lstat, newfstatat, statx,
// statfs, readlink or readlinkat.
func decodeStat(n *notif) statCall {
	statSize := int(unsafe.Sizeof(syscall.Stat_t{}))
	switch n.Nr {
	case syscall.SYS_STAT:
		return statCall{nr: syscall.SYS_NEWFSTATAT, addr: n.Args[1], size: statSize}
	case syscall.SYS_LSTAT:
		return statCall{nr: syscall.SYS_NEWFSTATAT, flags: atSymlinkNofollow, addr: n.Args[1], size: statSize}
	case syscall.SYS_NEWFSTATAT:
		return statCall{nr: syscall.SYS_NEWFSTATAT, flags: uintptr(n.Args[3]), addr: n.Args[2], size: statSize}
	case sysStatx:
		return statCall{nr: sysStatx, flags: uintptr(n.Args[2]), mask: uintptr(n.Args[3]), addr: n.Args[4], size: 256}
	case syscall.SYS_STATFS:
		return statCall{nr: syscall.SYS_STATFS, addr: n.Args[1], size: int(unsafe.Sizeof(syscall.Statfs_t{}))}
	case syscall.SYS_READLINK:
		return statCall{nr: syscall.SYS_READLINKAT, addr: n.Args[1], limit: n.Args[2]}
	case syscall.SYS_READLINKAT:
		return statCall{nr: syscall.SYS_READLINKAT, addr: n.Args[2], limit: n.Args[3]}
	}
	return statCall{}
}

// run makes the call on the private door's name p with its result in buf
// and returns the call's value and the result's size.
func (sc statCall) run(p *byte, buf *[256]byte) (r uintptr, size int, e syscall.Errno) {
	switch sc.nr {
	case syscall.SYS_NEWFSTATAT:
		r, _, e = syscall.Syscall6(syscall.SYS_NEWFSTATAT, atFDCWDu, uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(buf)), sc.flags, 0, 0)
	case sysStatx:
		r, _, e = syscall.Syscall6(sysStatx, atFDCWDu, uintptr(unsafe.Pointer(p)), sc.flags, sc.mask, uintptr(unsafe.Pointer(buf)), 0)
	case syscall.SYS_STATFS:
		r, _, e = syscall.Syscall(syscall.SYS_STATFS, uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(buf)), 0)
	case syscall.SYS_READLINKAT:
		r, _, e = syscall.Syscall6(syscall.SYS_READLINKAT, atFDCWDu, uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(buf)), uintptr(len(buf)), 0, 0)
		size := int(r)
		if e == 0 && uint64(size) > sc.limit {
			size = int(sc.limit)
			r = uintptr(size)
		}
		return r, size, e
	}
	return r, sc.size, e
}

// statLike runs stat, lstat, newfstatat, statx, statfs, readlink or
// readlinkat on the private door and writes the result into the target.
func (s *server) statLike(n *notif, c call, w where) {
	sc := decodeStat(n)
	p, err := syscall.BytePtrFromString(s.private(w))
	if err != nil {
		s.respond(n.ID, 0, syscall.EINVAL)
		return
	}
	var buf [256]byte
	t0 := s.tm.start()
	r, size, e := sc.run(p, &buf)
	t0 = s.tm.end(phDoor, t0)
	if e != 0 {
		s.log.Debug("catch: "+c.name, "path", w.rel, "errno", e.Error())
		s.respond(n.ID, 0, e)
		return
	}
	if c.kind == kStat || c.kind == kStatx {
		s.kernelIdentity(n, c, w, buf[:])
		t0 = s.tm.start()
	}
	errno := s.writeTarget(n, sc.addr, buf[:size])
	s.tm.end(phInject, t0)
	if errno != 0 {
		s.respond(n.ID, 0, errno)
		return
	}
	s.respond(n.ID, int64(r), 0)
}

const atFDCWDu = ^uintptr(99) // AT_FDCWD (-100) as an argument

// kernelIdentity puts the device and inode number of the cache's file
// into the stat result buf of a stored file that an open would hand over
// as that file (complete and clean in the cache), so that stat of the
// name and fstat of the descriptor agree on them as programs expect (cp
// refuses a file "replaced while being copied" otherwise). Size, mode and
// times stay the remote file's.
func (s *server) kernelIdentity(n *notif, c call, w where, buf []byte) {
	node, err := s.user.Resolve(s.asking(s.ctx, n.Pid), w.rel)
	if err != nil {
		return
	}
	o, ok := node.(ns.Opener)
	if !ok || !ns.IsStored(node) {
		return
	}
	h, err := o.Open(s.ctx, s.caller(n.Pid), syscall.O_RDONLY)
	if err != nil {
		return
	}
	defer h.Close()
	ko, ok := h.(ns.KernelObject)
	if !ok {
		return
	}
	f, err := ko.KernelFile()
	if err != nil {
		return
	}
	var st syscall.Stat_t
	if syscall.Fstat(int(f.Fd()), &st) != nil {
		return
	}
	if c.kind == kStat {
		*(*uint64)(unsafe.Pointer(&buf[0])) = st.Dev
		*(*uint64)(unsafe.Pointer(&buf[8])) = st.Ino
		return
	}
	// struct statx: stx_ino at 32, stx_dev_major and _minor at 136.
	*(*uint64)(unsafe.Pointer(&buf[32])) = st.Ino
	*(*uint32)(unsafe.Pointer(&buf[136])) = uint32((st.Dev>>8)&0xfff | (st.Dev>>32)&^0xfff)
	*(*uint32)(unsafe.Pointer(&buf[140])) = uint32(st.Dev&0xff | (st.Dev>>12)&^0xff)
}

// access serves access, faccessat and faccessat2 on the private door.
func (s *server) access(n *notif, c call, w where) {
	p, err := syscall.BytePtrFromString(s.private(w))
	if err != nil {
		s.respond(n.ID, 0, syscall.EINVAL)
		return
	}
	mode, flags := n.Args[1], uint64(0)
	switch n.Nr {
	case syscall.SYS_FACCESSAT:
		mode = n.Args[2]
	case sysFaccessat2:
		mode, flags = n.Args[2], n.Args[3]
	}
	t0 := s.tm.start()
	_, _, e := syscall.Syscall6(sysFaccessat2, atFDCWDu, uintptr(unsafe.Pointer(p)), uintptr(mode), uintptr(flags), 0, 0)
	s.tm.end(phDoor, t0)
	s.respond(n.ID, 0, e)
}
