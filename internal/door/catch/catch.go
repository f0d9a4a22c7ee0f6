// Package catch is the catcher door: it runs a command, and every process
// the command starts, under seccomp user notification, so that unmodified
// programs (dynamic or static) see the namespace at a prefix such as /net
// with no mount visible to them and no privilege. It is Ufo's Catcher
// rebuilt on SECCOMP_RET_USER_NOTIF. Like every door it knows nothing about
// protocols: it resolves trapped paths with ns.Namespace.Resolve and opens
// them through ns.Opener.
//
// # How
//
// Run starts the running binary again as a hidden helper (HelperArg). On
// its main thread the helper sets no_new_privs, installs a BPF filter with
// SECCOMP_FILTER_FLAG_NEW_LISTENER, passes the listener to the supervisor
// over a socketpair (SCM_RIGHTS) and execs the command from that thread;
// the filter is inherited across fork, vfork, clone and exec.
//
// The supervisor (Run) receives notifications on one goroutine (see
// Options.Receivers). A path outside the prefix is answered with
// SECCOMP_USER_NOTIF_FLAG_CONTINUE at once: that is the hot path, made
// cheap by the synchronous wake-up of Linux 6.6
// (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, used when the kernel has it). A
// call that takes a directory descriptor traps only with AT_FDCWD: the
// filter lets names relative to real descriptors through (fstat as
// newfstatat(fd, "", AT_EMPTY_PATH), find's per-entry calls, every walk
// below a namespace directory, which is on the private door). Relative
// paths resolve against /proc/TID/cwd (or /proc/TID/fd/DIRFD for the one
// descriptor of a rename or link that is not AT_FDCWD), but only when
// their first component could lead into the prefix. A path inside the
// prefix is served by the goroutine that received it; if that takes more
// than a millisecond (a blocked open), another receiver takes over, so a
// blocked open never holds up other calls for long.
//
// Dynamically linked programs skip even that trap for most local names:
// the fast path (fastpath.go) preloads a library that makes the calls on
// names the cheap tests find local from a trampoline the filter lets
// through.
//
// A path inside the prefix is served. open, openat, openat2 and creat call
// the node's Open with the target as Caller; a handle that is an
// ns.KernelObject (a connected socket) is given to the target as the real
// fd with SECCOMP_IOCTL_NOTIF_ADDFD and SECCOMP_ADDFD_FLAG_SEND (O_CLOEXEC
// honoured), so poll, select and epoll work and the data path is the
// kernel's. Any other handle (a simple server whose first read accepts, "!"
// handles, UDP, dns files, directories) is handed over as an fd on a
// private FUSE door of the same namespace, mounted in a hidden 0700
// directory for the lifetime of the command, so both doors behave
// identically. The stat family, access and readlink run on that private
// door and their result is written into the target with /proc/TID/mem:
// there are no stub files. The trapped set and what each call gets is
// listed at calls (syscalls.go).
//
// # Correctness
//
// Target memory is read with process_vm_readv and the notification is
// checked with SECCOMP_IOCTL_NOTIF_ID_VALID before anything is done on a
// target's behalf; results are written through /proc/TID/mem opened before
// that check. A blocked open (a concurrent server waiting for a client) is
// cancelled when the target is interrupted or dies: the notification then
// stops being valid, and a restarted call traps again. Notifications carry
// thread ids, which /proc resolves like pids.
//
// # Limits
//
// wirefs run is not a sandbox: a program can reach anything it could
// without it (the filter only redirects names). no_new_privs means setuid
// and file-capability programs run without their privilege. 32-bit (i386)
// system calls are not trapped: such programs see no namespace; x32 calls
// fail with ENOSYS. Names reached through a symbolic link that points into
// the prefix are not seen (the kernel follows the link), nor are names
// given with a real directory descriptor that reach the namespace from
// outside it (absolute, relative to /, climbing with "..", URL names). If the supervisor
// dies, or the command exits while descendants still run, trapped calls of
// the survivors fail with ENOSYS: they never hang. The kernel allows one
// listener per filter chain, so wirefs run cannot be nested. Without FUSE
// (no /dev/fuse, or no_new_privs stopping the setuid fusermount3) only
// sockets are served. Descriptors on the private door show its hidden path
// in /proc/PID/fd.
package catch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	fusedoor "wirefs/internal/door/fuse"
	"wirefs/internal/ns"
	"wirefs/internal/waited"
)

// Options configure Run.
type Options struct {
	Prefix string   // where the namespace appears, absolute (default /net)
	Args   []string // the command and its arguments
	// Roots are namespace names shown at the top level as well: "http"
	// appears at /http, a mount point "src" at /src (Ufo's roots).
	Roots []string
	// URLName maps a URL name ("sftp://me@host/dir", which the kernel
	// would resolve as a directory "sftp:" in the working directory) to
	// a namespace name; nil: URL names are not caught.
	URLName func(name string) (string, bool)
	Log     *slog.Logger
	// Receivers is the number of goroutines receiving notifications.
	// The default, 1, is the fastest measured: with several, the kernel
	// wakes a different thread each time and the synchronous wake-up
	// loses its point (trapped openat: 12 µs with one, 18-22 µs with
	// two). Namespace paths are served on goroutines of their own.
	Receivers int
	// NoSyncWakeUp leaves the synchronous wake-up off (for measurements).
	NoSyncWakeUp bool
	// Timing, if set, receives at exit where trapped calls spent their
	// time in the supervisor, phase by phase (for measurements).
	Timing io.Writer
	// RuntimeDir holds the private FUSE door's hidden directory (default
	// $XDG_RUNTIME_DIR, else the temporary directory).
	RuntimeDir string
	// NoFastPath leaves the fast path's library out of the command's
	// programs (fastpath.go: for measurements, and what a failure to
	// write it leads to).
	NoFastPath bool
	// Pace, if not 0, is the rate in bytes per second at which every
	// TCP socket the command connects or listens with may send
	// (SO_MAX_PACING_RATE, pace.go): wirefs nice without CAP_NET_ADMIN.
	Pace uint64
}

// ErrUnavailable is wrapped by Run's error when the kernel cannot run a
// command under seccomp user notification.
var ErrUnavailable = errors.New("seccomp user notification is unavailable")

// Run runs o.Args with n visible at o.Prefix and returns the command's exit
// status (128+signal if a signal killed it). It forwards SIGINT, SIGTERM
// and SIGHUP to the command and leaves stdin, stdout, stderr and the
// terminal to it. With n nil, only connect and listen are trapped, to
// pace sockets (o.Pace): no namespace, no private door, no cost on path
// calls. Run changes process-wide state (child subreaper, signal
// handling, reaping of children) and is meant to be called once by a
// process that does nothing else meanwhile.
func Run(n *ns.Namespace, o Options) (int, error) {
	o, names, err := runOptions(o)
	if err != nil {
		return 0, err
	}
	nsize, err := notifSizes()
	if err == nil {
		err = probeListener()
	}
	if err != nil {
		return 0, unavailable(err)
	}
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	// Descriptors the command should inherit, noted before this process
	// opens any of its own.
	files := inherited()

	traps := trapNamespace
	var mnt string
	var sv *served
	if n != nil {
		var closeDoor func()
		mnt, sv, closeDoor, err = privateDoor(n, o)
		if err != nil {
			return 0, err
		}
		defer closeDoor()
	} else {
		traps = 0
	}
	if o.Pace != 0 {
		traps |= trapPaced
	}
	env := os.Environ()
	if n != nil && !o.NoFastPath {
		doorBase := ""
		if mnt != "" {
			doorBase = filepath.Dir(mnt)
		}
		fenv, cleanup, err := fastPath(o.RuntimeDir, doorBase, env, names, o.Log)
		if err != nil {
			o.Log.Warn("catch: no fast path: every path call traps", "err", err)
		} else {
			env = fenv
			traps |= trapFast
			defer cleanup()
		}
	}
	cmd, err := startCommand(self, files, o.Args, traps, env)
	if err != nil {
		return 0, err
	}
	defer cmd.stop()
	listener, msg, err := receiveListener(cmd.sock)
	if err != nil || listener < 0 {
		status, note, err := helperFailed(err, msg, <-cmd.exited)
		if note != "" {
			fmt.Fprintln(os.Stderr, "wirefs run:", note)
		}
		return status, err
	}
	syncMode := setSyncWakeUp(listener, o)
	o.Log.Debug("catch: running", "pid", cmd.pid, "prefix", o.Prefix, "door", mnt, "sync-wake-up", syncMode)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newServer(ctx, listener, n, names, mnt, sv, cmd.ptraceMu, o.Log, nsize)
	s.tm = newTiming(o)
	s.pacing = o.Pace
	for range o.Receivers {
		go s.receive()
	}
	status := cmd.wait()
	cancel()
	s.ids.close()
	o.Log.Debug("catch: done", "status", status, "continued", s.nCont.Load(), "served", s.nServed.Load(), "handed-off", s.nHandoffs.Load())
	if s.tm != nil {
		s.tm.report(o.Timing)
	}
	// Receivers stay blocked in the kernel until the process exits;
	// descendants that outlive the command keep being served until
	// then.
	return status, nil
}

// runOptions fills in Run's defaults and checks its options.
func runOptions(o Options) (Options, *names, error) {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Prefix == "" {
		o.Prefix = "/net"
	}
	names, err := newNames(o.Prefix, o.Roots, o.URLName)
	if err != nil {
		return o, nil, err
	}
	if len(o.Args) == 0 {
		return o, nil, errors.New("no command to run")
	}
	if o.Receivers <= 0 {
		o.Receivers = 1
	}
	return o, names, nil
}

// unavailable says why Run cannot use seccomp user notification, given
// the error of the probe.
func unavailable(err error) error {
	if errors.Is(err, syscall.EBUSY) {
		return fmt.Errorf("%w: this process already runs under a seccomp supervisor, such as another wirefs run, and the kernel allows only one", ErrUnavailable)
	}
	return fmt.Errorf("%w on this system (%v); wirefs run needs Linux 5.14 or newer with seccomp filters enabled", ErrUnavailable, err)
}

// helperFailed is Run's result when the helper sent no listener: err is
// why none could be received, msg the helper's message and status the
// command's exit status. note, if any, is for standard error.
func helperFailed(err error, msg string, status int) (int, string, error) {
	switch {
	case err != nil:
		return 0, "", fmt.Errorf("the helper failed: %w", err)
	case strings.HasPrefix(msg, msgUnavailable):
		return 0, "", fmt.Errorf("%w here (%s)", ErrUnavailable, strings.TrimPrefix(msg, msgUnavailable))
	case strings.HasPrefix(msg, msgNotFound):
		return status, strings.TrimPrefix(msg, msgNotFound), nil
	}
	return status, "", nil
}

// newServer makes the server of listener.
func newServer(ctx context.Context, listener int, n *ns.Namespace, names *names, mnt string, sv *served, ptraceMu *sync.Mutex, log *slog.Logger, nsize int) *server {
	umask, err := umaskOf(uint32(syscall.Gettid()))
	if err != nil {
		umask = -1 // unknown: every create sets the program's
	}
	return &server{
		fd: listener, names: names, user: n, ptraceMu: ptraceMu, umask: umask,
		mnt: mnt, served: sv, log: log, ctx: ctx, nsize: max(nsize, int(unsafe.Sizeof(notif{}))),
		netns: netnsCookie(),
	}
}

// command is the helper, started: it becomes the command.
type command struct {
	pid    int
	sock   *os.File       // our end of the socketpair to the helper
	sigs   chan os.Signal // SIGINT, SIGTERM and SIGHUP, to forward
	exited chan int       // the command's exit status
	// ptraceMu is held while a thread is traced: the reaper waits only
	// meanwhile, since a wait for any child would take a tracee's stops
	// away from its tracer.
	ptraceMu *sync.Mutex
	stop     func() // stops signal handling, closes sock
}

// startCommand starts the helper with files (the helper's end of a
// socketpair added last), the command line args and the environment
// env, and reaps every child, orphans included, until the command exits.
func startCommand(self string, files []*os.File, args []string, traps trapSet, env []string) (*command, error) {
	pair, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	ours, theirs := os.NewFile(uintptr(pair[0]), "catch"), os.NewFile(uintptr(pair[1]), "catch-helper")
	// Orphaned descendants stay our children: their memory stays
	// readable (Yama) and they are reaped.
	syscall.RawSyscall6(syscall.SYS_PRCTL, prSetChildSubreap, 1, 0, 0, 0, 0)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	sigchld := make(chan os.Signal, 1)
	signal.Notify(sigchld, syscall.SIGCHLD)
	stop := func() {
		signal.Stop(sigchld)
		signal.Stop(sigs)
		ours.Close()
	}
	// The helper's end goes right after the inherited descriptors; the
	// helper closes it before exec.
	files = append(files, theirs)
	argv := append([]string{self, HelperArg, strconv.Itoa(len(files) - 1)}, args...)
	if traps != trapNamespace {
		env = append(env, trapsEnv+"="+strconv.Itoa(int(traps)))
	}
	proc, err := os.StartProcess(self, argv, &os.ProcAttr{Files: files, Env: env})
	theirs.Close()
	if err != nil {
		stop()
		return nil, err
	}
	c := &command{pid: proc.Pid, sock: ours, sigs: sigs, exited: make(chan int, 1), ptraceMu: new(sync.Mutex), stop: stop}
	go reap(c.pid, c.ptraceMu, sigchld, c.exited)
	return c, nil
}

// wait forwards signals to the command until it exits, and returns its
// status.
func (c *command) wait() int {
	for {
		select {
		case sig := <-c.sigs:
			if sig == syscall.SIGINT && fromTerminal() {
				continue // the command got it from the terminal too
			}
			syscall.Kill(c.pid, sig.(syscall.Signal))
		case status := <-c.exited:
			return status
		}
	}
}

// reap waits for children (orphans included, as the child subreaper)
// whenever SIGCHLD arrives, and sends the command's status on exited.
// Children whose starter waits for them itself (package waited: exec
// portals' programs) are left to it; once it has reaped one, the others
// are looked at again.
func reap(pid int, ptraceMu *sync.Mutex, sigchld <-chan os.Signal, exited chan<- int) {
	for {
		ptraceMu.Lock()
		for {
			wpid, err := waited.Exited()
			if err != nil {
				ptraceMu.Unlock()
				exited <- 255
				return
			}
			if wpid == 0 {
				break
			}
			var ws syscall.WaitStatus
			if _, err := syscall.Wait4(wpid, &ws, syscall.WNOHANG|0x40000000 /* __WALL */, nil); err != nil || wpid != pid {
				continue
			}
			if ws.Signaled() {
				exited <- 128 + int(ws.Signal())
			} else {
				exited <- ws.ExitStatus()
			}
			ptraceMu.Unlock()
			return
		}
		ptraceMu.Unlock()
		select {
		case <-sigchld:
		case <-waited.Released():
		}
	}
}

// privateDoor mounts the private FUSE door in a hidden directory. Without
// FUSE it returns mnt "" and the catcher serves sockets only.
func privateDoor(n *ns.Namespace, o Options) (mnt string, sv *served, closeDoor func(), err error) {
	mnt, cleanupDir, err := hiddenDir(o.RuntimeDir, o.Log)
	if err != nil {
		return "", nil, nil, err
	}
	sv = newServed(mnt)
	if _, err := fusedoor.Mount(mnt, privateRoot(n, sv), fusedoor.Options{AttrTimeout: time.Second, Log: o.Log}); err != nil {
		// Sockets need no door: run with what works (no_new_privs, for
		// one, stops the setuid fusermount3).
		o.Log.Error("wirefs: no private FUSE door, so only connected sockets are served (directories, stat, dns, servers and UDP fail with EOPNOTSUPP)", "err", err)
		return "", sv, cleanupDir, nil
	}
	return mnt, sv, func() { unmount(mnt, o.Log); cleanupDir() }, nil
}

// setSyncWakeUp turns on the synchronous wake-up (Linux 6.6; older
// kernels answer EINVAL and run without it) and says how it went.
func setSyncWakeUp(listener int, o Options) string {
	if o.NoSyncWakeUp {
		return "off"
	}
	if _, e := ioctl(listener, ioctlNotifSetFlags, fdSyncWakeUp); e != 0 {
		return "unavailable (" + e.Error() + ")"
	}
	return "on"
}

// inherited returns the descriptors to pass to the command at their own
// numbers: 0, 1, 2 and any other one this process inherited (`wirefs run
// -- cmd 3<file`). Go opens everything close-on-exec, so an open
// descriptor without FD_CLOEXEC came from our parent.
func inherited() []*os.File {
	files := []*os.File{os.Stdin, os.Stdout, os.Stderr}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return files
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd < 3 || fd > 1024 {
			continue
		}
		flags, err := fcntl(fd, syscall.F_GETFD, 0)
		if err != nil || flags&syscall.FD_CLOEXEC != 0 {
			continue
		}
		for len(files) <= fd {
			files = append(files, nil)
		}
		files[fd] = os.NewFile(uintptr(fd), "inherited")
	}
	return files
}

// receiveListener reads the helper's message: the listener fd, or why
// there is none.
func receiveListener(sock *os.File) (int, string, error) {
	buf := make([]byte, 1024)
	oob := make([]byte, syscall.CmsgSpace(4))
	var n, oobn int
	var err error
	rc, err := sock.SyscallConn()
	if err != nil {
		return -1, "", err
	}
	cerr := rc.Control(func(fd uintptr) {
		for {
			n, oobn, _, _, err = syscall.Recvmsg(int(fd), buf, oob, syscall.MSG_CMSG_CLOEXEC)
			if err != syscall.EINTR {
				return
			}
		}
	})
	if cerr != nil {
		return -1, "", cerr
	}
	if err != nil {
		return -1, "", err
	}
	msg := string(buf[:n])
	if msg != msgOK {
		if n == 0 {
			return -1, "", errors.New("it exited before installing the filter")
		}
		return -1, msg, nil
	}
	cmsgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(cmsgs) != 1 {
		return -1, "", errors.New("no listener received")
	}
	fds, err := syscall.ParseUnixRights(&cmsgs[0])
	if err != nil || len(fds) != 1 {
		return -1, "", errors.New("no listener received")
	}
	return fds[0], msg, nil
}

// fromTerminal reports whether we are in the foreground process group of
// the terminal on stdin: a SIGINT then came from the terminal (Ctrl-C) and
// reached the command, which shares our process group, as well.
func fromTerminal() bool {
	var pgrp int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, 0, syscall.TIOCGPGRP, uintptr(unsafe.Pointer(&pgrp))); e != 0 {
		return false
	}
	return int(pgrp) == syscall.Getpgrp()
}

const hiddenPrefix = "wirefs-catch-"

// hiddenDir creates the private door's mount point: a 0700 directory in
// $XDG_RUNTIME_DIR (or the temporary directory). Stale ones left by a
// supervisor that was killed are unmounted and removed first.
func hiddenDir(base string, log *slog.Logger) (string, func(), error) {
	if base == "" {
		base = os.Getenv("XDG_RUNTIME_DIR")
		if st, err := os.Stat(base); base == "" || err != nil || !st.IsDir() || syscall.Access(base, 2 /* W_OK */) != nil {
			base = os.TempDir()
		}
	}
	removeStale(base, log)
	dir, err := os.MkdirTemp(base, hiddenPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return "", nil, err
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real // /proc shows descriptors under the real path
	}
	return dir, func() { os.Remove(dir) }, nil
}

func removeStale(base string, log *slog.Logger) {
	ents, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), hiddenPrefix) {
			continue
		}
		dir := filepath.Join(base, e.Name())
		// A mount whose server died answers ENOTCONN; a live one (a
		// wirefs run next door) answers, and an unmounted directory
		// is merely left over.
		_, err := os.Stat(dir + "/" + nsDir)
		if errors.Is(err, syscall.ENOTCONN) {
			unmount(dir, log)
			os.Remove(dir)
		} else if errors.Is(err, os.ErrNotExist) {
			// An unmounted door, or the fast path's library.
			if pid, ok := pidOf(e.Name()); ok && syscall.Kill(pid, 0) == syscall.ESRCH {
				os.RemoveAll(dir)
			}
		}
	}
}

func pidOf(name string) (int, bool) {
	rest := strings.TrimPrefix(name, hiddenPrefix)
	p, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(p)
	return pid, err == nil
}

// unmount detaches the private door lazily: descendants that outlive the
// command may still hold fds on it.
func unmount(dir string, log *slog.Logger) {
	if err := syscall.Unmount(dir, syscall.MNT_DETACH); err == nil {
		return
	}
	out, err := exec.Command("fusermount3", "-u", "-z", dir).CombinedOutput()
	if err != nil {
		log.Warn("catch: cannot unmount the private door", "dir", dir, "err", strings.TrimSpace(string(out)))
	}
}
