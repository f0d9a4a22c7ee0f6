package cache

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"wirefs/internal/leakcheck"
	"wirefs/internal/ns"
	"wirefs/internal/provider/sftp"
	"wirefs/internal/remote"
	"wirefs/internal/testsrv"
)

// The prefetch tests run against a real OpenSSH server. watched, around
// the SFTP backend, counts the requests the cache sends and can hold the
// background ones (remote.IsBackground) at a gate before they reach the
// server, to look at what is in flight.

// sshHome starts sshd and returns a home whose ~/.ssh names it "testhost".
func sshHome(tb testing.TB) string {
	s := testsrv.StartSSHD(tb)
	home := tb.TempDir()
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	config := fmt.Sprintf("Host testhost\n  HostName 127.0.0.1\n  Port %d\n  User %s\n  IdentityFile %s\n", s.Port, s.User, s.UserKeyFile)
	os.WriteFile(filepath.Join(home, ".ssh", "config"), []byte(config), 0o600)
	os.WriteFile(filepath.Join(home, ".ssh", "known_hosts"), []byte(s.KnownHostsLine()+"\n"), 0o600)
	tb.Setenv("SSH_AUTH_SOCK", "")
	return home
}

// sftpTree dials testhost (sshHome) and returns the cache's node of the
// server directory srv. The caller closes c.
func sftpTree(tb testing.TB, home, srv string, c *Cache, o Options, wrap func(remote.Backend) remote.Backend) ns.Dir {
	tb.Helper()
	be, err := sftp.Dial(context.Background(), "testhost", remote.Options{Home: home, Timeout: 30 * time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	if wrap != nil {
		be = wrap(be)
	}
	var d ns.Node = c.Root("sftp://testhost", be, o)
	for _, name := range splitPath(srv) {
		if d, err = d.(ns.Dir).Lookup(context.Background(), name); err != nil {
			tb.Fatal(err)
		}
	}
	return d.(ns.Dir)
}

// watched counts a backend's requests.
type watched struct {
	remote.Backend

	mu          sync.Mutex
	reads       map[string]int // ReadRange by path
	bytes       int64          // bytes ReadRange delivered
	lists       map[string]int // List by path
	inflight    int            // background requests between their start and their end
	maxInflight int
	hold        chan struct{} // non-nil: background requests wait here until it is closed
	held        int           // background requests waiting at hold
	// asked, when set, is called with the name of every Stat and List
	// a program asks for (not remote.Background), as it is sent.
	asked func(op string)
}

// The writes pass through (for the dirty file of the cache-limit test).
func (w *watched) Store(ctx context.Context, p string, r io.Reader, size int64, perm os.FileMode) error {
	return w.Backend.(remote.Writer).Store(ctx, p, r, size, perm)
}
func (w *watched) Mkdir(ctx context.Context, p string, perm os.FileMode) error {
	return w.Backend.(remote.Writer).Mkdir(ctx, p, perm)
}
func (w *watched) Remove(ctx context.Context, p string) error {
	return w.Backend.(remote.Writer).Remove(ctx, p)
}
func (w *watched) Rmdir(ctx context.Context, p string) error {
	return w.Backend.(remote.Writer).Rmdir(ctx, p)
}
func (w *watched) Rename(ctx context.Context, from, to string) error {
	return w.Backend.(remote.Writer).Rename(ctx, from, to)
}
func (w *watched) Chmod(ctx context.Context, p string, perm os.FileMode) error {
	return w.Backend.(remote.Writer).Chmod(ctx, p, perm)
}

func newWatched(b remote.Backend) *watched {
	return &watched{Backend: b, reads: map[string]int{}, lists: map[string]int{}}
}

// begin counts a request; a background one may wait at the gate.
func (w *watched) begin(ctx context.Context) (end func(), err error) {
	if !remote.IsBackground(ctx) {
		return func() {}, nil
	}
	w.mu.Lock()
	w.inflight++
	w.maxInflight = max(w.maxInflight, w.inflight)
	hold := w.hold
	if hold != nil {
		w.held++
	}
	w.mu.Unlock()
	end = func() {
		w.mu.Lock()
		w.inflight--
		w.mu.Unlock()
	}
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			err = ctx.Err()
		}
		w.mu.Lock()
		w.held--
		w.mu.Unlock()
	}
	if err != nil {
		end()
		return nil, err
	}
	return end, nil
}

func (w *watched) Stat(ctx context.Context, p string) (remote.Info, error) {
	w.ask(ctx, "stat "+p)
	return w.Backend.Stat(ctx, p)
}

func (w *watched) ask(ctx context.Context, op string) {
	w.mu.Lock()
	asked := w.asked
	w.mu.Unlock()
	if asked != nil && !remote.IsBackground(ctx) {
		asked(op)
	}
}

func (w *watched) List(ctx context.Context, p string) ([]remote.Info, error) {
	w.ask(ctx, "list "+p)
	w.mu.Lock()
	w.lists[p]++
	w.mu.Unlock()
	end, err := w.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	return w.Backend.List(ctx, p)
}

func (w *watched) ReadRange(ctx context.Context, p string, off, n int64) (io.ReadCloser, error) {
	w.mu.Lock()
	w.reads[p]++
	w.mu.Unlock()
	end, err := w.begin(ctx)
	if err != nil {
		return nil, err
	}
	rc, err := w.Backend.ReadRange(ctx, p, off, n)
	if err != nil {
		end()
		return nil, err
	}
	return &watchedReader{ReadCloser: rc, w: w, end: end, left: n}, nil
}

type watchedReader struct {
	io.ReadCloser
	w    *watched
	end  func()
	left int64 // bytes asked and not read yet (< 0: to the end)
	once sync.Once
}

func (r *watchedReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.w.mu.Lock()
	r.w.bytes += int64(n)
	r.w.mu.Unlock()
	r.left -= int64(n)
	if err != nil || r.left == 0 {
		r.endOnce()
	}
	return n, err
}

// Close ends the request unless its last byte did (Read): the cache
// frees the request's slot once the data are in, and the closing may
// trail the next request's start (33 were counted once).
func (r *watchedReader) Close() error {
	defer r.endOnce()
	return r.ReadCloser.Close()
}

func (r *watchedReader) endOnce() {
	r.once.Do(r.end)
}

// snapshot returns the reads by path and the lists by path.
func (w *watched) snapshot() (reads, lists map[string]int, bytes int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	reads, lists = map[string]int{}, map[string]int{}
	for k, v := range w.reads {
		reads[k] = v
	}
	for k, v := range w.lists {
		lists[k] = v
	}
	return reads, lists, w.bytes
}

// served makes dir/NAME files of the given sizes on the server's disk.
func served(t *testing.T, dir string, sizes map[string]int) {
	t.Helper()
	for name, n := range sizes {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, pattern(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// smallFiles names n files f00, f01, ... of size bytes each.
func smallFiles(sizes map[string]int, dir string, n, size int) {
	for i := range n {
		sizes[path.Join(dir, fmt.Sprintf("f%02d", i))] = size
	}
}

// prefetchSetup serves sizes, and returns the cache (limit bytes; 0:
// default) and the node of the served directory on a watched SFTP
// session. The leak check runs after the cache's Close at the end.
func prefetchSetup(t *testing.T, sizes map[string]int, limit int64, o Options) (*Cache, ns.Dir, *watched) {
	t.Helper()
	home := sshHome(t)
	srv := t.TempDir()
	served(t, srv, sizes)
	base := leakcheck.Take(t)
	c, err := New(filepath.Join(t.TempDir(), "cache"), limit, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	var w *watched
	root := sftpTree(t, home, srv, c, o, func(b remote.Backend) remote.Backend { w = newWatched(b); return w })
	t.Cleanup(func() {
		w.mu.Lock()
		if w.hold != nil {
			select {
			case <-w.hold:
			default:
				close(w.hold)
			}
		}
		w.mu.Unlock()
		c.Close()
		base.Check(t)
	})
	return c, root, w
}

// prefetched is true once the prefetch asked for last, and every
// background request has ended.
func prefetched(root ns.Dir, w *watched, last string) func() bool {
	g := root.(*dir).t.gate
	return func() bool {
		reads, _, _ := w.snapshot()
		g.mu.Lock()
		defer g.mu.Unlock()
		return reads[last] == 1 && g.busy == 0
	}
}

// ls is `ls -l DIR`: a listing and the attributes of every entry.
func ls(t *testing.T, d ns.Dir) []ns.DirEntry {
	t.Helper()
	ents, err := d.ReadDir(bg)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		n, err := d.Lookup(bg, e.Name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := n.Attr(bg); err != nil {
			t.Fatal(err)
		}
	}
	return ents
}

// lsR is `ls -lR DIR`.
func lsR(t *testing.T, d ns.Dir) {
	t.Helper()
	for _, e := range ls(t, d) {
		if e.Attr.Mode.IsDir() {
			sub, err := d.Lookup(bg, e.Name)
			if err != nil {
				t.Fatal(err)
			}
			lsR(t, sub.(ns.Dir))
		}
	}
}

// TestListingFetchesNoContents: ls -lR of a tree lists every directory
// (ahead, in parallel) and reads no file's contents.
func TestListingFetchesNoContents(t *testing.T) {
	sizes := map[string]int{}
	for _, d := range []string{"a", "b", "c", "c/deeper"} {
		smallFiles(sizes, d, 20, 1000)
	}
	c, root, w := prefetchSetup(t, sizes, 0, Options{})
	lsR(t, root)
	c.Close() // every background request has ended
	reads, lists, _ := w.snapshot()
	if len(reads) != 0 {
		t.Errorf("ls -lR read file contents: %v", reads)
	}
	for p, n := range lists {
		if n != 1 {
			t.Errorf("%s listed %d times", p, n)
		}
	}
	if len(lists) != 5 {
		t.Errorf("listed %v, want the root and 4 directories", lists)
	}
}

// TestReaddirAheadIsBounded: a program's listing lists at most
// ReaddirAhead subdirectories ahead, and only one level down.
func TestReaddirAheadIsBounded(t *testing.T) {
	sizes := map[string]int{}
	for i := range 6 {
		smallFiles(sizes, fmt.Sprintf("d%d/sub", i), 1, 10)
	}
	c, root, w := prefetchSetup(t, sizes, 0, Options{ReaddirAhead: new(4)})
	ls(t, root)
	tr := root.(*dir).t
	waitFor(t, "the listings ahead", func() bool {
		_, lists, _ := w.snapshot()
		tr.gate.mu.Lock()
		defer tr.gate.mu.Unlock()
		return len(lists) >= 5 && tr.gate.busy == 0
	})
	c.Close()
	_, lists, _ := w.snapshot()
	top := root.(*dir).remotePath()
	want := map[string]int{top: 1}
	for i := range 4 {
		want[fmt.Sprintf("%s/d%d", top, i)] = 1
	}
	if !maps.Equal(lists, want) {
		t.Errorf("listed %v, want the root and its first 4 subdirectories once each (%v)", lists, want)
	}
}

// TestReadPrefetchesSiblingsWithinBounds: reading one file of a listed
// directory fetches the other small files ahead, in listing order after
// it, up to PrefetchDir bytes; larger files and other directories are
// left alone. A read in a directory no program listed fetches nothing
// else.
func TestReadPrefetchesSiblingsWithinBounds(t *testing.T) {
	sizes := map[string]int{"dir/big1": 70 << 10, "dir/big2": 70 << 10, "unlisted/x": 100, "unlisted/y": 100}
	smallFiles(sizes, "dir", 40, 4<<10)
	smallFiles(sizes, "other", 5, 4<<10)
	c, root, w := prefetchSetup(t, sizes, 0, Options{PrefetchDir: new(int64(100 << 10)), PrefetchFile: new(int64(64 << 10))})
	top := root.(*dir).remotePath()

	// A directory nobody listed: reading one file fetches that file.
	if got := cat(t, root, "unlisted/x"); !bytes.Equal(got, pattern(100)) {
		t.Fatal("unlisted/x: wrong contents")
	}
	d := lookup(t, root, "dir").(ns.Dir)
	ls(t, d)
	if got := cat(t, root, "dir/f10"); !bytes.Equal(got, pattern(4<<10)) {
		t.Fatal("dir/f10: wrong contents")
	}
	// 100 KiB of 4 KiB files: 25 of them, f11 onwards, wrapping round.
	var want []string
	for i := range 25 {
		want = append(want, fmt.Sprintf("%s/dir/f%02d", top, (11+i)%40))
	}
	waitFor(t, "the prefetch", prefetched(root, w, want[len(want)-1]))
	// What was fetched ahead is served from the cache: the complete
	// data file itself, without a request.
	h := openNode(t, lookup(t, root, "dir/f11"), os.O_RDONLY)
	if _, ok := h.(ns.KernelObject); !ok {
		t.Error("dir/f11 was not complete after the prefetch")
	}
	h.Close()
	c.Close()
	reads, _, total := w.snapshot()
	for _, p := range want {
		if reads[p] != 1 {
			t.Errorf("%s fetched %d times, want once", p, reads[p])
		}
	}
	if len(reads) != len(want)+2 { // and f10, unlisted/x
		t.Errorf("fetched %d files, want %d: %v", len(reads), len(want)+2, reads)
	}
	if max := int64(100<<10 + 4<<10 + 100); total > max {
		t.Errorf("fetched %d bytes, more than the directory's bound and the two reads (%d)", total, max)
	}
}

// TestPrefetchInFlightBoundAndForegroundFirst: with every background slot
// taken by prefetches held before the server, exactly PrefetchRequests
// are in flight and no more start; a program's read of a file not yet
// fetched and a stat are answered meanwhile: they never queue behind the
// prefetch.
func TestPrefetchInFlightBoundAndForegroundFirst(t *testing.T) {
	sizes := map[string]int{}
	smallFiles(sizes, "dir", 80, 1000)
	sizes["elsewhere/z"] = 500
	c, root, w := prefetchSetup(t, sizes, 0, Options{})
	w.mu.Lock()
	w.hold = make(chan struct{})
	w.mu.Unlock()
	d := lookup(t, root, "dir").(ns.Dir)
	ls(t, d)
	cat(t, root, "dir/f00")
	waitFor(t, "the prefetch to fill its slots", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.held == DefaultPrefetchRequests
	})
	tr := root.(*dir).t
	tr.gate.mu.Lock()
	busy := tr.gate.busy
	tr.gate.mu.Unlock()
	if busy != DefaultPrefetchRequests {
		t.Errorf("the server's gate counts %d requests, want %d", busy, DefaultPrefetchRequests)
	}
	// The foreground goes past a full gate: the last file of the
	// listing (the prefetch's last) and a stat elsewhere.
	ctx, cancel := context.WithTimeout(bg, 20*time.Second)
	defer cancel()
	n, err := d.Lookup(ctx, "f79")
	if err != nil {
		t.Fatal(err)
	}
	h, err := n.(ns.Opener).Open(ctx, ns.Caller{}, os.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2000)
	if k, err := h.(ns.ReaderAt).ReadAt(ctx, buf, 0); err != nil || !bytes.Equal(buf[:k], pattern(1000)) {
		t.Fatalf("foreground read behind the prefetch: %d bytes, %v", k, err)
	}
	h.Close()
	if _, err := lookup(t, root, "elsewhere").(ns.Dir).Lookup(ctx, "z"); err != nil {
		t.Fatalf("foreground stat behind the prefetch: %v", err)
	}
	close(w.hold)
	reads0, _, _ := w.snapshot()
	want := fmt.Sprintf("%s/dir/f78", root.(*dir).remotePath())
	waitFor(t, "the rest of the prefetch", prefetched(root, w, want))
	c.Close()
	if w.maxInflight != DefaultPrefetchRequests {
		t.Errorf("%d background requests were in flight at once, want at most (and here exactly) %d", w.maxInflight, DefaultPrefetchRequests)
	}
	reads, _, _ := w.snapshot()
	if len(reads) != 80 || len(reads0) < DefaultPrefetchRequests {
		t.Errorf("fetched %d files, want the 80 of dir once each: %v", len(reads), reads)
	}
	for p, n := range reads {
		if n != 1 {
			t.Errorf("%s fetched %d times", p, n)
		}
	}
}

// TestPrefetchStopsNearCacheLimit: prefetch stops before the clean data
// reach nine tenths of the cache's limit, so it evicts nothing; dirty
// data stay whatever happens.
func TestPrefetchStopsNearCacheLimit(t *testing.T) {
	sizes := map[string]int{}
	smallFiles(sizes, "dir", 60, 4<<10)
	const limit = 100 << 10
	c, root, w := prefetchSetup(t, sizes, limit, Options{TWrite: new(time.Hour)})
	// 30 KiB of changes not yet on the server.
	dirty := pattern(30 << 10)
	writeNew(t, root, "mine", dirty)
	ls(t, lookup(t, root, "dir").(ns.Dir))
	cat(t, root, "dir/f00")
	top := root.(*dir).remotePath()
	// Done once the gate is idle with no reservation left and no room for
	// another file: between one fetch's end and the next one's start the
	// gate is idle too (the test read a 23rd file not yet counted).
	full := func() bool {
		c.lruMu.Lock()
		defer c.lruMu.Unlock()
		return c.reserved == 0 && c.used+4<<10 > limit-limit/10
	}
	waitFor(t, "the prefetch to reach the limit", func() bool { return prefetched(root, w, top+"/dir/f21")() && full() })
	tr := root.(*dir).t
	// 90 KiB: f00 and 21 files ahead, or 22 when the reservations were
	// made before f00's own bytes (the program's read) had arrived.
	reads, _, _ := w.snapshot()
	if n := len(reads); n != 22 && n != 23 {
		t.Errorf("fetched %d files, want 22 or 23 (90 KiB of 4 KiB files, and the one read)", n)
	}
	c.lruMu.Lock()
	used := c.used
	c.lruMu.Unlock()
	if used != int64(len(reads))*4<<10 {
		t.Errorf("%d bytes of clean data for %d files fetched: something was evicted", used, len(reads))
	}
	f := tr.fileAt(top + "/mine")
	if !f.isDirty() {
		t.Fatal("the changed file is no longer dirty")
	}
	if got := cat(t, root, "mine"); !bytes.Equal(got, dirty) {
		t.Fatal("the changed file lost its data")
	}
}

// TestWalkPrefetchesTheNextDirectory: a program that listed a directory
// and reads in one of its subdirectories (grep -r) gets the next
// subdirectory's small files fetched too, one directory ahead; when it
// lists that one, the one after it follows. A directory whose parent no
// program listed gets nothing beyond its own files.
func TestWalkPrefetchesTheNextDirectory(t *testing.T) {
	sizes := map[string]int{}
	for _, d := range []string{"a", "b", "c", "d", "lone/x", "lone/y"} {
		smallFiles(sizes, d, 10, 1000)
	}
	c, root, w := prefetchSetup(t, sizes, 0, Options{})
	top := root.(*dir).remotePath()
	fetched := func(dir string) int {
		reads, _, _ := w.snapshot()
		n := 0
		for i := range 10 {
			n += reads[fmt.Sprintf("%s/%s/f%02d", top, dir, i)]
		}
		return n
	}
	idle := func() bool {
		g := root.(*dir).t.gate
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.busy == 0
	}

	// Not walking: the parent was never listed by a program.
	lone := lookup(t, root, "lone").(ns.Dir)
	ls(t, lookup(t, lone, "x").(ns.Dir))
	cat(t, root, "lone/x/f00")
	waitFor(t, "lone/x's prefetch", func() bool { return fetched("lone/x") == 10 && idle() })
	if n := fetched("lone/y"); n != 0 {
		t.Errorf("lone/y: %d files fetched, want none (nobody listed lone)", n)
	}

	ls(t, root) // lists a, b, c, d ahead
	waitFor(t, "the listings ahead", func() bool {
		_, lists, _ := w.snapshot()
		return lists[top+"/b"] == 1 && lists[top+"/c"] == 1 && idle()
	})
	ls(t, lookup(t, root, "a").(ns.Dir))
	cat(t, root, "a/f00")
	waitFor(t, "a's and b's prefetch", func() bool { return fetched("a") == 10 && fetched("b") == 10 && idle() })
	if n := fetched("c"); n != 0 {
		t.Errorf("c: %d files fetched while the program is in a, want none (one directory ahead)", n)
	}
	ls(t, lookup(t, root, "b").(ns.Dir)) // the program gets to b
	waitFor(t, "c's prefetch", func() bool { return fetched("c") == 10 && idle() })
	h := openNode(t, lookup(t, root, "b/f05"), os.O_RDONLY)
	if _, ok := h.(ns.KernelObject); !ok {
		t.Error("b/f05 was not complete when the program got to b")
	}
	h.Close()
	c.Close()
	if n := fetched("d"); n != 0 {
		t.Errorf("d: %d files fetched while the program is in b, want none", n)
	}
	for _, d := range []string{"a", "b", "c"} {
		if n := fetched(d); n != 10 {
			t.Errorf("%s: %d fetches of 10 files, want each once", d, n)
		}
	}
}

// TestSpareFor: what prefetch takes for a file fetched ahead (spareFor)
// is an existing empty data file made by the low-priority filler, and a
// caller that gives up while none is ready gets its context's error.
func TestSpareFor(t *testing.T) {
	sizes := map[string]int{}
	smallFiles(sizes, "dir", 2, 1000)
	_, root, _ := prefetchSetup(t, sizes, 0, Options{})
	tr := root.(*dir).t
	id, err := tr.spareFor(bg)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(tr.dir, id+".data")); err != nil || fi.Size() != 0 {
		t.Fatalf("spare %s: %v, %v; want an empty data file", id, fi, err)
	}
	tr.putSpare(id)
	cancelled, cancel := context.WithCancel(bg)
	cancel()
	tr.spares.mu.Lock()
	kept := tr.spares.ids
	tr.spares.ids = nil // none ready: spareFor waits, and gives up with its caller
	tr.spares.mu.Unlock()
	id, err = tr.spareFor(cancelled)
	switch {
	case err == nil:
		kept = append(kept, id) // the filler made one meanwhile: it is handed out
	case err != context.Canceled:
		t.Fatalf("spareFor with its context cancelled: %v", err)
	}
	tr.spares.mu.Lock()
	tr.spares.ids = append(tr.spares.ids, kept...)
	tr.spares.mu.Unlock()
}

// TestProgramQuestionsPausePrefetch: a program's stat and its own
// listing are in flight as questions at the server's gate (ask), and
// while one is, and for a linger after a stat's answer (the program may
// ask again at once), no background request starts and the spare filler
// waits; then they go on. A listing has no linger (the listings ahead
// serve the program's next one).
func TestProgramQuestionsPausePrefetch(t *testing.T) {
	sizes := map[string]int{}
	smallFiles(sizes, "dir", 4, 1000)
	sizes["other/z"] = 500
	_, root, w := prefetchSetup(t, sizes, 0, Options{})
	g := root.(*dir).t.gate
	var asked []string
	w.mu.Lock()
	w.asked = func(op string) {
		g.mu.Lock()
		defer g.mu.Unlock()
		asked = append(asked, fmt.Sprintf("%s asking=%d", path.Base(op), g.asking))
	}
	w.mu.Unlock()
	other := lookup(t, root, "other").(ns.Dir)   // a stat
	if _, err := other.ReadDir(bg); err != nil { // a listing of its own
		t.Fatal(err)
	}
	w.mu.Lock()
	got := slices.Clone(asked)
	w.mu.Unlock()
	if want := []string{"other asking=1", "other asking=1"}; !slices.Equal(got, want) {
		t.Errorf("the program's requests found the gate %q, want %q", got, want)
	}

	// While a question is in flight, and for the linger after a stat's
	// answer, a background request or a spare made ahead waits: with
	// their context ended they give up rather than start.
	ended, cancel := context.WithCancel(bg)
	cancel()
	shut := func(when string) {
		t.Helper()
		if done, err := g.background(ended); err == nil {
			done()
			t.Errorf("a background request started %s", when)
		}
		if err := g.quiet(ended); err == nil {
			t.Errorf("the spare filler was let go %s", when)
		}
	}
	open := func(when string) {
		t.Helper()
		done, err := g.background(ended)
		if err != nil {
			t.Fatalf("a background request did not start %s: %v", when, err)
		}
		done()
		if err := g.quiet(ended); err != nil {
			t.Errorf("the spare filler waits %s: %v", when, err)
		}
	}
	g.mu.Lock()
	g.until, g.held = time.Time{}, false // the lookup's stat above lingers no more
	g.mu.Unlock()
	listed := g.ask(0) // a listing: no linger
	shut("while a program's listing was in flight")
	listed()
	open("once a program's listing was answered")

	answered := g.ask(time.Hour) // a stat whose linger lasts the test
	shut("while a program's stat was in flight")
	answered()
	shut("just after a program's stat was answered")
	listed = g.ask(0)
	listed()
	shut("after a listing answered within a stat's linger")

	// Once the linger after the last stat has passed, they go on
	// (waiting for it: a live context, which ends only if they never do).
	g.mu.Lock()
	g.until = time.Time{}
	g.mu.Unlock()
	g.ask(time.Millisecond)()
	live, stop := context.WithTimeout(bg, time.Minute)
	defer stop()
	done, err := g.background(live)
	if err != nil {
		t.Fatalf("a background request did not start once the stat was answered: %v", err)
	}
	done()
	if err := g.quiet(ended); err != nil {
		t.Errorf("the spare filler waits with no question in flight: %v", err)
	}
	g.mu.Lock()
	busy, asking := g.busy, g.asking
	g.mu.Unlock()
	if busy != 0 || asking != 0 {
		t.Errorf("the gate counts %d requests and %d questions after all ended, want none", busy, asking)
	}
}

// TestOnBackground: the cache says when background work starts and,
// once none has been in flight for a while, when it ended; once each.
func TestOnBackground(t *testing.T) {
	sizes := map[string]int{}
	smallFiles(sizes, "dir", 20, 1000)
	c, root, w := prefetchSetup(t, sizes, 0, Options{})
	var mu sync.Mutex
	var told []bool
	c.OnBackground(func(working bool) {
		mu.Lock()
		defer mu.Unlock()
		told = append(told, working)
	})
	calls := func() []bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(told)
	}
	ls(t, lookup(t, root, "dir").(ns.Dir))
	cat(t, root, "dir/f00")
	waitFor(t, "the prefetch", prefetched(root, w, root.(*dir).remotePath()+"/dir/f19"))
	waitFor(t, "the end of the background work", func() bool { return len(calls()) >= 2 })
	if got := calls(); !slices.Equal(got, []bool{true, false}) {
		t.Errorf("told %v, want [true false]: working, then done", got)
	}
	c.Close()
	if got := calls(); len(got) != 2 {
		t.Errorf("told %v, want nothing more at Close", got)
	}
}
