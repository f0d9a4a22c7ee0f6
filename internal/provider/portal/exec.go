package portal

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"wirefs/internal/config"
	"wirefs/internal/ns"
	"wirefs/internal/waited"
)

// Grace is how long a portal's program has between SIGTERM (its opener
// closed the last descriptor) and SIGKILL.
const Grace = 5 * time.Second

// Path is the PATH of portal programs, and where a program named
// without a slash is looked for.
const Path = "/usr/local/bin:/usr/bin:/bin"

// Provider runs the programs of exec portals and opens the files of fs
// portals. It keeps every program it started until it has reaped it.
type Provider struct {
	log   *slog.Logger
	grace time.Duration
	since time.Time

	mu      sync.Mutex
	running map[*program]struct{}
	wg      sync.WaitGroup // one per program until reaped
}

// New returns a provider that logs to log and gives programs grace
// between SIGTERM and SIGKILL.
func New(log *slog.Logger, grace time.Duration) *Provider {
	return &Provider{log: log, grace: grace, since: time.Now(), running: map[*program]struct{}{}}
}

// Close stops every running program (SIGTERM, SIGKILL after the grace
// period) and returns once all are reaped.
func (p *Provider) Close() {
	p.signalAll(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(p.grace):
		p.signalAll(syscall.SIGKILL)
		<-done
	}
}

func (p *Provider) signalAll(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for r := range p.running {
		r.signal(sig)
	}
}

// Exec returns the node of an exec portal line: a file when its prefix
// does not end in "/", else a directory whose every name is such a file
// with %s standing for the name. A program named without a slash must be
// found in Path now (a typo fails the mount, not every open), unless its
// name holds %s.
func (p *Provider) Exec(line config.Portal) (ns.Node, error) {
	if !config.HasNameArg(line.Args[0]) {
		if _, err := lookPath(line.Argv("")[0]); err != nil {
			return nil, err
		}
	}
	if line.Dir {
		return &execDir{p: p, line: line}, nil
	}
	return &execFile{p: p, line: line}, nil
}

// lookPath finds prog in Path when its name has no slash.
func lookPath(prog string) (string, error) {
	if strings.Contains(prog, "/") {
		return exec.LookPath(prog)
	}
	for _, dir := range filepath.SplitList(Path) {
		if found, err := exec.LookPath(filepath.Join(dir, prog)); err == nil {
			return found, nil
		}
	}
	return "", fmt.Errorf("%s: not found in %s", prog, Path)
}

type execDir struct {
	p    *Provider
	line config.Portal
}

func (d *execDir) Attr(context.Context) (ns.Attr, error) {
	return ns.Attr{Mode: os.ModeDir | 0o555, Mtime: d.p.since, Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}, nil
}

// Lookup: every name exists; opening it runs the program with %s = name.
func (d *execDir) Lookup(_ context.Context, name string) (ns.Node, error) {
	return &execFile{p: d.p, line: d.line, name: name}, nil
}

// ReadDir lists nothing: the names are whatever the opener asks for.
func (d *execDir) ReadDir(context.Context) ([]ns.DirEntry, error) { return nil, nil }

// execFile is one name of an exec portal.
type execFile struct {
	p    *Provider
	line config.Portal
	name string // what %s stands for ("" for a portal that is a file)
}

// Volatile: every open runs the program anew.
func (f *execFile) Volatile() bool { return true }

func (f *execFile) Attr(context.Context) (ns.Attr, error) {
	return ns.Attr{Mode: 0o666, Mtime: f.p.since, Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}, nil
}

// Open runs the program as the opener, connected by the open mode as
// popen connects it: O_RDONLY reads its stdout, O_WRONLY writes its
// stdin, O_RDWR both through a socketpair. It returns once the program
// runs (execve succeeded); a cancelled ctx returns EINTR at once, and a
// program that starts after all is stopped as if its opener had closed.
func (f *execFile) Open(ctx context.Context, c ns.Caller, flags int) (ns.Handle, error) {
	id := opener(c)
	switching, err := mustSwitch(id)
	if err != nil {
		return nil, err
	}
	var cred *syscall.Credential
	if switching {
		cred = &syscall.Credential{Uid: id.uid, Gid: id.gid, Groups: id.groups}
	}
	argv := f.line.Argv(f.name)
	prog, err := lookPath(argv[0])
	if err != nil {
		return nil, ns.Errorf(syscall.ENOENT, "portal /%s: %v", f.line.Prefix, err)
	}
	mine, theirs, err := ends(flags)
	if err != nil {
		return nil, err
	}
	r := &program{p: f.p, prefix: f.line.Prefix, name: f.name, theirs: theirs, pidfd: -1}
	r.cmd = &exec.Cmd{Path: prog, Args: argv, Env: environ(id, f.line.Prefix), Dir: "/",
		SysProcAttr: &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGKILL, PidFD: &r.pidfd}}
	switch flags & syscall.O_ACCMODE {
	case syscall.O_RDONLY:
		r.cmd.Stdout = theirs
	case syscall.O_WRONLY:
		r.cmd.Stdin, r.input = theirs, true
	default:
		r.cmd.Stdin, r.cmd.Stdout = theirs, theirs
	}
	if err := ctx.Err(); err != nil {
		mine.Close()
		theirs.Close()
		return nil, ns.Errorf(syscall.EINTR, "portal /%s: interrupted before starting %s: %w", f.line.Prefix, prog, err)
	}
	started := make(chan error, 1)
	go func() { started <- r.start() }()
	select {
	case err := <-started:
		if err != nil {
			mine.Close()
			return nil, ns.Errorf(errnoOf(err), "portal /%s: starting %s: %v", f.line.Prefix, prog, err)
		}
		return &stream{f: mine}, nil
	case <-ctx.Done():
		// The opener gave up while execve ran: once the program
		// runs it sees its opener gone (hang-up), as after a close.
		f.p.wg.Add(1)
		go func() {
			defer f.p.wg.Done()
			<-started
			mine.Close()
		}()
		return nil, ns.Errorf(syscall.EINTR, "portal /%s: interrupted while starting %s: %w", f.line.Prefix, prog, ctx.Err())
	}
}

func errnoOf(err error) syscall.Errno {
	if e := ns.Errno(err); e != syscall.EIO {
		return e
	}
	return syscall.ENOEXEC
}

// ends makes the opener's end and the program's end of the connection
// an open mode asks for: a pipe one way, or a socketpair both ways. The
// opener's end is non-blocking in Go's poller (reads wake on
// cancellation); the program's end is blocking, as programs expect.
func ends(flags int) (mine, theirs *os.File, err error) {
	switch flags & syscall.O_ACCMODE {
	case syscall.O_RDONLY:
		r, w, err := os.Pipe()
		return r, w, err
	case syscall.O_WRONLY:
		r, w, err := os.Pipe()
		return w, r, err
	}
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, os.NewSyscallError("socketpair", err)
	}
	if err := syscall.SetNonblock(fds[0], true); err != nil {
		syscall.Close(fds[0])
		syscall.Close(fds[1])
		return nil, nil, err
	}
	return os.NewFile(uintptr(fds[0]), "portal"), os.NewFile(uintptr(fds[1]), "portal program"), nil
}

// environ is a portal program's whole environment: PATH, the opener's
// HOME, USER and LOGNAME (from the password database; HOME=/ for a uid
// it lacks), and WIREFS_PORTAL, the portal's prefix. Nothing of the
// daemon's environment is passed on.
func environ(id identity, prefix string) []string {
	home, name := "/", fmt.Sprint(id.uid)
	if u, err := user.LookupId(name); err == nil {
		home, name = u.HomeDir, u.Username
	}
	return []string{"PATH=" + Path, "HOME=" + home, "USER=" + name, "LOGNAME=" + name, "WIREFS_PORTAL=/" + prefix}
}

// program is one run of a portal's program, from start to reaping.
type program struct {
	p      *Provider
	prefix string
	name   string
	cmd    *exec.Cmd
	// theirs is the program's end of its connection to the opener.
	// The daemon keeps it until the program is reaped: poll(2) on it
	// reports the opener's last close (POLLERR on a pipe's write end,
	// POLLHUP on its read end or a socket), whichever door served the
	// open and whoever holds the descriptor by then.
	theirs *os.File
	pidfd  int
	input  bool // O_WRONLY: the program only reads from its opener
	// stopped: the opener closed first and the program was told to stop.
	stopped bool
}

// start starts the program (its stderr goes to the log) and the
// goroutine that waits for it.
func (r *program) start() error {
	errR, errW, err := os.Pipe()
	if err != nil {
		r.theirs.Close()
		return err
	}
	r.cmd.Stderr = errW
	err = waited.Start(func() (int, error) {
		if err := r.cmd.Start(); err != nil {
			return 0, err
		}
		return r.cmd.Process.Pid, nil
	})
	errW.Close()
	if err != nil {
		errR.Close()
		r.theirs.Close()
		return err
	}
	r.p.mu.Lock()
	r.p.running[r] = struct{}{}
	r.p.wg.Add(2)
	r.p.mu.Unlock()
	go r.logStderr(errR)
	go r.wait(errR)
	return nil
}

// signal sends sig to the program's process group (it leads one of its
// own: Setpgid). It is sent only before the program is reaped, while
// its pid, a zombie at worst, cannot name another process.
func (r *program) signal(sig syscall.Signal) {
	syscall.Kill(-r.cmd.Process.Pid, sig)
}

// wait waits for the program to exit or its opener to close the last
// descriptor, then stops it (stop), reaps it, closes the program's end
// (the opener reads EOF) and logs the exit status. The wait is poll(2)
// on the pidfd and the program's end: a thread per running program.
func (r *program) wait(stderr *os.File) {
	defer r.p.wg.Done()
	if r.pidfd >= 0 {
		fds := []unix.PollFd{{Fd: int32(r.pidfd), Events: unix.POLLIN}, {Fd: int32(r.theirs.Fd())}}
		poll(fds, -1)
		if fds[0].Revents == 0 {
			r.stop(fds[:1])
		}
	}
	err := r.cmd.Wait()
	waited.Reaped(r.cmd.Process.Pid)
	r.p.mu.Lock()
	delete(r.p.running, r)
	r.p.mu.Unlock()
	if r.pidfd >= 0 {
		syscall.Close(r.pidfd)
	}
	r.theirs.Close()
	// Descendants may hold stderr open: what is buffered is still
	// logged, then the log stops listening.
	stderr.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	lvl := slog.LevelInfo
	if err != nil && !r.stopped {
		lvl = slog.LevelWarn
	}
	r.p.log.Log(context.Background(), lvl, "portal program exited", "portal", "/"+r.prefix, "name", r.name,
		"pid", r.cmd.Process.Pid, "status", r.cmd.ProcessState.String(), "stopped_at_close", r.stopped)
}

// stop ends a program whose opener closed: SIGTERM, then SIGKILL after
// the grace period. A program that reads what the opener wrote (O_WRONLY)
// gets its stdin's EOF first and the grace period to finish its work
// before SIGTERM: its input would be lost otherwise.
func (r *program) stop(pidfd []unix.PollFd) {
	grace := int(r.p.grace / time.Millisecond)
	if r.input && poll(pidfd, grace) {
		return
	}
	r.stopped = true
	r.signal(syscall.SIGTERM)
	if !poll(pidfd, grace) {
		r.signal(syscall.SIGKILL)
	}
}

// poll waits for any of fds (timeout in ms, -1: none) and reports
// whether one is ready.
func poll(fds []unix.PollFd, timeout int) bool {
	for {
		n, err := unix.Poll(fds, timeout)
		if err != syscall.EINTR {
			return n > 0
		}
	}
}

// logStderr logs each line the program writes to stderr, tagged with
// the portal's prefix.
func (r *program) logStderr(f *os.File) {
	defer r.p.wg.Done()
	defer f.Close()
	br := bufio.NewReaderSize(f, 4096)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			r.p.log.Info("portal stderr", "portal", "/"+r.prefix, "name", r.name, "pid", r.cmd.Process.Pid,
				"line", strings.TrimRight(string(line), "\n"))
		}
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
	}
}
