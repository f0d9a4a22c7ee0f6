package cache

import (
	"bytes"
	"os"
	"testing"
	"time"

	"wirefs/internal/ns"
)

// TestHoleInNewFileIsLocal: a file being written with a hole (written
// past its end, as an assembler does) reads the hole as zeros from the
// cache; the server, which has no such file yet, is not asked.
func TestHoleInNewFileIsLocal(t *testing.T) {
	c, _ := newCache(t, 0)
	b := newLocalBackend(t)
	root := c.Root("local://hole", b, Options{TWrite: new(time.Hour)})
	_, h, err := root.(ns.Creator).Create(bg, ns.Caller{}, "a.o", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	h.(ns.WriterAt).WriteAt(bg, []byte("tail"), 100)
	h.(ns.WriterAt).WriteAt(bg, []byte("head"), 0)
	before := b.total()
	buf := make([]byte, 104)
	n, err := h.(ns.ReaderAt).ReadAt(bg, buf, 0)
	if err != nil || n != 104 {
		t.Fatalf("read %d, %v", n, err)
	}
	want := append(append([]byte("head"), make([]byte, 96)...), "tail"...)
	if !bytes.Equal(buf, want) {
		t.Fatalf("read %q", buf)
	}
	if b.total() != before {
		t.Fatal("reading the hole of a new file went to the server")
	}
}

func TestTruncateClosedFile(t *testing.T) {
	c, _ := newCache(t, 0)
	b := newLocalBackend(t)
	b.put(t, "/t", []byte("0123456789"))
	root := c.Root("local://t", b, Options{})
	f := lookup(t, root, "t").(ns.Setattrer)
	for _, tc := range []struct {
		size int64
		want string
	}{{4, "0123"}, {6, "0123\x00\x00"}, {0, ""}} {
		a, err := f.Setattr(bg, nil, ns.SetAttr{Size: &tc.size})
		if err != nil {
			t.Fatal(err)
		}
		if a.Size != tc.size {
			t.Fatalf("size %d after truncate to %d", a.Size, tc.size)
		}
		if got, _ := b.get("/t"); string(got) != tc.want {
			t.Fatalf("truncate to %d: server has %q", tc.size, got)
		}
	}
	mode := os.FileMode(0o600)
	if _, err := f.Setattr(bg, nil, ns.SetAttr{Mode: &mode}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(b.local("/t")); fi.Mode().Perm() != 0o600 {
		t.Fatalf("chmod: %v", fi.Mode())
	}
}
