package cache

import (
	"context"
	"io"
	"os"
	"testing"

	"wirefs/internal/ns"
	"wirefs/internal/remote"
)

// freshBackend is a localBackend that cannot patch ranges and stores
// fresh files apart (remote.FreshStorer), counted as "StoreFresh": FTP.
type freshBackend struct {
	appendingOnly
	lb *localBackend
}

var _ remote.FreshStorer = freshBackend{}

func (b freshBackend) StoreFresh(ctx context.Context, p string, r io.Reader, size int64, perm os.FileMode) error {
	b.lb.count("StoreFresh")
	return b.lb.Store(ctx, p, r, size, perm)
}

// TestFreshFilesStoredFresh: a file made here goes with StoreFresh, once;
// its later stores and a file the server had (even when emptied with
// O_TRUNC) go with Store, which keeps a failure from leaving part of
// them under the name. (A rename stores a dirty file under its old name
// first, so a file is never fresh under a name it was renamed to.)
func TestFreshFilesStoredFresh(t *testing.T) {
	c, _ := newCache(t, 0)
	lb := newLocalBackend(t)
	b := freshBackend{appendingOnly{lb, lb, lb}, lb}
	lb.put(t, "/old", []byte("the server's"))
	root := c.Root("local://fresh", b, Options{})

	writeNew(t, root, "new", []byte("one"))
	if lb.n("StoreFresh") != 1 || lb.n("Store") != 1 { // freshBackend's Store is counted too
		t.Fatalf("a new file: StoreFresh %d, Store %d; want it stored fresh once", lb.n("StoreFresh"), lb.n("Store"))
	}
	writeNew(t, root, "new", []byte("two")) // O_TRUNC of the file stored above
	writeNew(t, root, "old", []byte("mine"))
	if lb.n("StoreFresh") != 1 || lb.n("Store") != 3 {
		t.Fatalf("files the server has: StoreFresh %d, Store %d; want Store only", lb.n("StoreFresh"), lb.n("Store"))
	}
	for p, want := range map[string]string{"/new": "two", "/old": "mine"} {
		if got, _ := lb.get(p); string(got) != want {
			t.Errorf("the server's %s is %q, want %q", p, got, want)
		}
	}

}

// TestRedirectedOutputStoredWhole: `cmd > file` — the shell's open
// truncates, and its close of the descriptor it moved to standard output
// stores the empty file before cmd writes — goes whole with Store, which
// replaces the empty file at once; `cmd >> file`'s O_APPEND writes to the
// empty file still go as an append.
func TestRedirectedOutputStoredWhole(t *testing.T) {
	c, _ := newCache(t, 0)
	lb := newLocalBackend(t)
	root := c.Root("local://redirect", lb, Options{})
	for _, v := range []struct {
		name          string
		flags         int
		store, append int // calls for the data, after the empty file's store
	}{
		{"out", os.O_WRONLY | os.O_CREATE | os.O_TRUNC, 1, 0},
		{"log", os.O_WRONLY | os.O_CREATE | os.O_APPEND, 0, 1},
	} {
		_, h, err := root.(ns.Creator).Create(bg, ns.Caller{}, v.name, v.flags, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		// The shell's close of the descriptor it dup()ed.
		if err := h.(ns.Flusher).Flush(bg); err != nil {
			t.Fatal(err)
		}
		if got, err := lb.get("/" + v.name); err != nil || len(got) != 0 {
			t.Fatalf("%s: the server has %q (%v) after the first close, want an empty file", v.name, got, err)
		}
		store, appends := lb.n("Store"), lb.n("Append")
		for i, part := range []string{"first line\n", "second line\n"} {
			if _, err := h.(ns.WriterAt).WriteAt(bg, []byte(part), int64(i*len("first line\n"))); err != nil {
				t.Fatal(err)
			}
		}
		if err := h.(ns.Flusher).Flush(bg); err != nil {
			t.Fatal(err)
		}
		h.Close()
		if got, _ := lb.get("/" + v.name); string(got) != "first line\nsecond line\n" {
			t.Errorf("%s: the server has %q", v.name, got)
		}
		if s, a := lb.n("Store")-store, lb.n("Append")-appends; s != v.store || a != v.append {
			t.Errorf("%s: the data went with %d stores and %d appends, want %d and %d", v.name, s, a, v.store, v.append)
		}
	}
}
