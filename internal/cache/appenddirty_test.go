package cache

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"wirefs/internal/ns"
	"wirefs/internal/remote"
)

// Appends to a file the cache holds little or nothing of (makeDirty
// forAppends): the data stay on the server until something needs them.

// TestAppendFetchesNothing: `echo >> big.log` through the mount sends the
// line and reads nothing of big.log; reading it afterwards gets the
// server's bytes and the line.
func TestAppendFetchesNothing(t *testing.T) {
	b := newLocalBackend(t)
	big := pattern(1 << 20)
	b.put(t, "/big", big)
	c, _ := newCache(t, 0)
	root := c.Root("local://a", b, Options{})
	n := lookup(t, root, "big")
	if err := appendRecord(t, n, "tail\n"); err != nil {
		t.Fatal(err)
	}
	want := append(bytes.Clone(big), "tail\n"...)
	if got, _ := b.get("/big"); !bytes.Equal(got, want) {
		t.Fatalf("the server has %d bytes, want %d", len(got), len(want))
	}
	if r := b.n("ReadRange"); r != 0 {
		t.Fatalf("the append read the file from the server (%d ranges)", r)
	}
	if got := cat(t, root, "big"); !bytes.Equal(got, want) {
		t.Fatalf("read back %d bytes, not the server's %d", len(got), len(want))
	}
}

// TestWriteBelowAppends: a file that appends made dirty, not cached, gets
// the server's bytes before a write below its end and before a read, so
// that its write-back sends the right file, with or without a backend
// that patches ranges.
func TestWriteBelowAppends(t *testing.T) {
	for _, tc := range patchingOrNot {
		t.Run(tc.name, func(t *testing.T) {
			b := newLocalBackend(t)
			orig := pattern(100000)
			b.put(t, "/f", orig)
			c, _ := newCache(t, 0)
			root := c.Root("local://a", tc.be(b), Options{TWrite: new(time.Hour)})
			n := lookup(t, root, "f")
			a := openNode(t, n, os.O_WRONLY|os.O_APPEND)
			if _, err := a.(ns.WriterAt).WriteAt(bg, []byte("tail"), 0); err != nil {
				t.Fatal(err)
			}
			a.Close()
			if r := b.n("ReadRange"); r != 0 {
				t.Fatalf("the append read the file (%d ranges)", r)
			}
			w := openNode(t, n, os.O_WRONLY)
			if _, err := w.(ns.WriterAt).WriteAt(bg, []byte("XY"), 10); err != nil {
				t.Fatal(err)
			}
			want := append(bytes.Clone(orig), "tail"...)
			copy(want[10:], "XY")
			if got := cat(t, root, "f"); !bytes.Equal(got, want) {
				t.Fatal("the cache's copy is not the server's bytes with the changes")
			}
			if err := w.(ns.Syncer).Sync(bg); err != nil {
				t.Fatal(err)
			}
			w.Close()
			if got, _ := b.get("/f"); !bytes.Equal(got, want) {
				t.Fatalf("the server has %d bytes (equal: false), want %d", len(got), len(want))
			}
		})
	}
}

// TestAppendsToUncachedFileSurviveCrash: appends kept in the cache
// (T_write) to a file it holds nothing of reach the server after the
// daemon died, appended to the server's bytes, with or without a backend
// that patches ranges.
func TestAppendsToUncachedFileSurviveCrash(t *testing.T) {
	for _, tc := range patchingOrNot {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "cache")
			b := newLocalBackend(t)
			orig := pattern(100000)
			b.put(t, "/f", orig)
			c1, err := New(dir, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			root := c1.Root("local://crash", tc.be(b), Options{TWrite: new(time.Hour)})
			h := openNode(t, lookup(t, root, "f"), os.O_WRONLY|os.O_APPEND)
			h.(ns.WriterAt).WriteAt(bg, []byte("tail"), 0)
			h.(ns.Flusher).Flush(bg) // durable in the cache, sent in an hour
			kill(c1)

			c2, err := New(dir, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c2.Close()
			c2.Root("local://crash", tc.be(b), Options{})
			waitFor(t, "recovery of the appends", hasContent(b, "/f", append(bytes.Clone(orig), "tail"...)))
		})
	}
}

// patchingOrNot are the two ways a change inside a file goes: as its
// ranges (a backend that patches: SFTP, 9P) or whole (FTP).
var patchingOrNot = []struct {
	name string
	be   func(*localBackend) remote.Backend
}{
	{"patch", func(b *localBackend) remote.Backend { return b }},
	{"whole", func(b *localBackend) remote.Backend { return appendingOnly{b, b, b} }},
}

// appendingOnly is a backend that appends but cannot patch ranges (FTP):
// its changes inside a file go whole.
type appendingOnly struct {
	remote.Backend
	remote.Writer
	remote.Appender
}
