package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"wirefs/internal/testsrv"
)

// needNobody skips (or fails, with WIREFS_REQUIRE_PRIV=1) a test that runs
// programs as nobody: it needs root and setpriv.
func needNobody(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		testsrv.Unavailable(t, "needs root to run programs as nobody")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		testsrv.Unavailable(t, "setpriv is not installed")
	}
}

// asNobody runs a bash script as nobody (uid and gid 65534, no groups)
// with env as its whole environment; $1... are args.
func asNobody(t *testing.T, env []string, script string, args ...string) Result {
	t.Helper()
	argv := append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "env", "-i"}, env...)
	argv = append(argv, "bash", "-c", script, "bash")
	return run(t, 30*time.Second, "", "setpriv", append(argv, args...)...)
}

// sharedDir makes a directory every user may enter (t.TempDir's parents
// are private to root).
func sharedDir(t *testing.T, mode os.FileMode) string {
	t.Helper()
	dir, err := os.MkdirTemp(baseDir, "shared-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, mode)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// TestUnreadableDefaultMountsFile: as nobody with HOME=/root (sudo -u
// nobody keeps it), the default mounts file cannot be read: wirefs run
// warns and serves the network; a mounts file named with --config that
// cannot be read stays an error.
func TestUnreadableDefaultMountsFile(t *testing.T) {
	needCatch(t)
	needNobody(t)
	if st, err := os.Stat("/root"); err != nil || st.Mode().Perm()&0o001 != 0 {
		t.Skip("/root is searchable by others here: nothing to refuse nobody")
	}
	tmp := sharedDir(t, 0o1777)
	greet := tcpServer(t, "127.0.0.1", freePort(t), "greet")
	env := []string{"HOME=/root", "PATH=/usr/bin:/bin", "TMPDIR=" + tmp, "W=" + wirefsBin}
	r := asNobody(t, env, `"$W" run -v -- cat /net/dns/localhost /net/tcp/127.0.0.1+$1`, strconv.Itoa(greet.Port))
	if r.Code != 0 || !strings.Contains(r.Stdout, "127.0.0.1\n") || !strings.Contains(r.Stdout, "127.0.0.1 ") {
		t.Errorf("wirefs run as nobody with HOME=/root: %s", r)
	}
	contains(t, "the warning", r.Stderr, "the mounts file cannot be read")
	contains(t, "the file it names", r.Stderr, "/root/.config/wirefs/mounts")

	r = asNobody(t, env, `"$W" run --config /root/.config/wirefs/mounts -- true`)
	if r.Code == 0 || !strings.Contains(r.Stderr, "permission denied") {
		t.Errorf("wirefs run --config of an unreadable file: %s; want it to fail with permission denied", r)
	}
}

// TestForegroundLog: with --foreground, --log FILE is where the log goes,
// from "mounted" to "unmounted"; nothing is logged on stderr.
func TestForegroundLog(t *testing.T) {
	needFUSE(t)
	dir, err := os.MkdirTemp(baseDir, "mnt-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(dir)
	log := dir + ".log"
	p := start(t, 60*time.Second, "", nil, wirefsBin, "mount", "--foreground", "--log", log, "--cache-dir", t.TempDir(), dir)
	defer p.terminate()
	if !waitFor(20*time.Second, func() bool { return strings.Contains(readFile(log), "msg=mounted") }) {
		t.Fatalf("no \"mounted\" line in --log %s: %q; stderr %q", log, readFile(log), p.errb.String())
	}
	mustOK(t, "a name through the mount", run(t, 10*time.Second, "", "cat", filepath.Join(dir, "dns/localhost")))
	mustOK(t, "wirefs umount", run(t, 10*time.Second, "", wirefsBin, "umount", dir))
	r := p.wait(t, 10*time.Second)
	if r.Code != 0 {
		t.Errorf("wirefs mount --foreground: %s", r)
	}
	contains(t, "the log file", readFile(log), "msg=unmounted")
	equal(t, "stderr of wirefs mount --foreground --log", r.Stderr, "")
}

// TestDNSServerNeverAnswers: a DNS server that reads queries and never
// answers (a UDP socket here) makes a name fail with ETIMEDOUT within
// --dns-timeout, through the mount (tcp/ and dns/) and under wirefs run.
func TestDNSServerNeverAnswers(t *testing.T) {
	needFUSE(t)
	silent, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	queries := make(chan string, 64)
	go func() {
		buf := make([]byte, 512)
		for {
			n, _, err := silent.ReadFrom(buf)
			if err != nil {
				return
			}
			select {
			case queries <- string(buf[:n]):
			default:
			}
		}
	}()
	const bound = 2 * time.Second
	dnsFlags := []string{"--dns-server", silent.LocalAddr().String(), "--dns-timeout", bound.String()}
	m := mount(t, dnsFlags...)
	check := func(what string, argv ...string) {
		t.Helper()
		began := time.Now()
		r := run(t, 30*time.Second, "", argv[0], argv[1:]...)
		took := time.Since(began)
		if r.Code == 0 || !strings.Contains(r.Stderr, "Connection timed out") {
			t.Errorf("%s: %s; want ETIMEDOUT (Connection timed out)", what, r)
		}
		// The bound plus room for a loaded machine: the point is that
		// it ends, not how close to the bound.
		if took > bound+5*time.Second {
			t.Errorf("%s took %v; --dns-timeout is %v", what, took, bound)
		}
		select {
		case q := <-queries:
			if !strings.Contains(q, "silent") {
				t.Errorf("%s: the server got a query without the name: %q", what, q)
			}
		default:
			t.Errorf("%s: the DNS server was never asked", what)
		}
	}
	check("cat tcp/", "cat", m.P("tcp/a.silent.example+80"))
	check("cat dns/", "cat", m.P("dns/b.silent.example"))
	if r := run(t, 20*time.Second, "", wirefsBin, "run", "--cache-dir", t.TempDir(), "--", "true"); r.Code == 0 {
		check("wirefs run -- cat /net/tcp/", append(append([]string{wirefsBin, "run", "--cache-dir", t.TempDir()}, dnsFlags...),
			"--", "cat", "/net/tcp/c.silent.example+80")...)
	}
}

// TestAllowOtherPermissions: a daemon run as root with --allow-other
// checks every access as the kernel checks a local file system's
// (default_permissions): nobody reads neither a file of root's that the
// daemon has cached nor anything else the modes forbid, but reads what
// they allow; and the daemon binds no privileged port for nobody (servers
// and fixed client source ports), while root keeps that right.
func TestAllowOtherPermissions(t *testing.T) {
	needFUSE(t)
	needNobody(t)
	s := testsrv.StartSSHD(t)
	tree := sharedDir(t, 0o755)
	os.WriteFile(filepath.Join(tree, "secret"), []byte("root's secret\n"), 0o600)
	os.WriteFile(filepath.Join(tree, "public"), []byte("for everyone\n"), 0o644)
	m := remoteMount(t, sshHome(t, s, true), "--allow-other")
	dir := "sftp/testhost" + tree
	mustOK(t, "root reads both (now cached)", bash(t, m, 30*time.Second, `cat "$M/$1/secret" "$M/$1/public"`, dir))

	env := []string{"PATH=/usr/bin:/bin", "M=" + m.Dir}
	r := asNobody(t, env, `cat "$M/$1/secret"`, dir)
	if r.Code == 0 || !strings.Contains(r.Stderr, "Permission denied") {
		t.Errorf("nobody reading root's 0600 file through root's daemon: %s; want Permission denied", r)
	}
	r = asNobody(t, env, `cat "$M/$1/public"`, dir)
	equal(t, "nobody reading a 0644 file", r.Stdout, "for everyone\n")

	priv := freePrivilegedPort(t)
	greet := tcpServer(t, "127.0.0.1", freePort(t), "greet")
	for _, name := range []string{
		fmt.Sprintf("tcp/127.0.0.1+%d++", priv),
		fmt.Sprintf("udp/127.0.0.1:%d::", priv),
		fmt.Sprintf("tcp/%d+127.0.0.1+%d", priv, greet.Port),
	} {
		r = asNobody(t, env, `exec 3<"$M/$1"`, name)
		if r.Code == 0 || !strings.Contains(r.Stderr, "Permission denied") {
			t.Errorf("nobody opening %s (port %d) through root's daemon: %s; want Permission denied", name, priv, r)
		}
	}
	if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(priv)); err != nil {
		t.Errorf("port %d after nobody's attempts: %v", priv, err)
	} else {
		l.Close()
	}
	r = asNobody(t, env, `cat "$M/tcp/127.0.0.1+$1"`, strconv.Itoa(greet.Port))
	if !strings.HasPrefix(r.Stdout, "127.0.0.1 ") {
		t.Errorf("nobody connecting through root's daemon: %s", r)
	}
	greet.next(t, 10*time.Second)
	mustOK(t, "root binding the privileged port", bash(t, m, 10*time.Second, `exec 3<"$M/tcp/127.0.0.1+$1++"`, strconv.Itoa(priv)))
	m.waitLive(t, 0)
}

// freePrivilegedPort finds a port below 1024 that nothing uses on
// 127.0.0.1 now.
func freePrivilegedPort(t *testing.T) int {
	t.Helper()
	for port := 1023; port > 600; port-- {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		u, err := net.ListenPacket("udp", "127.0.0.1:"+strconv.Itoa(port))
		l.Close()
		if err == nil {
			u.Close()
			return port
		}
	}
	t.Fatal("no free privileged port on 127.0.0.1")
	return 0
}
