package cache

import (
	"context"
	"io"
	"os"
	"testing"

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
