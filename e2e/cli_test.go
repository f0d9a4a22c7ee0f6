package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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
	equal(t, "ls of the mount", r.Stdout, "9p\ndns\nftp\nftps\nhttp\nhttps\nsftp\ntcp\nudp\n")
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
	if !waitFor(5*time.Second, func() bool { return !alive(pid) }) {
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
