// Package e2e is the end-to-end test suite of wirefs: it builds the binary,
// mounts it, and drives the mount with ordinary programs (bash, cat, echo,
// dd, head, socat, python3) against peers on the loopback interface.
//
// Tests that need FUSE skip when it is not available (no /dev/fuse, or not
// root and no fusermount3); with WIREFS_REQUIRE_PRIV=1 they fail instead.
// Every peer binds 127.0.0.1 or ::1 only; nothing leaves the machine.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"wirefs/internal/testsrv"
)

var (
	wirefsBin string // the binary under test
	baseDir   string // every mount point and scratch file lives below it
	testdata  string // absolute path of testdata/
	python    = "/usr/bin/python3"
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	var err error
	baseDir, err = os.MkdirTemp("", "wirefs-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(baseDir)
	// Everything the tests start makes its temporary files here, the
	// catchers' private doors included: the checks below then see this
	// run's doors only, not those of other runs on the machine.
	// Searchable, as /tmp is: tests run programs as nobody from here.
	os.Chmod(baseDir, 0o755)
	os.Setenv("TMPDIR", baseDir)
	if testdata, err = filepath.Abs("testdata"); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	wirefsBin = filepath.Join(baseDir, "wirefs")
	out, err := exec.Command("go", "build", "-o", wirefsBin, "wirefs/cmd/wirefs").CombinedOutput()
	if err != nil && bytes.Contains(out, []byte("-buildvcs=false")) {
		// No usable git here (e.g. another user's checkout): build unstamped.
		out, err = exec.Command("go", "build", "-buildvcs=false", "-o", wirefsBin, "wirefs/cmd/wirefs").CombinedOutput()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: building wirefs: %v\n%s", err, out)
		return 1
	}
	doors := catcherDoors()
	code := m.Run()
	for d := range catcherDoors() {
		if !doors[d] {
			fmt.Fprintf(os.Stderr, "e2e: FAIL: a wirefs run left its private door mounted: %s\n", d)
			syscall.Unmount(d, syscall.MNT_DETACH)
			code = 1
		}
	}
	if leaked := mountsUnder(baseDir); len(leaked) > 0 {
		fmt.Fprintf(os.Stderr, "e2e: FAIL: mounts left behind: %v\n", leaked)
		for _, mp := range leaked {
			syscall.Unmount(mp, syscall.MNT_DETACH)
		}
		code = 1
	}
	return code
}

// catcherDoors are the private FUSE doors of this run's wirefs run
// supervisors now mounted (directories "wirefs-catch-*" in TMPDIR, which
// testMain points at baseDir).
func catcherDoors() map[string]bool {
	doors := map[string]bool{}
	for _, m := range mountsUnder(baseDir) {
		if strings.HasPrefix(filepath.Base(m), "wirefs-catch-") {
			doors[m] = true
		}
	}
	return doors
}

// mountsUnder lists the mount points in /proc/self/mounts below dir.
func mountsUnder(dir string) []string {
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && (f[1] == dir || strings.HasPrefix(f[1], dir+"/")) {
			out = append(out, f[1])
		}
	}
	return out
}

func isMounted(dir string) bool {
	for _, mp := range mountsUnder(dir) {
		if mp == dir {
			return true
		}
	}
	return false
}

// fuseUnavailable says why FUSE mounts cannot work here, or "".
func fuseUnavailable() string {
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		return "cannot open /dev/fuse: " + err.Error()
	}
	f.Close()
	if os.Geteuid() != 0 {
		if _, err := exec.LookPath("fusermount3"); err != nil {
			return "not root and no fusermount3 in PATH"
		}
	}
	for _, tool := range []string{"bash", "cat", "socat", "setsid", "dd", "head", "ls", "stat"} {
		if _, err := exec.LookPath(tool); err != nil {
			return tool + " is not installed"
		}
	}
	if _, err := os.Stat(python); err != nil {
		return python + " is not installed"
	}
	return ""
}

// needFUSE skips (or, with WIREFS_REQUIRE_PRIV=1, fails) a test that needs
// a FUSE mount when one cannot be made.
func needFUSE(t *testing.T) {
	t.Helper()
	if why := fuseUnavailable(); why != "" {
		testsrv.Unavailable(t, "FUSE unavailable: "+why)
	}
}

// Mount is a running wirefs mount.
type Mount struct {
	Dir string
	Log string
	pid int
	dev string // its device, "0:N" as mountinfo shows it: its FUSE connection is N
}

// started notes what the checks at unmount need of a new mount: its
// daemon's pid and its device.
func (m *Mount) started(t *testing.T) {
	t.Helper()
	m.pid = m.Stats(t)["pid"]
	var st syscall.Stat_t
	if err := syscall.Stat(m.Dir, &st); err != nil {
		t.Fatal(err)
	}
	m.dev = fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
}

// P returns the path of name below the mount point.
func (m *Mount) P(name string) string { return filepath.Join(m.Dir, name) }

// mount mounts wirefs on a fresh directory and unmounts it when the test
// ends. It checks that a successful mount prints nothing.
func mount(t *testing.T, extra ...string) *Mount {
	t.Helper()
	return mountEnv(t, nil, extra...)
}

// mountEnv is mount with extra environment variables for the daemon
// (HOME, for the remote-file tests).
func mountEnv(t *testing.T, env []string, extra ...string) *Mount {
	t.Helper()
	needFUSE(t)
	dir, err := os.MkdirTemp(baseDir, "mnt-")
	if err != nil {
		t.Fatal(err)
	}
	m := &Mount{Dir: dir, Log: dir + ".log"}
	args := append([]string{"mount", "--log", m.Log}, extra...)
	args = append(args, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, wirefsBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	if err != nil {
		os.Remove(dir)
		t.Fatalf("wirefs mount: %v\n%s\nlog:\n%s", err, out.Bytes(), readFile(m.Log))
	}
	t.Cleanup(func() { m.unmount(t) })
	if out.Len() != 0 {
		t.Errorf("wirefs mount printed %q on success, want nothing", out.String())
	}
	if !isMounted(dir) {
		t.Fatalf("wirefs mount succeeded but %s is not in /proc/self/mounts", dir)
	}
	m.started(t)
	return m
}

// unmount unmounts m, waits for its daemon to exit, and removes the
// mount point. A busy mount is detached so that nothing is left behind,
// but that counts as a failure.
func (m *Mount) unmount(t *testing.T) {
	t.Helper()
	if t.Failed() {
		t.Logf("daemon log %s:\n%s", m.Log, tail(readFile(m.Log), 4000))
	}
	var lastOut []byte
	var lastErr error
	deadline := time.Now().Add(5 * time.Second)
	for isMounted(m.Dir) && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		lastOut, lastErr = exec.CommandContext(ctx, wirefsBin, "umount", m.Dir).CombinedOutput()
		cancel()
		if lastErr == nil {
			break
		}
		time.Sleep(100 * time.Millisecond) // still busy: releases are asynchronous
	}
	if isMounted(m.Dir) {
		t.Errorf("wirefs umount %s: %v: %s; detaching it", m.Dir, lastErr, lastOut)
		syscall.Unmount(m.Dir, syscall.MNT_DETACH)
	}
	if m.pid > 0 && !m.daemonExits(t) {
		// SIGQUIT: Go writes every goroutine's stack to stderr, which
		// is the daemon's log, and exits: what it waited for.
		syscall.Kill(m.pid, syscall.SIGQUIT)
		waitFor(2*time.Second, func() bool { return !alive(m.pid) })
		t.Errorf("daemon pid %d still running 5s after unmount; its log, with its goroutines at the SIGQUIT:\n%s", m.pid, tail(readFile(m.Log), 30000))
		syscall.Kill(m.pid, syscall.SIGKILL)
	}
	os.Remove(m.Dir)
}

// daemonExits waits up to 5 s for m's daemon to exit after the unmount.
//
// A mount namespace made while m was mounted (unshare --mount: a
// parallel test's private namespace, a benchmark's on this shared
// machine; ip netns exec) holds a copy of m, and the FUSE connection
// ends only with the last copy: the daemon goes on serving the others,
// as any FUSE daemon does, for as long as that namespace lives. Such a
// connection is ended (fusectl's abort: the copies answer ENOTCONN) and
// the daemon must then exit all the same. Nothing else is done for it: a
// daemon that does not exit once its connection has ended is a failure.
func (m *Mount) daemonExits(t *testing.T) bool {
	t.Helper()
	if holders := mountedElsewhere(m); len(holders) > 0 {
		t.Logf("%s lives on in other mount namespaces, which keep its daemon serving; ending its FUSE connection. Processes there: %s",
			m.Dir, strings.Join(holders, "; "))
		conn := strings.TrimPrefix(m.dev, "0:")
		if err := os.WriteFile("/sys/fs/fuse/connections/"+conn+"/abort", []byte("1"), 0); err != nil {
			t.Errorf("ending the FUSE connection %s of %s: %v", conn, m.Dir, err)
		}
	}
	return waitFor(5*time.Second, func() bool { return !alive(m.pid) })
}

// mountedElsewhere names a process of each mount namespace where m is
// still mounted: a mount of its device at its path (a copy keeps both). The
// path tells m's copies from a later file system that was given the
// device number m's had.
func mountedElsewhere(m *Mount) []string {
	dev := m.dev
	if dev == "" {
		return nil
	}
	if _, err := os.Stat("/sys/fs/fuse/connections/" + strings.TrimPrefix(dev, "0:")); err != nil {
		return nil // the connection has ended: no mount of it is left
	}
	seen := map[string]bool{}
	var out []string
	infos, _ := filepath.Glob("/proc/[0-9]*/mountinfo")
	for _, info := range infos {
		dir := filepath.Dir(info)
		ns, err := os.Readlink(dir + "/ns/mnt")
		if err != nil || seen[ns] {
			continue
		}
		b, err := os.ReadFile(info)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			// ID PARENT MAJOR:MINOR ROOT MOUNTPOINT ...
			if f := strings.Fields(line); len(f) > 4 && f[2] == dev && f[4] == m.Dir {
				seen[ns] = true
				cmd, _ := os.ReadFile(dir + "/cmdline")
				out = append(out, fmt.Sprintf("%s pid %s (%s)", ns, filepath.Base(dir),
					strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))))
				break
			}
		}
	}
	return out
}

func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && len(b) > i+2 && b[i+2] != 'Z'
}

// Stats reads .wirefs/stats.
func (m *Mount) Stats(t *testing.T) map[string]int {
	t.Helper()
	b, err := os.ReadFile(m.P(".wirefs/stats"))
	if err != nil {
		t.Fatalf("reading stats: %v", err)
	}
	out := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, ok := strings.Cut(line, " ")
		n, err := strconv.Atoi(v)
		if !ok || err != nil {
			t.Fatalf("stats line %q is not \"key N\"", line)
		}
		out[k] = n
	}
	for _, k := range []string{"pid", "goroutines", "fds", "live"} {
		if _, ok := out[k]; !ok {
			t.Fatalf("stats has no %q line: %q", k, b)
		}
	}
	return out
}

// waitLive waits until the daemon has no open endpoints.
func (m *Mount) waitLive(t *testing.T, want int) {
	t.Helper()
	var got int
	if !waitFor(5*time.Second, func() bool { got = m.Stats(t)["live"]; return got == want }) {
		t.Errorf("live endpoints = %d, want %d", got, want)
	}
}

func readFile(name string) string {
	b, _ := os.ReadFile(name)
	return string(b)
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// waitFor polls cond every 20 ms until it holds or d has passed.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ---- processes ----

// Result is what a finished command did.
type Result struct {
	Stdout, Stderr string
	Code           int // exit status; -1 if killed by a signal or timed out
	Err            error
}

func (r Result) String() string {
	return fmt.Sprintf("exit %d (%v)\nstdout: %q\nstderr: %q", r.Code, r.Err, r.Stdout, r.Stderr)
}

// command prepares name args in its own process group, killed as a whole
// when ctx ends.
func command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

// run runs a command to completion, bounded by timeout, with stdin as input.
func run(t *testing.T, timeout time.Duration, stdin string, name string, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := command(ctx, name, args...)
	var so, se bytes.Buffer
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	r := Result{Stdout: so.String(), Stderr: se.String(), Err: err}
	if ctx.Err() != nil {
		r.Code = -1
		r.Err = fmt.Errorf("timed out after %v (%v)", timeout, err)
	} else if cmd.ProcessState != nil {
		r.Code = cmd.ProcessState.ExitCode()
	} else {
		r.Code = -1
	}
	return r
}

// bash runs a bash script; $M is the mount point, $1... are args.
func bash(t *testing.T, m *Mount, timeout time.Duration, script string, args ...string) Result {
	t.Helper()
	dir := ""
	if m != nil {
		dir = m.Dir
	}
	return run(t, timeout, "", "bash", append([]string{"-c", "M=" + shellQuote(dir) + "\n" + script, "bash"}, args...)...)
}

// py runs a python script with sys.argv[1] = mount point, then args.
func py(t *testing.T, m *Mount, timeout time.Duration, script string, args ...string) Result {
	t.Helper()
	return run(t, timeout, "", python, append([]string{"-c", script, m.Dir}, args...)...)
}

// mustOK fails the test unless r exited 0.
func mustOK(t *testing.T, what string, r Result) Result {
	t.Helper()
	if r.Code != 0 {
		t.Fatalf("%s: %s", what, r)
	}
	return r
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Proc is a background process (in its own process group).
type Proc struct {
	cmd    *exec.Cmd
	cancel context.CancelFunc
	stdin  io.WriteCloser
	out    *syncBuffer
	errb   *syncBuffer
	done   chan struct{}
	err    error
}

// syncBuffer is a bytes.Buffer safe for a writer goroutine and readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start starts a background command, killed (with its process group) when
// the test ends or after limit.
func start(t *testing.T, limit time.Duration, dir string, env []string, name string, args ...string) *Proc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	p := &Proc{cancel: cancel, out: &syncBuffer{}, errb: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = command(ctx, name, args...)
	p.cmd.Dir = dir
	if env != nil {
		p.cmd.Env = append(os.Environ(), env...)
	}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.errb
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		cancel()
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(p.kill)
	return p
}

// startBash starts a bash script in the background; $M is the mount point.
func startBash(t *testing.T, m *Mount, script string, args ...string) *Proc {
	t.Helper()
	return start(t, 60*time.Second, "", nil, "bash", append([]string{"-c", "M=" + shellQuote(m.Dir) + "\n" + script, "bash"}, args...)...)
}

// startPy starts a python script in the background; sys.argv[1] is the
// mount point.
func startPy(t *testing.T, m *Mount, script string, args ...string) *Proc {
	t.Helper()
	return start(t, 60*time.Second, "", nil, python, append([]string{"-c", script, m.Dir}, args...)...)
}

// kill kills the process group and waits for the process.
// terminate asks p's process group to end (SIGTERM), so that a wirefs
// run supervisor among them unmounts its private door, and kills it when
// it does not end within 5 s.
func (p *Proc) terminate() {
	if p.cmd.Process != nil {
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	}
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
	}
	p.kill()
}

func (p *Proc) kill() {
	if p.cmd.Process != nil {
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
	}
	p.cancel()
}

// wait waits up to d for the process to exit and returns its result.
func (p *Proc) wait(t *testing.T, d time.Duration) Result {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		p.kill()
		return Result{Stdout: p.out.String(), Stderr: p.errb.String(), Code: -1, Err: fmt.Errorf("still running after %v", d)}
	}
	return Result{Stdout: p.out.String(), Stderr: p.errb.String(), Code: p.cmd.ProcessState.ExitCode(), Err: p.err}
}

func (p *Proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitOutput waits until the process's stdout contains s.
func (p *Proc) waitOutput(t *testing.T, d time.Duration, s string) {
	t.Helper()
	if !waitFor(d, func() bool { return strings.Contains(p.out.String(), s) }) {
		t.Fatalf("no %q in output after %v; stdout %q, stderr %q", s, d, p.out.String(), p.errb.String())
	}
}

// ---- peers on the far side of the mount ----

// Peer is a testdata/netpeer.py process: a plain-socket server or UDP peer.
type Peer struct {
	*Proc
	Port   int
	events chan map[string]any
}

// Event is one line of netpeer output.
type Event = map[string]any

func startPeer(t *testing.T, args ...string) *Peer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	p := &Peer{Proc: &Proc{cancel: cancel, errb: &syncBuffer{}, out: &syncBuffer{}, done: make(chan struct{})}, events: make(chan Event, 1024)}
	p.cmd = command(ctx, python, append([]string{filepath.Join(testdata, "netpeer.py")}, args...)...)
	p.cmd.Stderr = p.errb
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			p.out.Write(append(sc.Bytes(), '\n'))
			var e Event
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				p.events <- e
			}
		}
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(p.kill)
	e := p.next(t, 10*time.Second)
	if e["event"] != "ready" {
		t.Fatalf("netpeer %v: first event %v, want ready", args, e)
	}
	if port, ok := e["port"].(float64); ok {
		p.Port = int(port)
	}
	return p
}

// tcpServer starts a TCP server on host:port (mode greet, sink or echo).
func tcpServer(t *testing.T, host string, port int, mode string) *Peer {
	t.Helper()
	p := startPeer(t, "tcp-serve", host, strconv.Itoa(port), mode)
	p.Port = port
	return p
}

// udpPeer starts a UDP peer on host:port (0: any port); echo answers
// every datagram with "echo:" + data.
func udpPeer(t *testing.T, host string, port int, echo bool) *Peer {
	t.Helper()
	args := []string{"udp-peer", host, strconv.Itoa(port)}
	if echo {
		args = append(args, "echo")
	}
	return startPeer(t, args...)
}

// next returns the next event, failing the test after d.
func (p *Peer) next(t *testing.T, d time.Duration) Event {
	t.Helper()
	select {
	case e := <-p.events:
		return e
	case <-time.After(d):
		t.Fatalf("netpeer: no event within %v; stderr %q", d, p.errb.String())
		return nil
	}
}

// none checks that no event arrives within d.
func (p *Peer) none(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case e := <-p.events:
		t.Errorf("netpeer: unexpected event %v", e)
	case <-time.After(d):
	}
}

// send sends one datagram from a UDP peer.
func (p *Peer) send(t *testing.T, host string, port int, text string) {
	t.Helper()
	fmt.Fprintf(p.stdin, "send %s %d %s\n", host, port, strings.ReplaceAll(text, "\n", `\n`))
	if e := p.next(t, 5*time.Second); e["event"] != "sent" {
		t.Fatalf("netpeer send: got %v", e)
	}
}

// peerOf returns an event's peer as host, port.
func peerOf(e Event) (string, int) {
	p, _ := e["peer"].([]any)
	if len(p) != 2 {
		return "", 0
	}
	h, _ := p[0].(string)
	port, _ := p[1].(float64)
	return h, int(port)
}

// ---- ports ----

// freePort returns a port that TCP and UDP could bind on every address a
// moment ago, outside the kernel's ephemeral range (no test's outgoing
// connection takes it meanwhile), and that no other test of this run was
// given.
func freePort(t *testing.T) int { return testsrv.FreePort(t) }

// listening reports whether some socket of proto ("tcp" or "udp") is
// bound to port (TCP: in LISTEN state), on any address.
func listening(proto string, port int) bool {
	hexPort := fmt.Sprintf(":%04X", port)
	for _, f := range []string{"/proc/net/" + proto, "/proc/net/" + proto + "6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fs := strings.Fields(line)
			if len(fs) < 4 || !strings.HasSuffix(fs[1], hexPort) {
				continue
			}
			if proto == "udp" || fs[3] == "0A" {
				return true
			}
		}
	}
	return false
}

// boundAddrs returns the local addresses (as /proc/net spells them, hex)
// that listen on port.
func boundAddrs(proto string, port int) []string {
	hexPort := fmt.Sprintf(":%04X", port)
	var out []string
	for _, f := range []string{"/proc/net/" + proto, "/proc/net/" + proto + "6"} {
		b, _ := os.ReadFile(f)
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fs := strings.Fields(line)
			if len(fs) >= 4 && strings.HasSuffix(fs[1], hexPort) && (proto == "udp" || fs[3] == "0A") {
				out = append(out, strings.TrimSuffix(fs[1], hexPort))
			}
		}
	}
	return out
}

func waitListening(t *testing.T, proto string, port int, p *Proc) {
	t.Helper()
	if !waitFor(10*time.Second, func() bool { return listening(proto, port) || (p != nil && p.exited()) }) || !listening(proto, port) {
		msg := ""
		if p != nil {
			msg = fmt.Sprintf("; process: stdout %q stderr %q", p.out.String(), p.errb.String())
		}
		t.Fatalf("nothing listens on %s port %d%s", proto, port, msg)
	}
}

func waitNotListening(t *testing.T, proto string, port int) {
	t.Helper()
	if !waitFor(5*time.Second, func() bool { return !listening(proto, port) }) {
		t.Fatalf("%s port %d is still bound 5s after its server closed", proto, port)
	}
}

// bindable reports whether TCP port can be bound on every address.
func bindable(port int) bool {
	l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// ---- misc ----

func contains(t *testing.T, what, got, want string) {
	t.Helper()
	if !strings.Contains(got, want) {
		t.Errorf("%s: %q does not contain %q", what, got, want)
	}
}

func equal[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %#v, want %#v", what, got, want)
	}
}
