package ninep

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"wirefs/internal/leakcheck"
	"wirefs/internal/ns"
	"wirefs/internal/remote"
	"wirefs/internal/remote/session"
	"wirefs/internal/testsrv"
)

// exportDir returns a fresh directory for diod to export. Its ancestors
// are made searchable so that other users (the EACCES test) can reach it.
func exportDir(t *testing.T) string {
	dir := t.TempDir()
	for d := dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func dial(t *testing.T, server string, o remote.Options) *Backend {
	t.Helper()
	be, err := Dial(context.Background(), server, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	return be.(*Backend)
}

func wantErrno(t *testing.T, err error, want syscall.Errno) {
	t.Helper()
	if got := ns.Errno(err); got != want {
		t.Fatalf("got %v (errno %v), want errno %v", err, got, want)
	}
}

func readAll(t *testing.T, b *Backend, p string, off, n int64) []byte {
	t.Helper()
	r, err := b.ReadRange(context.Background(), p, off, n)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func store(t *testing.T, b *Backend, p string, data []byte, perm os.FileMode) {
	t.Helper()
	if err := b.Store(context.Background(), p, bytes.NewReader(data), int64(len(data)), perm); err != nil {
		t.Fatal(err)
	}
}

func names(infos []remote.Info) []string {
	var n []string
	for _, i := range infos {
		n = append(n, i.Name)
	}
	slices.Sort(n)
	return n
}

func TestOperations(t *testing.T) {
	exp := exportDir(t)
	b := dial(t, testsrv.Diod(t, exp), remote.Options{})
	ctx := context.Background()
	f := exp + "/dir/f"

	if err := b.Mkdir(ctx, exp+"/dir", 0o750); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(exp + "/dir"); err != nil || fi.Mode() != os.ModeDir|0o750 {
		t.Fatalf("mkdir made %v, %v; want drwxr-x---", fi.Mode(), err)
	}
	store(t, b, f, []byte("hello, 9p\n"), 0o640)
	if got, err := os.ReadFile(f); err != nil || string(got) != "hello, 9p\n" {
		t.Fatalf("server has %q, %v", got, err)
	}
	if fi, _ := os.Stat(f); fi.Mode() != 0o640 {
		t.Fatalf("created with %v, want -rw-r-----", fi.Mode())
	}

	info, err := b.Stat(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(f)
	if info.Name != "f" || info.Size != 10 || info.Mode != 0o640 || !info.Mtime.Equal(fi.ModTime()) {
		t.Fatalf("stat: %+v; the server has %v %d %v", info, fi.Mode(), fi.Size(), fi.ModTime())
	}
	if info, err := b.Stat(ctx, exp+"/dir"); err != nil || !info.Mode.IsDir() {
		t.Fatalf("stat dir: %+v, %v", info, err)
	}

	if got := string(readAll(t, b, f, 0, -1)); got != "hello, 9p\n" {
		t.Fatalf("read all: %q", got)
	}
	if got := string(readAll(t, b, f, 7, 2)); got != "9p" {
		t.Fatalf("read 7+2: %q", got)
	}
	if got := string(readAll(t, b, f, 7, 100)); got != "9p\n" {
		t.Fatalf("read past the end: %q", got)
	}
	if got := readAll(t, b, f, 100, -1); len(got) != 0 {
		t.Fatalf("read beyond the end: %q", got)
	}

	// Store replaces: shorter contents leave nothing of the old behind,
	// and the mode of an existing file stays.
	store(t, b, f, []byte("bye"), 0o600)
	if got, _ := os.ReadFile(f); string(got) != "bye" {
		t.Fatalf("after replace the server has %q", got)
	}
	if fi, _ := os.Stat(f); fi.Mode() != 0o640 {
		t.Fatalf("replace changed the mode to %v", fi.Mode())
	}
	store(t, b, exp+"/dir/empty", nil, 0o644)

	if err := b.Chmod(ctx, f, 0o604); err != nil {
		t.Fatal(err)
	}
	if err := b.Chmod(ctx, exp+"/dir", 0o755|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if info, _ := b.Stat(ctx, exp+"/dir"); info.Mode != os.ModeDir|os.ModeSticky|0o755 {
		t.Fatalf("after chmod +t: %v", info.Mode)
	}
	if info, _ := b.Stat(ctx, f); info.Mode != 0o604 {
		t.Fatalf("after chmod: %v", info.Mode)
	}

	os.Symlink("f", exp+"/dir/link")
	os.Mkdir(exp+"/dir/sub", 0o700)
	list, err := b.List(ctx, exp+"/dir")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]remote.Info{}
	for _, i := range list {
		byName[i.Name] = i
	}
	if got := names(list); !slices.Equal(got, []string{"empty", "f", "link", "sub"}) {
		t.Fatalf("list: %v", got)
	}
	if i := byName["f"]; i.Size != 3 || i.Mode != 0o604 {
		t.Fatalf("list gives f as %+v", i)
	}
	if i := byName["link"]; i.Mode&os.ModeSymlink == 0 {
		t.Fatalf("list gives link as %+v", i)
	}
	if i := byName["sub"]; i.Mode != os.ModeDir|0o700 {
		t.Fatalf("list gives sub as %+v", i)
	}

	if err := b.Rename(ctx, f, exp+"/g"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(exp + "/g"); err != nil {
		t.Fatal(err)
	}
	_, err = b.Stat(ctx, f)
	wantErrno(t, err, syscall.ENOENT)

	wantErrno(t, b.Rmdir(ctx, exp+"/dir"), syscall.ENOTEMPTY)
	wantErrno(t, b.Remove(ctx, exp+"/dir/sub"), syscall.EISDIR)
	for _, n := range []string{"empty", "link"} {
		if err := b.Remove(ctx, exp+"/dir/"+n); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Rmdir(ctx, exp+"/dir/sub"); err != nil {
		t.Fatal(err)
	}
	if err := b.Rmdir(ctx, exp+"/dir"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(exp + "/dir"); !os.IsNotExist(err) {
		t.Fatalf("rmdir left %v", err)
	}
}

func TestNotFoundAndWrongType(t *testing.T) {
	exp := exportDir(t)
	os.WriteFile(exp+"/file", []byte("x"), 0o644)
	b := dial(t, testsrv.Diod(t, exp), remote.Options{})
	ctx := context.Background()

	_, err := b.Stat(ctx, exp+"/missing")
	wantErrno(t, err, syscall.ENOENT)
	_, err = b.Stat(ctx, exp+"/missing/deeper/still")
	wantErrno(t, err, syscall.ENOENT)
	_, err = b.ReadRange(ctx, exp+"/missing", 0, -1)
	wantErrno(t, err, syscall.ENOENT)
	_, err = b.List(ctx, exp+"/missing")
	wantErrno(t, err, syscall.ENOENT)
	wantErrno(t, b.Remove(ctx, exp+"/missing"), syscall.ENOENT)
	wantErrno(t, b.Mkdir(ctx, exp+"/missing/d", 0o755), syscall.ENOENT)
	_, err = b.List(ctx, exp+"/file")
	wantErrno(t, err, syscall.ENOTDIR)
	_, err = b.ReadRange(ctx, exp, 0, -1)
	wantErrno(t, err, syscall.EISDIR)
	wantErrno(t, b.Mkdir(ctx, exp+"/file", 0o755), syscall.EEXIST)
	if err != nil && !strings.Contains(err.Error(), exp) {
		t.Errorf("the message %q does not name the path", err)
	}
}

// TestLongestPrefixAttach reaches files below an export, with and without
// the server listing its exports, and deeper than one Twalk can go.
func TestLongestPrefixAttach(t *testing.T) {
	exp := exportDir(t)
	deep := exp + strings.Repeat("/d", 20)
	os.MkdirAll(deep, 0o755)
	os.WriteFile(deep+"/f", []byte("deep"), 0o644)
	os.MkdirAll(exp+"/dir", 0o755)
	os.WriteFile(exp+"/dir/f", []byte("shallow"), 0o644)

	for _, withCtl := range []bool{false, true} {
		t.Run(map[bool]string{false: "probing", true: "ctl-exports"}[withCtl], func(t *testing.T) {
			exports := []string{exp}
			if withCtl {
				exports = append(exports, "ctl")
			}
			b := dial(t, testsrv.Diod(t, exports...), remote.Options{})
			if got := string(readAll(t, b, exp+"/dir/f", 0, -1)); got != "shallow" {
				t.Fatalf("read %q", got)
			}
			if got := string(readAll(t, b, deep+"/f", 0, -1)); got != "deep" {
				t.Fatalf("read %q", got)
			}
			if _, err := b.Stat(context.Background(), exp); err != nil {
				t.Fatal(err)
			}
			s, err := session.Call(context.Background(), b.s, "test", "", nil, func(c *conn) (*conn, error) { return c, nil }, nil)
			if err != nil {
				t.Fatal(err)
			}
			var roots []string
			s.mu.Lock()
			for r := range s.roots {
				roots = append(roots, r)
			}
			s.mu.Unlock()
			slices.Sort(roots)
			want := []string{exp, "ctl"}
			if !withCtl {
				// Longest first: the file itself, then each path not yet
				// covered by an accepted root.
				want = []string{exp, exp + "/dir/f", deep + "/f"}
			}
			slices.Sort(want)
			if !slices.Equal(roots, want) {
				t.Errorf("attached %q, want %q", roots, want)
			}
		})
	}
}

// TestSynthesizedParents lists the directories above the exports.
func TestSynthesizedParents(t *testing.T) {
	exp := exportDir(t)
	first := strings.Split(exp, "/")[1] // "tmp"
	ctx := context.Background()

	t.Run("ctl-exports", func(t *testing.T) {
		b := dial(t, testsrv.Diod(t, exp, "ctl"), remote.Options{})
		list, err := b.List(ctx, "/")
		if err != nil {
			t.Fatal(err)
		}
		if got := names(list); !slices.Equal(got, []string{first}) || !list[0].Mode.IsDir() {
			t.Fatalf("/ lists %+v", list)
		}
		for d := path.Dir(exp); d != "/"; d = path.Dir(d) {
			info, err := b.Stat(ctx, d)
			if err != nil || info.Mode != synthesizedMode {
				t.Fatalf("stat %s: %+v, %v", d, info, err)
			}
		}
		list, err = b.List(ctx, path.Dir(exp))
		if err != nil || !slices.Equal(names(list), []string{path.Base(exp)}) {
			t.Fatalf("%s lists %v, %v", path.Dir(exp), names(list), err)
		}
		_, err = b.Stat(ctx, "/not-exported")
		wantErrno(t, err, syscall.ENOENT)
		wantErrno(t, b.Mkdir(ctx, "/tmp/new", 0o755), syscall.EACCES)
	})
	t.Run("probing", func(t *testing.T) {
		b := dial(t, testsrv.Diod(t, exp), remote.Options{})
		// Before anything is attached, "/" is an empty directory.
		if list, err := b.List(ctx, "/"); err != nil || len(list) != 0 {
			t.Fatalf("/ lists %v, %v", list, err)
		}
		if _, err := b.Stat(ctx, exp); err != nil {
			t.Fatal(err)
		}
		list, err := b.List(ctx, "/")
		if err != nil || !slices.Equal(names(list), []string{first}) {
			t.Fatalf("/ lists %v, %v", names(list), err)
		}
	})
}

// TestPermissionDenied attaches as another user. Only root can run diod
// so that it switches to the attaching user; as an ordinary user diod
// serves only the user running it, who owns every file in the test.
func TestPermissionDenied(t *testing.T) {
	if os.Getuid() != 0 {
		testsrv.Unavailable(t, "EACCES needs diod running as root to act as another user")
	}
	exp := exportDir(t)
	os.WriteFile(exp+"/secret", []byte("x"), 0o600)
	os.WriteFile(exp+"/public", []byte("y"), 0o644)
	addr := testsrv.Diod(t, exp)
	ctx := context.Background()
	for _, who := range []string{"nobody", "65534"} {
		b := dial(t, who+"@"+addr, remote.Options{})
		if got := string(readAll(t, b, exp+"/public", 0, -1)); got != "y" {
			t.Fatalf("%s reads %q", who, got)
		}
		_, err := b.ReadRange(ctx, exp+"/secret", 0, -1)
		wantErrno(t, err, syscall.EACCES)
		wantErrno(t, b.Store(ctx, exp+"/new", strings.NewReader(""), 0, 0o644), syscall.EACCES)
		wantErrno(t, b.Remove(ctx, exp+"/public"), syscall.EACCES)
	}
}

func TestLargeRoundTrip(t *testing.T) {
	exp := exportDir(t)
	b := dial(t, testsrv.Diod(t, exp), remote.Options{})
	data := make([]byte, 64<<20)
	rand.Read(data)
	want := sha256.Sum256(data)
	start := time.Now()
	store(t, b, exp+"/big", data, 0o644)
	wrote := time.Since(start)
	start = time.Now()
	r, err := b.ReadRange(context.Background(), exp+"/big", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, err := io.CopyBuffer(h, r, make([]byte, 1<<20))
	r.Close()
	if err != nil || n != int64(len(data)) {
		t.Fatalf("read %d bytes, %v", n, err)
	}
	if got := h.Sum(nil); !bytes.Equal(got, want[:]) {
		t.Fatal("checksum differs after the round trip")
	}
	t.Logf("64 MiB: write %v (%.0f MB/s), read %v (%.0f MB/s)", wrote, 64/wrote.Seconds(), time.Since(start), 64/time.Since(start).Seconds())
}

func TestConcurrentReaders(t *testing.T) {
	exp := exportDir(t)
	data := make([]byte, 4<<20)
	rand.Read(data)
	os.WriteFile(exp+"/f", data, 0o644)
	b := dial(t, testsrv.Diod(t, exp), remote.Options{})
	const readers = 16
	part := int64(len(data) / readers)
	var wg sync.WaitGroup
	errs := make(chan error, readers)
	for i := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := b.ReadRange(context.Background(), exp+"/f", int64(i)*part, part)
			if err != nil {
				errs <- err
				return
			}
			defer r.Close()
			got, err := io.ReadAll(r)
			if err == nil && !bytes.Equal(got, data[int64(i)*part:int64(i+1)*part]) {
				err = errors.New("wrong data")
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestStalledServer pauses the server mid-read: the read fails with
// ETIMEDOUT after Options.Timeout of no progress, and once the server is
// back the next request reconnects by itself.
func TestStalledServer(t *testing.T) {
	exp := exportDir(t)
	os.WriteFile(exp+"/f", make([]byte, 1<<20), 0o644)
	srv := testsrv.StartDiod(t, exp)
	b := dial(t, srv.Addr, remote.Options{Timeout: 500 * time.Millisecond})
	r, err := b.ReadRange(context.Background(), exp+"/f", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	buf := make([]byte, 1000)
	if _, err := io.ReadFull(r, buf); err != nil {
		t.Fatal(err)
	}
	srv.Pause()
	_, err = io.ReadAll(r)
	srv.Resume()
	wantErrno(t, err, syscall.ETIMEDOUT)
	if _, err := b.Stat(context.Background(), exp+"/f"); err != nil {
		t.Fatalf("no reconnect after the server came back: %v", err)
	}
}

// TestServerRestart kills the server mid-read (EIO), restarts it, and
// the session reconnects and attaches again.
func TestServerRestart(t *testing.T) {
	exp := exportDir(t)
	os.WriteFile(exp+"/f", bytes.Repeat([]byte("z"), 1<<20), 0o644)
	srv := testsrv.StartDiod(t, exp)
	b := dial(t, srv.Addr, remote.Options{Timeout: 2 * time.Second})
	r, err := b.ReadRange(context.Background(), exp+"/f", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := io.ReadFull(r, make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	_, err = io.ReadAll(r)
	if e := ns.Errno(err); e != syscall.EIO && e != syscall.ETIMEDOUT {
		t.Fatalf("read from a killed server: %v (errno %v)", err, e)
	}
	_, err = b.Stat(context.Background(), exp+"/f")
	wantErrno(t, err, syscall.ECONNREFUSED) // nobody listens
	srv.Start()
	if got := readAll(t, b, exp+"/f", 0, 3); string(got) != "zzz" {
		t.Fatalf("after restart read %q", got)
	}
	// The server restarts again while the session is idle: the next
	// request notices the dead connection and retries on a new one.
	srv.Kill()
	srv.Start()
	if _, err := b.Stat(context.Background(), exp+"/f"); err != nil {
		t.Fatalf("idle reconnect: %v", err)
	}
}

// TestCancel cancels requests that the (paused) server never answers:
// they return at once, and the connection stays usable for the others.
func TestCancel(t *testing.T) {
	exp := exportDir(t)
	os.WriteFile(exp+"/f", []byte("data"), 0o644)
	srv := testsrv.StartDiod(t, exp)
	b := dial(t, srv.Addr, remote.Options{Timeout: time.Minute})
	r, err := b.ReadRange(context.Background(), exp+"/f", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	srv.Pause()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() {
		_, err := b.Stat(ctx, exp+"/f")
		done <- err
	}()
	go func() {
		done <- b.Store(ctx, exp+"/g", strings.NewReader("abc"), 3, 0o644)
	}()
	cancel()
	for range 2 {
		wantErrno(t, <-done, syscall.EINTR)
	}
	srv.Resume()
	if got, err := io.ReadAll(r); err != nil || string(got) != "data" {
		t.Fatalf("the connection did not survive the cancel: %q, %v", got, err)
	}
}

func TestDialErrors(t *testing.T) {
	ctx := context.Background()
	_, err := Dial(ctx, fmt.Sprintf("127.0.0.1:%d", testsrv.FreePort(t)), remote.Options{})
	wantErrno(t, err, syscall.ECONNREFUSED) // nobody listens
	_, err = Dial(ctx, "bad host", remote.Options{})
	wantErrno(t, err, syscall.EINVAL)
}

func TestNoLeaks(t *testing.T) {
	exp := exportDir(t)
	os.WriteFile(exp+"/f", make([]byte, 1<<20), 0o644)
	srv := testsrv.StartDiod(t, exp)
	base := leakcheck.Take(t)

	b := dial(t, srv.Addr, remote.Options{Timeout: time.Minute})
	ctx := context.Background()
	readAll(t, b, exp+"/f", 0, -1)
	store(t, b, exp+"/g", []byte("x"), 0o644)
	b.List(ctx, exp)
	r, err := b.ReadRange(ctx, exp+"/f", 0, -1) // left open
	if err != nil {
		t.Fatal(err)
	}
	r.Read(make([]byte, 10))
	srv.Pause()
	cctx, cancel := context.WithCancel(ctx)
	go cancel()
	b.Stat(cctx, exp+"/f") // abandoned on a paused server
	b.Close()
	srv.Resume()

	base.Check(t)
	_, err = b.Stat(ctx, exp+"/f")
	wantErrno(t, err, syscall.EIO)
}

// TestRequestsOverlap shows that concurrent reads are in flight together
// on the one connection: with the server paused, all their Treads arrive
// in its socket's receive queue. Serialized requests would stop at one.
func TestRequestsOverlap(t *testing.T) {
	exp := exportDir(t)
	os.WriteFile(exp+"/f", make([]byte, 1<<20), 0o644)
	srv := testsrv.StartDiod(t, exp)
	b := dial(t, srv.Addr, remote.Options{Timeout: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	const readers = 4
	var rs []io.ReadCloser
	for range readers {
		r, err := b.ReadRange(ctx, exp+"/f", 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		rs = append(rs, r)
	}
	srv.Pause()
	defer srv.Resume()
	done := make(chan error, readers)
	for _, r := range rs {
		go func() {
			_, err := r.Read(make([]byte, 100))
			done <- err
		}()
	}
	const treadLen = headerLen + 4 + 8 + 4 // fid, offset, count
	port := srv.Addr[strings.LastIndex(srv.Addr, ":")+1:]
	deadline := time.Now().Add(10 * time.Second)
	for queued := 0; queued != readers*treadLen; queued = serverRecvQueue(t, port) {
		if time.Now().After(deadline) {
			t.Fatalf("the paused server has %d bytes queued, want %d (%d Treads)", queued, readers*treadLen, readers)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	for range readers {
		wantErrno(t, <-done, syscall.EINTR)
	}
}

// serverRecvQueue returns the receive queue of the established TCP socket
// whose local port is port (decimal), from /proc/net/tcp.
func serverRecvQueue(t *testing.T, port string) int {
	data, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Skipf("no /proc/net/tcp: %v", err)
	}
	var p int
	fmt.Sscan(port, &p)
	suffix := fmt.Sprintf(":%04X", p)
	for _, line := range strings.Split(string(data), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 4 && strings.HasSuffix(f[1], suffix) && f[3] == "01" {
			var tx, rx int
			fmt.Sscanf(f[4], "%x:%x", &tx, &rx)
			return rx
		}
	}
	return 0
}
