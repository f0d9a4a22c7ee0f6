package portal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"wirefs/internal/config"
	fusedoor "wirefs/internal/door/fuse"
	"wirefs/internal/leakcheck"
	"wirefs/internal/ns"
	"wirefs/internal/testsrv"
)

// logBuffer collects the provider's log for assertions.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// newProvider returns a provider whose Close (which reaps every program)
// runs when the test ends, and its log.
func newProvider(t *testing.T) (*Provider, *logBuffer) {
	t.Helper()
	var log logBuffer
	p := New(slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug})), Grace)
	t.Cleanup(p.Close)
	return p, &log
}

// line parses one portal line.
func line(t *testing.T, text string) config.Portal {
	t.Helper()
	tab, err := config.Parse(text, nil)
	if err != nil || len(tab.Portals) != 1 {
		t.Fatalf("%q: %+v %v", text, tab, err)
	}
	return tab.Portals[0]
}

// me is the test process as a caller.
func me() ns.Caller {
	return ns.Caller{Pid: uint32(os.Getpid()), Uid: uint32(os.Geteuid()), Gid: uint32(os.Getegid())}
}

// openName opens name below the exec portal of text (or the portal
// itself when name is "").
func openName(t *testing.T, p *Provider, text, name string, c ns.Caller, flags int) (ns.Handle, error) {
	t.Helper()
	node, err := p.Exec(line(t, text))
	if err != nil {
		t.Fatal(err)
	}
	if name != "" {
		if node, err = node.(ns.Dir).Lookup(context.Background(), name); err != nil {
			t.Fatal(err)
		}
	}
	return node.(ns.Opener).Open(context.Background(), c, flags)
}

// readAll reads a stream handle to its end.
func readAll(t *testing.T, h ns.Handle) string {
	t.Helper()
	var out []byte
	buf := make([]byte, 4096)
	for {
		n, err := h.(ns.Reader).Read(context.Background(), buf)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return string(out)
		}
		out = append(out, buf[:n]...)
	}
}

func write(t *testing.T, h ns.Handle, s string) {
	t.Helper()
	if _, err := h.(ns.Writer).Write(context.Background(), []byte(s)); err != nil {
		t.Fatal(err)
	}
}

// TestExecModes: the open mode connects the opener as popen does, and
// every handle is a kernel object (a pipe end or a socket).
func TestExecModes(t *testing.T) {
	p, _ := newProvider(t)
	dir := t.TempDir()

	h, err := openName(t, p, "portal sorted exec sort", "", me(), syscall.O_RDWR)
	if err != nil {
		t.Fatal(err)
	}
	write(t, h, "b\nc\na\n")
	kf, _ := h.(ns.KernelObject).KernelFile()
	// The opener's half-close: sort sees EOF on its stdin and answers.
	if err := syscall.Shutdown(int(kf.Fd()), syscall.SHUT_WR); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, h); got != "a\nb\nc\n" {
		t.Errorf("sort through O_RDWR: %q", got)
	}
	if st, _ := kf.Stat(); st.Mode()&os.ModeSocket == 0 {
		t.Errorf("O_RDWR handle is %v, want a socket", st.Mode())
	}
	h.Close()

	h, err = openName(t, p, "portal cat exec cat /etc/hostname", "", me(), syscall.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile("/etc/hostname")
	if got := readAll(t, h); got != string(want) {
		t.Errorf("cat through O_RDONLY: %q, want %q", got, want)
	}
	kf, _ = h.(ns.KernelObject).KernelFile()
	if st, _ := kf.Stat(); st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("O_RDONLY handle is %v, want a pipe", st.Mode())
	}
	h.Close()

	// O_WRONLY: close is EOF on the program's stdin, and the program
	// may finish its work (sort writes after EOF).
	out := filepath.Join(dir, "sorted")
	h, err = openName(t, p, "portal s/ exec sh -c 'sort > \"$1\"' sh %s", out, me(), syscall.O_WRONLY)
	if err != nil {
		t.Fatal(err)
	}
	write(t, h, "2\n3\n1\n")
	h.Close()
	p.wg.Wait() // the program is reaped
	if got, _ := os.ReadFile(out); string(got) != "1\n2\n3\n" {
		t.Errorf("sort through O_WRONLY wrote %q", got)
	}
}

// TestExecArgvVerbatim: the name is one argv element, never seen by a
// shell, whatever it holds.
func TestExecArgvVerbatim(t *testing.T) {
	p, _ := newProvider(t)
	dir := t.TempDir()
	for _, name := range []string{"a;touch " + dir + "/x", "$(touch " + dir + "/y)", "`id`", "a b\tc", "'\"\\", "-n", "%s", "*", "x\ny", "..."} {
		h, err := openName(t, p, `portal p/ exec printf '[%%s]' %s`, name, me(), syscall.O_RDONLY)
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, h); got != "["+name+"]" {
			t.Errorf("name %q reached the program as %q", name, got)
		}
		h.Close()
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("a name ran as a command: %v", ents)
	}
}

// TestExecEnvironment: the documented environment and nothing of the
// daemon's; the program runs in /.
func TestExecEnvironment(t *testing.T) {
	t.Setenv("WIREFS_SECRET", "leak")
	p, _ := newProvider(t)
	h, err := openName(t, p, "portal env/ exec sh -c 'pwd; env | sort'", "x", me(), syscall.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	got := readAll(t, h)
	h.Close()
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if lines[0] != "/" {
		t.Errorf("working directory %q", lines[0])
	}
	var names []string
	for _, l := range lines[1:] {
		if k, _, _ := strings.Cut(l, "="); k != "PWD" && k != "SHLVL" && k != "_" { // what sh adds
			names = append(names, k)
		}
	}
	if strings.Join(names, " ") != "HOME LOGNAME PATH USER WIREFS_PORTAL" || !strings.Contains(got, "PATH="+Path+"\n") ||
		!strings.Contains(got, "WIREFS_PORTAL=/env\n") {
		t.Errorf("environment:\n%s", got)
	}
}

// needRoot skips (or fails, WIREFS_REQUIRE_PRIV=1) a test that acts as
// other users.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		testsrv.Unavailable(t, "acting as other users needs root")
	}
}

// asNobody starts a process as nobody with the supplementary groups
// 65534 and 100, blocked reading a pipe until the test ends: a caller
// whose /proc status the provider reads.
func asNobody(t *testing.T) ns.Caller {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("cat")
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{65534, 100}}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	t.Cleanup(func() { w.Close(); cmd.Wait() })
	return ns.Caller{Pid: uint32(cmd.Process.Pid), Uid: 65534, Gid: 65534}
}

// TestExecAsOpener: the program runs with the opener's uid, gid and
// groups, never the daemon's; a caller whose /proc status disagrees with
// the door (an exited thread's id) lends no groups.
func TestExecAsOpener(t *testing.T) {
	needRoot(t)
	p, _ := newProvider(t)
	nobody := asNobody(t)
	h, err := openName(t, p, "portal id exec sh -c 'id -u; id -g; id -G'", "", nobody, syscall.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, h); got != "65534\n65534\n65534 100\n" {
		t.Errorf("as nobody: %q", got)
	}
	h.Close()
	stranger := ns.Caller{Pid: uint32(os.Getpid()), Uid: 65534, Gid: 65534} // the test runs as root
	h, err = openName(t, p, "portal id exec id -G", "", stranger, syscall.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, h); got != "65534\n" {
		t.Errorf("groups of a caller whose status disagrees: %q", got)
	}
	h.Close()
}

// TestExecStderrAndStatus: stderr goes to the log tagged with the
// portal, and so does the exit status.
func TestExecStderrAndStatus(t *testing.T) {
	p, log := newProvider(t)
	h, err := openName(t, p, "portal e/ exec sh -c 'echo oops-$1 >&2; exit 3' sh %s", "n1", me(), syscall.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, h)
	h.Close()
	p.wg.Wait()
	got := log.String()
	for _, want := range []string{`msg="portal stderr" portal=/e name=n1`, `line=oops-n1`, `msg="portal program exited" portal=/e name=n1`, `status="exit status 3"`} {
		if !strings.Contains(got, want) {
			t.Errorf("log lacks %s:\n%s", want, got)
		}
	}
}

// TestExecStops: closing the last descriptor stops a program that would
// run on (SIGTERM; SIGKILL after the grace period for one that ignores
// it), and a blocked read is interrupted by its context.
func TestExecStops(t *testing.T) {
	p, log := newProvider(t)
	p.grace = 100 * time.Millisecond // the SIGKILL case waits this long once
	base := leakcheck.Take(t)
	h, err := openName(t, p, "portal idle exec sleep 1000", "", me(), syscall.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go cancel()
	if _, err := h.(ns.Reader).Read(ctx, make([]byte, 10)); ns.Errno(err) != syscall.EINTR {
		t.Errorf("cancelled read: %v, want EINTR", err)
	}
	h.Close()

	h, err = openName(t, p, `portal stubborn exec sh -c 'trap "" TERM; echo ready; while :; do read x; done'`, "", me(), syscall.O_RDWR)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 6)
	if _, err := io.ReadFull(h.(*stream).f, buf); err != nil || string(buf) != "ready\n" {
		t.Fatalf("%q %v", buf, err)
	}
	h.Close()
	p.wg.Wait()
	for _, want := range []string{`portal=/idle name="" pid=`, `status="signal: terminated" stopped_at_close=true`, `status="signal: killed" stopped_at_close=true`} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, log)
		}
	}
	noZombies(t)
	base.Check(t)
}

// noZombies fails if the test process has a child that exited unreaped.
func noZombies(t *testing.T) {
	t.Helper()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, s := range stats {
		b, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 1 && f[0] == "Z" && f[1] == strconv.Itoa(os.Getpid()) {
			t.Errorf("zombie child: %s", b)
		}
	}
}

// TestExecManyOpens: many opens in parallel, each a program that is
// reaped, leave no goroutine, descriptor or zombie behind.
func TestExecManyOpens(t *testing.T) {
	p, _ := newProvider(t)
	base := leakcheck.Take(t)
	node, err := p.Exec(line(t, "portal up/ exec tr a-z A-Z"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 100 {
		wg.Go(func() {
			f, _ := node.(ns.Dir).Lookup(context.Background(), fmt.Sprint(i))
			h, err := f.(ns.Opener).Open(context.Background(), me(), syscall.O_RDWR)
			if err != nil {
				errs <- err
				return
			}
			defer h.Close()
			kf, _ := h.(ns.KernelObject).KernelFile()
			if _, err := h.(ns.Writer).Write(context.Background(), fmt.Appendf(nil, "n%d", i)); err != nil {
				errs <- err
				return
			}
			syscall.Shutdown(int(kf.Fd()), syscall.SHUT_WR)
			got, err := io.ReadAll(kf)
			if err != nil || string(got) != fmt.Sprintf("N%d", i) {
				errs <- fmt.Errorf("open %d read %q %v", i, got, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	p.wg.Wait()
	noZombies(t)
	base.Check(t)
}

// TestExecNotFound: a program that is not there fails the portal when
// it is made (the mount), naming it.
func TestExecNotFound(t *testing.T) {
	p, _ := newProvider(t)
	if _, err := p.Exec(line(t, "portal x exec no-such-program-wirefs")); err == nil || !strings.Contains(err.Error(), "no-such-program-wirefs: not found") {
		t.Errorf("got %v", err)
	}
	// A program named by %s is looked for at open: ENOENT.
	h, err := openName(t, p, "portal bin/ exec %s", "no-such-program-wirefs", me(), syscall.O_RDONLY)
	if ns.Errno(err) != syscall.ENOENT {
		t.Errorf("open: %v %v, want ENOENT", h, err)
	}
	var e *ns.Error
	if !errors.As(err, &e) {
		t.Errorf("not an ns error: %v", err)
	}
}

// heldProgram is an executable file whose open waits until released: an
// execve of it blocks, like a program on a slow or hung file system.
type heldProgram struct {
	opening chan struct{} // closed at the first open
	once    sync.Once
	release chan struct{}
}

const heldScript = "#!/bin/sh\nexec sleep 1000\n" // runs until stopped

func (h *heldProgram) Attr(context.Context) (ns.Attr, error) {
	return ns.Attr{Mode: 0o755, Size: int64(len(heldScript))}, nil
}

func (h *heldProgram) Open(ctx context.Context, _ ns.Caller, _ int) (ns.Handle, error) {
	h.once.Do(func() { close(h.opening) })
	select {
	case <-h.release:
		return heldFile{}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type heldFile struct{}

func (heldFile) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	if off >= int64(len(heldScript)) {
		return 0, nil
	}
	return copy(p, heldScript[off:]), nil
}

func (heldFile) Close() error { return nil }

// TestExecStartInterrupted: an open waiting for its program to start
// (execve blocked on a file system) returns EINTR as soon as its context
// is cancelled; the program, once it starts after all, is stopped and
// reaped as if its opener had closed.
//
// Go starts programs with vfork: while the child's execve blocks, the
// forking thread keeps its P and cannot stop for the garbage collector,
// so a collection would freeze the process until execve returns (the
// limitation docs/wirefs.md states). The test turns collection off for
// its duration and needs a second P.
func TestExecStartInterrupted(t *testing.T) {
	needRoot(t)
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs GOMAXPROCS >= 2: the P of a blocked vfork is held")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	held := &heldProgram{opening: make(chan struct{}), release: make(chan struct{})}
	names := ns.New()
	names.Mount("prog", held)
	mnt := t.TempDir()
	srv, err := fusedoor.Mount(mnt, names, fusedoor.Options{})
	if err != nil {
		testsrv.Unavailable(t, "FUSE: "+err.Error())
	}
	t.Cleanup(func() { srv.Unmount() })
	p, log := newProvider(t)
	node, err := p.Exec(line(t, "portal slow exec "+mnt+"/prog"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-held.opening // execve is waiting for the file system
		cancel()
	}()
	if _, err := node.(ns.Opener).Open(ctx, me(), syscall.O_RDONLY); ns.Errno(err) != syscall.EINTR {
		t.Fatalf("open: %v, want EINTR", err)
	}
	close(held.release)
	p.wg.Wait()
	if !strings.Contains(log.String(), `portal=/slow name="" pid=`) || !strings.Contains(log.String(), "stopped_at_close=true") {
		t.Errorf("log:\n%s", log)
	}
	noZombies(t)
}

// TestExecCancelledBeforeStart: an open whose context is already
// cancelled starts nothing.
func TestExecCancelledBeforeStart(t *testing.T) {
	p, log := newProvider(t)
	base := leakcheck.Take(t)
	node, err := p.Exec(line(t, "portal x exec true"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := node.(ns.Opener).Open(ctx, me(), syscall.O_RDONLY); ns.Errno(err) != syscall.EINTR {
		t.Errorf("open: %v, want EINTR", err)
	}
	p.wg.Wait()
	if strings.Contains(log.String(), "exited") {
		t.Errorf("a program ran:\n%s", log)
	}
	base.Check(t)
}
