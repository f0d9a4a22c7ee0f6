package catch_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// trapped is the number of calls the supervisor received, from -timing's
// table on standard error.
func trapped(t *testing.T, r result) int {
	t.Helper()
	return timed(t, r, "read path")
}

// timed is how many times phase ran, from -timing's table on standard
// error.
func timed(t *testing.T, r result, phase string) int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(phase) + `\s+(\d+)`).FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("no %q in the timing table in stderr %q", phase, r.stderr)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// TestFastPath: with the fast path, a dynamic program's calls on local
// names do not trap, and its calls on namespace names still do and are
// served (ls -l's xattr calls among them, and realpath(3) through a
// local link into the namespace); without it, every one traps.
func TestFastPath(t *testing.T) {
	const n = 2000
	script := `import ctypes, errno, os, stat
libc = ctypes.CDLL(None, use_errno=True)
for i in range(` + strconv.Itoa(n) + `):
    os.stat("/etc/hostname"); os.lstat("/etc"); os.access("/etc/hostname", os.R_OK); os.listdir("/etc/ssl"); libc.eaccess(b"/etc/hostname", os.R_OK)
def err(f, *a):
    try:
        f(*a)
        return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]
print("listdir", "dns" in os.listdir("/net"), err(os.listdir, "/etc/hostname"), err(os.listdir, "/nonexistent"))
print("dir", stat.S_ISDIR(os.stat("/net/dns").st_mode))
def eaccess(name, mode):
    if libc.eaccess(name, mode) == 0:
        return "ok"
    return errno.errorcode[ctypes.get_errno()]
print("eaccess", eaccess(b"/etc/hostname", os.R_OK), eaccess(b"/nonexistent", os.F_OK), eaccess(b"/etc/passwd", os.X_OK), eaccess(b"/net/dns/localhost", os.R_OK), eaccess(b"/net/dns/nonexistent.invalid", os.F_OK))
print("read", open("/net/dns/localhost").read().strip())
try:
    os.listxattr("/net/dns")
except OSError as e:
    print("xattr", e.errno == errno.ENOTSUP)
os.symlink("/net/dns", "link")
libc.realpath.restype = ctypes.c_char_p
print("realpath", libc.realpath(b"link/localhost", None).decode(), libc.realpath(os.path.abspath("link/localhost").encode(), None).decode())
os.chdir("/net/dns")
print("realpath in", libc.realpath(b"localhost", None).decode(), libc.realpath(b"../tcp/..", None).decode())
os.chdir("/")
print("relative", stat.S_ISDIR(os.stat("net/tcp").st_mode))
`
	forEachIdentity(t, func(t *testing.T, e *env) {
		fast := e.run("", "-timing", python, "-c", script)
		want := []string{"listdir True ENOTDIR ENOENT\n", "dir True\n", "eaccess ok ENOENT EACCES ok ENOENT\n", "read 127.0.0.1\n", "xattr True\n",
			"realpath /net/dns/localhost /net/dns/localhost\n",
			"realpath in /net/dns/localhost /net\n", "relative True\n"}
		e.want(fast, 0, want...)
		os.Remove(filepath.Join(e.dir, "link"))
		slow := e.run("", "-timing", "-nofast", python, "-c", script)
		e.want(slow, 0, want...)
		if f, s := trapped(t, fast), trapped(t, slow); f > n/4 || s < 4*n {
			t.Errorf("%d calls trapped with the fast path, %d without; want < %d and >= %d", f, s, n/4, 4*n)
		}
		// ls -l asks for the xattrs of every name: namespace names
		// still get the door's answer, not the kernel's ENOENT.
		r := e.run("", "sh", "-c", "ls -l /net/dns/localhost /etc/hostname >/dev/null && echo listed")
		e.want(r, 0, "listed\n")
		if r.stderr != "" {
			t.Errorf("ls -l: stderr %q", r.stderr)
		}
	})
}

// TestFastPathStaleLibrary: the library's directory left in the temporary
// directory by a supervisor that was killed goes at the next run.
func TestFastPathStaleLibrary(t *testing.T) {
	e := newEnv(t, identity{name: "self"})
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	// The supervisor's temporary directory: its environment has no TMPDIR.
	stale := filepath.Join("/tmp", "wirefs-catch-"+strconv.Itoa(dead.Process.Pid)+"-lib-test")
	if err := os.Mkdir(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(stale)
	if err := os.WriteFile(filepath.Join(stale, "fastpath.so"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e.want(e.run("", "true"), 0)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("%s is still there (%v)", stale, err)
	}
}
