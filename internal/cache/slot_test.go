package cache

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"wirefs/internal/ns"
)

// TestDaemonsTakeSlots: a second daemon on one cache directory caches in
// a slot of its own; never two writers of one data file.
func TestDaemonsTakeSlots(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	c1, err := New(dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	c2, err := New(dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c1.dir != dir || c2.dir != filepath.Join(dir, "slots", "1") {
		t.Fatalf("slots: %s and %s", c1.dir, c2.dir)
	}
	if err := c2.Close(); err != nil {
		t.Fatal(err)
	}
	// A slot freed by a clean exit is the next daemon's.
	c3, err := New(dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if c3.dir != c2.dir {
		t.Fatalf("third daemon in %s, want the free %s", c3.dir, c2.dir)
	}
	if fi, err := os.Stat(c3.dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("slot directory: %v %v", fi, err)
	}
}

// TestOrphanedSlotWrittenBack: changes a killed daemon left in its slot
// are written back by the next daemon, whichever slot it takes.
func TestOrphanedSlotWrittenBack(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	b := newLocalBackend(t)
	var daemons []*Cache
	for range 3 { // slots 0, 1, 2
		c, err := New(dir, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		daemons = append(daemons, c)
	}
	defer daemons[0].Close()
	dead := daemons[2]
	root := dead.Root("local://orphan", b, Options{TWrite: new(time.Hour)})
	_, h, err := root.(ns.Creator).Create(bg, ns.Caller{}, "left", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	h.(ns.WriterAt).WriteAt(bg, []byte("left in slot 2"), 0)
	dead.slot.release() // killed: no write-back, no Close
	// Its goroutines live on in this process, unlike a killed daemon's:
	// stop them before the directory is removed.
	defer dead.Close()
	if err := daemons[1].Close(); err != nil {
		t.Fatal(err)
	}

	next, err := New(dir, 0, nil) // takes slot 1, adopts slot 2's change
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	if next.dir != daemons[1].dir {
		t.Fatalf("next daemon in %s, want %s", next.dir, daemons[1].dir)
	}
	next.Root("local://orphan", b, Options{})
	waitFor(t, "write-back of the orphaned change", hasContent(b, "/left", []byte("left in slot 2")))
}
