package cache

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"wirefs/internal/leakcheck"
	"wirefs/internal/ns"
	"wirefs/internal/remote"
)

var bg = context.Background()

// logBuffer collects the cache's log for tests that check what it reports.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func newCache(t *testing.T, limit int64) (*Cache, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	c, err := New(filepath.Join(t.TempDir(), "cache"), limit, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, logs
}

func lookup(t *testing.T, d ns.Dir, p string) ns.Node {
	t.Helper()
	var n ns.Node = d
	for _, name := range strings.Split(p, "/") {
		next, err := n.(ns.Dir).Lookup(bg, name)
		if err != nil {
			t.Fatalf("lookup %s: %v", p, err)
		}
		n = next
	}
	return n
}

func openNode(t *testing.T, n ns.Node, flags int) ns.Handle {
	t.Helper()
	h, err := n.(ns.Opener).Open(bg, ns.Caller{}, flags)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return h
}

func readAll(t *testing.T, h ns.Handle) []byte {
	t.Helper()
	var out []byte
	buf := make([]byte, 64<<10)
	for off := int64(0); ; {
		n, err := h.(ns.ReaderAt).ReadAt(bg, buf, off)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		if n == 0 {
			return out
		}
		out = append(out, buf[:n]...)
		off += int64(n)
	}
}

func cat(t *testing.T, root ns.Dir, p string) []byte {
	t.Helper()
	h := openNode(t, lookup(t, root, p), os.O_RDONLY)
	defer h.Close()
	return readAll(t, h)
}

// writeNew creates p with data and closes it like `cp` does.
func writeNew(t *testing.T, root ns.Dir, p string, data []byte) {
	t.Helper()
	d := root
	if i := strings.LastIndex(p, "/"); i >= 0 {
		d = lookup(t, root, p[:i]).(ns.Dir)
		p = p[i+1:]
	}
	_, h, err := d.(ns.Creator).Create(bg, ns.Caller{}, p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatalf("create %s: %v", p, err)
	}
	if _, err := h.(ns.WriterAt).WriteAt(bg, data, 0); err != nil {
		t.Fatalf("write %s: %v", p, err)
	}
	if err := h.(ns.Flusher).Flush(bg); err != nil {
		t.Fatalf("flush %s: %v", p, err)
	}
	h.Close()
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}

func hasContent(b *localBackend, p string, want []byte) func() bool {
	return func() bool {
		got, err := b.get(p)
		return err == nil && bytes.Equal(got, want)
	}
}

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}

func TestWriteThroughAtFlush(t *testing.T) {
	c, _ := newCache(t, 0)
	b := newLocalBackend(t)
	b.put(t, "/exist", []byte("0123456789"))
	root := c.Root("local://w", b, Options{})

	_, h, err := root.(ns.Creator).Create(bg, ns.Caller{}, "new", os.O_WRONLY|os.O_CREATE, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	h.(ns.WriterAt).WriteAt(bg, []byte("fresh"), 0)
	if err := h.(ns.Flusher).Flush(bg); err != nil {
		t.Fatal(err)
	}
	if !hasContent(b, "/new", []byte("fresh"))() {
		t.Fatal("Flush returned before the server had the file")
	}
	h.Close()
	if fi, _ := os.Stat(b.local("/new")); fi.Mode().Perm() != 0o640 {
		t.Fatalf("created with mode %v", fi.Mode())
	}

	// A write into the middle of a file the cache had not read: the rest
	// of the file is fetched first.
	h = openNode(t, lookup(t, root, "exist"), os.O_RDWR)
	h.(ns.WriterAt).WriteAt(bg, []byte("ab"), 3)
	if err := h.(ns.Flusher).Flush(bg); err != nil {
		t.Fatal(err)
	}
	h.Close()
	if got, _ := b.get("/exist"); string(got) != "012ab56789" {
		t.Fatalf("server has %q", got)
	}
	if n, p := b.n("Store"), b.n("Patch"); n != 1 || p != 1 {
		t.Fatalf("%d stores and %d patches, want the new file stored and the change patched", n, p)
	}
	// Reading back costs nothing: the cache has the file.
	before := b.total()
	if got := cat(t, root, "exist"); string(got) != "012ab56789" {
		t.Fatalf("read back %q", got)
	}
	if b.total() != before {
		t.Fatal("reading a file just written went to the server")
	}
}

func TestDelayedWriteBackCoalesces(t *testing.T) {
	c, _ := newCache(t, 0)
	b := newLocalBackend(t)
	b.put(t, "/d", []byte("original"))
	root := c.Root("local://d", b, Options{TWrite: new(500 * time.Millisecond)})
	n := lookup(t, root, "d")
	var last []byte
	for i := range 3 {
		last = []byte(fmt.Sprintf("version %d", i))
		h := openNode(t, n, os.O_WRONLY|os.O_TRUNC)
		h.(ns.WriterAt).WriteAt(bg, last, 0)
		if err := h.(ns.Flusher).Flush(bg); err != nil {
			t.Fatal(err)
		}
		h.Close()
	}
	if got, _ := b.get("/d"); string(got) != "original" {
		t.Fatalf("with T_write > 0 the server got %q at close", got)
	}
	waitFor(t, "the delayed write-back", hasContent(b, "/d", last))
	// Nothing is left to send (another write-back would be pending).
	waitFor(t, "an empty .wirefs/writeback", func() bool {
		var status strings.Builder
		c.WriteStatus(&status)
		return status.Len() == 0
	})
	if s := b.writes(); s != 1 {
		t.Fatalf("%d write-backs for three closes within T_write, want 1", s)
	}
}

func TestFailedStoreIsRetriedNotLost(t *testing.T) {
	c, logs := newCache(t, 0)
	b := newLocalBackend(t)
	b.storeErrs = []error{ns.Errorf(syscall.EIO, "connection lost"), ns.Errorf(syscall.EIO, "connection lost")}
	root := c.Root("local://f", b, Options{})
	_, h, err := root.(ns.Creator).Create(bg, ns.Caller{}, "precious", os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	h.(ns.WriterAt).WriteAt(bg, []byte("do not lose me"), 0)
	if err := h.(ns.Flusher).Flush(bg); ns.Errno(err) != syscall.EIO {
		t.Fatalf("Flush with a failing server: %v, want EIO", err)
	}
	h.Close()
	waitFor(t, "the retried write-back", hasContent(b, "/precious", []byte("do not lose me")))
	if !strings.Contains(logs.String(), "write-back failed") {
		t.Fatalf("the failure was not logged:\n%s", logs)
	}
}

func TestStoreENOSPCReachesClose(t *testing.T) {
	c, _ := newCache(t, 0)
	b := newLocalBackend(t)
	b.storeErrs = []error{ns.Errorf(syscall.ENOSPC, "no space left on the server")}
	root := c.Root("local://n", b, Options{})
	_, h, err := root.(ns.Creator).Create(bg, ns.Caller{}, "big", os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	h.(ns.WriterAt).WriteAt(bg, []byte("data"), 0)
	if err := h.(ns.Flusher).Flush(bg); ns.Errno(err) != syscall.ENOSPC {
		t.Fatalf("Flush: %v, want ENOSPC", err)
	}
	if err := h.(ns.Syncer).Sync(bg); err != nil {
		t.Fatalf("fsync after the server has room: %v", err)
	}
	if !hasContent(b, "/big", []byte("data"))() {
		t.Fatal("fsync returned before the server had the file")
	}
	h.Close()
}

// TestRefusedStoreWaitsForTheUser: a store the server refuses for good
// is not retried on a timer; it shows in the write-back status, and the
// next fsync tries again.
func TestRefusedStoreWaitsForTheUser(t *testing.T) {
	c, logs := newCache(t, 0)
	b := newLocalBackend(t)
	b.storeErrs = []error{ns.Errorf(syscall.EDQUOT, "quota exceeded")}
	root := c.Root("local://q", b, Options{})
	_, h, err := root.(ns.Creator).Create(bg, ns.Caller{}, "over quota", os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	h.(ns.WriterAt).WriteAt(bg, []byte("keep me"), 0)
	if err := h.(ns.Flusher).Flush(bg); ns.Errno(err) != syscall.EDQUOT {
		t.Fatalf("Flush: %v, want EDQUOT", err)
	}
	f := lookup(t, root, "over quota").(*file)
	f.mu.Lock()
	scheduled := f.timer != nil
	f.mu.Unlock()
	if scheduled {
		t.Fatal("a refused store was scheduled for a retry")
	}
	var status strings.Builder
	c.WriteStatus(&status)
	if want := "local://q \"/over quota\" 7 refused EDQUOT "; !strings.HasPrefix(status.String(), want) {
		t.Fatalf("status %q, want a line starting %q", status.String(), want)
	}
	if !strings.Contains(logs.String(), "refuses the changes") {
		t.Fatalf("not logged:\n%s", logs)
	}
	if err := h.(ns.Syncer).Sync(bg); err != nil {
		t.Fatalf("fsync once the server accepts: %v", err)
	}
	if !hasContent(b, "/over quota", []byte("keep me"))() {
		t.Fatal("fsync returned before the server had the file")
	}
	status.Reset()
	c.WriteStatus(&status)
	if status.Len() != 0 {
		t.Fatalf("status after the store: %q", status.String())
	}
}

// kill stops c as a killed daemon stops: no write-back, no record, no
// timer runs after it, and the kernel drops its lock.
func kill(c *Cache) {
	c.cancel()
	c.wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.trees {
		t.closing.Store(true)
		t.goMu.Lock()
		t.stopped = true
		t.goMu.Unlock()
		for _, f := range t.dirtyFiles() {
			f.stopTimer()
		}
		t.cancel()
		t.wg.Wait()
	}
	c.slot.release()
}

func TestCrashRecovery(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	b := newLocalBackend(t)
	b.put(t, "/old", []byte("server version"))
	c1, err := New(dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	// TWrite keeps the changes in the cache; the daemon then "dies":
	// no Flush, no Close.
	root := c1.Root("local://crash", b, Options{TWrite: new(time.Hour)})
	_, h, err := root.(ns.Creator).Create(bg, ns.Caller{}, "new", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	h.(ns.WriterAt).WriteAt(bg, []byte("written before the crash"), 0)
	h2 := openNode(t, lookup(t, root, "old"), os.O_RDWR)
	h2.(ns.WriterAt).WriteAt(bg, []byte("cached"), 0)
	if b.n("Store") != 0 {
		t.Fatal("stored before the crash")
	}
	kill(c1)

	c2, err := New(dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	c2.Root("local://crash", b, Options{})
	waitFor(t, "recovery of the new file", hasContent(b, "/new", []byte("written before the crash")))
	waitFor(t, "recovery of the changed file", hasContent(b, "/old", []byte("cached version")))
	if fi, _ := os.Stat(b.local("/new")); fi.Mode().Perm() != 0o600 {
		t.Fatalf("recovered with mode %v", fi.Mode())
	}
}

// TestCrashWithTWriteZero: with T_write = 0 a change whose close has not
// returned is not recorded as dirty (a killed daemon drops it, as a local
// file system drops unsynced writes), but neither is its data file taken
// for the server's clean copy after a restart; a change whose write-back
// failed at close is recorded, and the next daemon writes it back.
func TestCrashWithTWriteZero(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	b := newLocalBackend(t)
	b.put(t, "/open", []byte("server version"))
	b.put(t, "/failed", []byte("server version"))
	c1, err := New(dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	root := c1.Root("local://crash0", b, Options{})
	if got := cat(t, root, "open"); string(got) != "server version" {
		t.Fatalf("read %q", got)
	}
	h := openNode(t, lookup(t, root, "open"), os.O_RDWR)
	h.(ns.WriterAt).WriteAt(bg, []byte("SERVER"), 0) // no close: the daemon dies first
	h2 := openNode(t, lookup(t, root, "failed"), os.O_WRONLY|os.O_APPEND)
	h2.(ns.WriterAt).WriteAt(bg, []byte(" and more"), 0)
	b.mu.Lock()
	b.storeErrs = []error{ns.Errorf(syscall.EIO, "the connection broke")}
	b.mu.Unlock()
	if err := h2.(ns.Flusher).Flush(bg); err == nil {
		t.Fatal("the write-back did not fail")
	}
	kill(c1)

	c2, err := New(dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	root2 := c2.Root("local://crash0", b, Options{})
	waitFor(t, "recovery of the change whose write-back failed", hasContent(b, "/failed", []byte("server version and more")))
	if got := cat(t, root2, "open"); string(got) != "server version" {
		t.Fatalf("after the crash the unsent change reads %q, want the server's version", got)
	}
	if got, _ := os.ReadFile(b.local("/open")); string(got) != "server version" {
		t.Fatalf("the server has %q", got)
	}
}

func TestReadOnlyIsEROFS(t *testing.T) {
	c, _ := newCache(t, 0)
	lb := newLocalBackend(t)
	lb.put(t, "/f", []byte("x"))
	lb.put(t, "/d/g", []byte("y"))
	for name, root := range map[string]ns.Dir{
		"backend without Writer": c.Root("local://ro1", readOnlyBackend{lb}, Options{}),
		"ReadOnly option":        c.Root("local://ro2", lb, Options{ReadOnly: true}),
	} {
		f := lookup(t, root, "f")
		size := int64(0)
		for what, err := range map[string]error{
			"open for writing": func() error { _, err := f.(ns.Opener).Open(bg, ns.Caller{}, os.O_WRONLY); return err }(),
			"create": func() error {
				_, _, err := root.(ns.Creator).Create(bg, ns.Caller{}, "n", os.O_CREATE|os.O_WRONLY, 0o644)
				return err
			}(),
			"mkdir":    func() error { _, err := root.(ns.Mkdirer).Mkdir(bg, "m", 0o755); return err }(),
			"remove":   root.(ns.Remover).Remove(bg, "f", false),
			"rmdir":    root.(ns.Remover).Remove(bg, "d", true),
			"rename":   root.(ns.Renamer).Rename(bg, "f", root, "f2"),
			"truncate": func() error { _, err := f.(ns.Setattrer).Setattr(bg, nil, ns.SetAttr{Size: &size}); return err }(),
		} {
			if ns.Errno(err) != syscall.EROFS {
				t.Errorf("%s: %s: %v, want EROFS", name, what, err)
			}
		}
		if got := cat(t, root, "f"); string(got) != "x" {
			t.Errorf("%s: reading gave %q", name, got)
		}
	}
	if lb.n("Store")+lb.n("Mkdir")+lb.n("Remove")+lb.n("Rmdir")+lb.n("Rename") != 0 {
		t.Fatal("a read-only mount changed the server")
	}
}

func TestEvictionKeepsLimitAndDirtyData(t *testing.T) {
	const limit = 100 << 10
	c, _ := newCache(t, limit)
	b := newLocalBackend(t)
	for i := range 6 {
		b.put(t, fmt.Sprintf("/f%d", i), pattern(40<<10))
	}
	root := c.Root("local://e", b, Options{TRead: new(time.Hour), TWrite: new(time.Hour)})
	dirty := pattern(150 << 10)
	writeNew(t, root, "dirty", dirty)
	onDisk := func() (n int64) {
		filepath.Walk(c.dir, func(p string, fi os.FileInfo, err error) error {
			if err == nil && strings.HasSuffix(p, ".data") {
				n += fi.Size()
			}
			return nil
		})
		return n
	}
	for i := range 6 {
		cat(t, root, fmt.Sprintf("f%d", i))
		// Eviction follows the end of each fetch.
		waitFor(t, fmt.Sprintf("clean data within the limit after reading f%d", i), func() bool {
			c.lruMu.Lock()
			used := c.used
			c.lruMu.Unlock()
			return used <= limit && onDisk() <= limit+int64(len(dirty))
		})
	}
	// The dirty file (beyond the limit on its own) is intact and still
	// read from the cache.
	before := b.n("ReadRange")
	if got := cat(t, root, "dirty"); !bytes.Equal(got, dirty) {
		t.Fatal("dirty data damaged")
	}
	if b.n("ReadRange") != before {
		t.Fatal("dirty data were evicted")
	}
	// The most recent file survived, the oldest did not.
	before = b.n("ReadRange")
	cat(t, root, "f5")
	if b.n("ReadRange") != before {
		t.Fatal("the most recently used file was evicted")
	}
	cat(t, root, "f0")
	if b.n("ReadRange") == before {
		t.Fatal("the least recently used file was not evicted")
	}
}

func TestCacheDirIsPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := New(dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b := newLocalBackend(t)
	c.Root("local://x", b, Options{})
	for _, p := range []string{dir, c.sessionDir("local://x")} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s has mode %v, want 0700", p, fi.Mode().Perm())
		}
	}
	if key, _ := os.ReadFile(filepath.Join(c.sessionDir("local://x"), "key")); string(key) != "local://x\n" {
		t.Fatalf("key file says %q", key)
	}
}

func TestReadDirIsOneList(t *testing.T) {
	c, _ := newCache(t, 0)
	b := newLocalBackend(t)
	for i := range 50 {
		b.put(t, fmt.Sprintf("/dir/file%02d", i), pattern(i*10))
	}
	os.Mkdir(b.local("/dir/sub"), 0o755)
	// Without readdir-ahead, which lists sub too (prefetch_test.go).
	root := c.Root("local://ls", b, Options{ReaddirAhead: new(0)})
	d := lookup(t, root, "dir").(ns.Dir)
	before := b.total()
	ents, err := d.ReadDir(bg)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 51 {
		t.Fatalf("%d entries", len(ents))
	}
	// What `ls -l` does next: look up and stat each entry.
	for _, e := range ents {
		n, err := d.Lookup(bg, e.Name)
		if err != nil {
			t.Fatal(err)
		}
		a, err := n.Attr(bg)
		if err != nil {
			t.Fatal(err)
		}
		if a != e.Attr {
			t.Fatalf("%s: Attr %+v, listing %+v", e.Name, a, e.Attr)
		}
		if e.Name == "file07" && a.Size != 70 {
			t.Fatalf("file07 has size %d", a.Size)
		}
		if e.Name == "sub" && !a.Mode.IsDir() {
			t.Fatal("sub is not a directory")
		}
	}
	if _, err := d.Lookup(bg, "missing"); ns.Errno(err) != syscall.ENOENT {
		t.Fatalf("missing: %v", err)
	}
	if calls := b.total() - before; calls != 1 || b.n("List") != 1 {
		t.Fatalf("ls -l cost %d server calls, want one List", calls)
	}
}

// A directory just made is known without asking: cp -r stats each
// directory it makes, which cost a Stat each (over FTP a listing of the
// parent, two and a half round trips).
func TestMkdirKnowsItsDirectory(t *testing.T) {
	c, _ := newCache(t, 0)
	b := newLocalBackend(t)
	root := c.Root("local://m", b, Options{TRead: new(time.Hour)})
	d, err := root.(ns.Mkdirer).Mkdir(bg, "d", 0o750)
	if err != nil {
		t.Fatal(err)
	}
	before := b.total()
	a, err := d.Attr(bg)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Mode.IsDir() || a.Mode.Perm() != 0o750 {
		t.Fatalf("the new directory's mode is %v, want drwxr-x---", a.Mode)
	}
	if _, err := d.(ns.Dir).Lookup(bg, "f"); ns.Errno(err) != syscall.ENOENT {
		t.Fatalf("lookup in the new directory: %v, want ENOENT", err)
	}
	if calls := b.total() - before; calls != 0 {
		t.Fatalf("stat of a directory just made cost %d server calls, want none", calls)
	}
}

// A file or directory made in a directory changes the directory's mtime,
// which the cache sets itself instead of asking (gcc stats "." at every
// compile, and the kernel forgets a directory's attributes at each create
// in it); a subdirectory made changes a link count the server reports
// (9P), which is asked for.
func TestDirChangedKeepsItsAttributes(t *testing.T) {
	c, _ := newCache(t, 0)
	b := newLocalBackend(t)
	root := c.Root("local://m", b, Options{TRead: new(time.Hour)})
	d, err := root.(ns.Mkdirer).Mkdir(bg, "d", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	before, err := d.Attr(bg)
	if err != nil {
		t.Fatal(err)
	}
	calls := b.total()
	writeNew(t, root, "d/f", []byte("a new entry"))
	if err := d.(ns.Remover).Remove(bg, "f", false); err != nil {
		t.Fatal(err)
	}
	calls = b.total() - calls // the store and the removal
	n := b.total()
	after, err := d.Attr(bg)
	if err != nil {
		t.Fatal(err)
	}
	if b.total() != n {
		t.Fatalf("stat of a directory after a file was made in it cost %d server calls, want none", b.total()-n)
	}
	if !after.Mtime.After(before.Mtime) {
		t.Fatalf("the directory's mtime stayed %v after a file was made in it", after.Mtime)
	}
	if calls == 0 {
		t.Fatal("the file never reached the server")
	}
	if _, err := d.(ns.Mkdirer).Mkdir(bg, "sub", 0o755); err != nil {
		t.Fatal(err)
	}
	n = b.n("Stat")
	if _, err := d.Attr(bg); err != nil || b.n("Stat") != n {
		t.Fatalf("stat of a directory after a subdirectory was made in it: %v, %d server calls, want none (no link count known)", err, b.n("Stat")-n)
	}

	// A server that reports link counts (9P).
	b.mu.Lock()
	b.nlink = true
	b.mu.Unlock()
	if err := os.Mkdir(b.local("/e"), 0o755); err != nil {
		t.Fatal(err)
	}
	e, err := root.(ns.Dir).Lookup(bg, "e")
	if err != nil {
		t.Fatal(err)
	}
	if a, err := e.Attr(bg); err != nil || a.Nlink != 2 {
		t.Fatalf("a directory's link count %d, %v; want 2", a.Nlink, err)
	}
	if _, err := e.(ns.Mkdirer).Mkdir(bg, "sub", 0o755); err != nil {
		t.Fatal(err)
	}
	n = b.n("Stat")
	a, err := e.Attr(bg)
	if err != nil || b.n("Stat") != n+1 || a.Nlink != 3 {
		t.Fatalf("stat of a directory after a subdirectory was made in it: nlink %d, %v, %d server calls, want 3 from one Stat (its link count changed)", a.Nlink, err, b.n("Stat")-n)
	}
}

func TestMkdirRenameRemove(t *testing.T) {
	c, _ := newCache(t, 0)
	b := newLocalBackend(t)
	root := c.Root("local://m", b, Options{TRead: new(time.Hour)})
	if _, err := root.ReadDir(bg); err != nil {
		t.Fatal(err)
	}
	d, err := root.(ns.Mkdirer).Mkdir(bg, "d", 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(b.local("/d")); err != nil || !fi.IsDir() {
		t.Fatalf("mkdir did not reach the server: %v", err)
	}
	writeNew(t, root, "d/f", []byte("moving data"))
	if err := d.(ns.Renamer).Rename(bg, "f", root, "g"); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.get("/g"); string(got) != "moving data" {
		t.Fatalf("server has %q at the new name", got)
	}
	before := b.n("ReadRange")
	if got := cat(t, root, "g"); string(got) != "moving data" {
		t.Fatalf("read %q", got)
	}
	if b.n("ReadRange") != before {
		t.Fatal("the cached data did not move with the rename")
	}
	names := func(d ns.Dir) string {
		ents, err := d.ReadDir(bg)
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, e := range ents {
			s = append(s, e.Name)
		}
		return strings.Join(s, " ")
	}
	if got := names(root); got != "d g" {
		t.Fatalf("root lists %q", got)
	}
	if got := names(d.(ns.Dir)); got != "" {
		t.Fatalf("d lists %q", got)
	}
	if err := root.(ns.Remover).Remove(bg, "g", false); err != nil {
		t.Fatal(err)
	}
	if err := root.(ns.Remover).Remove(bg, "d", true); err != nil {
		t.Fatal(err)
	}
	if got := names(root); got != "" {
		t.Fatalf("root lists %q after removals", got)
	}
	if ents, _ := os.ReadDir(b.root); len(ents) != 0 {
		t.Fatalf("server still has %d entries", len(ents))
	}
	if _, err := root.Lookup(bg, "g"); ns.Errno(err) != syscall.ENOENT {
		t.Fatalf("lookup after remove: %v", err)
	}
}

func TestServersDialOnceAndRetryFailures(t *testing.T) {
	c, _ := newCache(t, 0)
	b := newLocalBackend(t)
	b.put(t, "/hello", []byte("hi"))
	var mu sync.Mutex
	dials := map[string]int{}
	slow := make(chan struct{})
	defer close(slow)
	dial := func(ctx context.Context, server string, o remote.Options) (remote.Backend, error) {
		mu.Lock()
		dials[server]++
		n := dials[server]
		mu.Unlock()
		switch server {
		case "slow":
			select {
			case <-slow:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		case "flaky":
			if n == 1 {
				return nil, ns.Errorf(syscall.ECONNREFUSED, "flaky: connection refused")
			}
		}
		time.Sleep(50 * time.Millisecond) // so that concurrent lookups overlap
		return b, nil
	}
	s := c.Servers("local", dial, remote.Options{}, Options{})
	go s.Lookup(bg, "slow") // never answers during the test

	var wg sync.WaitGroup
	roots := make([]ns.Node, 5)
	for i := range roots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			roots[i], _ = s.Lookup(bg, "me@host")
		}()
	}
	wg.Wait()
	for _, r := range roots {
		if r == nil || r != roots[0] {
			t.Fatal("concurrent lookups did not all get the same session")
		}
	}
	if got := cat(t, roots[0].(ns.Dir), "hello"); string(got) != "hi" {
		t.Fatalf("read %q", got)
	}
	if _, err := s.Lookup(bg, "flaky"); ns.Errno(err) != syscall.ECONNREFUSED {
		t.Fatalf("failed dial: %v, want ECONNREFUSED", err)
	}
	if _, err := s.Lookup(bg, "flaky"); err != nil {
		t.Fatalf("the second lookup did not dial again: %v", err)
	}
	mu.Lock()
	if dials["me@host"] != 1 || dials["flaky"] != 2 {
		t.Fatalf("dials: %v", dials)
	}
	mu.Unlock()
	ents, err := s.ReadDir(bg)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 2 || ents[0].Name != "flaky" || ents[1].Name != "me@host" {
		t.Fatalf("ReadDir lists %v", ents)
	}
	ctx, cancel := context.WithTimeout(bg, 50*time.Millisecond)
	defer cancel()
	if _, err := s.Lookup(ctx, "slow"); ns.Errno(err) != syscall.ETIMEDOUT {
		t.Fatalf("lookup of a stalled server: %v", err)
	}
}

func TestNoLeaksAfterClose(t *testing.T) {
	b := newLocalBackend(t)
	b.put(t, "/r", pattern(3<<20))
	b.put(t, "/dir/x", []byte("x"))
	dir := filepath.Join(t.TempDir(), "cache")
	base := leakcheck.Take(t)

	c, err := New(dir, 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	root := c.Root("local://leak", b, Options{TWrite: new(time.Hour)})
	cat(t, root, "r") // read-ahead, eviction
	lookup(t, root, "dir").(ns.Dir).ReadDir(bg)
	writeNew(t, root, "dir/y", []byte("pending")) // a delayed write-back: Close stores it
	h := openNode(t, lookup(t, root, "r"), os.O_RDONLY)
	h.(ns.ReaderAt).ReadAt(bg, make([]byte, 10), 0)
	h.Close()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.get("/dir/y"); string(got) != "pending" {
		t.Fatalf("Close did not write back: server has %q", got)
	}
	base.Check(t)
	if !b.closed {
		t.Fatal("the session was not closed")
	}
}

func TestRenameDirectoryMovesCachedFiles(t *testing.T) {
	c, _ := newCache(t, 0)
	b := newLocalBackend(t)
	b.put(t, "/a/x", []byte("inside"))
	root := c.Root("local://rd", b, Options{TRead: new(time.Hour)})
	cat(t, root, "a/x")
	if err := root.(ns.Renamer).Rename(bg, "a", root, "b"); err != nil {
		t.Fatal(err)
	}
	reads := b.n("ReadRange")
	if got := cat(t, root, "b/x"); string(got) != "inside" {
		t.Fatalf("read %q", got)
	}
	if b.n("ReadRange") != reads {
		t.Fatal("cached data did not follow the directory")
	}
	if _, err := root.Lookup(bg, "a"); ns.Errno(err) != syscall.ENOENT {
		t.Fatalf("old name: %v", err)
	}
	if _, _, err := root.(ns.Creator).Create(bg, ns.Caller{}, "b", os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); ns.Errno(err) != syscall.EEXIST {
		t.Fatalf("O_EXCL on an existing name: %v", err)
	}
	if err := root.(ns.Renamer).Rename(bg, "b", readOnlyDir{}, "c"); ns.Errno(err) != syscall.EXDEV {
		t.Fatalf("rename to another server: %v", err)
	}
}

// readOnlyDir is a directory of some other provider.
type readOnlyDir struct{}

func (readOnlyDir) Attr(context.Context) (ns.Attr, error)           { return ns.Attr{Mode: os.ModeDir}, nil }
func (readOnlyDir) Lookup(context.Context, string) (ns.Node, error) { return nil, nil }
func (readOnlyDir) ReadDir(context.Context) ([]ns.DirEntry, error)  { return nil, nil }

// A clean cached file costs one file on disk (its record is an attribute
// of the data file), and Close leaves no spare data files behind.
func TestCleanRecordIsOneFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	b := newLocalBackend(t)
	for _, p := range []string{"/a", "/b", "/c"} {
		b.put(t, p, []byte("data of "+p))
	}
	c, err := New(dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	root := c.Root("local://one", b, Options{TRead: new(time.Hour)})
	for _, p := range []string{"a", "b", "c"} {
		cat(t, root, p)
	}
	writeNew(t, root, "d", []byte("written")) // dirty, then clean after the write-back
	c.Close()
	var data, meta int
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		switch filepath.Ext(p) {
		case ".data":
			data++
		case ".meta":
			meta++
		}
		return nil
	})
	if c.noXattr.Load() {
		t.Skip("the file system has no user extended attributes")
	}
	if data != 4 || meta != 0 {
		t.Fatalf("%d data files and %d records on disk, want 4 and 0", data, meta)
	}
}

func (l *logBuffer) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Reset()
}
