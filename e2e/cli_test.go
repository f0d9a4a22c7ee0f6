package e2e

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"wirefs/internal/testsrv"
)

// TestCLIHelpAndVersion: version and --help of every command exit 0.
func TestCLIHelpAndVersion(t *testing.T) {
	t.Parallel()
	r := run(t, 10*time.Second, "", wirefsBin, "version")
	equal(t, "wirefs version exit", r.Code, 0)
	if !strings.HasPrefix(r.Stdout, "wirefs ") || strings.Count(r.Stdout, "\n") != 1 {
		t.Errorf("wirefs version printed %q, want one line \"wirefs VERSION\"", r.Stdout)
	}
	for _, args := range [][]string{{"--help"}, {"help"}, {"mount", "--help"}, {"mount", "-h"}, {"umount", "--help"}} {
		r := run(t, 10*time.Second, "", wirefsBin, args...)
		if r.Code != 0 || !strings.Contains(r.Stdout+r.Stderr, "Usage") {
			t.Errorf("wirefs %s: want exit 0 and a usage text, got %s", strings.Join(args, " "), r)
		}
	}
	for _, args := range [][]string{{}, {"no-such-command"}, {"mount"}, {"umount"}, {"mount", "--no-such-flag", "/tmp"}} {
		r := run(t, 10*time.Second, "", wirefsBin, args...)
		if r.Code == 0 || r.Stderr == "" {
			t.Errorf("wirefs %s: want a failure with a message, got %s", strings.Join(args, " "), r)
		}
	}
	// The help shows the options as the manual spells them, and not the
	// measurement switches.
	r = run(t, 10*time.Second, "", wirefsBin, "mount", "--help")
	for _, want := range []string{"--allow-other", "-o, --options OPT[,OPT...]", "-f, --foreground", "-v, --verbose"} {
		contains(t, "wirefs mount --help", r.Stdout, want)
	}
	r = run(t, 10*time.Second, "", wirefsBin, "run", "--help")
	if r.Code != 0 || strings.Contains(r.Stdout, "sync-wake-up") {
		t.Errorf("wirefs run --help shows --sync-wake-up, a measurement switch: %s", r)
	}
}

// TestCLIBadOption: a bad option prints one line that points at the
// command's help, and exits 2; a bad -o item is named alone.
func TestCLIBadOption(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"mount", dir, "--no-such-flag"}, "wirefs: mount: unknown flag: --no-such-flag; see 'wirefs mount --help'\n"},
		{[]string{"mount", dir, "-o", "allow_other,no_such_option,_netdev"}, "wirefs: mount: -o no_such_option: unknown option; see 'wirefs mount --help'\n"},
		{[]string{"mount", "-o", "t_read=soon", dir}, "wirefs: mount: -o t_read=soon: time: invalid duration \"soon\"; see 'wirefs mount --help'\n"},
		{[]string{"mount"}, "wirefs: mount: want one MOUNTPOINT, got 0 arguments; see 'wirefs mount --help'\n"},
		{[]string{"mout", dir}, "wirefs: unknown command \"mout\" (did you mean \"mount\"?); see 'wirefs --help'\n"},
	} {
		r := run(t, 10*time.Second, "", wirefsBin, tc.args...)
		if r.Code != 2 || r.Stdout != "" || r.Stderr != tc.want {
			t.Errorf("wirefs %s: want exit 2 and %q, got %s", strings.Join(tc.args, " "), tc.want, r)
		}
	}
	if len(mountsUnder(dir)) != 0 {
		t.Errorf("bad options left mounts %v", mountsUnder(dir))
	}
}

// TestCLICompletion: wirefs completion bash prints a script that bash
// accepts and that completes wirefs; zsh and fish get theirs.
func TestCLICompletion(t *testing.T) {
	t.Parallel()
	r := bash(t, nil, 10*time.Second, `source <("$1" completion bash) && complete -p wirefs`, wirefsBin)
	if r.Code != 0 || !strings.Contains(r.Stdout, "__start_wirefs wirefs") {
		t.Errorf("sourcing wirefs completion bash: %s", r)
	}
	for shell, want := range map[string]string{"zsh": "#compdef wirefs", "fish": "complete -c wirefs"} {
		r := run(t, 10*time.Second, "", wirefsBin, "completion", shell)
		if r.Code != 0 || !strings.Contains(r.Stdout, want) {
			t.Errorf("wirefs completion %s: want a script with %q, got exit %d, stderr %q", shell, want, r.Code, r.Stderr)
		}
	}
}

// TestCLIOptionsAnywhere: options after MOUNTPOINT, -o, and the old
// single-dash spelling all reach the daemon.
func TestCLIOptionsAnywhere(t *testing.T) {
	t.Parallel()
	needFUSE(t)
	dir, err := os.MkdirTemp(baseDir, "mnt-opts-")
	if err != nil {
		t.Fatal(err)
	}
	m := &Mount{Dir: dir, Log: dir + ".log"}
	r := run(t, 20*time.Second, "", wirefsBin, "mount", dir, "-v", "--log", m.Log, "-o", "t_read=5s,dns_ttl=1s", "-allow-other")
	if r.Code != 0 || r.Stdout+r.Stderr != "" {
		os.Remove(dir)
		t.Fatalf("wirefs mount DIR OPTIONS: want exit 0 and no output, got %s\nlog:\n%s", r, readFile(m.Log))
	}
	t.Cleanup(func() { m.unmount(t) })
	m.started(t)
	if line := mountLine(dir); !strings.Contains(line, " fuse.wirefs ") || !strings.Contains(line, "allow_other") {
		t.Errorf("mount entry %q: want fuse.wirefs with allow_other", line)
	}
	if _, err := os.Stat(m.P("no-such-name")); err == nil {
		t.Errorf("stat %s: want ENOENT", m.P("no-such-name"))
	}
	m.unmount(t) // the daemon has written its log when it has exited
	log := readFile(m.Log)
	contains(t, "daemon log (-v after MOUNTPOINT)", log, `level=DEBUG msg="lookup failed" path=no-such-name`)
	contains(t, "daemon log", log, `options="t_read=5s,dns_ttl=1s"`)
}

// mountLine is dir's line in /proc/self/mounts, or "".
func mountLine(dir string) string {
	b, _ := os.ReadFile("/proc/self/mounts")
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[1] == dir {
			return line
		}
	}
	return ""
}

// needMount8 skips (or fails, with WIREFS_REQUIRE_PRIV=1) a test of
// mount(8) when it cannot run here: it needs root, FUSE, mount.fuse3 and
// unshare (wirefs is put on mount(8)'s PATH in a private mount namespace).
func needMount8(t *testing.T) {
	t.Helper()
	needFUSE(t)
	if os.Geteuid() != 0 {
		testsrv.Unavailable(t, "mount(8) tests need root")
	}
	for _, tool := range []string{"mount", "umount", "unshare", "setpriv"} {
		if _, err := exec.LookPath(tool); err != nil {
			testsrv.Unavailable(t, tool+" is not installed")
		}
	}
	if _, err := os.Stat("/sbin/mount.fuse3"); err != nil {
		testsrv.Unavailable(t, "no /sbin/mount.fuse3 (fuse3)")
	}
	if r := run(t, 10*time.Second, "", "unshare", "--mount", "--propagation", "private", "true"); r.Code != 0 {
		testsrv.Unavailable(t, "unshare --mount: "+r.String())
	}
}

// inMountNamespace runs a bash script as root in a private mount
// namespace where /usr/local/sbin holds only wirefs: mount(8) clears PATH,
// and mount.fuse3 finds "wirefs" through /bin/sh's default PATH, as it
// would find /usr/local/sbin/wirefs installed. Mounts made by the script
// are seen only there; the daemon that serves them keeps the namespace
// alive until it exits. $1... are args.
func inMountNamespace(t *testing.T, bin, script string, args ...string) Result {
	t.Helper()
	path, err := os.MkdirTemp(baseDir, "path-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o755) // for a daemon of setuid=USER
	if err := os.Symlink(bin, filepath.Join(path, "wirefs")); err != nil {
		t.Fatal(err)
	}
	// The namespace starts with a copy of every mount, those of the
	// tests running alongside too, and would keep their daemons serving
	// after their unmounts (daemonExits): it lets go of them first.
	script = "set -e\nawk '$5 ~ \"^" + baseDir + "/\" { print $5 }' /proc/self/mountinfo | tac | xargs -r -n1 umount -l || true\n" +
		"mount --bind " + shellQuote(path) + " /usr/local/sbin\n" + script
	return run(t, 60*time.Second, "", "unshare", append([]string{"--mount", "--propagation", "private", "bash", "-c", script, "bash"}, args...)...)
}

// stopDaemons ends the wirefs daemons still serving dir (a test that
// failed half-way), which ends their mounts and namespaces too.
func stopDaemons(t *testing.T, dir string) {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !slices.Contains(strings.Split(string(b), "\x00"), dir) {
			continue
		}
		if comm, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "comm")); strings.TrimSpace(string(comm)) != "wirefs" {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		t.Errorf("daemon %d of %s still running; stopping it", pid, dir)
		syscall.Kill(pid, syscall.SIGTERM)
		if !waitExit(pid, 5*time.Second) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// forgetUtab drops the lines of mount points below dir from libmount's
// /run/mount/utab (mount(8) records _netdev and x-* options there, and
// only its umount removes them), after a test that failed half-way.
func forgetUtab(t *testing.T, dir string) {
	t.Helper()
	const utab = "/run/mount/utab"
	lock, err := os.OpenFile(utab+".lock", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil { // as libmount does
		return
	}
	b, err := os.ReadFile(utab)
	if err != nil {
		return
	}
	var keep []string
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if !strings.Contains(line, " TARGET="+dir+"/") && !strings.Contains(line, " TARGET="+dir+" ") {
			keep = append(keep, line)
		}
	}
	if kept := strings.Join(keep, ""); kept != string(b) {
		t.Logf("dropping the lines of %s from %s", dir, utab)
		os.WriteFile(utab, []byte(kept), 0o644)
	}
}

// waitExit waits until process pid (not a child) exits, on its pidfd.
func waitExit(pid int, d time.Duration) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return errors.Is(err, unix.ESRCH) // gone already
	}
	defer unix.Close(fd)
	deadline := time.Now().Add(d)
	for {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(time.Until(deadline).Milliseconds()))
		if err == unix.EINTR {
			continue
		}
		return err == nil && n == 1
	}
}

// pids are the numbers of the lines "pid N" of .wirefs/stats in out.
func pids(out string) []int {
	var p []int
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "pid "); ok {
			if n, err := strconv.Atoi(v); err == nil && n > 0 {
				p = append(p, n)
			}
		}
	}
	return p
}

// greeter accepts one TCP client on loopback, sends it msg and closes.
func greeter(t *testing.T, msg string) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		c.Write([]byte(msg))
		c.Close()
	}()
	return l.Addr().(*net.TCPAddr).Port
}

// TestCLIMount8: mount(8) mounts wirefs through mount.fuse3 —
// "mount -t fuse.wirefs wirefs DIR -o allow_other,_netdev" — the mount
// works, a bad option is one line and exit 2, and umount(8) ends the
// daemon.
func TestCLIMount8(t *testing.T) {
	t.Parallel()
	needMount8(t)
	dir, err := os.MkdirTemp(baseDir, "mnt-m8-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopDaemons(t, dir); forgetUtab(t, dir); os.Remove(dir) })
	log := dir + ".log"
	port := greeter(t, "hello through mount(8)\n")
	// mount(8) runs in baseDir, which holds a file named wirefs (the
	// binary): it then passes the source as baseDir/wirefs.
	r := inMountNamespace(t, wirefsBin, `
		cd "$4"
		if mount -t fuse.wirefs wirefs "$1" -o allow_other,no_such_option 2>bad.err; then exit 10; else echo "bad option: $?"; fi
		grep -c . bad.err | sed 's/^/bad option lines: /'; cat bad.err; rm bad.err
		mount -t fuse.wirefs wirefs "$1" -o "allow_other,_netdev,log=$2,cache_dir=$4/cache-m8"
		grep " $1 " /proc/self/mounts
		grep '^pid ' "$1/.wirefs/stats"
		cat "$1/tcp/127.0.0.1:$3"
		umount "$1"
		echo unmounted
		mount -t fuse.wirefs wirefs "$1" -o "ro,noexec,log=$2,cache_dir=$4/cache-m8"
		grep " $1 " /proc/self/mounts
		grep '^pid ' "$1/.wirefs/stats"
		if echo x 2>&1 >"$1/tcp/127.0.0.1:$3"; then echo "wrote to a ro mount"; fi
		umount "$1"`, dir, log, strconv.Itoa(port), baseDir)
	if r.Code != 0 {
		t.Fatalf("mount(8) script: %s\nlog:\n%s", r, readFile(log))
	}
	contains(t, "a bad option through mount(8)", r.Stdout, "bad option: 2\nbad option lines: 1\n"+
		"wirefs: mount: -o no_such_option: unknown option; see 'wirefs mount --help'\n")
	contains(t, "the mount entry", r.Stdout, "wirefs "+dir+" fuse.wirefs rw,nosuid,nodev,")
	contains(t, "the mount entry", r.Stdout, ",allow_other,")
	contains(t, "a stream through the mount", r.Stdout, "hello through mount(8)\nunmounted\n")
	contains(t, "the entry of a ro,noexec mount", r.Stdout, "wirefs "+dir+" fuse.wirefs ro,nosuid,nodev,noexec,")
	contains(t, "a write to a ro mount", r.Stdout, "Read-only file system")
	if p := pids(r.Stdout); len(p) != 2 || !waitExit(p[0], 10*time.Second) || !waitExit(p[1], 10*time.Second) {
		t.Errorf("daemons %v did not exit after umount(8)", p)
	}
	logText := readFile(log)
	contains(t, "daemon log", logText, `options="rw,allow_other,log=`+log)
	contains(t, "daemon log", logText, "dev,suid") // added by mount.fuse3
	contains(t, "daemon log", logText, "msg=unmounted")
}

// TestCLIFstab: an fstab line, tried with mount -T FILE (never
// /etc/fstab), with mount(8)'s own options, wirefs options and
// mount.fuse3's setuid=USER.
func TestCLIFstab(t *testing.T) {
	t.Parallel()
	needMount8(t)
	// nobody must reach the binary, the mount point, its log and cache.
	top, err := os.MkdirTemp("", "wirefs-fstab-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	os.Chmod(top, 0o755)
	bin := filepath.Join(top, "wirefs")
	data, _ := os.ReadFile(wirefsBin)
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, name := range []string{"net", "mine", "nobody"} {
		d := filepath.Join(top, name)
		os.Mkdir(d, 0o755)
		dirs = append(dirs, d)
	}
	os.Chown(dirs[1], 65534, 65534)
	os.Chown(dirs[2], 65534, 65534)
	t.Cleanup(func() { stopDaemons(t, dirs[0]); stopDaemons(t, dirs[1]); forgetUtab(t, top) })
	fstab := filepath.Join(top, "fstab")
	os.WriteFile(fstab, []byte(fmt.Sprintf(`# fstab lines as the manual shows them
wirefs  %[1]s  fuse.wirefs  allow_other,_netdev,noauto,nofail,x-systemd.automount,comment=e2e,t_read=10s,cache_size=2g,log=%[1]s.log,cache_dir=%[1]s.cache  0 0
wirefs  %[2]s  fuse.wirefs  setuid=nobody,_netdev,log=%[3]s/log,cache_dir=%[3]s/cache  0 0
`, dirs[0], dirs[1], dirs[2])), 0o644)
	port := greeter(t, "hello through fstab\n")
	r := inMountNamespace(t, bin, `
		mount -T "$1" "$2"
		grep " $2 " /proc/self/mounts
		grep '^pid ' "$2/.wirefs/stats"
		cat "$2/dns/localhost"
		mount -T "$1" "$3"
		grep " $3 " /proc/self/mounts
		setpriv --reuid=65534 --regid=65534 --clear-groups grep '^pid ' "$3/.wirefs/stats"
		setpriv --reuid=65534 --regid=65534 --clear-groups cat "$3/tcp/127.0.0.1:$4"
		umount "$2"
		umount "$3"
		echo unmounted`, fstab, dirs[0], dirs[1], strconv.Itoa(port))
	if r.Code != 0 {
		t.Fatalf("fstab script: %s\nlogs:\n%s\n%s", r, readFile(dirs[0]+".log"), readFile(dirs[2]+"/log"))
	}
	contains(t, "the mount entry", r.Stdout, "wirefs "+dirs[0]+" fuse.wirefs rw,nosuid,nodev,")
	contains(t, "the mount entry", r.Stdout, ",allow_other,")
	contains(t, "the mount entry of setuid=nobody", r.Stdout, "wirefs "+dirs[1]+" fuse.wirefs rw,nosuid,nodev,relatime,user_id=65534,group_id=65534")
	contains(t, "dns through the fstab mount", r.Stdout, "127.0.0.1\n")
	contains(t, "a stream through the mount of nobody", r.Stdout, "hello through fstab\nunmounted\n")
	for _, pid := range pids(r.Stdout) {
		if !waitExit(pid, 10*time.Second) {
			t.Errorf("daemon %d did not exit after umount(8)", pid)
		}
	}
	// mount(8) keeps its options; wirefs gets its own and mount.fuse3's.
	contains(t, "daemon log", readFile(dirs[0]+".log"),
		`options="rw,allow_other,t_read=10s,cache_size=2g,log=`+dirs[0]+".log,cache_dir="+dirs[0]+`.cache,dev,suid"`)
	contains(t, "log of the daemon run as nobody", readFile(dirs[2]+"/log"), "msg=unmounted")
}

// TestCLIMountErrors: mounting on something that is not a directory fails
// with a clear message, and so does unmounting a non-mount.
func TestCLIMountErrors(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp(baseDir, "cli-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	for _, target := range []string{file, filepath.Join(dir, "missing")} {
		r := run(t, 10*time.Second, "", wirefsBin, "mount", "--log", filepath.Join(dir, "log"), target)
		if r.Code != 1 || !strings.Contains(r.Stderr, target+" is not a directory") {
			t.Errorf("wirefs mount %s: want exit 1 and \"%s is not a directory\", got %s", target, target, r)
		}
		equal(t, "stdout of a failed mount", r.Stdout, "")
	}
	r := run(t, 10*time.Second, "", wirefsBin, "umount", dir)
	if r.Code != 1 || !strings.Contains(r.Stderr, "umount "+dir) {
		t.Errorf("wirefs umount of a plain directory: want exit 1 and a message, got %s", r)
	}
	if len(mountsUnder(dir)) != 0 {
		t.Errorf("failed mounts left %v", mountsUnder(dir))
	}
}

// TestCLIMountUmount: mount prints nothing and daemonizes (the mount
// helper checks that); umount unmounts and the daemon exits; a
// --foreground mount stops on SIGTERM.
func TestCLIMountUmount(t *testing.T) {
	t.Parallel()
	m := mount(t, "--connect-timeout", "5s", "--dns-ttl", "1s", "-v")
	r := mustOK(t, "ls", bash(t, m, 5*time.Second, `ls "$M"`))
	equal(t, "ls of the mount", r.Stdout, "9p\ndns\nftp\nftps\nhttp\nhttps\nproc\nsftp\nsplice\ntcp\nudp\nvif\n")
	r = mustOK(t, "ls -a", bash(t, m, 5*time.Second, `ls -a "$M/.wirefs"`))
	contains(t, "ls .wirefs", r.Stdout, "stats")
	contains(t, "ls .wirefs", r.Stdout, "drop-caches")
	// A busy mount is not unmounted, with a clear message.
	holder := startBash(t, m, `exec 3< "$M/.wirefs/stats"; echo ready; sleep 60`)
	holder.waitOutput(t, 10*time.Second, "ready")
	r = run(t, 10*time.Second, "", wirefsBin, "umount", m.Dir)
	if r.Code != 1 || !strings.Contains(r.Stderr, "busy") {
		t.Errorf("wirefs umount of a busy mount: want exit 1 and \"busy\", got %s", r)
	}
	holder.kill()
	pid := m.pid
	if pid <= 0 || !alive(pid) {
		t.Fatalf("daemon pid %d from stats is not running", pid)
	}
	// The daemon runs in its own session, detached from the caller.
	if sid := sessionOf(pid); sid != pid {
		t.Errorf("daemon session id = %d, want its own session %d", sid, pid)
	}
	r = run(t, 10*time.Second, "", wirefsBin, "umount", m.Dir)
	if r.Code != 0 || r.Stdout+r.Stderr != "" {
		t.Errorf("wirefs umount: want exit 0 and no output, got %s", r)
	}
	if isMounted(m.Dir) {
		t.Errorf("%s still mounted after wirefs umount", m.Dir)
	}
	if !m.daemonExits(t) {
		t.Errorf("daemon %d still running after umount", pid)
	}

	t.Run("foreground", func(t *testing.T) {
		needFUSE(t)
		dir, err := os.MkdirTemp(baseDir, "mnt-fg-")
		if err != nil {
			t.Fatal(err)
		}
		p := start(t, 30*time.Second, "", nil, wirefsBin, "mount", "--foreground", dir)
		t.Cleanup(func() {
			if isMounted(dir) {
				syscall.Unmount(dir, syscall.MNT_DETACH)
			}
			os.Remove(dir)
		})
		if !waitFor(10*time.Second, func() bool { return isMounted(dir) || p.exited() }) || !isMounted(dir) {
			t.Fatalf("foreground mount did not mount: %q %q", p.out.String(), p.errb.String())
		}
		b, err := os.ReadFile(filepath.Join(dir, ".wirefs/stats"))
		if err != nil || !strings.Contains(string(b), "pid "+strconv.Itoa(p.cmd.Process.Pid)+"\n") {
			t.Errorf("stats of the foreground mount: %q %v, want pid %d", b, err, p.cmd.Process.Pid)
		}
		p.cmd.Process.Signal(syscall.SIGTERM)
		r := p.wait(t, 10*time.Second)
		equal(t, "foreground exit on SIGTERM", r.Code, 0)
		if isMounted(dir) {
			t.Errorf("%s still mounted after SIGTERM", dir)
		}
		contains(t, "foreground log", r.Stderr, "mounted")
	})
}

// sessionOf returns a process's session id (field 6 of /proc/PID/stat).
func sessionOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 4 {
		return -1
	}
	sid, _ := strconv.Atoi(f[3])
	return sid
}
