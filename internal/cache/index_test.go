package cache

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"wirefs/internal/leakcheck"
)

// largeCache writes a cache directory whose session for key holds n clean
// files "/fI" (data "/fI", the version of mtime) and one changed file
// "/dirty", as a daemon stopped with them would leave it. It returns the
// ids of the clean files.
func largeCache(t *testing.T, dir, key string, n int, mtime time.Time, dirty []byte) []string {
	t.Helper()
	c, err := New(dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Root(key, newLocalBackend(t), Options{}) // makes the session directory
	sdir := c.sessionDir(key)
	c.Close()
	boot := bootID()
	ids := make([]string, n)
	for i := range n {
		p := fmt.Sprintf("/f%d", i)
		ids[i] = newID()
		data := filepath.Join(sdir, ids[i]+".data")
		if err := os.WriteFile(data, []byte(p), 0o600); err != nil {
			t.Fatal(err)
		}
		r := record{Path: p, Mode: 0o644, Size: int64(len(p)), Mtime: mtime, Ranges: [][2]int64{{0, int64(len(p))}}, Boot: boot}
		if err := setXattr(data, r.encode()); err != nil {
			t.Skipf("the test's file system has no user extended attributes: %v", err)
		}
	}
	id := newID()
	if err := os.WriteFile(filepath.Join(sdir, id+".data"), dirty, 0o600); err != nil {
		t.Fatal(err)
	}
	r := record{Path: "/dirty", Mode: 0o600, Dirty: true, Size: -1, Boot: boot}
	if err := writeAtomic(filepath.Join(sdir, id+".meta"), r.encode(), true); err != nil {
		t.Fatal(err)
	}
	return ids
}

// holdIndex makes index wait when it starts until the returned release
// is called (or Close). held is closed once it waits.
func holdIndex(t *testing.T) (held chan struct{}, release func()) {
	held, resume := make(chan struct{}), make(chan struct{})
	beforeIndex = func(ctx context.Context) {
		close(held)
		select {
		case <-resume:
		case <-ctx.Done():
		}
	}
	t.Cleanup(func() { beforeIndex = func(context.Context) {} })
	return held, func() { close(resume) }
}

// TestStartupScanOfLargeCache: with 100k cached files, New (the mount)
// reads the names and the changed file's record only: it returns while
// the records of the clean files are not read yet (index held), the
// changed file is written back at once, and a file used meanwhile is
// fetched again. Once indexed, the clean data is accounted and reused
// without a transfer, and the record the refetch made obsolete is gone.
func TestStartupScanOfLargeCache(t *testing.T) {
	n := 100_000
	if testing.Short() {
		n = 5_000
	}
	dir := filepath.Join(t.TempDir(), "cache")
	const key = "local://large"
	mtime := time.Now().Add(-time.Hour).Truncate(time.Second)
	dirty := []byte("changed while the daemon was down\n")
	ids := largeCache(t, dir, key, n, mtime, dirty)
	b := newLocalBackend(t)
	for _, p := range []string{"/f1", "/f2"} {
		b.put(t, p, []byte(p))
		os.Chtimes(b.local(p), mtime, mtime)
	}

	held, release := holdIndex(t)
	start := time.Now()
	c, err := New(dir, 0, nil)
	t.Logf("New returned after %v", time.Since(start)) // for the record: no timing is asserted
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	<-held
	c.lruMu.Lock()
	used := c.used
	c.lruMu.Unlock()
	if used != 0 {
		t.Fatalf("New accounted %d bytes of clean data: it read records it should leave to index", used)
	}
	root := c.Root(key, b, Options{TRead: new(time.Hour)})
	waitFor(t, "the write-back of the changed file", hasContent(b, "/dirty", dirty))
	if got := cat(t, root, "f1"); string(got) != "/f1" || b.n("ReadRange") != 1 {
		t.Fatalf("f1 before its record is indexed: read %q with %d transfers, want one", got, b.n("ReadRange"))
	}

	release()
	start = time.Now()
	<-c.indexed
	t.Logf("index read %d records in %v", n, time.Since(start))
	want := int64(len(dirty))
	for i := range n {
		want += int64(len(fmt.Sprintf("/f%d", i)))
	}
	c.lruMu.Lock()
	used = c.used
	c.lruMu.Unlock()
	if used != want {
		t.Errorf("after index, %d bytes of clean data accounted, want %d", used, want)
	}
	if _, err := os.Stat(filepath.Join(c.sessionDir(key), ids[1]+".data")); !os.IsNotExist(err) {
		t.Errorf("f1's record from before the start is still on disk (%v); the refetch replaced it", err)
	}
	if got := cat(t, root, "f2"); string(got) != "/f2" || b.n("ReadRange") != 1 {
		t.Errorf("f2 after index: read %q with %d transfers in all, want its cached data", got, b.n("ReadRange"))
	}
}

// TestCloseDuringIndex: Close ends an index in progress without waiting
// for it, and leaves nothing running.
func TestCloseDuringIndex(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	largeCache(t, dir, "local://close", 10, time.Now(), []byte("x"))
	base := leakcheck.Take(t)
	held, _ := holdIndex(t)
	c, err := New(dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	<-held
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	<-c.indexed
	base.Check(t)
}
