package e2e

// Concurrent appenders on remote files: every record of every process
// lands once, whole, with no zero-filled holes, verified on the server's
// own copy (not through the cache).

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"wirefs/internal/testsrv"
)

// appendScript appends N records of exactly 50 bytes with
// open(O_WRONLY|O_APPEND), write, close, as log writers do.
const appendScript = `
import os, sys
path, tag, n = sys.argv[2], sys.argv[3], int(sys.argv[4])
for i in range(n):
    rec = ("%s %08d " % (tag, i)).ljust(49, "x") + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        if os.write(fd, rec.encode()) != 50:
            sys.exit("short write")
    finally:
        os.close(fd)
`

// checkRecords verifies that the server's file holds exactly the
// records of every writer, each once and whole, each writer's in order.
func checkRecords(t *testing.T, server string, writers []string, n int) {
	t.Helper()
	data, err := os.ReadFile(server)
	if err != nil {
		t.Fatalf("server copy: %v", err)
	}
	if z := strings.Count(string(data), "\x00"); z > 0 {
		t.Errorf("the server's file has %d NUL bytes", z)
	}
	if len(data) != 50*n*len(writers) {
		t.Errorf("the server's file has %d bytes, want %d", len(data), 50*n*len(writers))
	}
	next := map[string]int{}
	for i := 0; i+50 <= len(data); i += 50 {
		var tag string
		var seq int
		if _, err := fmt.Sscanf(string(data[i:i+50]), "%s %d", &tag, &seq); err != nil || data[i+49] != '\n' {
			t.Errorf("record at %d is damaged: %q", i, data[i:i+50])
			continue
		}
		if seq != next[tag] {
			t.Errorf("record at %d: %s %d, want %s %d", i, tag, seq, tag, next[tag])
		}
		next[tag] = seq + 1
	}
	for _, w := range writers {
		if next[w] != n {
			t.Errorf("writer %s: %d records on the server, want %d", w, next[w], n)
		}
	}
}

// writableServers starts an sshd and a diod that serve root (a new
// directory) and mounts them; protos are their directories in the mount,
// without root.
func writableServers(t *testing.T) (m *Mount, root string, protos []string) {
	needFUSE(t)
	s := testsrv.StartSSHD(t)
	root = t.TempDir()
	os.Chmod(root, 0o755)
	addr := testsrv.Diod(t, root)
	return remoteMount(t, sshHome(t, s, true)), root, []string{"sftp/testhost", "9p/" + addr}
}

// TestConcurrentAppends: several processes append to one file through
// one mount, on every writable protocol; nothing is lost.
func TestConcurrentAppends(t *testing.T) {
	m, root, protos := writableServers(t)
	const n = 150
	writers := []string{"a", "b", "c"}
	for _, proto := range protos {
		name := strings.SplitN(proto, "/", 2)[0] + ".log"
		t.Run(name, func(t *testing.T) {
			p := m.P(proto + root + "/" + name)
			var procs []*Proc
			for _, w := range writers {
				procs = append(procs, startPy(t, m, appendScript, p, w, fmt.Sprint(n)))
			}
			for i, pr := range procs {
				mustOK(t, "appender "+writers[i], pr.wait(t, 120*time.Second))
			}
			checkRecords(t, filepath.Join(root, name), writers, n)
		})
	}
}

// TestAppendsFromSeveralDaemons: a mount and two `wirefs run` instances,
// all with one cache directory, append to one sftp file at once. Each
// daemon caches in its own slot, and each appends with the server's own
// append: every record of every process reaches the server.
func TestAppendsFromSeveralDaemons(t *testing.T) {
	for _, tc := range []struct {
		name   string
		exists bool
	}{{"existing", true}, {"new", false}} {
		t.Run(tc.name, func(t *testing.T) { appendsFromSeveralDaemons(t, tc.exists) })
	}
}

// appendsFromSeveralDaemons runs the appenders of TestAppendsFromSeveralDaemons
// on a file that exists before they start or that their first appends
// create: each daemon then finds no file and makes one, and the first
// write-back of each must not replace what another daemon's made.
func appendsFromSeveralDaemons(t *testing.T, exists bool) {
	needCatch(t)
	s := testsrv.StartSSHD(t)
	root := t.TempDir()
	os.Chmod(root, 0o755)
	home := sshHome(t, s, true)
	cache := filepath.Join(t.TempDir(), "cache")
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config")}
	m := mountEnv(t, env, "--cache-dir", cache, "--read-timeout", "3s")
	const n = 100
	name := "shared.log"
	if exists {
		os.WriteFile(filepath.Join(root, name), nil, 0o644)
	}
	var procs []*Proc
	for _, w := range []string{"run1", "run2"} {
		procs = append(procs, start(t, 120*time.Second, "", env, wirefsBin, "run", "--cache-dir", cache, "--read-timeout", "3s", "--",
			python, "-c", appendScript, "-", "/sftp/testhost"+root+"/"+name, w, fmt.Sprint(n)))
	}
	procs = append(procs, startPy(t, m, appendScript, m.P("sftp/testhost"+root+"/"+name), "mount", fmt.Sprint(n)))
	for _, pr := range procs {
		mustOK(t, "appender", pr.wait(t, 120*time.Second))
	}
	checkRecords(t, filepath.Join(root, name), []string{"run1", "run2", "mount"}, n)
	if slots, _ := os.ReadDir(filepath.Join(cache, "slots")); len(slots) == 0 {
		t.Errorf("the daemons did not take cache slots of their own")
	}
}

// TestAppendAfterRotation: a log that a shell appends to through the
// mount is rotated on the server (mv log log.1, as logrotate does) while
// the mount still trusts what it knows of it; the lines echoed after the
// rotation start a new log on the server, as through sshfs, instead of
// staying in the cache refused (bash's `echo >>` never sees close fail),
// and the rotated file keeps its lines.
func TestAppendAfterRotation(t *testing.T) {
	m, root, protos := writableServers(t)
	for _, proto := range protos {
		name := strings.SplitN(proto, "/", 2)[0] + "-rotated.log"
		t.Run(name, func(t *testing.T) {
			p := m.P(proto + root + "/" + name)
			server := filepath.Join(root, name)
			mustOK(t, "echo before", bash(t, m, 30*time.Second, `echo one >> "$1"; echo two >> "$1"`, p))
			if err := os.Rename(server, server+".1"); err != nil {
				t.Fatal(err)
			}
			mustOK(t, "echo after", bash(t, m, 30*time.Second, `echo three >> "$1"; echo four >> "$1"`, p))
			equal(t, "the rotated log", readFile(server+".1"), "one\ntwo\n")
			equal(t, "the server's new log", readFile(server), "three\nfour\n")
			equal(t, "the new log through the mount", readFile(p), "three\nfour\n")
		})
	}
}
