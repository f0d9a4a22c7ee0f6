package cache

import (
	"os"
	"syscall"
	"testing"
	"time"

	"wirefs/internal/ns"
)

// TestCreateRacingCreate: two O_CREAT opens of a new name that both
// looked it up before either made it get one file; the second neither
// empties it nor starts another (each appender's records were lost that
// way, and the whole-file store of the other copy replaced them).
func TestCreateRacingCreate(t *testing.T) {
	c, _ := newCache(t, 0)
	b := newLocalBackend(t)
	root := c.Root("local://create", b, Options{TWrite: new(time.Hour)})
	d := root.(*dir)
	first, h1, err := d.Create(bg, ns.Caller{}, "log", os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer h1.Close()
	h1.(ns.WriterAt).WriteAt(bg, []byte("one\n"), 0)
	// The second create's lookup said ENOENT before the first create:
	// it goes straight to the create step.
	f := d.t.fileAt("/log")
	if _, created, err := f.create(0o644, false); err != nil || created {
		t.Fatalf("create of an existing file: created %v, %v", created, err)
	}
	second, h2, err := d.Create(bg, ns.Caller{}, "log", os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close()
	if first != second {
		t.Fatal("two creates of one name made two files")
	}
	h2.(ns.WriterAt).WriteAt(bg, []byte("two\n"), 0)
	if got := cat(t, root, "log"); string(got) != "one\ntwo\n" {
		t.Fatalf("the file holds %q", got)
	}
	if _, _, err := d.Create(bg, ns.Caller{}, "log", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); ns.Errno(err) != syscall.EEXIST {
		t.Fatalf("O_EXCL create of an existing file: %v, want EEXIST", err)
	}
}

// TestStaleNotFoundKeepsNewerFile: the server's "no such file" to a
// question asked before the file was made does not discard it.
func TestStaleNotFoundKeepsNewerFile(t *testing.T) {
	c, _ := newCache(t, 0)
	b := newLocalBackend(t)
	root := c.Root("local://stale", b, Options{})
	asked := time.Now()
	writeNew(t, root, "new", []byte("data"))
	d := root.(*dir)
	d.t.vanished("/new", asked)
	if got := cat(t, root, "new"); string(got) != "data" {
		t.Fatalf("read %q after a stale ENOENT", got)
	}
	d.t.vanished("/new", time.Now())
	d.t.mu.Lock()
	_, known := d.t.files["/new"]
	d.t.mu.Unlock()
	if known {
		t.Fatal("an ENOENT asked after the file was last seen did not forget it")
	}
}

// TestUnlinkedWhileOpen: a file removed while open stays readable and
// writable through its handles, whole even if it was never read, and
// nothing of it reaches the server again.
func TestUnlinkedWhileOpen(t *testing.T) {
	c, _ := newCache(t, 0)
	b := newLocalBackend(t)
	b.put(t, "/f", []byte("0123456789"))
	root := c.Root("local://unlinked", b, Options{ReadAhead: new(int64(1))})
	n := lookup(t, root, "f")
	r := openNode(t, n, os.O_RDONLY)
	w := openNode(t, n, os.O_RDWR)
	if err := root.(ns.Remover).Remove(bg, "f", false); err != nil {
		t.Fatal(err)
	}
	if _, err := b.get("/f"); !os.IsNotExist(err) {
		t.Fatalf("the server still has f: %v", err)
	}
	buf := make([]byte, 10)
	if k, err := r.(ns.ReaderAt).ReadAt(bg, buf, 0); k != 10 || string(buf) != "0123456789" {
		t.Fatalf("read of the unlinked file: %q, %v", buf[:k], err)
	}
	if _, err := w.(ns.WriterAt).WriteAt(bg, []byte("AB"), 10); err != nil {
		t.Fatal(err)
	}
	if err := w.(ns.Flusher).Flush(bg); err != nil {
		t.Fatal(err)
	}
	if a, _ := n.Attr(bg); a.Size != 12 || !a.Removed {
		t.Fatalf("attributes of the unlinked file: %+v", a)
	}
	w.Close()
	r.Close()
	if _, err := b.get("/f"); !os.IsNotExist(err) {
		t.Fatalf("the unlinked file came back on the server: %v", err)
	}
}
