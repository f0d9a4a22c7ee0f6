package cache

import (
	"os"
	"strings"
	"syscall"
	"testing"

	"wirefs/internal/ns"
	"wirefs/internal/remote"
)

var _ remote.Patcher = (*localBackend)(nil)

// appendRecord is one open(O_APPEND)/write/close cycle.
func appendRecord(t *testing.T, n ns.Node, rec string) error {
	t.Helper()
	h := openNode(t, n, os.O_WRONLY|os.O_APPEND)
	defer h.Close()
	// The offset is what a stale kernel might send: the cache appends
	// at its own end of file all the same.
	if _, err := h.(ns.WriterAt).WriteAt(bg, []byte(rec), 0); err != nil {
		return err
	}
	return h.(ns.Flusher).Flush(bg)
}

// cachedLog puts contents at /log on lb, the local side of backend be, and
// returns a new cache, its root over be and its node of /log, read once:
// cached, and trusted for T_read.
func cachedLog(t *testing.T, be remote.Backend, lb *localBackend, contents string) (*Cache, ns.Dir, ns.Node) {
	t.Helper()
	c, _ := newCache(t, 0)
	lb.put(t, "/log", []byte(contents))
	root := c.Root("local://log", be, Options{})
	n := lookup(t, root, "log")
	cat(t, root, "log")
	return c, root, n
}

// TestAppendSendsOnlyTheRecord: an append cycle sends the appended bytes
// with the server's append, not the file.
func TestAppendSendsOnlyTheRecord(t *testing.T) {
	c, _ := newCache(t, 0)
	b := newLocalBackend(t)
	b.put(t, "/log", []byte(strings.Repeat("x", 1000)+"\n"))
	root := c.Root("local://a", b, Options{})
	n := lookup(t, root, "log")
	want := strings.Repeat("x", 1000) + "\n"
	for _, rec := range []string{"one\n", "two\n", "three\n"} {
		if err := appendRecord(t, n, rec); err != nil {
			t.Fatal(err)
		}
		want += rec
	}
	if got, _ := b.get("/log"); string(got) != want {
		t.Fatalf("server has %q", got)
	}
	if a, s := b.n("Append"), b.n("Store")+b.n("Patch"); a != 3 || s != 0 {
		t.Fatalf("%d appends and %d whole or patched writes, want 3 appends only", a, s)
	}
	if b.bytesReceived() != int64(len("one\ntwo\nthree\n")) {
		t.Fatalf("%d bytes sent for %d appended", b.bytesReceived(), len("one\ntwo\nthree\n"))
	}
}

// TestCloseLeavesOthersChanges: a handle closing after its own changes
// were flushed leaves the bytes another handle wrote and has not flushed
// yet to that handle's flush. It used to record them durably (an fsync)
// and start a write-back of its own: with several appenders on one file,
// nearly every close did.
func TestCloseLeavesOthersChanges(t *testing.T) {
	b := newLocalBackend(t)
	_, _, n := cachedLog(t, b, b, "start\n")
	first := openNode(t, n, os.O_WRONLY|os.O_APPEND)
	second := openNode(t, n, os.O_WRONLY|os.O_APPEND)
	if _, err := first.(ns.WriterAt).WriteAt(bg, []byte("one\n"), 0); err != nil {
		t.Fatal(err)
	}
	if err := first.(ns.Flusher).Flush(bg); err != nil {
		t.Fatal(err)
	}
	if _, err := second.(ns.WriterAt).WriteAt(bg, []byte("two\n"), 0); err != nil {
		t.Fatal(err)
	}
	first.Close()
	f := n.(*file)
	f.mu.Lock()
	recorded, timer := !f.unrecorded, f.timer != nil
	f.mu.Unlock()
	if recorded || timer {
		t.Fatalf("the first handle's close recorded the second's changes (%v) or scheduled their write-back (%v)", recorded, timer)
	}
	if err := second.(ns.Flusher).Flush(bg); err != nil {
		t.Fatal(err)
	}
	second.Close()
	if got, _ := b.get("/log"); string(got) != "start\none\ntwo\n" {
		t.Fatalf("server has %q", got)
	}
	if a := b.n("Append"); a != 2 {
		t.Fatalf("%d appends, want 2 (one per flush)", a)
	}
}

// TestCloseSendsUnflushedChanges: a handle closed without a flush (a
// door that does not send one) still gets its changes written back.
func TestCloseSendsUnflushedChanges(t *testing.T) {
	b := newLocalBackend(t)
	_, _, n := cachedLog(t, b, b, "start\n")
	h := openNode(t, n, os.O_WRONLY|os.O_APPEND)
	if _, err := h.(ns.WriterAt).WriteAt(bg, []byte("one\n"), 0); err != nil {
		t.Fatal(err)
	}
	h.Close()
	waitFor(t, "the write-back the close started", hasContent(b, "/log", []byte("start\none\n")))
}

// TestAppendAfterAnotherWriter: bytes another client appended meanwhile
// are kept: ours land after them, and the cache forgets its stale copy.
func TestAppendAfterAnotherWriter(t *testing.T) {
	b := newLocalBackend(t)
	_, root, n := cachedLog(t, b, b, "first\n") // cached, trusted for T_read
	b.put(t, "/log", []byte("first\nfrom elsewhere\n"))
	if err := appendRecord(t, n, "ours\n"); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.get("/log"); string(got) != "first\nfrom elsewhere\nours\n" {
		t.Fatalf("server has %q", got)
	}
	if got := cat(t, root, "log"); string(got) != "first\nfrom elsewhere\nours\n" {
		t.Fatalf("read back %q: the stale copy was kept", got)
	}
}

// TestPatchSendsTheChangedRanges: a write inside the file and a
// truncation send the changed bytes and the new length.
func TestPatchSendsTheChangedRanges(t *testing.T) {
	c, _ := newCache(t, 0)
	b := newLocalBackend(t)
	b.put(t, "/f", []byte("0123456789abcdef"))
	root := c.Root("local://p", b, Options{})
	h := openNode(t, lookup(t, root, "f"), os.O_RDWR)
	h.(ns.WriterAt).WriteAt(bg, []byte("XY"), 2)
	if _, err := lookup(t, root, "f").(ns.Setattrer).Setattr(bg, h, ns.SetAttr{Size: ptr(int64(12))}); err != nil {
		t.Fatal(err)
	}
	if err := h.(ns.Flusher).Flush(bg); err != nil {
		t.Fatal(err)
	}
	h.Close()
	if got, _ := b.get("/f"); string(got) != "01XY456789ab" {
		t.Fatalf("server has %q", got)
	}
	if p, s := b.n("Patch"), b.n("Store"); p != 1 || s != 0 {
		t.Fatalf("%d patches and %d stores, want one patch", p, s)
	}
}

// TestFailedAppendIsNotDoubled: an append that failed half-way is sent
// again in place, so the server never holds the half twice.
func TestFailedAppendIsNotDoubled(t *testing.T) {
	c, _ := newCache(t, 0)
	b := newLocalBackend(t)
	b.put(t, "/log", []byte("start\n"))
	root := c.Root("local://half", b, Options{})
	b.storeErrs = []error{ns.Errorf(syscall.EIO, "connection lost")}
	if err := appendRecord(t, lookup(t, root, "log"), "0123456789\n"); ns.Errno(err) != syscall.EIO {
		t.Fatalf("append with a failing server: %v", err)
	}
	h := openNode(t, lookup(t, root, "log"), os.O_WRONLY)
	if err := h.(ns.Syncer).Sync(bg); err != nil {
		t.Fatal(err)
	}
	h.Close()
	if got, _ := b.get("/log"); string(got) != "start\n0123456789\n" {
		t.Fatalf("server has %q", got)
	}
}

func ptr[T any](v T) *T { return &v }

// TestRetryDoesNotWriteIntoAnotherFile: changes whose write-back failed
// and whose file was then replaced on the server are not written into
// the file someone made under that name since (their bytes at our
// offsets, cut to our length, destroyed the other file's data); they stay
// in the cache, refused with ESTALE, and the other file is untouched.
func TestRetryDoesNotWriteIntoAnotherFile(t *testing.T) {
	b := newLocalBackend(t)
	c, _, n := cachedLog(t, b, b, "ours\n")
	b.storeErrs = []error{ns.Errorf(syscall.EIO, "connection lost")}
	if err := appendRecord(t, n, "record\n"); ns.Errno(err) != syscall.EIO {
		t.Fatalf("append with a failing server: %v, want EIO", err)
	}
	os.Remove(b.local("/log"))
	other := strings.Repeat("OTHER", 200)
	b.put(t, "/log", []byte(other))
	h := openNode(t, n, os.O_WRONLY)
	err := h.(ns.Syncer).Sync(bg)
	h.Close()
	if ns.Errno(err) != syscall.ESTALE {
		t.Fatalf("retried write-back onto a replaced file: %v, want ESTALE", err)
	}
	if got, _ := b.get("/log"); string(got) != other {
		t.Fatalf("the other writer's file became %d bytes: %.40q...", len(got), got)
	}
	var status strings.Builder
	c.WriteStatus(&status)
	if !strings.Contains(status.String(), "refused") || !strings.Contains(status.String(), "ESTALE") {
		t.Fatalf(".wirefs/writeback does not show the kept changes: %q", status.String())
	}
}

// TestAppendAfterRotation: a log renamed away on the server (mv log
// log.1, as logrotate does) while the cache still trusts its attributes:
// the next appended record starts a new file of that name, as through
// sshfs, rather than staying in the cache refused; the rotated file is
// untouched, and the cache shows the server's new file, not its old copy.
func TestAppendAfterRotation(t *testing.T) {
	c, _ := newCache(t, 0)
	b := newLocalBackend(t)
	root := c.Root("local://rotated", b, Options{})
	writeNew(t, root, "log", []byte("one\n"))
	n := lookup(t, root, "log")
	if err := appendRecord(t, n, "two\n"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(b.local("/log"), b.local("/log.1")); err != nil {
		t.Fatal(err)
	}
	if err := appendRecord(t, n, "three\n"); err != nil {
		t.Fatalf("append after the rotation: %v", err)
	}
	if got, _ := b.get("/log.1"); string(got) != "one\ntwo\n" {
		t.Fatalf("the rotated file became %q", got)
	}
	if got, _ := b.get("/log"); string(got) != "three\n" {
		t.Fatalf("the server's new log is %q, want the record appended after the rotation", got)
	}
	if err := appendRecord(t, lookup(t, root, "log"), "four\n"); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.get("/log"); string(got) != "three\nfour\n" {
		t.Fatalf("the server's new log is %q", got)
	}
	if got := cat(t, root, "log"); string(got) != "three\nfour\n" {
		t.Fatalf("read through the cache: %q, want the server's new file", got)
	}
}

// TestAppendsDoNotExtendTrust: an append tells nothing of what else the
// server's file got (SFTP does not answer with its length), so appending
// does not renew the trust in the cached attributes: a log truncated on
// the server (logrotate's copytruncate) is seen T_read after the last
// validation however often it is appended to, where before each append
// renewed it and the cache showed its own copy for as long as a program
// kept appending.
func TestAppendsDoNotExtendTrust(t *testing.T) {
	b := newLocalBackend(t)
	b.appendSizeUnknown = true
	c, root, n := cachedLog(t, b, b, "old\n")
	f := n.(*file)
	f.mu.Lock()
	validated := f.checked
	f.mu.Unlock()
	for _, rec := range []string{"one\n", "two\n"} {
		if err := appendRecord(t, n, rec); err != nil {
			t.Fatal(err)
		}
	}
	f.mu.Lock()
	checked := f.checked
	f.mu.Unlock()
	if !checked.Equal(validated) {
		t.Fatalf("appends moved the last validation from %v to %v", validated, checked)
	}
	if got, _ := b.get("/log"); string(got) != "old\none\ntwo\n" {
		t.Fatalf("server has %q", got)
	}
	// T_read later (here: a validation on every open), the server's
	// truncation shows.
	if err := os.Truncate(b.local("/log"), 0); err != nil {
		t.Fatal(err)
	}
	if err := appendRecord(t, n, "three\n"); err != nil {
		t.Fatal(err)
	}
	c.Drop() // as T_read later: every validation is stale
	if got := cat(t, root, "log"); string(got) != "three\n" {
		t.Fatalf("read after the trust ran out: %q, want the server's %q", got, "three\n")
	}
}

// TestOpenOfVanishedFile: an open whose validation finds the file gone
// from the server fails with ESTALE, which makes the kernel look the name
// up again (and an open(O_CREAT), as `echo >> log`, create it), and the
// name is gone from the cache.
func TestOpenOfVanishedFile(t *testing.T) {
	b := newLocalBackend(t)
	c, root, n := cachedLog(t, b, b, "old\n")
	os.Remove(b.local("/log"))
	c.Drop()
	if _, err := n.(ns.Opener).Open(bg, ns.Caller{}, os.O_WRONLY|os.O_APPEND); ns.Errno(err) != syscall.ESTALE {
		t.Fatalf("open of a file gone from the server: %v, want ESTALE", err)
	}
	if _, err := root.Lookup(bg, "log"); ns.Errno(err) != syscall.ENOENT {
		t.Fatalf("lookup after the failed open: %v, want ENOENT", err)
	}
}

// TestAppendToVanishedUncachedFile: a file the cache knows from a listing
// but never fetched is removed on the server; an O_APPEND write needs its
// data, which the server no longer has: the record starts a new file of
// that name (as after a rotation) instead of the write failing ENOENT.
func TestAppendToVanishedUncachedFile(t *testing.T) {
	c, _ := newCache(t, 0)
	b := newLocalBackend(t)
	b.put(t, "/log", []byte("old contents\n"))
	root := c.Root("local://vanished-uncached", b, Options{})
	n := lookup(t, root, "log")
	os.Remove(b.local("/log"))
	if err := appendRecord(t, n, "new\n"); err != nil {
		t.Fatalf("append to a file gone from the server: %v", err)
	}
	if got, _ := b.get("/log"); string(got) != "new\n" {
		t.Fatalf("the server's file is %q, want the record alone", got)
	}
	if got := cat(t, root, "log"); string(got) != "new\n" {
		t.Fatalf("read through the cache: %q", got)
	}
}

// appendNew appends rec to p in root as bash's `echo rec >> p` does:
// open(O_WRONLY|O_APPEND|O_CREAT), write, close.
func appendNew(t *testing.T, root ns.Dir, p, rec string) {
	t.Helper()
	_, h, err := root.(ns.Creator).Create(bg, ns.Caller{}, p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := h.(ns.WriterAt).WriteAt(bg, []byte(rec), 0); err != nil {
		t.Fatal(err)
	}
	if err := h.(ns.Flusher).Flush(bg); err != nil {
		t.Fatal(err)
	}
}

// TestNewLogFromTwoCaches: two daemons (two caches on one server) each
// find no log and start it with an append. The second one's first
// write-back used to store its new file whole over the one the first had
// made: the first's record was lost. Now each appends to whichever file
// has the name, and the second forgets its copy, which is not the
// server's file.
func TestNewLogFromTwoCaches(t *testing.T) {
	b := newLocalBackend(t)
	first, _ := newCache(t, 0)
	second, _ := newCache(t, 0)
	r1 := first.Root("local://a", b, Options{})
	r2 := second.Root("local://a", b, Options{})
	for _, r := range []ns.Dir{r1, r2} {
		if _, err := r.ReadDir(bg); err != nil { // both now know there is no log
			t.Fatal(err)
		}
	}
	appendNew(t, r1, "log", "first\n")
	appendNew(t, r2, "log", "second\n")
	if got, _ := b.get("/log"); string(got) != "first\nsecond\n" {
		t.Fatalf("server has %q", got)
	}
	if fi, err := os.Stat(b.local("/log")); err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("the log's mode: %v (%v), want 0640", fi.Mode(), err)
	}
	if got := cat(t, r2, "log"); string(got) != "first\nsecond\n" {
		t.Fatalf("the second cache shows %q", got)
	}
	if n := b.n("Store"); n != 0 {
		t.Fatalf("%d whole-file stores, want none", n)
	}
}

// TestTouchKeepsAFileMadeMeanwhile: a file made empty by an open that
// neither truncates nor writes (touch) does not replace the server's
// file of that name, made since the cache looked; a new file written at
// offsets (cp: O_TRUNC) still replaces it, as its open would.
func TestTouchKeepsAFileMadeMeanwhile(t *testing.T) {
	b := newLocalBackend(t)
	c, _ := newCache(t, 0)
	root := c.Root("local://a", b, Options{})
	if _, err := root.ReadDir(bg); err != nil {
		t.Fatal(err)
	}
	b.put(t, "/precious", []byte("made on the server\n"))
	_, h, err := root.(ns.Creator).Create(bg, ns.Caller{}, "precious", os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.(ns.Flusher).Flush(bg); err != nil {
		t.Fatal(err)
	}
	h.Close()
	if got, _ := b.get("/precious"); string(got) != "made on the server\n" {
		t.Fatalf("server has %q", got)
	}
	if got := cat(t, root, "precious"); string(got) != "made on the server\n" {
		t.Fatalf("the cache shows %q", got)
	}
	b.put(t, "/copied", []byte("old\n"))
	writeNew(t, root, "copied", []byte("new\n"))
	if got, _ := b.get("/copied"); string(got) != "new\n" {
		t.Fatalf("the copy's target has %q", got)
	}
}
