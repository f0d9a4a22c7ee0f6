package catch

import (
	"context"
	"os"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"wirefs/internal/ns"
)

// open, openat, openat2 and creat on a namespace path are served in three
// steps: decodeOpen reads the call's arguments from the target,
// decideOpen (pure: no I/O, no system calls) says what to do with what is
// known so far, and the server does it. Two of decideOpen's answers ask
// for more facts first (look the name up, open the node); it is then asked
// again with them, until it answers with something to give the target: an
// errno, a kernel object, or an fd on the private door.

// openCall is a decoded open, openat, openat2 or creat.
type openCall struct {
	flags int    // open(2) flags
	mode  uint32 // permissions for O_CREAT
	slash bool   // the name ended in "/"
}

// openFacts is what decideOpen is told: the call, whether the private
// door is mounted, and, once known, the lookup's result and the opened
// node's handle.
type openFacts struct {
	call   openCall
	door   bool         // the private FUSE door is mounted
	node   *nodeFacts   // nil: the name is not looked up yet
	handle *handleFacts // nil: the node is not opened yet
}

// nodeFacts is the namespace lookup's result.
type nodeFacts struct {
	failed bool          // the lookup failed...
	errno  syscall.Errno // ... with this errno (ns.Errno of its error)
	opener bool          // the node implements ns.Opener
	stored bool          // ns.IsStored: a stored file (cache), not an endpoint
}

// handleFacts describes the handle the node's Open returned.
type handleFacts struct {
	kernel bool // an ns.KernelObject that gave its file
	file   bool // an ns.ReaderAt: a file, not a stream
	toMake bool // an ns.SocketToMake: the opener makes the socket
}

// openAction is what the server does next for an open.
type openAction int

const (
	openFail       openAction = iota // answer plan.errno
	openFailLookup                   // answer the lookup's error (logged, with why)
	openLookup                       // resolve the name, then decide again
	openNode                         // open the node with plan.flags, then decide again
	openPrivate                      // open the name on the private door with plan.flags and plan.mode, inject that fd
	openKernel                       // inject the handle's kernel object (O_NONBLOCK as in plan.flags)
	openServe                        // inject an fd on the private door's pending name for the handle, opened with plan.flags
	openMake                         // tell the fast-path library to make the handle's socket (ns.SocketToMake)
)

// openPlan is decideOpen's answer.
type openPlan struct {
	action  openAction
	errno   syscall.Errno // openFail
	flags   int           // flags of the open the action makes (see openAction)
	mode    uint32        // openPrivate: permissions for O_CREAT
	fdFlags uint32        // the target's new descriptor: O_CLOEXEC or 0
}

// openTmpfile is O_TMPFILE (which includes O_DIRECTORY).
const openTmpfile = 0o20000000 | syscall.O_DIRECTORY

// openOnly are open flags that act on the name or the open itself, not on
// the handle; a node opened by the catcher never sees them, nor does the
// private door's inode of an already opened handle.
const openOnly = syscall.O_CREAT | syscall.O_EXCL | syscall.O_NOCTTY | syscall.O_TRUNC | syscall.O_NOATIME | syscall.O_DIRECT

// decodeOpen reads the flags and mode of open, openat, openat2 or creat;
// openat2's struct open_how is read from the target (EFAULT when it
// cannot be).
func decodeOpen(n *notif, slash bool) (openCall, syscall.Errno) {
	c := openCall{slash: slash}
	switch n.Nr {
	case syscall.SYS_OPEN:
		c.flags, c.mode = int(n.Args[1]), uint32(n.Args[2])
	case syscall.SYS_OPENAT:
		c.flags, c.mode = int(n.Args[2]), uint32(n.Args[3])
	case syscall.SYS_CREAT:
		c.flags, c.mode = syscall.O_CREAT|syscall.O_WRONLY|syscall.O_TRUNC, uint32(n.Args[1])
	case sysOpenat2:
		var how [16]byte // struct open_how starts with u64 flags, u64 mode
		if got, err := readRemote(n.Pid, n.Args[2], how[:]); err != nil || got != len(how) || n.Args[3] < 24 {
			return openCall{}, syscall.EFAULT
		}
		c.flags = int(*(*uint64)(unsafe.Pointer(&how[0])))
		c.mode = uint32(*(*uint64)(unsafe.Pointer(&how[8])))
	}
	return c, 0
}

// decideOpen says what to do next with an open of a namespace path, given
// what is known so far. It is pure.
func decideOpen(f openFacts) openPlan {
	c := f.call
	switch node := f.node; {
	case c.flags&openTmpfile == openTmpfile:
		return openPlan{action: openFail, errno: syscall.EOPNOTSUPP}
	case node == nil:
		return openPlan{action: openLookup}
	case node.failed && c.flags&syscall.O_CREAT != 0 && node.errno == syscall.ENOENT && f.door:
		return c.byName(c.flags) // a new stored file, or EROFS from the door
	case node.failed:
		return openPlan{action: openFailLookup}
	case c.flags&(syscall.O_CREAT|syscall.O_EXCL) == syscall.O_CREAT|syscall.O_EXCL:
		return openPlan{action: openFail, errno: syscall.EEXIST}
	}
	return decideFound(f)
}

// decideFound is decideOpen once the name was found.
func decideFound(f openFacts) openPlan {
	c, node := f.call, f.node
	flags := c.flags
	if flags&oPath != 0 {
		// The kernel cannot hand over an O_PATH descriptor
		// (SECCOMP_IOCTL_NOTIF_ADDFD answers EBADF), so directories
		// and stored files are opened for reading instead: the
		// descriptor serves as a base for *at calls, fchdir and fstat
		// all the same. Opening an endpoint would connect or bind.
		if node.opener && !node.stored {
			return openPlan{action: openFail, errno: syscall.EOPNOTSUPP}
		}
		flags = flags&^(oPath|syscall.O_ACCMODE) | syscall.O_RDONLY
	}
	switch {
	case !node.opener:
		// Directories and nodes that cannot be opened: the private
		// door (and the kernel) decide, as on the mounted door.
		return openPlan{action: openPrivate, flags: flags&^openOnly | syscall.O_CLOEXEC, fdFlags: c.fdFlags()}
	case flags&syscall.O_DIRECTORY != 0 || c.slash:
		return openPlan{action: openFail, errno: syscall.ENOTDIR}
	case node.stored && f.door &&
		(flags&syscall.O_ACCMODE != syscall.O_RDONLY || flags&syscall.O_TRUNC != 0):
		// A stored file opened for writing: its handle needs the
		// door's flush and truncation, so it is opened there.
		return c.byName(flags)
	case f.handle == nil:
		return openPlan{action: openNode, flags: flags &^ (syscall.O_CLOEXEC | openOnly)}
	case f.handle.toMake:
		return openPlan{action: openMake}
	case f.handle.kernel:
		// Connected sockets, and stored files complete and clean in
		// the cache (opened read-only: the cache's data file).
		return openPlan{action: openKernel, flags: flags, fdFlags: c.fdFlags()}
	case (node.stored || f.handle.file) && f.door:
		// Files (stored, or made at open like dns/NAME) by name, so
		// that fstat of the descriptor shows the inode stat of the
		// name does (cp checks that they agree). Opening them twice
		// is harmless; streams are not reopened (that would connect
		// or accept again) and go through the pending directory.
		return c.byName(flags)
	}
	// Daemon-served: hand over an fd on the private door.
	return openPlan{action: openServe, flags: flags&^openOnly | syscall.O_CLOEXEC, fdFlags: c.fdFlags()}
}

// byName opens the name on the private door with every flag: the kernel
// and the door do what they do on the mounted door (create, O_EXCL,
// O_TRUNC).
func (c openCall) byName(flags int) openPlan {
	return openPlan{action: openPrivate, flags: flags | syscall.O_CLOEXEC, mode: c.mode, fdFlags: c.fdFlags()}
}

// fdFlags are the flags of the target's new descriptor.
func (c openCall) fdFlags() uint32 {
	if c.flags&syscall.O_CLOEXEC != 0 {
		return syscall.O_CLOEXEC
	}
	return 0
}

// opening is one open being served: what the server learned for
// decideOpen, and what it needs to act.
type opening struct {
	n     *notif
	c     call
	w     where
	ctx   context.Context // cancelled when the notification stops standing
	facts openFacts
	node  ns.Node
	err   error     // the lookup's error
	h     ns.Handle // the node's handle, once opened
	kf    *os.File  // h's kernel file, when it gave one
	// answerAt is where the fast-path library that made the call
	// takes the answer of a socket it is to connect or make (0: not
	// such a call; fastpath.go), makes whether it may make one (it
	// can, and it runs in this process's network namespace, which it
	// checks), connectTo the address it connects to (nil: the
	// descriptor is ready as it is), and socket that socket
	// (ns.Unconnected), which has no kf.
	answerAt  uint64
	makes     bool
	connectTo unix.Sockaddr
	socket    int
}

// open serves open, openat, openat2 and creat: decode, then decide and
// act until the target has its answer. ctx ends when the notification
// stops standing (the target was interrupted or died).
func (s *server) open(ctx context.Context, n *notif, c call, w where) {
	oc, errno := decodeOpen(n, w.slash)
	if errno != 0 {
		s.respond(n.ID, 0, errno)
		return
	}
	o := &opening{n: n, c: c, w: w, ctx: ctx, facts: openFacts{call: oc, door: s.mnt != ""}}
	o.answerAt, o.makes = connectAnswerAt(n)
	o.makes = o.makes && s.netns != 0
	plan := decideOpen(o.facts)
	if plan.action == openLookup {
		s.lookup(o)
		plan = decideOpen(o.facts)
	}
	if plan.action == openNode {
		if !s.openNode(o, plan.flags) {
			return
		}
		plan = decideOpen(o.facts)
	}
	s.actOpen(o, plan)
}

// lookup resolves the name for decideOpen.
func (s *server) lookup(o *opening) {
	t0 := s.tm.start()
	o.node, o.err = s.user.Resolve(s.asking(o.ctx, o.n.Pid), o.w.rel)
	s.tm.end(phResolve, t0)
	if o.err != nil {
		o.facts.node = &nodeFacts{failed: true, errno: ns.Errno(o.err)}
		return
	}
	_, opener := o.node.(ns.Opener)
	o.facts.node = &nodeFacts{opener: opener, stored: ns.IsStored(o.node)}
}

// openNode opens the node with the target as caller and tells decideOpen
// what the handle is. On failure it answers the target and returns false.
func (s *server) openNode(o *opening, flags int) bool {
	c := s.caller(o.n.Pid)
	ctx := o.ctx
	if o.answerAt != 0 && flags&syscall.O_NONBLOCK == 0 {
		// The library connects a socket in the program's thread,
		// and makes it there when it can; an O_NONBLOCK open still
		// gets one connected here and made non-blocking, as
		// documented.
		if o.makes {
			ctx = ns.WithSocketByOpener(ctx)
		} else {
			ctx = ns.WithConnectByOpener(ctx)
		}
	}
	t0 := s.tm.start()
	h, err := o.node.(ns.Opener).Open(ctx, c, flags)
	s.tm.end(phOpen, t0)
	if err != nil {
		s.fail(o.n, o.c, o.w, err)
		return false
	}
	o.h = h
	_, file := h.(ns.ReaderAt)
	o.facts.handle = &handleFacts{file: file}
	if _, ok := h.(ns.SocketToMake); ok {
		o.facts.handle.toMake = true
	} else if u, ok := h.(ns.Unconnected); ok {
		// A new socket, handed over as it is (no os.File).
		o.socket, o.connectTo = u.Socket(), u.ConnectTo()
		o.facts.handle.kernel = true
	} else if ko, ok := h.(ns.KernelObject); ok {
		kf, err := ko.KernelFile()
		if err != nil {
			s.log.Debug("catch: no kernel file, serving through the door", "path", o.w.rel, "err", err)
		} else {
			o.kf = kf
			o.facts.handle.kernel = true
		}
	}
	return true
}

// actOpen gives the target what plan says.
func (s *server) actOpen(o *opening, plan openPlan) {
	n, c, w := o.n, o.c, o.w
	switch plan.action {
	case openFail:
		s.respond(n.ID, 0, plan.errno)
	case openFailLookup:
		s.fail(n, c, w, o.err)
	case openPrivate:
		if o.h != nil {
			o.h.Close() // opened again by name
		}
		s.injectPath(o, s.private(w), plan.flags, plan.mode, plan.fdFlags)
	case openKernel:
		s.injectKernel(o, plan.flags, plan.fdFlags)
	case openServe:
		s.injectServed(o, plan.flags, plan.fdFlags)
	case openMake:
		s.answerMake(o)
	default:
		s.respond(n.ID, 0, syscall.ENOSYS) // not reached: decideOpen's other answers are handled by open
	}
}

// answerMake has the fast-path library make and connect the socket of
// o.h (ns.SocketToMake) itself: the recipe is written into its answer,
// and the open answered with socketMagic instead of a descriptor. No
// descriptor changes hands, so there is no ADDFD, whose wake-ups of the
// waiting program (a plain complete(), and its completion back) land on
// an idle CPU, while the plain reply's stays on this one
// (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP).
func (s *server) answerMake(o *opening) {
	defer s.tm.end(phInject, s.tm.start())
	// What the provider keeps of the open (its live endpoint) goes
	// once the program has its answer, as after a hand-over.
	defer o.h.Close()
	n := o.n
	// The answer goes to the process the notification names: it must
	// still be waiting (its pid not yet another's).
	if !s.valid(n.ID) {
		return
	}
	if err := writeSocketAnswer(n.Pid, o.answerAt, o.h.(ns.SocketToMake).Recipe(), s.netns); err != nil {
		s.fail(n, o.c, o.w, ns.Errorf(syscall.EFAULT, "the fast path's answer: %v", err))
		return
	}
	s.respond(n.ID, socketMagic, 0)
}

// injectServed hands the target an fd on the private door for the
// daemon-served handle o.h, through the pending directory.
func (s *server) injectServed(o *opening, flags int, fdFlags uint32) {
	opener, h := o.node.(ns.Opener), o.h
	reopen := func(ctx context.Context, c ns.Caller, flags int) (ns.Handle, error) {
		return opener.Open(ctx, c, flags)
	}
	id := s.served.add(h, o.node, reopen)
	s.injectPath(o, s.mnt+"/"+pendingDir+"/"+id, flags, 0, fdFlags, func(fd int) {
		var st syscall.Stat_t
		if syscall.Fstat(fd, &st) == nil {
			s.served.bind(h, st.Ino)
		}
	})
	s.served.drop(id) // closes h unless the door took it
}

// injectKernel gives the target the kernel object o.kf, o.h's file, or
// o.socket, an unconnected socket's, itself.
func (s *server) injectKernel(o *opening, flags int, fdFlags uint32) {
	defer s.tm.end(phInject, s.tm.start())
	// The file shares its open file description with the daemon's
	// socket, which Go keeps non-blocking; the program gets the mode it
	// asked for. Fd() also takes the file out of Go's poller. A socket
	// the program connects is new and blocking, and the open did not
	// ask for O_NONBLOCK.
	fd := o.socket
	if o.kf != nil {
		fd = int(o.kf.Fd())
		if fl, err := fcntl(fd, syscall.F_GETFL, 0); err == nil {
			want := fl &^ syscall.O_NONBLOCK
			if flags&syscall.O_NONBLOCK != 0 {
				want |= syscall.O_NONBLOCK
			}
			if want != fl {
				fcntl(fd, syscall.F_SETFL, want)
			}
		}
	}
	s.addfd(o, fd, fdFlags)
	// The target holds the object now; the daemon lets go of its copy
	// so that closing the target's fd really closes the connection.
	o.h.Close()
}

// injectPath opens name on the private door with flags (and mode, for
// O_CREAT) and gives the target that fd. opened, if set, sees the fd
// first.
func (s *server) injectPath(o *opening, name string, flags int, mode uint32, fdFlags uint32, opened ...func(fd int)) {
	n, c, w := o.n, o.c, o.w
	if s.mnt == "" {
		s.fail(n, c, w, ns.Errorf(syscall.EOPNOTSUPP, "no private FUSE door"))
		return
	}
	var fd int
	var err error
	t0 := s.tm.start()
	openDoor := func() {
		for {
			fd, err = syscall.Open(name, flags, mode)
			if err != syscall.EINTR {
				break
			}
		}
	}
	if flags&syscall.O_CREAT != 0 {
		s.withUmaskOf(n.Pid, openDoor)
	} else {
		openDoor()
	}
	s.tm.end(phDoor, t0)
	if err != nil {
		s.fail(n, c, w, err)
		return
	}
	defer syscall.Close(fd)
	for _, f := range opened {
		f(fd)
	}
	t0 = s.tm.start()
	s.addfd(o, fd, fdFlags)
	s.tm.end(phInject, t0)
}

// addfd installs fd in the target and answers the call with the new
// number, in one step (SECCOMP_ADDFD_FLAG_SEND), after telling the
// fast-path library where to connect it, when it is to (ns.Unconnected).
func (s *server) addfd(o *opening, fd int, fdFlags uint32) {
	n, c, w := o.n, o.c, o.w
	if o.answerAt != 0 && o.connectTo != nil {
		// The library's answer says "none" until written (a stored
		// file, a served stream: nothing to write). The write goes
		// to the process the notification names: it must still be
		// waiting (its pid not yet another's), which the open since
		// the first check may have outlasted.
		if !s.valid(n.ID) {
			return
		}
		if err := writeConnectAnswer(n.Pid, o.answerAt, o.connectTo); err != nil {
			s.fail(n, c, w, ns.Errorf(syscall.EFAULT, "the fast path's answer: %v", err))
			return
		}
	}
	a := notifAddfd{ID: n.ID, Flags: addfdFlagSend, Srcfd: uint32(fd), NewfdFlags: fdFlags}
	for {
		e := addfdUninterrupted(s.fd, &a)
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

// addfdUninterrupted is the ADDFD ioctl with every signal blocked on the
// calling thread. With SECCOMP_ADDFD_FLAG_SEND the kernel marks the
// notification answered before the ioctl waits for the target to take
// the fd; a signal to this thread meanwhile (the SIGCHLD of a portal's
// program, Go's preemption) withdraws the fd but leaves the notification
// answered, and the target's call then returns 0 (its stdin), while a
// retry fails with EINPROGRESS. Blocked signals wait until the ioctl
// returns; the ioctl still returns when the target dies (ESRCH).
func addfdUninterrupted(notifyFd int, a *notifAddfd) syscall.Errno {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var all, old unix.Sigset_t
	for i := range all.Val {
		all.Val[i] = ^uint64(0)
	}
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &all, &old); err != nil {
		return err.(syscall.Errno)
	}
	_, e := ioctl(notifyFd, ioctlNotifAddfd, uintptr(unsafe.Pointer(a)))
	unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
	return e
}

func fcntl(fd, cmd, arg int) (int, error) {
	r, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), uintptr(cmd), uintptr(arg))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}
