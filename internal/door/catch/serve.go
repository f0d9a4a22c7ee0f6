package catch

import (
	"context"
	"log/slog"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	fusedoor "wirefs/internal/door/fuse"
	"wirefs/internal/ns"
)

// server answers the notifications of one listener.
type server struct {
	fd     int // the listener
	names  *names
	user   *ns.Namespace
	mnt    string // mount point of the private FUSE door
	served *served
	log    *slog.Logger
	// ptraceMu is held while a thread is traced (chdir): wait calls of
	// the reaper must not take its ptrace stops.
	ptraceMu *sync.Mutex
	ctx      context.Context
	nsize    int // kernel size of struct seccomp_notif

	warnOnce sync.Map
	// Counters, for the debug log at exit.
	nCont, nServed atomic.Uint64
}

// receive loops on SECCOMP_IOCTL_NOTIF_RECV until the listener fails (it
// is closed, or the supervisor is shutting down). Local paths are
// answered inline: that is the hot path. A namespace path may block (a
// concurrent server waiting for a client, a connect, a DNS lookup), so
// the goroutine that received it starts another receiver and serves the
// call itself, then ends: the call goes on at once on a thread that is
// running already, rather than waiting for a new goroutine to be
// scheduled, and the number of receivers stays the same.
func (s *server) receive() {
	buf := make([]uint64, (s.nsize+7)/8)
	raw := unsafe.Slice((*byte)(unsafe.Pointer(&buf[0])), len(buf)*8)
	for {
		clear(buf)
		_, e := ioctl(s.fd, ioctlNotifRecv, uintptr(unsafe.Pointer(&raw[0])))
		switch e {
		case 0:
		case syscall.EINTR, syscall.ENOENT:
			// ENOENT: the target was interrupted or died before
			// we got its notification.
			continue
		default:
			if s.ctx.Err() == nil {
				s.log.Debug("catch: receive stopped", "err", e.Error())
			}
			return
		}
		n := *(*notif)(unsafe.Pointer(&raw[0]))
		if serve := s.handle(&n); serve != nil {
			go s.receive()
			serve()
			return
		}
	}
}

// respond answers with a value or an errno.
func (s *server) respond(id uint64, val int64, errno syscall.Errno) {
	r := notifResp{ID: id, Val: val, Error: -int32(errno)}
	s.send(&r)
}

// cont lets the call run in the kernel as if nothing had trapped it.
func (s *server) cont(id uint64) {
	s.nCont.Add(1)
	r := notifResp{ID: id, Flags: notifFlagContinue}
	s.send(&r)
}

func (s *server) send(r *notifResp) {
	for {
		// It never blocks: a raw call spares the scheduler's
		// bookkeeping on the hot path.
		_, _, e := syscall.RawSyscall(syscall.SYS_IOCTL, uintptr(s.fd), ioctlNotifSend, uintptr(unsafe.Pointer(r)))
		if e == syscall.EINTR {
			continue
		}
		// ENOENT: the target is gone or was interrupted (it will
		// restart the call and trap again). Nothing to do.
		return
	}
}

// valid reports whether the notification still stands (the target has not
// died or been interrupted): after reading its memory, before acting.
func (s *server) valid(id uint64) bool {
	_, e := ioctl(s.fd, ioctlNotifIDValid, uintptr(unsafe.Pointer(&id)))
	return e == 0
}

// where is a path argument resolved: local (continue) or rel inside the
// namespace.
type where struct {
	inNS  bool
	rel   string // slash-separated, relative to the namespace root
	slash bool   // the name ended in "/"
}

// locate reads path argument i (with dirfd argument di, or AT_FDCWD when
// di < 0) of n and says whether it names a namespace path. Errors reading
// the target (bad pointer, target gone, not readable) answer "local": the
// kernel then runs the call and reports what it would have.
func (s *server) locate(n *notif, di, pi int) where {
	var buf [smallPath]byte
	b, err := readPathInto(n.Pid, n.Args[pi], &buf)
	if err != nil || len(b) == 0 {
		if err != nil && err != syscall.EFAULT && err != syscall.ENAMETOOLONG && err != syscall.ESRCH {
			s.warn("read", "cannot read a target's memory; its calls run untouched", "pid", n.Pid, "err", err.Error())
		}
		return where{}
	}
	// The cheap tests read the name in place, with no copy; they keep
	// nothing of it.
	view := unsafe.String(&b[0], len(b))
	var abs string
	if b[0] == '/' {
		if !s.names.mayReach(view) {
			return where{}
		}
		abs = path.Clean(string(b))
	} else {
		if s.names.mayBeURL(view) {
			if rel, ok := s.names.urlName(string(b)); ok {
				return where{inNS: true, rel: rel, slash: b[len(b)-1] == '/'}
			}
		}
		if !s.names.relMayReach(view) {
			return where{}
		}
		dirfd := int32(atFDCWD)
		if di >= 0 {
			dirfd = int32(n.Args[di])
		}
		dir, err := baseDir(n.Pid, dirfd)
		if err != nil || !strings.HasPrefix(dir, "/") {
			return where{}
		}
		abs = path.Join(dir, string(b))
	}
	if rel, ok := s.names.match(abs); ok {
		return where{inNS: true, rel: rel, slash: b[len(b)-1] == '/'}
	}
	return where{}
}

func (s *server) warn(key, msg string, args ...any) {
	if _, loaded := s.warnOnce.LoadOrStore(key, true); !loaded {
		s.log.Warn("catch: "+msg, args...)
	}
}

// handle answers one notification if it can at once, or returns the
// function that serves it (a name in the namespace).
func (s *server) handle(n *notif) (serve func()) {
	c, ok := calls[int(n.Nr)]
	if !ok {
		s.cont(n.ID)
		return nil
	}
	w := s.locate(n, c.dirfd, c.path)
	if c.kind == kTwo {
		w2 := s.locate(n, c.dirfd2, c.path2)
		switch {
		case !w.inNS && !w2.inNS:
			s.cont(n.ID)
		case w.inNS && w2.inNS && s.mnt != "":
			s.nServed.Add(1)
			return func() {
				if s.valid(n.ID) {
					s.two(n, c, w, w2)
				}
			}
		default:
			// One name on each side: mv copies and removes.
			s.refuse(n, c, syscall.EXDEV)
		}
		return nil
	}
	if !w.inNS {
		s.cont(n.ID)
		return nil
	}
	s.nServed.Add(1)
	switch c.kind {
	case kExec:
		s.refuse(n, c, syscall.EACCES)
	case kXattr:
		s.refuse(n, c, syscall.ENOTSUP)
	default:
		return func() { s.serve(n, c, w) }
	}
	return nil
}

func (s *server) refuse(n *notif, c call, errno syscall.Errno) {
	s.log.Debug("catch: refused", "call", c.name, "pid", n.Pid, "errno", errno.Error())
	s.respond(n.ID, 0, errno)
}

// private is the name of w on the private door.
func (s *server) private(w where) string {
	p := s.mnt + "/" + nsDir
	if w.rel != "" {
		p += "/" + w.rel
	}
	if w.slash {
		p += "/"
	}
	return p
}

func (s *server) serve(n *notif, c call, w where) {
	if !s.valid(n.ID) {
		return
	}
	if s.mnt == "" && c.kind != kOpen {
		s.respond(n.ID, 0, syscall.EOPNOTSUPP) // no private door
		return
	}
	switch c.kind {
	case kOpen:
		s.open(n, c, w)
	case kStat, kStatx, kStatfs, kReadlink:
		s.statLike(n, c, w)
	case kAccess:
		s.access(n, c, w)
	case kSetattr:
		s.setattr(n, c, w)
	case kMutate:
		s.mutate(n, c, w)
	case kChdir:
		s.chdir(n, c, w)
	default:
		s.respond(n.ID, 0, syscall.ENOSYS)
	}
}

// watch returns a context cancelled when the notification stops being
// valid: the target was interrupted (Ctrl-C on a blocked open) or died.
// It checks every watchEvery on a timer, so a call served in less time
// (nearly all of them) costs no goroutine and no check.
func (s *server) watch(id uint64) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(s.ctx)
	var mu sync.Mutex // orders t's assignment before check reads it
	var t *time.Timer
	check := func() {
		if !s.valid(id) {
			cancel()
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if ctx.Err() == nil {
			t.Reset(watchEvery)
		}
	}
	mu.Lock()
	t = time.AfterFunc(watchEvery, check)
	mu.Unlock()
	return ctx, func() {
		cancel()
		mu.Lock()
		t.Stop()
		mu.Unlock()
	}
}

const watchEvery = 20 * time.Millisecond

func (s *server) caller(tid uint32) ns.Caller {
	uid, gid, _ := creds(tid)
	// Served handles live on the private FUSE door: its release lag.
	return ns.Caller{Pid: tid, Uid: uid, Gid: gid, ReleaseLag: fusedoor.ReleaseLag,
		Holds: func(h ns.Handle) bool { return s.served.holds(tid, h) }}
}

// fail answers with the errno of err and logs why.
func (s *server) fail(n *notif, c call, w where, err error) {
	errno := ns.Errno(err)
	lvl := slog.LevelWarn
	if errno == syscall.EINTR || errno == syscall.ENOENT {
		lvl = slog.LevelDebug
	}
	s.log.Log(context.Background(), lvl, c.name+" failed", "path", w.rel, "pid", n.Pid, "errno", errno.Error(), "why", err.Error())
	s.respond(n.ID, 0, errno)
}

const openTmpfile = 0o20000000 | syscall.O_DIRECTORY

// open serves open, openat, openat2 and creat.
func (s *server) open(n *notif, c call, w where) {
	var flags int
	var mode uint32
	switch n.Nr {
	case syscall.SYS_OPEN:
		flags, mode = int(n.Args[1]), uint32(n.Args[2])
	case syscall.SYS_OPENAT:
		flags, mode = int(n.Args[2]), uint32(n.Args[3])
	case syscall.SYS_CREAT:
		flags, mode = syscall.O_CREAT|syscall.O_WRONLY|syscall.O_TRUNC, uint32(n.Args[1])
	case sysOpenat2:
		var how [16]byte // struct open_how starts with u64 flags, u64 mode
		if got, err := readRemote(n.Pid, n.Args[2], how[:]); err != nil || got != len(how) || n.Args[3] < 24 {
			s.respond(n.ID, 0, syscall.EFAULT)
			return
		}
		flags = int(*(*uint64)(unsafe.Pointer(&how[0])))
		mode = uint32(*(*uint64)(unsafe.Pointer(&how[8])))
	}
	fdFlags := uint32(0)
	if flags&syscall.O_CLOEXEC != 0 {
		fdFlags = syscall.O_CLOEXEC
	}
	if flags&openTmpfile == openTmpfile {
		s.respond(n.ID, 0, syscall.EOPNOTSUPP)
		return
	}
	// The private door by name, with every flag: the kernel and the door
	// do what they do on the mounted door (create, O_EXCL, O_TRUNC).
	byName := func() {
		s.injectPath(n, c, w, s.private(w), flags|syscall.O_CLOEXEC, mode, fdFlags)
	}

	ctx, cancel := s.watch(n.ID)
	defer cancel()
	node, err := s.user.Resolve(ctx, w.rel)
	if err != nil {
		if flags&syscall.O_CREAT != 0 && ns.Errno(err) == syscall.ENOENT && s.mnt != "" {
			byName() // a new stored file, or EROFS from the door
			return
		}
		s.fail(n, c, w, err)
		return
	}
	if flags&(syscall.O_CREAT|syscall.O_EXCL) == syscall.O_CREAT|syscall.O_EXCL {
		s.respond(n.ID, 0, syscall.EEXIST)
		return
	}
	o, isOpener := node.(ns.Opener)
	stored := ns.IsStored(node)
	if flags&oPath != 0 {
		// The kernel cannot hand over an O_PATH descriptor
		// (SECCOMP_IOCTL_NOTIF_ADDFD answers EBADF), so directories
		// and stored files are opened for reading instead: the
		// descriptor serves as a base for *at calls, fchdir and fstat
		// all the same. Opening an endpoint would connect or bind.
		if isOpener && !stored {
			s.respond(n.ID, 0, syscall.EOPNOTSUPP)
			return
		}
		flags = flags&^(oPath|syscall.O_ACCMODE) | syscall.O_RDONLY
	}
	if !isOpener {
		// Directories and nodes that cannot be opened: the private
		// door (and the kernel) decide, as on the mounted door.
		s.injectPath(n, c, w, s.private(w), flags&^openOnly|syscall.O_CLOEXEC, 0, fdFlags)
		return
	}
	if flags&syscall.O_DIRECTORY != 0 || w.slash {
		s.respond(n.ID, 0, syscall.ENOTDIR)
		return
	}
	if stored && s.mnt != "" &&
		(flags&syscall.O_ACCMODE != syscall.O_RDONLY || flags&syscall.O_TRUNC != 0) {
		// A stored file opened for writing: its handle needs the
		// door's flush and truncation, so it is opened there.
		byName()
		return
	}
	nsFlags := flags &^ (syscall.O_CLOEXEC | openOnly)
	h, err := o.Open(ctx, s.caller(n.Pid), nsFlags)
	if err != nil {
		s.fail(n, c, w, err)
		return
	}
	if ko, ok := h.(ns.KernelObject); ok {
		// Connected sockets, and stored files complete and clean in
		// the cache (opened read-only: the cache's data file).
		if s.injectKernel(n, c, w, h, ko, flags, fdFlags) {
			return
		}
	}
	if _, file := h.(ns.ReaderAt); (stored || file) && s.mnt != "" {
		// Files (stored, or made at open like dns/NAME) by name, so
		// that fstat of the descriptor shows the inode stat of the
		// name does (cp checks that they agree). Opening them twice
		// is harmless; streams are not reopened (that would connect
		// or accept again) and go through the pending directory.
		h.Close()
		byName()
		return
	}
	// Daemon-served: hand over an fd on the private door.
	reopen := func(ctx context.Context, c ns.Caller, flags int) (ns.Handle, error) {
		return o.Open(ctx, c, flags)
	}
	id := s.served.add(h, node, reopen)
	s.injectPath(n, c, w, s.mnt+"/"+pendingDir+"/"+id, flags&^openOnly|syscall.O_CLOEXEC, 0, fdFlags, func(fd int) {
		var st syscall.Stat_t
		if syscall.Fstat(fd, &st) == nil {
			s.served.bind(h, st.Ino)
		}
	})
	s.served.drop(id) // closes h unless the door took it
}

// openOnly are open flags that act on the name or the open itself, not on
// the handle; a node opened by the catcher never sees them, nor does the
// private door's inode of an already opened handle.
const openOnly = syscall.O_CREAT | syscall.O_EXCL | syscall.O_NOCTTY | syscall.O_TRUNC | syscall.O_NOATIME | syscall.O_DIRECT

// injectKernel gives the target the kernel object itself. It returns
// false when the handle has no file after all (then the door serves it).
func (s *server) injectKernel(n *notif, c call, w where, h ns.Handle, ko ns.KernelObject, flags int, fdFlags uint32) bool {
	f, err := ko.KernelFile()
	if err != nil {
		s.log.Debug("catch: no kernel file, serving through the door", "path", w.rel, "err", err)
		return false
	}
	// The file shares its open file description with the daemon's
	// socket, which Go keeps non-blocking; the program gets the mode it
	// asked for. Fd() also takes the file out of Go's poller.
	fd := int(f.Fd())
	fl, err := fcntl(fd, syscall.F_GETFL, 0)
	if err == nil {
		want := fl &^ syscall.O_NONBLOCK
		if flags&syscall.O_NONBLOCK != 0 {
			want |= syscall.O_NONBLOCK
		}
		if want != fl {
			fcntl(fd, syscall.F_SETFL, want)
		}
	}
	s.addfd(n, c, w, fd, fdFlags)
	// The target holds the object now; the daemon lets go of its copy
	// so that closing the target's fd really closes the connection.
	h.Close()
	return true
}

// injectPath opens name on the private door with flags (and mode, for
// O_CREAT) and gives the target that fd. opened, if set, sees the fd
// first.
func (s *server) injectPath(n *notif, c call, w where, name string, flags int, mode uint32, fdFlags uint32, opened ...func(fd int)) {
	if s.mnt == "" {
		s.fail(n, c, w, ns.Errorf(syscall.EOPNOTSUPP, "no private FUSE door"))
		return
	}
	var fd int
	var err error
	for {
		fd, err = syscall.Open(name, flags, mode)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		s.fail(n, c, w, err)
		return
	}
	defer syscall.Close(fd)
	for _, f := range opened {
		f(fd)
	}
	s.addfd(n, c, w, fd, fdFlags)
}

// addfd installs fd in the target and answers the call with the new
// number, in one step (SECCOMP_ADDFD_FLAG_SEND).
func (s *server) addfd(n *notif, c call, w where, fd int, fdFlags uint32) {
	a := notifAddfd{ID: n.ID, Flags: addfdFlagSend, Srcfd: uint32(fd), NewfdFlags: fdFlags}
	for {
		_, e := ioctl(s.fd, ioctlNotifAddfd, uintptr(unsafe.Pointer(&a)))
		switch e {
		case 0:
			return
		case syscall.EINTR:
			continue
		case syscall.ENOENT, syscall.EINPROGRESS:
			// The target was interrupted or died meanwhile.
			s.log.Debug("catch: target gone before its fd was given", "path", w.rel, "pid", n.Pid)
			return
		default:
			// EMFILE in the target, for instance.
			s.fail(n, c, w, e)
			return
		}
	}
}

func fcntl(fd, cmd, arg int) (int, error) {
	r, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), uintptr(cmd), uintptr(arg))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

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

// statLike runs stat, lstat, newfstatat, statx, statfs, readlink or
// readlinkat on the private door and writes the result into the target.
func (s *server) statLike(n *notif, c call, w where) {
	p, err := syscall.BytePtrFromString(s.private(w))
	if err != nil {
		s.respond(n.ID, 0, syscall.EINVAL)
		return
	}
	var buf [256]byte
	var size int
	var addr uint64
	var r uintptr
	var e syscall.Errno
	bp := uintptr(unsafe.Pointer(&buf[0]))
	pp := uintptr(unsafe.Pointer(p))
	switch n.Nr {
	case syscall.SYS_STAT:
		r, _, e = syscall.Syscall6(syscall.SYS_NEWFSTATAT, atFDCWDu, pp, bp, 0, 0, 0)
		size, addr = int(unsafe.Sizeof(syscall.Stat_t{})), n.Args[1]
	case syscall.SYS_LSTAT:
		r, _, e = syscall.Syscall6(syscall.SYS_NEWFSTATAT, atFDCWDu, pp, bp, atSymlinkNofollow, 0, 0)
		size, addr = int(unsafe.Sizeof(syscall.Stat_t{})), n.Args[1]
	case syscall.SYS_NEWFSTATAT:
		r, _, e = syscall.Syscall6(syscall.SYS_NEWFSTATAT, atFDCWDu, pp, bp, uintptr(n.Args[3]), 0, 0)
		size, addr = int(unsafe.Sizeof(syscall.Stat_t{})), n.Args[2]
	case sysStatx:
		r, _, e = syscall.Syscall6(sysStatx, atFDCWDu, pp, uintptr(n.Args[2]), uintptr(n.Args[3]), bp, 0)
		size, addr = 256, n.Args[4]
	case syscall.SYS_STATFS:
		r, _, e = syscall.Syscall(syscall.SYS_STATFS, pp, bp, 0)
		size, addr = int(unsafe.Sizeof(syscall.Statfs_t{})), n.Args[1]
	case syscall.SYS_READLINK, syscall.SYS_READLINKAT:
		bufArg, sizeArg := n.Args[1], n.Args[2]
		if n.Nr == syscall.SYS_READLINKAT {
			bufArg, sizeArg = n.Args[2], n.Args[3]
		}
		r, _, e = syscall.Syscall6(syscall.SYS_READLINKAT, atFDCWDu, pp, bp, uintptr(len(buf)), 0, 0)
		size, addr = int(r), bufArg
		if e == 0 && uint64(size) > sizeArg {
			size = int(sizeArg)
			r = uintptr(size)
		}
	}
	if e != 0 {
		s.log.Debug("catch: "+c.name, "path", w.rel, "errno", e.Error())
		s.respond(n.ID, 0, e)
		return
	}
	if c.kind == kStat || c.kind == kStatx {
		s.kernelIdentity(n, c, w, buf[:])
	}
	if errno := s.writeTarget(n, addr, buf[:size]); errno != 0 {
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
	node, err := s.user.Resolve(s.ctx, w.rel)
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
	_, _, e := syscall.Syscall6(sysFaccessat2, atFDCWDu, uintptr(unsafe.Pointer(p)), uintptr(mode), uintptr(flags), 0, 0)
	s.respond(n.ID, 0, e)
}

// Constants the syscall package lacks.
const (
	oPath             = 0o10000000
	atSymlinkNofollow = 0x100
	atEmptyPath       = 0x1000
)
