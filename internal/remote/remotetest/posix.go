// Package remotetest is the conformance suite every writable remote
// protocol runs against its real server, as testing/fstest.TestFS serves
// every fs.FS: modes with their special bits, owners, times, links,
// statfs, appends, creation that never replaces (remote.Creator) and partial
// writes (remote.Patcher), errnos, full and read-only
// server file systems, cancellation without leaks. Every result is
// checked on the server's own disk, not through the protocol.
package remotetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"wirefs/internal/leakcheck"
	"wirefs/internal/ns"
	"wirefs/internal/remote"
	"wirefs/internal/testsrv"
)

// Server is what the suite needs of one protocol's test server. The
// server runs on this machine and serves its own paths: a path the
// backend names is the same path on the local disk.
type Server struct {
	// Dial opens a fresh session to the server.
	Dial func(t *testing.T) remote.Backend
	// Dir returns a fresh, empty directory the server serves.
	Dir func(t *testing.T) string
	// ReadOnly, if set, opens a session on which the server refuses
	// every change.
	ReadOnly func(t *testing.T) remote.Backend
	// Pause stalls the server (it answers nothing) until Resume.
	Pause, Resume func()
}

// posixBackend is a backend with every optional interface the suite
// checks.
type posixBackend interface {
	remote.Backend
	remote.Writer
	remote.Chtimer
	remote.Chowner
	remote.Symlinker
	remote.Linker
	remote.Statfser
	remote.Appender
	remote.Creator
	remote.Patcher
}

// POSIX runs the suite. Some cases need root (chown, tmpfs mounts).
func POSIX(t *testing.T, s Server) {
	for _, c := range []struct {
		name string
		run  func(*testing.T, Server)
	}{
		{"ModesOwnersAndTimes", modesOwnersAndTimes},
		{"Links", links},
		{"Statfs", statfs},
		{"Append", appends},
		{"CreateIfMissing", createIfMissing},
		{"Patch", patches},
		{"Errnos", errnos},
		{"FullAndReadOnlyFS", fullAndReadOnlyFS},
		{"StoreThroughTemporary", storeThroughTemporary},
		{"CancelAndLeaks", cancelAndLeaks},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, s) })
	}
}

// dial opens a session for one case, closed when it ends.
func (s Server) dial(t *testing.T) posixBackend {
	t.Helper()
	b, ok := s.Dial(t).(posixBackend)
	if !ok {
		t.Fatalf("the backend lacks an interface of the POSIX suite: %T", b)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func wantErrno(t *testing.T, what string, err error, errno syscall.Errno) {
	t.Helper()
	if got := ns.Errno(err); got != errno {
		t.Fatalf("%s: got %v (%v), want %v", what, got, err, errno)
	}
}

func sysStat(t *testing.T, p string) *syscall.Stat_t {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return &st
}

func rg(off, end int64) remote.Range { return remote.Range{Off: off, End: end} }

func modesOwnersAndTimes(t *testing.T, s Server) {
	b := s.dial(t)
	ctx := context.Background()
	dir := s.Dir(t)

	// Store creates with exactly perm: 0 stays 0, special bits stay.
	for i, perm := range []os.FileMode{0, 0o755 | os.ModeSetuid, 0o640} {
		p := fmt.Sprintf("%s/new%d", dir, i)
		if err := b.Store(ctx, p, strings.NewReader("x"), 1, perm); err != nil {
			t.Fatal(err)
		}
		if fi, _ := os.Lstat(p); fi.Mode() != perm {
			t.Errorf("Store(perm %v) made %v", perm, fi.Mode())
		}
	}
	// Chmod and Mkdir carry setuid, setgid and sticky both ways.
	f := dir + "/f"
	os.WriteFile(f, nil, 0o644)
	for _, perm := range []os.FileMode{0o755 | os.ModeSetuid, 0o755 | os.ModeSetgid, 0o755 | os.ModeSticky, 0o644} {
		if err := b.Chmod(ctx, f, perm); err != nil {
			t.Fatal(err)
		}
		info, err := b.Stat(ctx, f)
		if fi, _ := os.Lstat(f); err != nil || fi.Mode() != perm || info.Mode != perm {
			t.Errorf("chmod %v: the server has %v, Stat says %v (%v)", perm, fi.Mode(), info.Mode, err)
		}
	}
	for i, perm := range []os.FileMode{0o777 | os.ModeSticky, 0o755 | os.ModeSetgid, 0} {
		d := fmt.Sprintf("%s/d%d", dir, i)
		if err := b.Mkdir(ctx, d, perm); err != nil {
			t.Fatal(err)
		}
		if fi, _ := os.Lstat(d); fi.Mode() != os.ModeDir|perm {
			t.Errorf("Mkdir(%v) made %v", perm, fi.Mode())
		}
	}

	// Owner and times, in Stat and in List alike.
	atime, mtime := time.Unix(1_000_000_000, 0), time.Unix(1_200_000_000, 0)
	for _, p := range []string{f, dir + "/d0"} {
		if err := b.Chtimes(ctx, p, atime, mtime); err != nil {
			t.Fatal(err)
		}
		if st := sysStat(t, p); st.Atim.Sec != atime.Unix() || st.Mtim.Sec != mtime.Unix() {
			t.Errorf("Chtimes(%s): the server has atime %d, mtime %d", p, st.Atim.Sec, st.Mtim.Sec)
		}
	}
	if err := b.Chown(ctx, f, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := b.Chown(ctx, f, -1, 0); err != nil { // the owner stays
		t.Fatal(err)
	}
	if st := sysStat(t, f); st.Uid != 65534 || st.Gid != 0 {
		t.Fatalf("after chown 65534:65534 and -1:0 the server has %d:%d", st.Uid, st.Gid)
	}
	info, err := b.Stat(ctx, f)
	if err != nil || *info.Owner != (remote.Owner{Uid: 65534, Gid: 0}) ||
		!info.Atime.Equal(atime) || !info.Mtime.Equal(mtime) {
		t.Fatalf("Stat = %+v (owner %v), %v", info, info.Owner, err)
	}
	list, err := b.List(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range list {
		if i.Name == "f" && (*i.Owner != *info.Owner || !i.Atime.Equal(atime) || i.Mode != info.Mode) {
			t.Fatalf("List gives f as %+v, Stat as %+v", i, info)
		}
	}

	// A server that refuses changes: chown and chmod are EPERM there.
	if s.ReadOnly != nil {
		ro := s.ReadOnly(t).(posixBackend)
		t.Cleanup(func() { ro.Close() })
		wantErrno(t, "chown on a read-only server", ro.Chown(ctx, f, 0, 0), syscall.EPERM)
		wantErrno(t, "chmod on a read-only server", ro.Chmod(ctx, f, 0o600), syscall.EPERM)
	}
	wantErrno(t, "chown of a missing file", b.Chown(ctx, dir+"/missing", 0, 0), syscall.ENOENT)
	wantErrno(t, "chtimes below a file", b.Chtimes(ctx, f+"/x", atime, mtime), syscall.ENOTDIR)
}

func links(t *testing.T, s Server) {
	b := s.dial(t)
	ctx := context.Background()
	dir := s.Dir(t)
	os.WriteFile(dir+"/f", []byte("data"), 0o644)

	// Targets are taken verbatim: relative, absolute, dangling.
	for name, target := range map[string]string{"rel": "f", "abs": dir + "/f", "dangling": "../no/such"} {
		p := dir + "/" + name
		if err := b.Symlink(ctx, target, p); err != nil {
			t.Fatal(err)
		}
		if got, err := os.Readlink(p); err != nil || got != target {
			t.Fatalf("the server's link %s points to %q (%v), want %q", name, got, err, target)
		}
		if got, err := b.Readlink(ctx, p); err != nil || got != target {
			t.Fatalf("Readlink(%s) = %q, %v", name, got, err)
		}
		if info, err := b.Stat(ctx, p); err != nil || info.Mode.Type() != os.ModeSymlink || info.Size != int64(len(target)) {
			t.Fatalf("Stat(%s) = %+v, %v", name, info, err)
		}
	}
	wantErrno(t, "symlink over a file", b.Symlink(ctx, "x", dir+"/f"), syscall.EEXIST)
	_, err := b.Readlink(ctx, dir+"/f")
	wantErrno(t, "readlink of a file", err, syscall.EINVAL)
	_, err = b.Readlink(ctx, dir+"/missing")
	wantErrno(t, "readlink of nothing", err, syscall.ENOENT)

	if err := b.Link(ctx, dir+"/f", dir+"/hard"); err != nil {
		t.Fatal(err)
	}
	if a, h := sysStat(t, dir+"/f"), sysStat(t, dir+"/hard"); a.Ino != h.Ino || a.Nlink != 2 {
		t.Fatalf("Link made inode %d (f is %d, %d links)", h.Ino, a.Ino, a.Nlink)
	}
	os.Mkdir(dir+"/d", 0o755)
	wantErrno(t, "link over a file", b.Link(ctx, dir+"/f", dir+"/hard"), syscall.EEXIST)
	wantErrno(t, "link of a directory", b.Link(ctx, dir+"/d", dir+"/d2"), syscall.EPERM)
	wantErrno(t, "link of nothing", b.Link(ctx, dir+"/missing", dir+"/x"), syscall.ENOENT)
}

func statfs(t *testing.T, s Server) {
	b := s.dial(t)
	dir := s.Dir(t)
	got, err := b.Statfs(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var want syscall.Statfs_t
	syscall.Statfs(dir, &want)
	if got.Bsize != uint32(want.Frsize) || got.Blocks != want.Blocks || got.Files != want.Files ||
		got.Namelen != uint32(want.Namelen) || got.Bavail == 0 {
		t.Fatalf("Statfs = %+v; the server's statfs: %+v", got, want)
	}
	_, err = b.Statfs(context.Background(), dir+"/missing")
	wantErrno(t, "statfs of nothing", err, syscall.ENOENT)
}

func appends(t *testing.T, s Server) {
	b := s.dial(t)
	ctx := context.Background()
	dir := s.Dir(t)
	f := dir + "/log"
	os.WriteFile(f, []byte("abc"), 0o640)

	// pkg/sftp's writes name offset 0 on the handle: the server appends
	// anyway.
	n, err := b.Append(ctx, f, strings.NewReader("XYZ"), 3)
	// The size afterwards is the server's, or -1 (remote.Appender).
	if data, _ := os.ReadFile(f); err != nil || (n != 6 && n != -1) || string(data) != "abcXYZ" {
		t.Fatalf("Append = %d, %v; the server has %q", n, err, data)
	}
	// Many packets at once arrive in order.
	big := make([]byte, 5<<20)
	rand.Read(big)
	n, err = b.Append(ctx, f, bytes.NewReader(big), int64(len(big)))
	data, _ := os.ReadFile(f)
	if err != nil || (n != int64(6+len(big)) && n != -1) || !bytes.Equal(data[6:], big) {
		t.Fatalf("Append of 5 MiB = %d, %v; the server's tail equal: %v", n, err, bytes.Equal(data[6:], big))
	}
	if fi, _ := os.Stat(f); fi.Mode() != 0o640 {
		t.Fatalf("Append changed the mode to %v", fi.Mode())
	}

	// Appenders on two sessions never overwrite each other.
	os.WriteFile(f, nil, 0o644)
	other := s.dial(t)
	var wg sync.WaitGroup
	for i, be := range []posixBackend{b, other} {
		wg.Go(func() {
			for range 50 {
				line := fmt.Sprintf("%d%s\n", i, strings.Repeat("-", 1000))
				if _, err := be.Append(ctx, f, strings.NewReader(line), int64(len(line))); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	data, _ = os.ReadFile(f)
	if lines := strings.Count(string(data), "\n"); len(data) != 100*1002 || lines != 100 {
		t.Fatalf("two appenders left %d bytes in %d lines, want 100 lines", len(data), lines)
	}

	_, err = b.Append(ctx, dir+"/missing", strings.NewReader("x"), 1)
	wantErrno(t, "append to nothing", err, syscall.ENOENT)
	if _, serr := os.Stat(dir + "/missing"); serr == nil {
		t.Fatal("Append created a missing file")
	}
	_, err = b.Append(ctx, dir, strings.NewReader("x"), 1)
	wantErrno(t, "append to a directory", err, syscall.EISDIR)
	_, err = b.Append(ctx, f, strings.NewReader("x"), 2)
	wantErrno(t, "append of a short source", err, syscall.EIO)
}

// createIfMissing: a missing file is made empty with exactly the mode
// asked; an existing one keeps its bytes and mode; two sessions that each
// make a new log and append to it keep every line, and one of them made it.
func createIfMissing(t *testing.T, s Server) {
	b := s.dial(t)
	ctx := context.Background()
	dir := s.Dir(t)
	f := dir + "/new"
	created, err := b.CreateIfMissing(ctx, f, 0o640)
	if fi, serr := os.Stat(f); err != nil || !created || serr != nil || fi.Size() != 0 || fi.Mode() != 0o640 {
		t.Fatalf("CreateIfMissing = %v, %v; on the server: %v, %v", created, err, fi, serr)
	}
	os.WriteFile(f, []byte("theirs"), 0o600)
	os.Chmod(f, 0o600)
	created, err = b.CreateIfMissing(ctx, f, 0o644)
	data, _ := os.ReadFile(f)
	if fi, _ := os.Stat(f); err != nil || created || string(data) != "theirs" || fi.Mode() != 0o600 {
		t.Fatalf("CreateIfMissing of an existing file = %v, %v; the server has %q, mode %v", created, err, data, fi.Mode())
	}
	_, err = b.CreateIfMissing(ctx, dir+"/nodir/f", 0o644)
	wantErrno(t, "create in a missing directory", err, syscall.ENOENT)

	other := s.dial(t)
	log := dir + "/log"
	var made sync.Map
	var wg sync.WaitGroup
	for i, be := range []posixBackend{b, other} {
		wg.Go(func() {
			for j := range 20 {
				created, err := be.CreateIfMissing(ctx, log, 0o644)
				if err != nil {
					t.Error(err)
					return
				}
				if created {
					made.Store(fmt.Sprint(i, j), true)
				}
				line := fmt.Sprintf("%d %2d\n", i, j)
				if _, err := be.Append(ctx, log, strings.NewReader(line), int64(len(line))); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	data, _ = os.ReadFile(log)
	n := 0
	made.Range(func(any, any) bool { n++; return true })
	if lines := strings.Count(string(data), "\n"); lines != 40 || len(data) != 40*5 || n != 1 {
		t.Fatalf("two sessions making and appending to one log left %d lines (%d bytes), made it %d times; want 40 lines, made once", lines, len(data), n)
	}
}

func patches(t *testing.T, s Server) {
	b := s.dial(t)
	ctx := context.Background()
	dir := s.Dir(t)
	f := dir + "/f"

	old := bytes.Repeat([]byte("o"), 3<<20)
	os.WriteFile(f, old, 0o600)
	local := bytes.Repeat([]byte("n"), 4<<20) // what the client's copy holds
	rand.Read(local[1<<20 : 3<<20])
	for _, c := range []struct {
		name   string
		ranges []remote.Range
		size   int64
	}{
		{"in place", []remote.Range{rg(0, 1), rg(100, 200), rg(1<<20, 3<<20)}, 3 << 20},
		{"grow", []remote.Range{rg(3<<20-5, 4<<20)}, 4 << 20},
		{"grow with a hole", nil, 5 << 20},
		{"shrink", []remote.Range{rg(10, 20)}, 1000},
		{"truncate", nil, 0},
	} {
		want, _ := os.ReadFile(f)
		want = append(want, make([]byte, max(0, int(c.size)-len(want)))...)[:c.size]
		for _, r := range c.ranges {
			copy(want[r.Off:r.End], local[r.Off:r.End])
		}
		if err := b.Patch(ctx, f, bytes.NewReader(local), c.ranges, c.size); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got, _ := os.ReadFile(f); !bytes.Equal(got, want) {
			t.Fatalf("%s: the server has %d bytes, not the %d expected", c.name, len(got), len(want))
		}
	}
	if fi, _ := os.Stat(f); fi.Mode() != 0o600 {
		t.Fatalf("Patch changed the mode to %v", fi.Mode())
	}

	wantErrno(t, "patch of nothing", b.Patch(ctx, dir+"/missing", bytes.NewReader(local), nil, 0), syscall.ENOENT)
	wantErrno(t, "patch of a directory", b.Patch(ctx, dir, bytes.NewReader(local), nil, 0), syscall.EISDIR)
	wantErrno(t, "range past size", b.Patch(ctx, f, bytes.NewReader(local), []remote.Range{rg(0, 10)}, 5), syscall.EINVAL)
	err := b.Patch(ctx, f, bytes.NewReader([]byte("short")), []remote.Range{rg(0, 10)}, 10)
	wantErrno(t, "short source", err, syscall.EIO)
}

// TestErrnos checks each errno against what the real server does.
func errnos(t *testing.T, s Server) {
	b := s.dial(t)
	ctx := context.Background()
	dir := s.Dir(t)
	for _, d := range []string{"/dir/sub", "/full/x", "/empty"} {
		os.MkdirAll(dir+d, 0o755)
	}
	os.WriteFile(dir+"/file", []byte("x"), 0o644)
	long := dir + "/" + strings.Repeat("n", 256)
	store := func(p string) error { return b.Store(ctx, p, strings.NewReader("x"), 1, 0o644) }
	for _, c := range []struct {
		name string
		err  error
		want syscall.Errno
	}{
		{"rename a directory onto a non-empty one", b.Rename(ctx, dir+"/empty", dir+"/full"), syscall.ENOTEMPTY},
		{"rename a file onto a directory", b.Rename(ctx, dir+"/file", dir+"/empty"), syscall.EISDIR},
		{"rename a directory onto a file", b.Rename(ctx, dir+"/empty", dir+"/file"), syscall.ENOTDIR},
		{"rename a directory into itself", b.Rename(ctx, dir+"/dir", dir+"/dir/sub/x"), syscall.EINVAL},
		{"rename below a file", b.Rename(ctx, dir+"/file", dir+"/file/x"), syscall.ENOTDIR},
		{"rename nothing", b.Rename(ctx, dir+"/missing", dir+"/x"), syscall.ENOENT},
		{"rename to a long name", b.Rename(ctx, dir+"/file", long), syscall.ENAMETOOLONG},
		{"mkdir over a file", b.Mkdir(ctx, dir+"/file", 0o755), syscall.EEXIST},
		{"mkdir below a file", b.Mkdir(ctx, dir+"/file/d", 0o755), syscall.ENOTDIR},
		{"mkdir in nothing", b.Mkdir(ctx, dir+"/missing/d", 0o755), syscall.ENOENT},
		{"mkdir a long name", b.Mkdir(ctx, long, 0o755), syscall.ENAMETOOLONG},
		{"symlink over a directory", b.Symlink(ctx, "x", dir+"/dir"), syscall.EEXIST},
		{"symlink below a file", b.Symlink(ctx, "x", dir+"/file/l"), syscall.ENOTDIR},
		{"symlink a long name", b.Symlink(ctx, "x", long), syscall.ENAMETOOLONG},
		{"link over a directory", b.Link(ctx, dir+"/file", dir+"/dir"), syscall.EEXIST},
		{"link below a file", b.Link(ctx, dir+"/file", dir+"/file/l"), syscall.ENOTDIR},
		{"link a long name", b.Link(ctx, dir+"/file", long), syscall.ENAMETOOLONG},
		{"store over a directory", store(dir + "/dir"), syscall.EISDIR},
		{"store below a file", store(dir + "/file/x"), syscall.ENOTDIR},
		{"store in nothing", store(dir + "/missing/x"), syscall.ENOENT},
		{"store a long name", store(long), syscall.ENAMETOOLONG},
		{"remove a directory", b.Remove(ctx, dir+"/dir"), syscall.EISDIR},
		{"remove nothing", b.Remove(ctx, dir+"/missing"), syscall.ENOENT},
		{"remove below a file", b.Remove(ctx, dir+"/file/x"), syscall.ENOTDIR},
		{"rmdir a non-empty directory", b.Rmdir(ctx, dir+"/full"), syscall.ENOTEMPTY},
		{"rmdir a file", b.Rmdir(ctx, dir+"/file"), syscall.ENOTDIR},
	} {
		wantErrno(t, c.name, c.err, c.want)
	}
	if _, err := os.Stat(dir + "/empty"); err != nil {
		t.Fatal("a failed rename moved the directory")
	}
}

// mountTmpfs mounts a small tmpfs (root only) with options on a fresh
// directory of the server.
func mountTmpfs(t *testing.T, s Server, options string) string {
	dir := s.Dir(t)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", options, "tmpfs", dir).CombinedOutput(); err != nil {
		testsrv.Unavailable(t, fmt.Sprintf("cannot mount a tmpfs: %v: %s", err, out))
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	return dir
}

func fullAndReadOnlyFS(t *testing.T, s Server) {
	b := s.dial(t)
	ctx := context.Background()

	full := mountTmpfs(t, s, "size=1m,nr_inodes=4")
	os.WriteFile(full+"/f", []byte("x"), 0o644)
	for i := 0; os.Mkdir(fmt.Sprintf("%s/d%d", full, i), 0o755) == nil; i++ {
	}
	wantErrno(t, "mkdir without inodes", b.Mkdir(ctx, full+"/more", 0o755), syscall.ENOSPC)
	wantErrno(t, "symlink without inodes", b.Symlink(ctx, "x", full+"/l"), syscall.ENOSPC)
	_, err := b.Append(ctx, full+"/f", bytes.NewReader(make([]byte, 2<<20)), 2<<20)
	wantErrno(t, "append past the space", err, syscall.ENOSPC)

	ro := mountTmpfs(t, s, "size=1m")
	os.WriteFile(ro+"/f", []byte("x"), 0o644)
	os.Mkdir(ro+"/d", 0o755)
	if out, err := exec.Command("mount", "-o", "remount,ro", ro).CombinedOutput(); err != nil {
		testsrv.Unavailable(t, fmt.Sprintf("cannot remount read-only: %v: %s", err, out))
	}
	wantErrno(t, "mkdir on a read-only fs", b.Mkdir(ctx, ro+"/new", 0o755), syscall.EROFS)
	wantErrno(t, "store on a read-only fs", b.Store(ctx, ro+"/f", strings.NewReader("y"), 1, 0o644), syscall.EROFS)
	wantErrno(t, "new file on a read-only fs", b.Store(ctx, ro+"/g", strings.NewReader("y"), 1, 0o644), syscall.EROFS)
	wantErrno(t, "remove on a read-only fs", b.Remove(ctx, ro+"/f"), syscall.EROFS)
	wantErrno(t, "rmdir on a read-only fs", b.Rmdir(ctx, ro+"/d"), syscall.EROFS)
	wantErrno(t, "rename on a read-only fs", b.Rename(ctx, ro+"/f", ro+"/g"), syscall.EROFS)

	// A rename between two file systems.
	wantErrno(t, "rename across file systems", b.Rename(ctx, full+"/f", s.Dir(t)+"/f"), syscall.EXDEV)
	wantErrno(t, "link across file systems", b.Link(ctx, full+"/f", s.Dir(t)+"/f"), syscall.EXDEV)
}

// storeThroughTemporary: a whole-file store never leaves part of the data
// under the name: one that fills the disk fails with ENOSPC and leaves
// the old file whole and no temporary; one that fits replaces the file,
// which keeps its mode; one over a directory fails with EISDIR.
func storeThroughTemporary(t *testing.T, s Server) {
	b := s.dial(t)
	ctx := context.Background()
	dir := mountTmpfs(t, s, "size=1m")
	defer b.Close() // before the unmount: a session may hold a file open there (SFTP's spares)
	p := dir + "/f"
	old := bytes.Repeat([]byte("old "), 25<<10) // 100 KiB
	if err := os.WriteFile(p, old, 0o600); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 2<<20)
	wantErrno(t, "store 2 MiB into 1 MiB", b.Store(ctx, p, bytes.NewReader(big), int64(len(big)), 0o644), syscall.ENOSPC)
	CheckIntact(t, p, old)
	small := bytes.Repeat([]byte("new "), 10<<10)
	if err := b.Store(ctx, p, bytes.NewReader(small), int64(len(small)), 0o644); err != nil {
		t.Fatal(err)
	}
	CheckIntact(t, p, small)
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the replaced file: %v, %v; want its own mode 0600", fi.Mode(), err)
	}
	if err := os.Mkdir(dir+"/d", 0o755); err != nil {
		t.Fatal(err)
	}
	wantErrno(t, "store over a directory", b.Store(ctx, dir+"/d", strings.NewReader("x"), 1, 0o644), syscall.EISDIR)
	CheckIntact(t, p, small)
}

func cancelAndLeaks(t *testing.T, s Server) {
	dir := s.Dir(t)
	os.WriteFile(dir+"/f", make([]byte, 1<<20), 0o644)
	base := leakcheck.Take(t)
	p := s.Dial(t).(posixBackend)
	ctx := context.Background()
	if _, err := p.Append(ctx, dir+"/f", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	if err := p.Patch(ctx, dir+"/f", bytes.NewReader(make([]byte, 1<<20)), []remote.Range{rg(0, 1<<20)}, 1<<20); err != nil {
		t.Fatal(err)
	}

	// Cancelled mid-transfer with the server stalled: both return, and
	// never read their source again.
	cctx, cancel := context.WithCancel(ctx)
	errs := make(chan error, 2)
	src := newGatedReader(8 << 20)
	go func() { _, err := p.Append(cctx, dir+"/f", src, 8<<20); errs <- err }()
	go func() { errs <- p.Patch(cctx, dir+"/f", src, []remote.Range{rg(0, 8<<20)}, 8<<20) }()
	src.waitReads(2)
	s.Pause()
	cancel()
	src.open()
	for range 2 {
		wantErrno(t, "cancelled", <-errs, syscall.EINTR)
	}
	src.close()
	p.Close()
	s.Resume()
	base.Check(t)
}

// gatedReader is a source whose reads wait until the test opens it, and
// that fails the test when read after it is closed.
type gatedReader struct {
	data   []byte
	gate   chan struct{}
	mu     sync.Mutex
	cond   *sync.Cond
	reads  int
	closed bool
	off    int64
}

func newGatedReader(size int) *gatedReader {
	g := &gatedReader{data: make([]byte, size), gate: make(chan struct{})}
	g.cond = sync.NewCond(&g.mu)
	return g
}

func (g *gatedReader) open() { close(g.gate) }

func (g *gatedReader) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// waitReads waits until n reads have started.
func (g *gatedReader) waitReads(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.reads < n {
		g.cond.Wait()
	}
}

func (g *gatedReader) enter() {
	g.mu.Lock()
	if g.closed {
		panic("the source was read after the operation returned")
	}
	g.reads++
	g.cond.Broadcast()
	g.mu.Unlock()
	<-g.gate
}

func (g *gatedReader) Read(p []byte) (int, error) {
	g.enter()
	g.mu.Lock()
	defer g.mu.Unlock()
	n := copy(p, g.data[min(g.off, int64(len(g.data))):])
	g.off += int64(n)
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

func (g *gatedReader) ReadAt(p []byte, off int64) (int, error) {
	g.enter()
	return copy(p, g.data[off:]), nil
}
