package sftp

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
	"wirefs/internal/remote"
	"wirefs/internal/testsrv"
)

// Tests of what a POSIX program expects of a file on the server: modes
// with their special bits, owners, times, links, statfs, partial writes
// and errnos, each checked on the real server's disk.

func sysStat(t *testing.T, p string) *syscall.Stat_t {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return &st
}

func rg(off, end int64) remote.Range { return remote.Range{Off: off, End: end} }

// serverDir is a fresh directory on the server (the test's own disk).
func serverDir(t *testing.T) string {
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	return dir
}

func TestModesOwnersAndTimes(t *testing.T) {
	e := newEnv(t)
	b := e.dial(t, alias)
	ctx := context.Background()
	dir := serverDir(t)

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
	ro := e.dial(t, fmt.Sprintf("%s@127.0.0.1:%d", e.srv.User, e.srv.ReadOnlyPort))
	wantErrno(t, "chown on a read-only server", ro.Chown(ctx, f, 0, 0), syscall.EPERM)
	wantErrno(t, "chmod on a read-only server", ro.Chmod(ctx, f, 0o600), syscall.EPERM)
	wantErrno(t, "chown of a missing file", b.Chown(ctx, dir+"/missing", 0, 0), syscall.ENOENT)
	wantErrno(t, "chtimes below a file", b.Chtimes(ctx, f+"/x", atime, mtime), syscall.ENOTDIR)
}

func TestLinks(t *testing.T) {
	e := newEnv(t)
	b := e.dial(t, alias)
	ctx := context.Background()
	dir := serverDir(t)
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

func TestStatfs(t *testing.T) {
	e := newEnv(t)
	b := e.dial(t, alias)
	dir := serverDir(t)
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

func TestAppend(t *testing.T) {
	e := newEnv(t)
	b := e.dial(t, alias)
	ctx := context.Background()
	dir := serverDir(t)
	f := dir + "/log"
	os.WriteFile(f, []byte("abc"), 0o640)

	// pkg/sftp's writes name offset 0 on the handle: the server appends
	// anyway.
	n, err := b.Append(ctx, f, strings.NewReader("XYZ"), 3)
	if data, _ := os.ReadFile(f); err != nil || n != 6 || string(data) != "abcXYZ" {
		t.Fatalf("Append = %d, %v; the server has %q", n, err, data)
	}
	// Many packets at once arrive in order.
	big := make([]byte, 5<<20)
	rand.Read(big)
	n, err = b.Append(ctx, f, bytes.NewReader(big), int64(len(big)))
	data, _ := os.ReadFile(f)
	if err != nil || n != int64(6+len(big)) || !bytes.Equal(data[6:], big) {
		t.Fatalf("Append of 5 MiB = %d, %v; the server's tail equal: %v", n, err, bytes.Equal(data[6:], big))
	}
	if fi, _ := os.Stat(f); fi.Mode() != 0o640 {
		t.Fatalf("Append changed the mode to %v", fi.Mode())
	}

	// Appenders on two sessions never overwrite each other.
	os.WriteFile(f, nil, 0o644)
	other := e.dial(t, alias)
	var wg sync.WaitGroup
	for i, be := range []*backend{b, other} {
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

func TestPatch(t *testing.T) {
	e := newEnv(t)
	b := e.dial(t, alias)
	ctx := context.Background()
	dir := serverDir(t)
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
func TestErrnos(t *testing.T) {
	e := newEnv(t)
	b := e.dial(t, alias)
	ctx := context.Background()
	dir := serverDir(t)
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

// TestLongNameNotSent: a name over the limit fails at once, even with the
// server stalled; after Statfs the server's own limit applies.
func TestLongNameNotSent(t *testing.T) {
	e := newEnv(t)
	b := e.dial(t, alias)
	ctx := context.Background()
	dir := serverDir(t)
	if _, err := b.Statfs(ctx, dir); err != nil {
		t.Fatal(err)
	}
	e.srv.Pause()
	defer e.srv.Resume()
	_, err := b.Stat(ctx, dir+"/"+strings.Repeat("x", 256)+"/y")
	wantErrno(t, "stat a long name", err, syscall.ENAMETOOLONG)
	wantErrno(t, "mkdir a long path", b.Mkdir(ctx, strings.Repeat("/x", 2048), 0o755), syscall.ENAMETOOLONG)
}

// mountTmpfs mounts a small tmpfs (root only) with options.
func mountTmpfs(t *testing.T, options string) string {
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", options, "tmpfs", dir).CombinedOutput(); err != nil {
		testsrv.Unavailable(t, fmt.Sprintf("cannot mount a tmpfs: %v: %s", err, out))
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	return dir
}

func TestReadOnlyAndFullServerFS(t *testing.T) {
	e := newEnv(t)
	b := e.dial(t, alias)
	ctx := context.Background()

	full := mountTmpfs(t, "size=1m,nr_inodes=4")
	os.WriteFile(full+"/f", []byte("x"), 0o644)
	for i := 0; os.Mkdir(fmt.Sprintf("%s/d%d", full, i), 0o755) == nil; i++ {
	}
	wantErrno(t, "mkdir without inodes", b.Mkdir(ctx, full+"/more", 0o755), syscall.ENOSPC)
	wantErrno(t, "symlink without inodes", b.Symlink(ctx, "x", full+"/l"), syscall.ENOSPC)
	_, err := b.Append(ctx, full+"/f", bytes.NewReader(make([]byte, 2<<20)), 2<<20)
	wantErrno(t, "append past the space", err, syscall.ENOSPC)

	ro := mountTmpfs(t, "size=1m")
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
	wantErrno(t, "rename across file systems", b.Rename(ctx, full+"/f", t.TempDir()+"/f"), syscall.EXDEV)
	wantErrno(t, "link across file systems", b.Link(ctx, full+"/f", t.TempDir()+"/f"), syscall.EXDEV)
}

func TestPatchAppendCancelAndLeaks(t *testing.T) {
	e := newEnv(t)
	e.o.Timeout = time.Minute // the stall rule must not be what ends them
	dir := serverDir(t)
	os.WriteFile(dir+"/f", make([]byte, 1<<20), 0o644)
	base := leakcheck.Take(t)
	b, err := Dial(context.Background(), alias, e.o)
	if err != nil {
		t.Fatal(err)
	}
	p := b.(remote.Patcher)
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
	e.srv.Pause()
	cancel()
	src.open()
	for range 2 {
		wantErrno(t, "cancelled", <-errs, syscall.EINTR)
	}
	src.close()
	b.Close()
	e.srv.Resume()
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
