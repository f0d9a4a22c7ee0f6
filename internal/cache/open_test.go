package cache

import (
	"os"
	"testing"
	"time"

	"wirefs/internal/ns"
)

func TestCompleteFileIsKernelObject(t *testing.T) {
	c, _ := newCache(t, 0)
	b := newLocalBackend(t)
	b.put(t, "/k", []byte("kernel bytes"))
	root := c.Root("local://k", b, Options{TRead: new(time.Hour)})
	h := openNode(t, lookup(t, root, "k"), os.O_RDONLY)
	if _, ok := h.(ns.KernelObject); ok {
		t.Fatal("a file not yet cached is a kernel object")
	}
	readAll(t, h)
	h.Close()

	h = openNode(t, lookup(t, root, "k"), os.O_RDONLY)
	defer h.Close()
	ko, ok := h.(ns.KernelObject)
	if !ok {
		t.Fatal("a fully cached clean file is not a kernel object")
	}
	kf, err := ko.KernelFile()
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 64)
	n, _ := kf.ReadAt(got, 0)
	if string(got[:n]) != "kernel bytes" {
		t.Fatalf("kernel file holds %q", got[:n])
	}
	if _, err := kf.Write([]byte("x")); err == nil {
		t.Fatal("the kernel file is writable")
	}
	if !h.(ns.PageCacher).KeepPageCache() {
		t.Fatal("unchanged file: the kernel should keep its pages")
	}

	// Changed on the server and revalidated: neither kept pages nor the
	// old data.
	b.put(t, "/k", []byte("changed!"))
	c.Drop()
	h2 := openNode(t, lookup(t, root, "k"), os.O_RDONLY)
	defer h2.Close()
	if h2.(ns.PageCacher).KeepPageCache() {
		t.Fatal("changed file: the kernel must drop its pages")
	}
	if got := readAll(t, h2); string(got) != "changed!" {
		t.Fatalf("read %q", got)
	}
	// The old kernel file still shows the old version, like a replaced
	// local file.
	n, _ = kf.ReadAt(got, 0)
	if string(got[:n]) != "kernel bytes" {
		t.Fatalf("the open kernel file changed under its reader: %q", got[:n])
	}
}
