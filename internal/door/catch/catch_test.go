package catch_test

// End-to-end tests of the catcher door: real programs (cat, bash, ls,
// python3, socat, a static C binary) under a real supervisor, as the
// current user and, when that is root, as nobody too.
//
// The supervisor is this test binary started again with superEnv set: it
// builds the same namespace as `wirefs mount` and calls catch.Run, exactly
// as `wirefs run` does (cmd/wirefs/run.go). TestWirefsBinary runs the real
// binary as well.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
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

	"wirefs/internal/door/catch"
	"wirefs/internal/ns"
	"wirefs/internal/provider/ctl"
	"wirefs/internal/provider/dns"
	"wirefs/internal/provider/netstream"
	"wirefs/internal/resolve"
	"wirefs/internal/testsrv"
)

const (
	superEnv  = "WIREFS_CATCH_TEST_SUPERVISOR"
	rtEnv     = "WIREFS_CATCH_TEST_RUNTIME_DIR"
	statusNA  = 3 // the supervisor's status when seccomp user notification is unavailable
	python    = "/usr/bin/python3"
	opTimeout = 20 * time.Second
)

func TestMain(m *testing.M) {
	if os.Getenv(superEnv) == "1" {
		os.Exit(supervise(os.Args[1:]))
	}
	code := m.Run()
	if copyDir != "" {
		os.RemoveAll(copyDir)
	}
	os.Exit(code)
}

// supervise is `wirefs run -- args…` with the namespace of cmd/wirefs
// ("-timing" first: Options.Timing on standard error; "-nofast": without
// the fast path; "-timeout DURATION": the connect timeout, 10s if not
// given), or, with "-pace BYTES/S" first, wirefs nice's per-socket
// pacing.
func supervise(args []string) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	if len(args) > 2 && args[0] == "-pace" {
		rate, _ := strconv.ParseUint(args[1], 10, 64)
		status, err := catch.Run(nil, catch.Options{Args: args[2:], Log: log, Pace: rate})
		if err != nil {
			fmt.Fprintln(os.Stderr, "wirefs nice:", err)
			return 1
		}
		return status
	}
	o := catch.Options{Log: log, RuntimeDir: os.Getenv(rtEnv)}
	timeout := 10 * time.Second
	for len(args) > 1 {
		switch args[0] {
		case "-timing":
			o.Timing = os.Stderr
		case "-nofast":
			o.NoFastPath = true
		case "-timeout":
			timeout, _ = time.ParseDuration(args[1])
			args = args[1:]
		default:
			goto run
		}
		args = args[1:]
	}
run:
	o.Args = args
	res := resolve.New(time.Minute)
	streams := netstream.New(res, timeout, log)
	n := ns.New()
	n.Mount("tcp", streams.TCP())
	n.Mount("udp", streams.UDP())
	n.Mount("dns", dns.Dir(res))
	n.Mount(".wirefs", ctl.Dir(streams.Live, nil, nil))
	status, err := catch.Run(n, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "wirefs run:", err)
		if errors.Is(err, catch.ErrUnavailable) {
			return statusNA
		}
		return 1
	}
	return status
}

// identity is who runs the supervisor.
type identity struct {
	name string
	cred *syscall.Credential // nil: the test's own
}

func identities() []identity {
	ids := []identity{{name: "self"}}
	if os.Getuid() == 0 {
		ids = append(ids, identity{name: "nobody", cred: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}})
	}
	return ids
}

// forEachIdentity runs f as a subtest per identity.
func forEachIdentity(t *testing.T, f func(t *testing.T, e *env)) {
	for _, id := range identities() {
		t.Run(id.name, func(t *testing.T) { f(t, newEnv(t, id)) })
	}
}

// env is a supervisor binary and directories usable by one identity.
type env struct {
	t   *testing.T
	id  identity
	bin string // supervisor binary
	dir string // work directory, world-readable
	rt  string // runtime directory of the private door
}

var (
	copyOnce sync.Once
	copyDir  string
	copyErr  error
)

// sharedDir holds a world-readable copy of the test binary (go test's
// build directory is private to root) and the static test program.
func sharedDir(t *testing.T) string {
	copyOnce.Do(func() {
		copyDir, copyErr = os.MkdirTemp("", "wirefs-catchtest-")
		if copyErr != nil {
			return
		}
		os.Chmod(copyDir, 0o755)
		self, err := os.Executable()
		if err != nil {
			copyErr = err
			return
		}
		copyErr = copyFile(self, filepath.Join(copyDir, "supervisor"), 0o755)
	})
	if copyErr != nil {
		t.Fatal(copyErr)
	}
	return copyDir
}

func copyFile(from, to string, mode os.FileMode) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, mode)
}

func newEnv(t *testing.T, id identity) *env {
	shared := sharedDir(t)
	e := &env{t: t, id: id, bin: filepath.Join(shared, "supervisor")}
	var err error
	if e.dir, err = os.MkdirTemp(shared, "work-"); err != nil {
		t.Fatal(err)
	}
	e.rt = filepath.Join(e.dir, "rt")
	if err := os.Mkdir(e.rt, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(e.dir, 0o777)
	if id.cred != nil {
		os.Chown(e.rt, int(id.cred.Uid), int(id.cred.Gid))
	}
	t.Cleanup(func() {
		e.checkNoLeaks()
		os.RemoveAll(e.dir)
	})
	e.probe()
	return e
}

// result is how a supervised command ended.
type result struct {
	stdout, stderr string
	status         int
}

// start starts the supervisor running args in a process group of its own.
func (e *env) command(ctx context.Context, stdin string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	cmd := exec.CommandContext(ctx, e.bin, args...)
	cmd.Dir = e.dir
	cmd.Env = []string{
		superEnv + "=1", rtEnv + "=" + e.rt,
		"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME=" + e.dir, "LANG=C",
	}
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: e.id.cred}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	return cmd, &out, &errb
}

// run runs args under the supervisor and waits, bounded by opTimeout.
func (e *env) run(stdin string, args ...string) result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	cmd, out, errb := e.command(ctx, stdin, args...)
	err := cmd.Run()
	if ctx.Err() != nil {
		e.t.Fatalf("%q timed out; stdout %q stderr %q", args, out, errb)
	}
	// Nothing the command started outlives it here.
	pgid := cmd.Process.Pid
	for i := 0; syscall.Kill(-pgid, 0) == nil; i++ {
		if i == 100 {
			syscall.Kill(-pgid, syscall.SIGKILL)
			e.t.Errorf("%q left processes behind", args)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	status := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		status = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("%q: %v", args, err)
	}
	return result{out.String(), errb.String(), status}
}

// probe skips the test when the kernel or the system cannot run the
// catcher, unless WIREFS_REQUIRE_PRIV=1.
func (e *env) probe() {
	r := e.run("", "true")
	why := ""
	switch {
	case r.status == 0 && strings.Contains(r.stderr, "no private FUSE door"):
		why = "FUSE is unavailable to " + e.id.name
	case r.status == 0:
		return
	case r.status == statusNA:
		why = "seccomp user notification is unavailable"
	default:
		e.t.Fatalf("supervisor failed: status %d, stderr %q", r.status, r.stderr)
	}
	testsrv.Unavailable(e.t, why+": "+strings.TrimSpace(r.stderr))
}

// checkNoLeaks: the private door is unmounted and its directory gone.
func (e *env) checkNoLeaks() {
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if bytes.Contains(mounts, []byte(e.rt+"/")) {
		e.t.Errorf("private door still mounted under %s", e.rt)
	}
	ents, _ := os.ReadDir(e.rt)
	for _, ent := range ents {
		e.t.Errorf("left in the runtime directory: %s", ent.Name())
	}
}

func (e *env) want(r result, status int, contains ...string) {
	e.t.Helper()
	if r.status != status {
		e.t.Errorf("status %d, want %d; stdout %q stderr %q", r.status, status, r.stdout, r.stderr)
	}
	for _, c := range contains {
		if !strings.Contains(r.stdout, c) {
			e.t.Errorf("stdout %q does not contain %q (stderr %q)", r.stdout, c, r.stderr)
		}
	}
}

// Servers on loopback.

func listen(t *testing.T) net.Listener {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// echoServer echoes every connection; it returns "127.0.0.1:PORT".
func echoServer(t *testing.T) string {
	ln := listen(t)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(opTimeout))
				io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// helloServer writes msg to every client and closes.
func helloServer(t *testing.T, msg string) string {
	ln := listen(t)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte(msg))
			c.Close()
		}
	}()
	return ln.Addr().String()
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// listening reports whether something listens on TCP port (any address),
// from /proc/net/tcp{,6}: a probe connection would be taken for the client.
func listening(port int) bool {
	want := fmt.Sprintf(":%04X ", port)
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, _ := os.ReadFile(f)
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) > 3 && fields[3] == "0A" && strings.HasSuffix(fields[1]+" ", want) {
				return true
			}
		}
	}
	return false
}

func waitListening(t *testing.T, port int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !listening(port) {
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on port %d", port)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func need(t *testing.T, progs ...string) {
	for _, p := range progs {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed (scripts/setup.sh installs it)", p)
		}
	}
}

// The tests.

func TestLocalFiles(t *testing.T) {
	host, err := os.ReadFile("/etc/hostname")
	if err != nil {
		t.Skip(err)
	}
	forEachIdentity(t, func(t *testing.T, e *env) {
		e.want(e.run("", "cat", "/etc/hostname"), 0, string(host))
		e.want(e.run("", "ls", "/usr"), 0, "bin\n", "lib\n")
		// Relative names, .. and a directory named like the prefix.
		e.want(e.run("", "sh", "-c", `cd /usr && ls ../etc/hostname && cd / && ls -d usr/bin && cd "$HOME" && mkdir net && ls -d net && rmdir net && echo made`), 0, "../etc/hostname", "usr/bin", "made")
	})
}

func TestExitStatus(t *testing.T) {
	host, err := os.ReadFile("/etc/hostname")
	if err != nil {
		t.Skip(err)
	}
	forEachIdentity(t, func(t *testing.T, e *env) {
		e.want(e.run("", "sh", "-c", "exit 7"), 7)
		e.want(e.run("", "sh", "-c", "kill -KILL $$"), 128+9)
		r := e.run("", "no-such-command-wirefs")
		if r.status != 127 || !strings.Contains(r.stderr, "not found") {
			t.Errorf("missing command: status %d, stderr %q", r.status, r.stderr)
		}
		// stdin passes through untouched, and so do other inherited
		// descriptors (`wirefs run -- cmd 3<file`).
		e.want(e.run("piped input\n", "cat"), 0, "piped input\n")
		f, err := os.Open("/etc/hostname")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		cmd, out, errb := e.command(ctx, "", "sh", "-c", "cat <&3")
		cmd.ExtraFiles = []*os.File{f}
		if err := cmd.Run(); err != nil || out.String() != string(host) {
			t.Errorf("inherited fd 3: %v, stdout %q, stderr %q", err, out, errb)
		}
	})
}

func TestSignalsForwarded(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, e *env) {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
			ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
			cmd, _, errb := e.command(ctx, "", "sleep", "30")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitForExec(t, cmd.Process.Pid, "sleep")
			start := time.Now()
			syscall.Kill(cmd.Process.Pid, sig)
			err := cmd.Wait()
			cancel()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 128+int(sig) {
				t.Errorf("%v: %v, want status %d (stderr %q)", sig, err, 128+int(sig), errb)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("%v: took %v", sig, d)
			}
		}
	})
}

func TestCatClient(t *testing.T) {
	need(t, "socat")
	forEachIdentity(t, func(t *testing.T, e *env) {
		// A socat server, as in the manual.
		port := freePort(t)
		srv := exec.Command("socat", "-T10", "-u", "SYSTEM:echo hello from socat", fmt.Sprintf("TCP-LISTEN:%d,bind=127.0.0.1,reuseaddr", port))
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
		waitListening(t, port)
		e.want(e.run("", "cat", fmt.Sprintf("/net/tcp/127.0.0.1:%d", port)), 0, "hello from socat\n")
		// And a Go server, from a name that resolves.
		addr := helloServer(t, "hello\n")
		_, p, _ := net.SplitHostPort(addr)
		e.want(e.run("", "cat", "/net/tcp/localhost:"+p), 0, "hello\n")
		// Refused connections report the errno.
		r := e.run("", "cat", fmt.Sprintf("/net/tcp/127.0.0.1:%d", freePort(t)))
		if r.status == 0 || !strings.Contains(r.stderr, "Connection refused") {
			t.Errorf("refused: status %d stderr %q", r.status, r.stderr)
		}
	})
}

func TestBashRedirection(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, e *env) {
		addr := echoServer(t)
		script := `set -e
exec 3<>/net/tcp/` + addr + `
echo ping >&3
head -1 <&3
[ -S /proc/self/fd/3 ] && echo "fd 3 is a socket"
# subshell and pipeline
(exec 4<>/net/tcp/` + addr + `; echo sub >&4; head -1 <&4) | tr a-z A-Z
# cloexec: an fd opened by exec N<> stays open across exec; python's open is O_CLOEXEC
` + python + ` -c 'import os; fd = os.open("/net/tcp/` + addr + `", os.O_RDWR | os.O_CLOEXEC); import fcntl; print("cloexec", bool(fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC))'
echo done`
		e.want(e.run("", "bash", "-c", script), 0, "ping\n", "fd 3 is a socket\n", "SUB\n", "cloexec True\n", "done\n")
	})
}

func TestCatServer(t *testing.T) {
	need(t, "socat")
	forEachIdentity(t, func(t *testing.T, e *env) {
		port := freePort(t)
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		cmd, out, errb := e.command(ctx, "", "cat", fmt.Sprintf("/net/tcp/%d", port))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitListening(t, port)
		client := exec.CommandContext(ctx, "socat", "-u", "-", fmt.Sprintf("TCP:127.0.0.1:%d", port))
		client.Stdin = strings.NewReader("client data\n")
		if b, err := client.CombinedOutput(); err != nil {
			t.Fatalf("socat: %v %s", err, b)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("server: %v, stderr %q", err, errb)
		}
		if out.String() != "client data\n" {
			t.Errorf("server read %q", out)
		}
	})
}

// TestConcurrentServer: the holder of the server file opens the name again
// to accept the next client (seed 000); an open blocked on it is
// interrupted by a signal and loses no client.
func TestConcurrentServer(t *testing.T) {
	need(t, "socat", "timeout")
	forEachIdentity(t, func(t *testing.T, e *env) {
		port := freePort(t)
		script := fmt.Sprintf(`exec 3</net/tcp/%[1]d
timeout -s INT 1 cat /net/tcp/%[1]d
echo "interrupted $?"
timeout -s KILL 1 cat /net/tcp/%[1]d
echo "killed $?"
cat /net/tcp/%[1]d &
sleep 0.3
echo "client one" | socat -u - TCP:127.0.0.1:%[1]d
wait
cat /net/tcp/%[1]d &
sleep 0.3
echo "client two" | socat -u - TCP:127.0.0.1:%[1]d
wait
echo done`, port)
		e.want(e.run("", "bash", "-c", script), 0, "interrupted 124\n", "killed 137\n", "client one\n", "client two\n", "done\n")
	})
}

func TestPythonDNS(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, e *env) {
		r := e.run("", python, "-c", `print(open("/net/dns/localhost").read())`)
		e.want(r, 0)
		if !strings.Contains(r.stdout, "127.0.0.1") && !strings.Contains(r.stdout, "::1") {
			t.Errorf("dns/localhost: %q", r.stdout)
		}
		// posix_spawn / vfork children are caught too.
		r = e.run("", python, "-c", `import subprocess; print(subprocess.run(["cat", "/net/dns/localhost"], capture_output=True).stdout.decode())`)
		if !strings.Contains(r.stdout, "127.0.0.1") && !strings.Contains(r.stdout, "::1") {
			t.Errorf("subprocess dns/localhost: %q %q", r.stdout, r.stderr)
		}
	})
}

func TestEpollOnInjectedSocket(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, e *env) {
		addr := echoServer(t)
		script, _ := filepath.Abs("testdata/epoll.py")
		b, err := os.ReadFile(script)
		if err != nil {
			t.Fatal(err)
		}
		e.want(e.run("", python, "-c", string(b), "/net/tcp/"+addr), 0,
			"socket\n", "epoll ping\n", "select ping\n", "poll ping\n", "peer 127.0.0.1\n")
	})
}

func TestThreads(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, e *env) {
		addr := echoServer(t)
		b, err := os.ReadFile("testdata/threads.py")
		if err != nil {
			t.Fatal(err)
		}
		e.want(e.run("", python, "-c", string(b), addr), 0, "16 ok []\n")
	})
}

var (
	staticOnce sync.Once
	staticBin  string
	staticErr  string
)

func TestStaticBinary(t *testing.T) {
	need(t, "gcc")
	staticOnce.Do(func() {
		src, _ := filepath.Abs("testdata/static.c")
		staticBin = filepath.Join(sharedDir(t), "static")
		if out, err := exec.Command("gcc", "-static", "-O2", "-o", staticBin, src).CombinedOutput(); err != nil {
			staticErr = fmt.Sprintf("gcc -static failed (apt-get install libc6-dev): %v %s", err, out)
		}
	})
	if staticErr != "" {
		t.Skip(staticErr)
	}
	forEachIdentity(t, func(t *testing.T, e *env) {
		addr := echoServer(t)
		e.want(e.run("", staticBin, "/net/tcp/"+addr), 0, "socket\n", "static ping\n")
	})
}

// TestPaceSockets: wirefs nice's fallback paces every TCP socket a
// program connects or listens with, a static binary's too, and leaves UDP
// alone; with no namespace, nothing else is trapped (/net is not there).
func TestPaceSockets(t *testing.T) {
	need(t, "gcc")
	bin := filepath.Join(sharedDir(t), "paced")
	src, _ := filepath.Abs("testdata/paced.c")
	if out, err := exec.Command("gcc", "-static", "-O2", "-o", bin, src).CombinedOutput(); err != nil {
		t.Skipf("gcc -static failed (apt-get install libc6-dev): %v %s", err, out)
	}
	forEachIdentity(t, func(t *testing.T, e *env) {
		host, port, _ := strings.Cut(echoServer(t), ":")
		e.want(e.run("", "-pace", "125000", bin, host, port), 0, "tcp 125000 udp -1 listen 125000\n", "")
		e.want(e.run("", "-pace", "125000", "sh", "-c", "test -e /net/tcp || echo no namespace"), 0, "no namespace\n", "")
	})
}

// TestStatFamily: stat-like calls are answered from the private door, the
// calls that would change the namespace get clear errnos.
func TestStatFamily(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, e *env) {
		script := `import errno, os, stat
def err(f, *a):
    try:
        f(*a)
        return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]
print("stat", stat.S_ISDIR(os.stat("/net/tcp").st_mode))
print("lstat", stat.S_ISDIR(os.lstat("/net/dns").st_mode))
print("file", stat.S_ISREG(os.stat("/net/dns/localhost").st_mode))
print("missing", err(os.stat, "/net/nope"))
print("access", os.access("/net/dns/localhost", os.R_OK))
print("listdir", sorted(os.listdir("/net")))
print("readlink", err(os.readlink, "/net/tcp"))
print("statvfs", err(os.statvfs, "/net"))
print("chdir", err(os.chdir, "/net/dns"))
print("getcwd", os.getcwd())
print("cwdstat", os.stat("localhost").st_size > 0, os.path.exists("../tcp"))
print("mkdir", err(os.mkdir, "/net/x"))
print("unlink", err(os.unlink, "/net/dns/localhost"))
print("rename", err(os.rename, "/net/dns/a", "/net/dns/b"))
print("xdev", err(os.rename, "/etc/nope", "/net/dns/b"))
print("exec", err(os.execv, "/net/dns/localhost", ["x"]))
print("create", err(open, "/net/newname", "w"))
os.chdir("/")
print("relative", stat.S_ISDIR(os.stat("net/tcp").st_mode))
os.chdir("/usr")
print("dotdot", stat.S_ISDIR(os.stat("../net/udp").st_mode))
fd = os.open("/net/tcp", os.O_RDONLY | os.O_DIRECTORY)
print("dirfd", stat.S_ISDIR(os.stat("..", dir_fd=fd).st_mode))
`
		e.want(e.run("", python, "-c", script), 0,
			"stat True\n", "lstat True\n", "file True\n", "missing ENOENT\n", "access True\n",
			"listdir ['.wirefs', 'dns', 'tcp', 'udp']\n", "readlink EINVAL\n", "statvfs ok\n",
			"chdir ok\n", "getcwd /net/dns\n", "cwdstat True True\n", "mkdir ENOTSUP\n", "unlink EROFS\n", "rename ENOENT\n", "xdev EXDEV\n",
			"exec EACCES\n", "create EROFS\n", "relative True\n", "dotdot True\n", "dirfd True\n")
		// coreutils use statx; ls -l also asks for xattrs.
		e.want(e.run("", "sh", "-c", "stat -c '%F' /net/tcp /net/dns/localhost; ls -l /net/dns/localhost >/dev/null && echo listed; test -d /net/udp && echo isdir; cd /net/tcp && /bin/pwd -P"), 0,
			"directory\n", "regular file\n", "listed\n", "isdir\n", "\n/net/tcp\n")
	})
}

// TestSupervisorDies: when the supervisor is killed, trapped calls of the
// command fail (ENOSYS) instead of hanging, and the next run removes the
// dead private door.
func TestSupervisorDies(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, e *env) {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		cmd, _, _ := e.command(ctx, "", "sh", "-c", `sleep 1; cat /etc/hostname 2>/dev/null; echo "after $?"`)
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout = pw
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pw.Close()
		waitForExec(t, cmd.Process.Pid, "sleep") // the command runs, caught
		syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		done := make(chan string)
		go func() { b, _ := io.ReadAll(pr); done <- string(b) }()
		select {
		case out := <-done:
			if strings.Contains(out, "after 0") {
				t.Errorf("cat ran without a supervisor: %q", out)
			}
		case <-time.After(10 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			t.Fatal("the command hung after its supervisor died")
		}
		pr.Close()
		// The killed supervisor left its door mounted; the next run
		// cleans it up (checkNoLeaks verifies).
		e.want(e.run("", "true"), 0)
	})
}

// TestNested: the kernel allows one listener per filter chain, so a
// wirefs run inside another fails with one clear sentence.
func TestNested(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, e *env) {
		r := e.run("", e.bin, "true")
		if r.status == 0 || !strings.Contains(r.stderr, "seccomp user notification is unavailable: this process already runs under a seccomp supervisor") {
			t.Errorf("nested: status %d, stderr %q", r.status, r.stderr)
		}
	})
}

// TestWirefsBinary runs the real binary, once main.go dispatches "run".
func TestWirefsBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "wirefs")
	build := exec.Command("go", "build", "-o", bin, "wirefs/cmd/wirefs")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, _ := exec.Command(bin, "run", "--help").CombinedOutput()
	if !strings.Contains(string(out), "Usage: wirefs run") {
		t.Skip(`cmd/wirefs/main.go does not dispatch "run" yet`)
	}
	addr := helloServer(t, "hello binary\n")
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	got, err := exec.CommandContext(ctx, bin, "run", "--", "sh", "-c", "cat /net/tcp/"+addr+"; cat /etc/hostname; exit 3").Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Errorf("status: %v", err)
	}
	if !strings.HasPrefix(string(got), "hello binary\n") {
		t.Errorf("output %q", got)
	}
	// --prefix
	got, _ = exec.CommandContext(ctx, bin, "run", "--prefix", "/wire/fs", "--", "cat", "/wire/fs/tcp/"+addr).Output()
	if string(got) != "hello binary\n" {
		t.Errorf("--prefix: %q", got)
	}
	// --timing: where the trapped calls went, phase by phase, on stderr.
	var stderr bytes.Buffer
	timed := exec.CommandContext(ctx, bin, "run", "--timing", "--", "cat", "/etc/hostname", "/net/tcp/"+addr)
	timed.Stderr = &stderr
	if got, err := timed.Output(); err != nil || !strings.HasSuffix(string(got), "hello binary\n") {
		t.Errorf("--timing: %v, stdout %q, stderr %q", err, got, stderr.String())
	}
	for _, phase := range []string{"supervisor time per phase", "read path", "reply (CONTINUE)", "resolve", "provider open", "inject fd"} {
		if !strings.Contains(stderr.String(), phase) {
			t.Errorf("--timing: no %q in %q", phase, stderr.String())
		}
	}
}

// waitForExec waits until a descendant of pid runs name (its exec done):
// the supervisor and its filter are in place then. The kernel reports no
// such event, so this looks at /proc.
func waitForExec(t *testing.T, pid int, name string) {
	t.Helper()
	for deadline := time.Now().Add(opTimeout); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if runsBelow(pid, name) {
			return
		}
	}
	t.Fatalf("no descendant of %d ran %s", pid, name)
}

func runsBelow(pid int, name string) bool {
	// Each thread lists the children it forked.
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var kids []string
	for _, file := range files {
		b, _ := os.ReadFile(file)
		kids = append(kids, strings.Fields(string(b))...)
	}
	for _, f := range kids {
		child, _ := strconv.Atoi(f)
		if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", child)); strings.TrimSpace(string(comm)) == name {
			return true
		}
		if runsBelow(child, name) {
			return true
		}
	}
	return false
}
