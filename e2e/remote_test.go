package e2e

// Remote files through the FUSE door, against real servers on loopback:
// OpenSSH sshd (sftp), vsftpd (ftp), nginx (http, https) and diod (9p),
// driven with grep, cp, ls, cat, mv, rm, mkdir, dd and python.

import (
	"bytes"
	"crypto/rand"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"wirefs/internal/remote/remotetest"
	"wirefs/internal/testsrv"
)

// remoteMount mounts wirefs with home as $HOME, a private cache, and
// extra options.
func remoteMount(t *testing.T, home string, extra ...string) *Mount {
	t.Helper()
	cache := filepath.Join(t.TempDir(), "cache")
	return mountEnv(t, []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config")},
		append([]string{"--cache-dir", cache, "--read-timeout", "3s", "--connect-timeout", "5s"}, extra...)...)
}

// serverTree makes a directory tree the servers export: src/ with a
// few files that mention TODO, and a 3 MiB binary file.
func serverTree(t *testing.T) (root string, big []byte) {
	t.Helper()
	root = t.TempDir()
	os.Chmod(root, 0o755)
	big = make([]byte, 3<<20+123)
	rand.Read(big)
	files := map[string]string{
		"src/main.c":       "int main(void) { return 0; } /* TODO: more */\n",
		"src/lib/util.c":   "/* nothing to do */\n",
		"src/lib/todo.txt": "TODO: write the docs\n",
		"notes.txt":        "first line\n",
	}
	for name, text := range files {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "big.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	return root, big
}

func sshHome(t *testing.T, s *testsrv.SSHD, knownHosts bool) string {
	t.Helper()
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	config := "Host testhost\n  HostName 127.0.0.1\n  Port " + strconv.Itoa(s.Port) +
		"\n  User " + s.User + "\n  IdentityFile " + s.UserKeyFile + "\n"
	if err := os.WriteFile(filepath.Join(home, ".ssh", "config"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	if knownHosts {
		if err := os.WriteFile(filepath.Join(home, ".ssh", "known_hosts"), []byte(s.KnownHostsLine()+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

// TestSFTP: grep -r, cp in and out, mkdir, mv, rm, ls -l, chmod, through
// an ssh config alias, with the changes visible on the server.
func TestSFTP(t *testing.T) {
	needFUSE(t)
	s := testsrv.StartSSHD(t)
	root, big := serverTree(t)
	m := remoteMount(t, sshHome(t, s, true))
	dir := "sftp/testhost" + root

	r := mustOK(t, "grep -r", bash(t, m, 30*time.Second, `grep -rl TODO "$M/$1/src" | sort`, dir))
	want := m.P(dir+"/src/lib/todo.txt") + "\n" + m.P(dir+"/src/main.c") + "\n"
	if r.Stdout != want {
		t.Errorf("grep -rl TODO: got %q, want %q", r.Stdout, want)
	}
	mustOK(t, "cmp big", bash(t, m, 30*time.Second, `cmp "$M/$1/big.bin" "$2"`, dir, filepath.Join(root, "big.bin")))

	// Writes reach the server before the command returns (t_write = 0).
	local := filepath.Join(t.TempDir(), "up.bin")
	os.WriteFile(local, big[:1<<20], 0o644)
	mustOK(t, "cp in, mkdir, mv, chmod", bash(t, m, 30*time.Second, `set -e
		cp "$2" "$M/$1/up.bin"
		mkdir "$M/$1/newdir"
		mv "$M/$1/up.bin" "$M/$1/newdir/moved.bin"
		echo appended >> "$M/$1/notes.txt"
		chmod 600 "$M/$1/notes.txt"`, dir, local))
	if got, _ := os.ReadFile(filepath.Join(root, "newdir", "moved.bin")); !bytes.Equal(got, big[:1<<20]) {
		t.Errorf("server copy of moved.bin: %d bytes, want %d equal bytes", len(got), 1<<20)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "notes.txt")); string(got) != "first line\nappended\n" {
		t.Errorf("server notes.txt = %q", got)
	}
	if st, err := os.Stat(filepath.Join(root, "notes.txt")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("server notes.txt mode: %v %v, want 0600", st.Mode(), err)
	}
	r = mustOK(t, "ls -l", bash(t, m, 30*time.Second, `ls -l "$M/$1/newdir"`, dir))
	if !strings.Contains(r.Stdout, "1048576") || !strings.Contains(r.Stdout, "moved.bin") {
		t.Errorf("ls -l newdir: %q", r.Stdout)
	}
	mustOK(t, "rm, rmdir", bash(t, m, 30*time.Second, `set -e
		rm "$M/$1/newdir/moved.bin"; rmdir "$M/$1/newdir"`, dir))
	if _, err := os.Stat(filepath.Join(root, "newdir")); !os.IsNotExist(err) {
		t.Errorf("newdir still on the server: %v", err)
	}
	r = bash(t, m, 30*time.Second, `cat "$M/$1/nonexistent"`, dir)
	if r.Code == 0 || !strings.Contains(r.Stderr, "No such file or directory") {
		t.Errorf("cat of a missing file: %s", r)
	}
}

// TestSFTPStoreWhileWritten: dd of a 12 MiB file into an sftp mount
// starts the upload while dd writes (the daemon's log says so) and leaves
// exactly its bytes on the server; a program that goes back to rewrite an
// early block after 10 MiB gives that upload up, and its close stores what
// it wrote. No temporary is left.
func TestSFTPStoreWhileWritten(t *testing.T) {
	needFUSE(t)
	s := testsrv.StartSSHD(t)
	root, _ := serverTree(t)
	m := remoteMount(t, sshHome(t, s, true), "-v")
	dir := "sftp/testhost" + root
	data := make([]byte, 12<<20+77)
	rand.Read(data)
	local := filepath.Join(t.TempDir(), "src.bin")
	os.WriteFile(local, data, 0o644)
	mustOK(t, "dd", bash(t, m, 60*time.Second, `dd if="$2" of="$M/$1/dd.bin" bs=1M status=none`, dir, local))
	if got, _ := os.ReadFile(filepath.Join(root, "dd.bin")); !bytes.Equal(got, data) {
		t.Errorf("the server's dd.bin: %d bytes, want the %d written", len(got), len(data))
	}
	mustOK(t, "rewrite", bash(t, m, 60*time.Second, `/usr/bin/python3 -c '
import sys
data = open(sys.argv[1], "rb").read()
with open(sys.argv[2], "wb") as f:
    f.write(data[:10 << 20]); f.flush()
    f.seek(4096); f.write(b"x" * 4096); f.flush()
    f.seek(10 << 20); f.write(data[10 << 20:])
' "$2" "$M/$1/rewritten.bin"`, dir, local))
	copy(data[4096:], bytes.Repeat([]byte("x"), 4096))
	if got, _ := os.ReadFile(filepath.Join(root, "rewritten.bin")); !bytes.Equal(got, data) {
		t.Errorf("the server's rewritten.bin: %d bytes, not the %d written", len(got), len(data))
	}
	for _, name := range remotetest.Temporaries(root) {
		t.Errorf("a temporary was left: %s", name)
	}
	log := readFile(m.Log)
	if n := strings.Count(log, "storing a file while it is written"); n != 2 {
		t.Errorf("%d uploads began while a file was written, want 2:\n%s", n, tail(log, 3000))
	}
	if !strings.Contains(log, "a write elsewhere than at its end") {
		t.Errorf("the rewrite did not give its upload up:\n%s", tail(log, 3000))
	}
}

// TestSFTPHostKeys: an unknown host is refused unless new keys may be
// accepted; a changed key is refused whatever the options.
func TestSFTPHostKeys(t *testing.T) {
	needFUSE(t)
	s := testsrv.StartSSHD(t)
	root, _ := serverTree(t)
	home := sshHome(t, s, false)
	m := remoteMount(t, home)
	r := bash(t, m, 30*time.Second, `cat "$M/sftp/testhost$1/notes.txt"`, root)
	if r.Code == 0 || !strings.Contains(r.Stderr, "Permission denied") {
		t.Errorf("unknown host key: want Permission denied, got %s", r)
	}
	if log := readFile(m.Log); !strings.Contains(log, "known_hosts") {
		t.Errorf("the log does not say how to accept the key:\n%s", tail(log, 2000))
	}

	m2 := remoteMount(t, home, "--accept-new-host-keys")
	mustOK(t, "accept-new", bash(t, m2, 30*time.Second, `cat "$M/sftp/testhost$1/notes.txt"`, root))
	kh, _ := os.ReadFile(filepath.Join(home, ".ssh", "known_hosts"))
	if len(kh) == 0 {
		t.Fatal("accept-new did not write known_hosts")
	}

	// A changed key: known_hosts names another key for this host.
	other := testsrv.StartSSHD(t)
	line := strings.Fields(other.KnownHostsLine())
	changed := strings.Join(append([]string{strings.Fields(s.KnownHostsLine())[0]}, line[1:]...), " ")
	os.WriteFile(filepath.Join(home, ".ssh", "known_hosts"), []byte(changed+"\n"), 0o600)
	m3 := remoteMount(t, home, "--accept-new-host-keys")
	r = bash(t, m3, 30*time.Second, `cat "$M/sftp/testhost$1/notes.txt"`, root)
	if r.Code == 0 || !strings.Contains(r.Stderr, "Permission denied") {
		t.Errorf("changed host key: want Permission denied, got %s", r)
	}
}

// TestFTP: a credentialed login from ~/.netrc; cp of a 16 MiB file up,
// then down, ls -l, mkdir, mv, rm.
func TestFTP(t *testing.T) {
	needFUSE(t)
	root, _ := serverTree(t)
	m, dir := vsftpdMount(t, root)

	src := filepath.Join(t.TempDir(), "big.iso")
	data := make([]byte, 16<<20)
	rand.Read(data)
	os.WriteFile(src, data, 0o644)
	mustOK(t, "cp up", bash(t, m, 60*time.Second, `set -e
		mkdir "$M/$1/up"
		cp "$2" "$M/$1/up/"`, dir, src))
	if got, _ := os.ReadFile(filepath.Join(root, "up", "big.iso")); !bytes.Equal(got, data) {
		t.Fatalf("server copy: %d bytes, want %d equal bytes", len(got), len(data))
	}
	mustOK(t, "read back", bash(t, m, 60*time.Second, `cmp "$M/$1/up/big.iso" "$2" && cmp "$M/$1/big.bin" "$3"`,
		dir, src, filepath.Join(root, "big.bin")))
	r := mustOK(t, "ls -l", bash(t, m, 30*time.Second, `ls -l "$M/$1/up" "$M/$1/src"`, dir))
	if !strings.Contains(r.Stdout, strconv.Itoa(16<<20)) || !strings.Contains(r.Stdout, "main.c") {
		t.Errorf("ls -l: %q", r.Stdout)
	}
	mustOK(t, "mv, rm", bash(t, m, 30*time.Second, `set -e
		mv "$M/$1/up/big.iso" "$M/$1/up/renamed.iso"
		rm "$M/$1/up/renamed.iso"
		rmdir "$M/$1/up"`, dir))
	if _, err := os.Stat(filepath.Join(root, "up")); !os.IsNotExist(err) {
		t.Errorf("up/ still on the server: %v", err)
	}
}

// TestFTPServerLimitsLogins: a server that allows 3 logins per address
// (vsftpd's max_per_ip; wirefs opens up to ftp_connections=32, 30 of them
// for prefetch): a cold grep -r still succeeds and every byte read through
// the mount equals the server's, while the server refuses the extra logins
// ("421 There are too many connections"), which the log says once.
func TestFTPServerLimitsLogins(t *testing.T) {
	needFUSE(t)
	root := t.TempDir()
	os.Chmod(root, 0o755)
	for d := range 4 {
		for f := range 40 {
			p := filepath.Join(root, "tree", "d"+strconv.Itoa(d), "f"+strconv.Itoa(f)+".txt")
			os.MkdirAll(filepath.Dir(p), 0o755)
			text := strings.Repeat("line "+strconv.Itoa(d*100+f)+"\n", 50+f)
			if f%7 == 0 {
				text += "TODO\n"
			}
			if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	addr, login, password := testsrv.Vsftpd(t, root, testsrv.VsftpdLocalUser(), testsrv.VsftpdMaxPerIP(3))
	home := t.TempDir()
	host, _, _ := strings.Cut(addr, ":")
	os.WriteFile(filepath.Join(home, ".netrc"), []byte("machine "+host+" login "+login+" password "+password+"\n"), 0o600)
	m := remoteMount(t, home)
	dir := "ftp/" + login + "@" + addr

	r := mustOK(t, "grep -r", bash(t, m, 60*time.Second, `grep -rc TODO "$M/$1/tree" | grep -vc ':0$'`, dir))
	if got := strings.TrimSpace(r.Stdout); got != "24" { // 6 files of 40 in each of 4 directories
		t.Errorf("grep -r found TODO in %s files, want 24", got)
	}
	mustOK(t, "every byte", bash(t, m, 60*time.Second, `cd "$M/$1/tree" && diff -r . "$2"`, dir, filepath.Join(root, "tree")))
	if n := strings.Count(readFile(m.Log), "refuses more logins"); n != 1 {
		t.Errorf("the refused logins were logged %d times, want once; log:\n%s", n, readFile(m.Log))
	}
}

// TestSFTPCopyTreeInAndOut: cp -r of a tree into an sftp mount (whose
// small stores take temporaries opened ahead), the server's copy equal to
// the source, no temporary left; then rm -rf and mv of directories right
// after a burst of stores into them (make clean; the temporary opened
// ahead must not make rmdir fail, nor move along).
func TestSFTPCopyTreeInAndOut(t *testing.T) {
	needFUSE(t)
	s := testsrv.StartSSHD(t)
	root := t.TempDir()
	src := sourceTree(t, 6)
	m := remoteMount(t, sshHome(t, s, true))
	dir := "sftp/testhost" + root
	mustOK(t, "cp -r, then the copy's files through the mount", bash(t, m, 60*time.Second, `set -e
		cp -r "$2" "$M/$1/proj"
		diff -r "$2" "$M/$1/proj"
		cp -r "$2" "$M/$1/again"
		rm -rf "$M/$1/again"
		cp -r "$2/d0" "$M/$1/obj"
		mv "$M/$1/obj" "$M/$1/moved"
		ls -A "$M/$1/moved" | wc -l`, dir, src))
	// The temporaries opened ahead for the next store go soon after the
	// last one (within 2 s); the copy is there at once.
	spares := func() bool {
		r := bash(t, m, 10*time.Second, `find "$1" -name '.wirefs-spare-*' | grep -q .`, root)
		return r.Code == 0
	}
	if !waitFor(10*time.Second, func() bool { return !spares() }) {
		t.Errorf("temporaries opened ahead are still on the server 10 s after the copy")
	}
	mustOK(t, "the server's copy", bash(t, m, 30*time.Second, `diff -r "$1" "$2"`, src, filepath.Join(root, "proj")))
	for _, gone := range []string{"again", "obj"} {
		if _, err := os.Stat(filepath.Join(root, gone)); !os.IsNotExist(err) {
			t.Errorf("%s is still on the server: %v", gone, err)
		}
	}
	for _, d := range []string{"proj/d0", "proj/d1", "proj/d2", "moved"} {
		ents, _ := os.ReadDir(filepath.Join(root, d))
		for _, e := range ents {
			if strings.Contains(e.Name(), ".wirefs-") {
				if fi, err := e.Info(); err == nil && (fi.Size() > 0 || d == "moved") {
					t.Errorf("left on the server in %s: %s (%d bytes)", d, e.Name(), fi.Size())
				}
			}
		}
	}
}

// sourceTree makes a local tree proj/d0..d2 of files small C files each
// (mode 0640) to copy into a mount, and returns its path.
func sourceTree(t *testing.T, files int) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "proj")
	for d := range 3 {
		for f := range files {
			p := filepath.Join(src, "d"+strconv.Itoa(d), "f"+strconv.Itoa(f)+".c")
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(strings.Repeat("int x;\n", d*10+f)), 0o640); err != nil {
				t.Fatal(err)
			}
		}
	}
	return src
}

// vsftpdMount serves root with vsftpd (a local user, in ~/.netrc) and
// mounts wirefs; dir is the server's directory in the namespace.
func vsftpdMount(t *testing.T, root string, opts ...testsrv.VsftpdOption) (m *Mount, dir string) {
	t.Helper()
	addr, login, password := testsrv.Vsftpd(t, root, append([]testsrv.VsftpdOption{testsrv.VsftpdLocalUser()}, opts...)...)
	home := t.TempDir()
	host, _, _ := strings.Cut(addr, ":")
	os.WriteFile(filepath.Join(home, ".netrc"), []byte("machine "+host+" login "+login+" password "+password+"\n"), 0o600)
	return remoteMount(t, home), "ftp/" + login + "@" + addr
}

// TestFTPCopyTreeIn: cp -r of a small project into an FTP mount, then
// what a build does in it (stat of ".", find -ls): every file reaches the
// server whole with its mode, and the server is asked for no listing of
// the directories wirefs itself made or filled (a listing of the parent
// per mkdir and per stat of "." after a file was stored in it cost two
// and a half round trips each).
func TestFTPCopyTreeIn(t *testing.T) {
	needFUSE(t)
	root := t.TempDir()
	os.Chmod(root, 0o755)
	src := sourceTree(t, 5)
	var srv *testsrv.VsftpdServer
	m, dir := vsftpdMount(t, root, testsrv.VsftpdControl(&srv))

	mustOK(t, "log in", bash(t, m, 30*time.Second, `ls "$M/$1" >/dev/null`, dir))
	lists := srv.Commands("LIST")
	mustOK(t, "cp -r, stat ., find -ls", bash(t, m, 60*time.Second, `set -e
		cp -r "$2" "$M/$1/proj"
		for d in d0 d1 d2; do
			cd "$M/$1/proj/$d"
			stat . >/dev/null
			echo 'int y;' >new.c
			stat . >/dev/null
		done
		find "$M/$1/proj" -ls >/dev/null`, dir, src))
	if n := srv.Commands("LIST") - lists; n != 0 {
		t.Errorf("cp -r, stat and find listed %d directories on the server, want none", n)
	}
	mustOK(t, "the server's copy", bash(t, m, 30*time.Second, `set -e
		cd "$2"
		for f in proj/d?/new.c; do [ "$(cat "$f")" = "int y;" ]; done
		rm proj/d?/new.c
		diff -r "$3" proj
		[ "$(stat -c %a proj/d1/f2.c)" = 640 ]`, dir, root, src))
}

// TestFTPCopyInKilled: the daemon is killed while cp -r copies a tree of
// small files in. Every file the server then has under its own name is
// whole: a store puts a name on the server only once the kernel holds
// all of its bytes (fresh.go) or through a temporary renamed over it.
// Temporaries may stay behind (documented).
func TestFTPCopyInKilled(t *testing.T) {
	needFUSE(t)
	root := t.TempDir()
	os.Chmod(root, 0o755)
	src := sourceTree(t, 80)
	m, dir := vsftpdMount(t, root)
	mustOK(t, "log in", bash(t, m, 30*time.Second, `ls "$M/$1" >/dev/null`, dir))

	done := make(chan Result, 1)
	go func() { done <- bash(t, m, 60*time.Second, `cp -r "$2" "$M/$1/proj"`, dir, src) }()
	stored := func() int {
		n := 0
		filepath.WalkDir(filepath.Join(root, "proj"), func(_ string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				n++
			}
			return nil
		})
		return n
	}
	if !waitFor(30*time.Second, func() bool { return stored() >= 100 }) {
		t.Fatalf("cp -r stored %d files in 30 s", stored())
	}
	syscall.Kill(m.pid, syscall.SIGKILL)
	waitFor(5*time.Second, func() bool { return !alive(m.pid) })
	syscall.Unmount(m.Dir, syscall.MNT_DETACH)
	<-done

	whole, temporaries := 0, 0
	filepath.WalkDir(filepath.Join(root, "proj"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") && strings.Contains(d.Name(), ".wirefs-") { // remote.TempName's
			temporaries++
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		want, _ := os.ReadFile(filepath.Join(filepath.Dir(src), rel))
		if got, _ := os.ReadFile(p); !bytes.Equal(got, want) {
			t.Errorf("the server has %s with %d bytes, want %d: a killed upload left part of it under its name", rel, len(got), len(want))
		} else {
			whole++
		}
		return nil
	})
	t.Logf("after the kill the server has %d whole files and %d temporaries", whole, temporaries)
}

// TestHTTP: ls -lR and cat over http and https with nginx autoindex;
// writes are refused with EROFS.
func TestHTTP(t *testing.T) {
	needFUSE(t)
	root, _ := serverTree(t)
	addr, _ := testsrv.Nginx(t, root, false)
	m := remoteMount(t, t.TempDir())
	dir := "http/" + addr

	r := mustOK(t, "ls -lR", bash(t, m, 30*time.Second, `ls -lR "$M/$1/"`, dir))
	for _, want := range []string{"main.c", "todo.txt", strconv.Itoa(3<<20 + 123)} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("ls -lR lacks %q:\n%s", want, r.Stdout)
		}
	}
	mustOK(t, "cmp", bash(t, m, 30*time.Second, `cmp "$M/$1/big.bin" "$2" && grep -q TODO "$M/$1/src/main.c"`,
		dir, filepath.Join(root, "big.bin")))
	r = bash(t, m, 30*time.Second, `echo x > "$M/$1/notes.txt"`, dir)
	if r.Code == 0 || !strings.Contains(r.Stderr, "Read-only file system") {
		t.Errorf("write over http: want Read-only file system, got %s", r)
	}
}

// TestHTTPBehindForwarder: nginx behind a port forward answers "GET /src"
// with a redirect to its own port; ls -lR of a directory named directly
// and of the whole tree work through the forwarder, and so does a server
// that refuses HEAD.
func TestHTTPBehindForwarder(t *testing.T) {
	needFUSE(t)
	root, _ := serverTree(t)
	addr, _ := testsrv.Nginx(t, root, false, testsrv.NginxRefuseHEAD())
	fwd := testsrv.Forward(t, addr)
	m := remoteMount(t, t.TempDir())
	dir := "http/" + fwd.Addr

	r := mustOK(t, "ls -lR", bash(t, m, 30*time.Second, `ls -lR "$M/$1/src" && ls -lR "$M/$1/"`, dir))
	for _, want := range []string{"main.c", "todo.txt", "lib:", strconv.Itoa(3<<20 + 123)} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("ls -lR lacks %q:\n%s", want, r.Stdout)
		}
	}
	mustOK(t, "stat and cat", bash(t, m, 30*time.Second,
		`test -d "$M/$1/src/lib" && test "$(stat -c %s "$M/$1/src/lib/todo.txt")" = 21 && grep -q TODO "$M/$1/src/lib/todo.txt"`, dir))
}

// Test9P: an editor-style save (write a new file, rename it over the old
// one) and appends, with diod exporting a directory below "/".
func Test9P(t *testing.T) {
	needFUSE(t)
	root, _ := serverTree(t)
	addr := testsrv.Diod(t, root)
	m := remoteMount(t, t.TempDir())
	dir := "9p/" + addr + root

	mustOK(t, "save like vim", py(t, m, 30*time.Second, `
import os, sys
d = os.path.join(sys.argv[1], sys.argv[2])
old = open(os.path.join(d, "notes.txt")).read()
with open(os.path.join(d, ".notes.txt.swp"), "w") as f:
    f.write(old + "edited\n")
    f.flush(); os.fsync(f.fileno())
os.rename(os.path.join(d, ".notes.txt.swp"), os.path.join(d, "notes.txt"))
with open(os.path.join(d, "notes.txt"), "a") as f:
    f.write("appended\n")
`, dir))
	if got, _ := os.ReadFile(filepath.Join(root, "notes.txt")); string(got) != "first line\nedited\nappended\n" {
		t.Errorf("server notes.txt = %q", got)
	}
	mustOK(t, "cmp", bash(t, m, 30*time.Second, `cmp "$M/$1/big.bin" "$2"`, dir, filepath.Join(root, "big.bin")))
}

// TestConsistencyBound: a change made on the server behind the cache is
// seen once t_read has passed, and at once after drop-caches.
func TestConsistencyBound(t *testing.T) {
	needFUSE(t)
	root, _ := serverTree(t)
	addr := testsrv.Diod(t, root)
	m := remoteMount(t, t.TempDir(), "--t-read", "2s")
	f := "9p/" + addr + root + "/notes.txt"
	read := func() string { return mustOK(t, "cat", bash(t, m, 30*time.Second, `cat "$M/$1"`, f)).Stdout }

	if got := read(); got != "first line\n" {
		t.Fatalf("first read %q", got)
	}
	os.WriteFile(filepath.Join(root, "notes.txt"), []byte("changed on the server\n"), 0o644)
	if got := read(); got != "first line\n" {
		t.Logf("the change was seen before t_read (allowed, but unexpected within 2s): %q", got)
	}
	time.Sleep(2500 * time.Millisecond)
	if got := read(); got != "changed on the server\n" {
		t.Errorf("after t_read: %q, want the server's new content", got)
	}

	os.WriteFile(filepath.Join(root, "notes.txt"), []byte("changed again\n"), 0o644)
	mustOK(t, "drop-caches", bash(t, m, 10*time.Second, `echo 1 > "$M/.wirefs/drop-caches"`))
	if got := read(); got != "changed again\n" {
		t.Errorf("after drop-caches: %q, want the server's new content", got)
	}
}

// TestCrashWithDirtyData: with a delayed write-back, the daemon is killed
// with dirty data in the cache; the next daemon writes it back.
func TestCrashWithDirtyData(t *testing.T) {
	needFUSE(t)
	root, _ := serverTree(t)
	addr := testsrv.Diod(t, root)
	home := t.TempDir()
	cache := filepath.Join(t.TempDir(), "cache")
	args := []string{"--cache-dir", cache, "--t-write", "1h"}
	m := mountEnv(t, []string{"HOME=" + home}, args...)
	f := "9p/" + addr + root + "/notes.txt"
	mustOK(t, "write", bash(t, m, 30*time.Second, `echo "not yet on the server" > "$M/$1"`, f))
	if got, _ := os.ReadFile(filepath.Join(root, "notes.txt")); string(got) != "first line\n" {
		t.Fatalf("t_write=1h, yet the server has %q already", got)
	}
	syscall.Kill(m.pid, syscall.SIGKILL)
	waitFor(5*time.Second, func() bool { return !alive(m.pid) })
	syscall.Unmount(m.Dir, syscall.MNT_DETACH)

	m2 := mountEnv(t, []string{"HOME=" + home}, args...)
	// The first use of the server writes the dirty file back.
	mustOK(t, "ls", bash(t, m2, 30*time.Second, `ls "$M/$1" >/dev/null`, filepath.Dir(f)))
	if !waitFor(10*time.Second, func() bool {
		got, _ := os.ReadFile(filepath.Join(root, "notes.txt"))
		return string(got) == "not yet on the server\n"
	}) {
		got, _ := os.ReadFile(filepath.Join(root, "notes.txt"))
		t.Errorf("after restart the server has %q, want the data written before the crash", got)
	}
}

// TestServerDeath: a server that stops answering gives an error within
// the bound (never a hang), and the mount recovers when it comes back.
func TestServerDeath(t *testing.T) {
	needFUSE(t)
	root, _ := serverTree(t)
	srv := testsrv.StartDiod(t, root)
	m := remoteMount(t, t.TempDir(), "--t-read", "0")
	f := "9p/" + srv.Addr + root + "/notes.txt"
	mustOK(t, "cat", bash(t, m, 30*time.Second, `cat "$M/$1"`, f))

	srv.Pause()
	r := bash(t, m, 30*time.Second, `cat "$M/$1"`, f)
	srv.Resume()
	if r.Code == 0 || r.Code == -1 {
		t.Errorf("cat from a stalled server: want a failure within the 3s bound, got %s", r)
	} else if !strings.Contains(r.Stderr, "timed out") && !strings.Contains(r.Stderr, "Input/output error") {
		t.Errorf("cat from a stalled server: want ETIMEDOUT or EIO, got %s", r)
	}

	srv.Kill()
	srv.Start()
	if !waitFor(10*time.Second, func() bool { return bash(t, m, 10*time.Second, `cat "$M/$1"`, f).Code == 0 }) {
		t.Errorf("the mount did not recover after the server came back")
	}
}

// TestMountPointsFile: a line of ~/.config/wirefs/mounts makes a prefix
// of the namespace a remote root, with its own options.
func TestMountPointsFile(t *testing.T) {
	needFUSE(t)
	root, _ := serverTree(t)
	addr, _ := testsrv.Nginx(t, root, false)
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".config", "wirefs"), 0o700)
	os.WriteFile(filepath.Join(home, ".config", "wirefs", "mounts"),
		[]byte("# test\n/pub → http://"+addr+"/src, read_timeout=10s\n"), 0o600)
	m := remoteMount(t, home)
	r := mustOK(t, "grep -r", bash(t, m, 30*time.Second, `grep -r TODO "$M/pub" | sort`))
	if !strings.Contains(r.Stdout, "pub/main.c") || !strings.Contains(r.Stdout, "pub/lib/todo.txt") {
		t.Errorf("grep -r through the mount point: %q", r.Stdout)
	}

	os.WriteFile(filepath.Join(home, ".config", "wirefs", "mounts"), []byte("/pub gopher://x/\n"), 0o600)
	mnt := t.TempDir()
	r = bash(t, nil, 20*time.Second, `HOME="$1" "$2" mount --cache-dir "$3" "$4"`, home, wirefsBin, t.TempDir(), mnt)
	if r.Code == 0 {
		syscall.Unmount(mnt, syscall.MNT_DETACH)
	}
	if r.Code == 0 || !strings.Contains(r.Stderr, "line 1") {
		t.Errorf("a bad mounts file must fail the mount naming the line: %s", r)
	}
}

// TestVim: vim edits remote files in place, over 9P and SFTP, with its
// swap file, backup and write in the remote directory.
func TestVim(t *testing.T) {
	needFUSE(t)
	testsrv.Need(t, "vim")
	root, _ := serverTree(t)
	addr := testsrv.Diod(t, root)
	s := testsrv.StartSSHD(t)
	m := remoteMount(t, sshHome(t, s, true))
	for _, dir := range []string{"9p/" + addr + root, "sftp/testhost" + root} {
		r := bash(t, m, 60*time.Second, `vim -Nu NONE -i NONE -es -c '$put =\"added by vim\"' -c 'wq' "$M/$1/notes.txt" </dev/null`, dir)
		if r.Code != 0 {
			t.Errorf("%s: vim: %s\ndaemon log:\n%s", dir, r, tail(readFile(m.Log), 2000))
			continue
		}
		got, _ := os.ReadFile(filepath.Join(root, "notes.txt"))
		if !strings.HasSuffix(string(got), "added by vim\n") {
			t.Errorf("%s: the server has %q after vim's write", dir, got)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(root, "notes.txt")); string(got) != "first line\nadded by vim\nadded by vim\n" {
		t.Errorf("after both edits the server has %q", got)
	}
}

// TestPerFileBounds: a "file" line of the mounts file gives one file
// T_read = 0 while the rest of the server keeps the mount's long bound.
func TestPerFileBounds(t *testing.T) {
	needFUSE(t)
	root, _ := serverTree(t)
	addr := testsrv.Diod(t, root)
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".config", "wirefs"), 0o700)
	os.WriteFile(filepath.Join(home, ".config", "wirefs", "mounts"),
		[]byte("file 9p://"+addr+root+"/notes.txt t_read=0\n"), 0o600)
	m := remoteMount(t, home, "--t-read", "1h")
	dir := "9p/" + addr + root
	read := func(name string) string {
		return mustOK(t, "cat", bash(t, m, 30*time.Second, `cat "$M/$1/$2"`, dir, name)).Stdout
	}
	read("notes.txt")
	read("src/lib/todo.txt")
	os.WriteFile(filepath.Join(root, "notes.txt"), []byte("new notes\n"), 0o644)
	os.WriteFile(filepath.Join(root, "src/lib/todo.txt"), []byte("new todo\n"), 0o644)
	if got := read("notes.txt"); got != "new notes\n" {
		t.Errorf("notes.txt has t_read=0 but reads %q", got)
	}
	if got := read("src/lib/todo.txt"); got != "TODO: write the docs\n" {
		t.Errorf("todo.txt is within the mount's 1h bound, yet reads %q (revalidated early)", got)
	}
}

// TestRemoteRefused: a server that is not there is "Connection refused",
// for every protocol, and ls of the protocol's root still works.
func TestRemoteRefused(t *testing.T) {
	needFUSE(t)
	m := remoteMount(t, t.TempDir())
	port := strconv.Itoa(freePort(t))
	for _, scheme := range []string{"http", "https", "ftp", "sftp", "9p"} {
		r := bash(t, m, 30*time.Second, `cat "$M/$1/127.0.0.1:$2/x"`, scheme, port)
		if r.Code == 0 || !strings.Contains(r.Stderr, "Connection refused") {
			t.Errorf("%s: want Connection refused, got %s", scheme, r)
		}
		mustOK(t, "ls root", bash(t, m, 10*time.Second, `ls "$M/$1/" >/dev/null`, scheme))
	}
}

// serverMtime is the modification time of the server's file p (a local
// path), or why there is none.
func serverMtime(p string) (time.Time, error) {
	st, err := os.Stat(p)
	if err != nil {
		return time.Time{}, err
	}
	return st.ModTime(), nil
}

// TestModificationTimes: touch -d and cp -p set the server's mtime over
// SFTP and 9P (cp -p sets it while the copy is not yet on the server).
func TestModificationTimes(t *testing.T) {
	needFUSE(t)
	root, _ := serverTree(t)
	addr := testsrv.Diod(t, root)
	s := testsrv.StartSSHD(t)
	m := remoteMount(t, sshHome(t, s, true))
	src := filepath.Join(t.TempDir(), "src.txt")
	os.WriteFile(src, []byte("copied with -p\n"), 0o644)
	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	os.Chtimes(src, old, old)
	for _, dir := range []string{"9p/" + addr + root, "sftp/testhost" + root} {
		mustOK(t, "touch, cp -p", bash(t, m, 30*time.Second, `set -e
			touch -d "2000-01-02 03:04:05 UTC" "$M/$1/notes.txt"
			cp -p "$2" "$M/$1/copied.txt"`, dir, src))
		if mtime, err := serverMtime(filepath.Join(root, "notes.txt")); err != nil || !mtime.Equal(time.Date(2000, 1, 2, 3, 4, 5, 0, time.UTC)) {
			t.Errorf("%s: touch -d: server mtime %v, %v", dir, mtime, err)
		}
		if mtime, err := serverMtime(filepath.Join(root, "copied.txt")); err != nil || !mtime.Equal(old) {
			t.Errorf("%s: cp -p: server mtime %v, %v", dir, mtime, err)
		}
		os.Remove(filepath.Join(root, "copied.txt"))
		os.Chtimes(filepath.Join(root, "notes.txt"), time.Now(), time.Now())
	}
}
