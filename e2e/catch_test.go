package e2e

// The catcher door with remote files, against real servers on loopback:
// `wirefs run` shows the remote roots at the top level (/http/..., /9p/...)
// and takes URL names (http://..., sftp://...); cached files are handed
// over as the cache's own file; names are created, renamed and removed
// through the private door; make builds a C project living on a 9P
// server; `wirefs attach` takes over a running loop.

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"wirefs/internal/testsrv"
)

// needCatch skips (or fails, with WIREFS_REQUIRE_PRIV=1) when wirefs run
// cannot work here: it needs seccomp user notification and, for
// everything but sockets, FUSE.
func needCatch(t *testing.T) {
	t.Helper()
	needFUSE(t)
	r := run(t, 20*time.Second, "", wirefsBin, "run", "--cache-dir", t.TempDir(), "--", "true")
	if r.Code != 0 {
		testsrv.Unavailable(t, "wirefs run unavailable here: "+r.String())
	}
}

// catchRun runs a bash script under `wirefs run` with home as $HOME and
// a private cache; $1... are args. wirefs runs with umask 022, so that a
// script's own umask can be told from the supervisor's.
func catchRun(t *testing.T, home string, script string, args ...string) Result {
	t.Helper()
	cache := filepath.Join(t.TempDir(), "cache")
	return run(t, 60*time.Second, "", "sh", append([]string{"-c", `umask 022 && exec env "$@"`, "sh", "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		wirefsBin, "run", "--cache-dir", cache, "--read-timeout", "5s", "--connect-timeout", "5s", "--",
		"bash", "-c", script, "bash"}, args...)...)
}

// TestCatchHTTPRoots: cat, grep -r, ls -l and find on /http/HOST/... and
// URL names, with no mount; a second open of a cached file is the cache's
// own file (its fd points into the cache directory).
func TestCatchHTTPRoots(t *testing.T) {
	needCatch(t)
	root, _ := serverTree(t)
	addr, _ := testsrv.Nginx(t, root, false)
	r := mustOK(t, "http", catchRun(t, t.TempDir(), `
set -e
A=$1
echo "cat: $(cat /http/$A/notes.txt)"
echo "url: $(cat http://$A/notes.txt)"
echo "net: $(cat /net/http/$A/notes.txt)"
grep -r TODO /http/$A/src | sort
ls -l /http/$A/src/lib
find /http/$A -name '*.c' | sort
exec 5< /http/$A/notes.txt
echo "fd: $(readlink /proc/$$/fd/5)"
cmp /http/$A/big.bin "$2" && echo same
`, addr, filepath.Join(root, "big.bin")))
	for _, want := range []string{
		"cat: first line", "url: first line", "net: first line",
		"/http/" + addr + "/src/lib/todo.txt:TODO: write the docs",
		"/http/" + addr + "/src/main.c:int main",
		"util.c", "/http/" + addr + "/src/lib/util.c", "same",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.Stdout)
		}
	}
	if !strings.Contains(r.Stdout, "fd: ") || !strings.Contains(r.Stdout, "/cache/") {
		t.Errorf("a cached file was not handed over as the cache's file:\n%s", r.Stdout)
	}
}

// TestCatchSFTPWrites: cp to a URL name, mkdir, mv, chmod, utime, rm and
// rmdir on /sftp/..., checked on the server; new files and directories
// get the program's umask, not the supervisor's.
func TestCatchSFTPWrites(t *testing.T) {
	needCatch(t)
	s := testsrv.StartSSHD(t)
	root, _ := serverTree(t)
	home := sshHome(t, s, true)
	local := filepath.Join(t.TempDir(), "local.txt")
	os.WriteFile(local, []byte("from the catcher\n"), 0o644)
	mustOK(t, "sftp", catchRun(t, home, `
set -e
D=/sftp/testhost$1
cp "$2" sftp://testhost$1/src/
mkdir $D/new
cp $D/src/local.txt $D/new/copy.txt
mv $D/new/copy.txt $D/new/moved.txt
chmod 600 $D/new/moved.txt
python3 -c 'import os, sys; os.utime(sys.argv[1], (981158400, 981158400))' $D/new/moved.txt
rm $D/notes.txt
echo gone > $D/src/lib/todo.txt
mkdir $D/empty && rmdir $D/empty
(umask 077 && echo mine > $D/new/private.txt && mkdir $D/new/private.d && python3 -c 'import os, sys; os.close(os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o666))' $D/new/created.txt)
`, root, local))
	for name, want := range map[string]os.FileMode{"private.txt": 0o600, "private.d": 0o700, "created.txt": 0o600} {
		st, err := os.Stat(filepath.Join(root, "new", name))
		if err != nil {
			t.Errorf("created under umask 077: %v", err)
		} else if st.Mode().Perm() != want {
			t.Errorf("created under umask 077: %s has mode %v, want %v", name, st.Mode().Perm(), want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, "src", "local.txt")); string(b) != "from the catcher\n" {
		t.Errorf("cp to sftp://: server has %q", b)
	}
	st, err := os.Stat(filepath.Join(root, "new", "moved.txt"))
	if err != nil {
		t.Fatalf("mkdir+cp+mv: %v", err)
	}
	// (The cache accepts utime but cannot set times on this server.)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("chmod: mode %v", st.Mode())
	}
	if _, err := os.Stat(filepath.Join(root, "notes.txt")); !os.IsNotExist(err) {
		t.Errorf("rm: notes.txt still there (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(root, "empty")); !os.IsNotExist(err) {
		t.Errorf("rmdir: empty still there (%v)", err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "src", "lib", "todo.txt")); string(b) != "gone\n" {
		t.Errorf("overwrite: server has %q", b)
	}
}

// cProject writes a small C project (3 .c files and a Makefile) to dir.
func cProject(t *testing.T, dir string) {
	t.Helper()
	files := map[string]string{
		"main.c":   "#include <stdio.h>\nint add(int, int);\nint mul(int, int);\nint main(void) { printf(\"%d\\n\", mul(add(2, 3), 7)); return 0; }\n",
		"add.c":    "int add(int a, int b) { return a + b; }\n",
		"mul.c":    "int mul(int a, int b) { return a * b; }\n",
		"Makefile": "prog: main.o add.o mul.o\n\t$(CC) -o $@ $^\n%.o: %.c\n\t$(CC) -O2 -c -o $@ $<\nclean:\n\trm -f prog *.o\n",
	}
	os.MkdirAll(dir, 0o755)
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCatchMake9P: `wirefs run -- make` in a project that lives on a 9P
// server (cd into the namespace, build there, make clean, build again).
func TestCatchMake9P(t *testing.T) {
	needCatch(t)
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler")
	}
	root := t.TempDir()
	os.Chmod(root, 0o755)
	cProject(t, filepath.Join(root, "project"))
	addr := testsrv.Diod(t, root)
	r := mustOK(t, "make", catchRun(t, t.TempDir(), `
set -e
cd /9p/$1/project
echo "pwd: $(pwd)"
make
make clean
make -j2
make
`, addr+root))
	if !strings.Contains(r.Stdout, "pwd: /9p/"+addr+root+"/project") || !strings.Contains(r.Stdout, "is up to date") {
		t.Errorf("make output:\n%s", r.Stdout)
	}
	out, err := exec.Command(filepath.Join(root, "project", "prog")).Output()
	if err != nil || strings.TrimSpace(string(out)) != "35" {
		t.Errorf("the program built on the 9P server: %q %v", out, err)
	}
}

// TestCatchAttach: `wirefs attach` takes over a bash loop that polls for
// a namespace name; once attached, the loop reads it.
func TestCatchAttach(t *testing.T) {
	needCatch(t)
	out := filepath.Join(t.TempDir(), "out")
	p := start(t, 60*time.Second, "", nil, "bash", "-c",
		`while :; do if [ -e /net/dns/localhost ]; then cat /net/dns/localhost >> "$1"; exit 0; fi; sleep 0.2; done`, "bash", out)
	time.Sleep(300 * time.Millisecond)
	if _, err := os.Stat(out); err == nil {
		t.Fatal("the loop saw the namespace before the attach")
	}
	att := start(t, 60*time.Second, "", nil, wirefsBin, "attach", strconv.Itoa(p.cmd.Process.Pid))
	if !waitFor(20*time.Second, func() bool {
		b, _ := os.ReadFile(out)
		return strings.Contains(string(b), "127.0.0.1")
	}) {
		b, _ := os.ReadFile(out)
		t.Fatalf("the attached loop did not read /net/dns/localhost: %q; attach stderr: %s", b, att.errb.String())
	}
	if err := waitDone(p, 20*time.Second); err != nil {
		t.Errorf("the loop: %v", err)
	}
	// wirefs attach ends when its target does.
	if err := waitDone(att, 20*time.Second); err != nil {
		t.Errorf("wirefs attach: %v\n%s", err, att.errb.String())
	}
}

// waitDone waits for a background process to exit.
func waitDone(p *Proc, limit time.Duration) error {
	select {
	case <-p.done:
		return p.err
	case <-time.After(limit):
		return syscall.ETIMEDOUT
	}
}

// TestCatchUnprivileged: as nobody, wirefs run serves the network and a
// remote file.
func TestCatchUnprivileged(t *testing.T) {
	needCatch(t)
	if os.Getuid() != 0 {
		t.Skip("needs root to become nobody")
	}
	root, _ := serverTree(t)
	addr, _ := testsrv.Nginx(t, root, false)
	dir, err := os.MkdirTemp("", "wirefs-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o777)
	bin := filepath.Join(dir, "wirefs")
	data, _ := os.ReadFile(wirefsBin)
	os.WriteFile(bin, data, 0o755)
	cmd := exec.Command(bin, "run", "--cache-dir", filepath.Join(dir, "cache"), "--", "bash", "-c",
		`cat /net/dns/localhost && cat http://$1/notes.txt && cd /http/$1/src && cat main.c`, "bash", addr)
	cmd.Env = []string{"HOME=" + dir, "PATH=/usr/bin:/bin", "XDG_RUNTIME_DIR="}
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	got, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(got), "127.0.0.1") || !strings.Contains(string(got), "first line") ||
		!strings.Contains(string(got), "int main") {
		t.Errorf("as nobody: %v\n%s", err, got)
	}
}

// TestCatchProcesses: programs started every way — posix_spawn (vfork),
// a subshell pipeline, dd and cp, a Go program (wirefs itself) — see the
// namespace; Ctrl-C interrupts an open blocked waiting for a client, and
// the port is free again.
func TestCatchProcesses(t *testing.T) {
	needCatch(t)
	port := freePort(t)
	r := mustOK(t, "processes", catchRun(t, t.TempDir(), `
set -e
/usr/bin/python3 -c '
import os, sys
pid = os.posix_spawn("/bin/cat", ["cat", "/net/dns/localhost"], os.environ)
_, st = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(st))' | head -1 | sed 's/^/spawn: /'
(cat /net/dns/localhost | sort | head -1) | sed 's/^/pipe: /'
dd if=/net/dns/localhost bs=64 count=1 status=none | head -1 | sed 's/^/dd: /'
cp /net/dns/localhost "$3/copy" && head -1 "$3/copy" | sed 's/^/cp: /'
"$2" version >/dev/null && echo "go: ok"
`, strconv.Itoa(port), wirefsBin, t.TempDir()))
	for _, want := range []string{"spawn: 127.0.0.1", "pipe: 127.0.0.1", "dd: 127.0.0.1", "cp: 127.0.0.1", "go: ok"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("missing %q in:\n%s", want, r.Stdout)
		}
	}

	// An open of a server name blocks until a client comes; SIGINT ends it
	// at once, with wirefs run's status saying so, and unbinds the port.
	cache := filepath.Join(t.TempDir(), "cache")
	cmd := exec.Command(wirefsBin, "run", "--cache-dir", cache, "--", "cat", "/net/tcp/"+strconv.Itoa(port))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitListening(t, "tcp", port, nil)
	start := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if err == nil {
		t.Errorf("cat interrupted while waiting for a client exited 0")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("SIGINT took %v to end a blocked open", d)
	}
	waitNotListening(t, "tcp", port)
}

// TestCatchConnectErrno: through `wirefs run`, open of a TCP client name
// returns connect's errno itself — with the fast path (the library
// connects in the program's thread) and without it (the supervisor
// connects) — and a connected socket otherwise.
func TestCatchConnectErrno(t *testing.T) {
	needCatch(t)
	ln, err := net.Listen("tcp4", "127.0.0.1:0") // the queue takes the connect: no accept needed
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	refused := testsrv.FreePort(t)
	script := `import errno, os, stat, sys
for port in sys.argv[1:]:
    try:
        fd = os.open("/net/tcp/127.0.0.1:" + port, os.O_RDWR)
        print("connected", stat.S_ISSOCK(os.fstat(fd).st_mode))
    except OSError as e:
        print(errno.errorcode[e.errno])
`
	for _, fast := range []string{"true", "false"} {
		r := run(t, 60*time.Second, "", wirefsBin, "run", "--fast-path="+fast, "--cache-dir", t.TempDir(), "--",
			"/usr/bin/python3", "-c", script, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), strconv.Itoa(refused))
		if r.Code != 0 || r.Stdout != "connected True\nECONNREFUSED\n" {
			t.Errorf("--fast-path=%s: %s", fast, r.String())
		}
	}
}
