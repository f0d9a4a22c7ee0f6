package catch

import (
	"context"
	"log/slog"
	"path"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

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
	tm       *timing // nil unless Options.Timing
	umask    int     // the supervisor's own
	pacing   uint64  // Options.Pace
	ids      credSource
	netns    uint64 // this process's network namespace (netnsCookie), 0: unknown
	// Namespace calls being served, for the watchdog (watchdog.go).
	busyMu   sync.Mutex
	busy     map[*serving]struct{}
	watching bool // the watchdog runs
	// Counters, for the debug log at exit.
	nCont, nServed, nHandoffs atomic.Uint64
}

// receive loops on SECCOMP_IOCTL_NOTIF_RECV until the listener fails (it
// is closed, or the supervisor is shutting down). Local paths are
// answered inline: that is the hot path. Namespace paths are served
// inline too, unless they take long (watchdog.go).
func (s *server) receive() {
	buf := make([]uint64, (s.nsize+7)/8)
	raw := unsafe.Slice((*byte)(unsafe.Pointer(&buf[0])), len(buf)*8)
	served := new(notif)
	lastYield := time.Now()
	for {
		if time.Since(lastYield) >= yieldEvery {
			runtime.Gosched()
			lastYield = time.Now()
		}
		clear(buf)
		_, e := ioctl(s.fd, ioctlNotifRecv, uintptr(unsafe.Pointer(&raw[0])))
		switch e {
		case 0:
		case syscall.EINTR:
			continue
		case syscall.ENOENT:
			// The target was interrupted or died before we got its
			// notification — or every process of the filter is
			// gone, after which every receive says ENOENT at once:
			// the loop would spin until this process exits.
			if s.listenerHungUp() {
				return
			}
			continue
		default:
			if s.ctx.Err() == nil {
				s.log.Debug("catch: receive stopped", "err", e.Error())
			}
			return
		}
		n := *(*notif)(unsafe.Pointer(&raw[0]))
		if p, ok := s.handle(&n); ok {
			// n stays on the stack for the calls answered at once
			// (the hot path); a served one is copied to the
			// receiver's own notif, which no call keeps.
			*served = n
			if !s.serveInline(served, p) {
				return // another receiver took over meanwhile
			}
		}
	}
}

// yieldEvery is how often a receiver lets Go's scheduler run it anew. A
// receiver never waits in Go, only in the kernel, so to the scheduler it
// is one goroutine running without end; once it has run for 10 ms on one
// time slice, Go's system monitor counts it as running too long even while
// it waits in a system call: it takes its P away, waking another thread to
// hold it, signals its thread, and then polls every 20 µs for a
// millisecond or more (on connect+close under wirefs run that was 0.37
// wake-ups of the monitor per connection and 7 % of the supervisor's CPU,
// and the receiver moved between threads). A yield (runtime.Gosched)
// starts a new time slice; it costs 55 ns, but may wake an idle thread to
// look for work, so it is made only as often as needed to stay under the
// 10 ms.
const yieldEvery = 5 * time.Millisecond

// listenerHungUp reports whether no process is left that could trap (the
// kernel then reports POLLHUP on the listener).
func (s *server) listenerHungUp() bool {
	fds := []unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n == 1 && fds[0].Revents&unix.POLLHUP != 0
}

// respond answers with a value or an errno.
func (s *server) respond(id uint64, val int64, errno syscall.Errno) {
	r := notifResp{ID: id, Val: val, Error: -int32(errno)}
	s.send(&r)
}

// cont lets the call run in the kernel as if nothing had trapped it.
func (s *server) cont(id uint64) {
	s.nCont.Add(1)
	t0 := s.tm.start()
	r := notifResp{ID: id, Flags: notifFlagContinue}
	s.send(&r)
	s.tm.end(phReply, t0)
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
	for {
		_, e := rawIoctl(s.fd, ioctlNotifIDValid, uintptr(unsafe.Pointer(&id)))
		// EINTR: a signal (Go's preemption, SIGURG) came while the
		// kernel waited for the filter's lock, which is contended
		// under load. Taken for "no longer valid", it cancelled a
		// call whose target still waited, and the target got the
		// call's EINTR (os.utime under wirefs run, seen once in CI).
		if e != syscall.EINTR {
			return e == 0
		}
	}
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
	t0 := s.tm.start()
	b, err := readPathInto(n.Pid, n.Args[pi], &buf)
	t1 := s.tm.end(phReadPath, t0)
	if err != nil || len(b) == 0 {
		if err != nil && err != syscall.EFAULT && err != syscall.ENAMETOOLONG && err != syscall.ESRCH {
			s.warn("read", "cannot read a target's memory; its calls run untouched", "pid", n.Pid, "err", err.Error())
		}
		return where{}
	}
	w := s.whereIs(n, di, b)
	s.tm.end(phDecide, t1)
	return w
}

// whereIs says where the path b, argument of n with dirfd argument di,
// is.
func (s *server) whereIs(n *notif, di int, b []byte) where {
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

// handle answers one notification if it can at once, or says how to serve
// it (a name in the namespace; pending.serve).
func (s *server) handle(n *notif) (p pending, serve bool) {
	c, ok := trappedCall(int(n.Nr))
	if !ok {
		s.cont(n.ID)
		return pending{}, false
	}
	if c.kind == kPace {
		s.pace(n)
		return pending{}, false
	}
	if c.kind == kGetcwd {
		s.getcwd(n)
		return pending{}, false
	}
	w := s.locate(n, c.dirfd, c.path)
	var w2 where
	if c.kind == kTwo {
		w2 = s.locate(n, c.dirfd2, c.path2)
	}
	r := route(c.kind, w.inNS, w2.inNS, s.mnt != "")
	if r.counted {
		s.nServed.Add(1)
	}
	switch r.action {
	case routeContinue:
		s.cont(n.ID)
	case routeRefuse:
		s.refuse(n, c, r.errno)
	case routeTwo:
		return pending{two: true, c: c, w: w, w2: w2}, true
	case routeServe:
		return pending{c: c, w: w}, true
	}
	return pending{}, false
}

// pending is a namespace call that handle leaves to be served.
type pending struct {
	two   bool // a rename or link with both names in the namespace
	c     call
	w, w2 where
}

// serve serves the call p of notification n; ctx ends when the
// notification stops standing.
func (p pending) serve(ctx context.Context, s *server, n *notif) {
	if !p.two {
		s.serve(ctx, n, p.c, p.w)
	} else if s.valid(n.ID) {
		s.two(n, p.c, p.w, p.w2)
	}
}

// routeAction is what handle does with a trapped call.
type routeAction int

const (
	routeContinue routeAction = iota // let the kernel run it
	routeRefuse                      // answer errno at once
	routeServe                       // serve it on a goroutine of its own
	routeTwo                         // serve a rename or link with both names in the namespace
)

// routing is route's answer.
type routing struct {
	action  routeAction
	errno   syscall.Errno // routeRefuse
	counted bool          // counted as served (the debug log at exit)
}

// route decides what becomes of a trapped call of kind k whose name is
// (in) or is not in the namespace; in2 is the second name of kTwo calls,
// door whether the private door is mounted. It is pure, and cheap: every
// trapped call passes here.
func route(k kind, in, in2, door bool) routing {
	if k == kTwo {
		switch {
		case !in && !in2:
			return routing{action: routeContinue}
		case in && in2 && door:
			return routing{action: routeTwo, counted: true}
		}
		// One name on each side: mv copies and removes.
		return routing{action: routeRefuse, errno: syscall.EXDEV}
	}
	switch {
	case !in:
		return routing{action: routeContinue}
	case k == kExec:
		return routing{action: routeRefuse, errno: syscall.EACCES, counted: true}
	case k == kXattr:
		return routing{action: routeRefuse, errno: syscall.ENOTSUP, counted: true}
	}
	return routing{action: routeServe, counted: true}
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

func (s *server) serve(ctx context.Context, n *notif, c call, w where) {
	if !s.valid(n.ID) {
		return
	}
	if s.mnt == "" && c.kind != kOpen {
		s.respond(n.ID, 0, syscall.EOPNOTSUPP) // no private door
		return
	}
	switch c.kind {
	case kOpen:
		s.open(ctx, n, c, w)
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

func (s *server) caller(tid uint32) ns.Caller {
	t0 := s.tm.start()
	uid, gid, _ := s.ids.creds(tid)
	s.tm.end(phCreds, t0)
	// Served handles live on the private FUSE door: its release lag.
	return ns.Caller{Pid: tid, Uid: uid, Gid: gid, ReleaseLag: fusedoor.ReleaseLag,
		Holds: func(h ns.Handle) bool { return s.served.holds(tid, h) }}
}

// asking is ctx carrying the target thread tid as the caller
// (ns.WithCaller); its /proc status is read only if a node asks.
func (s *server) asking(ctx context.Context, tid uint32) context.Context {
	return ns.WithCaller(ctx, func() ns.Caller { return s.caller(tid) })
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

// Constants the syscall package lacks.
const (
	oPath             = 0o10000000
	atSymlinkNofollow = 0x100
	atEmptyPath       = 0x1000
)
