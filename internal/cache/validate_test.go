package cache

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"wirefs/internal/ns"
	"wirefs/internal/remote"
)

func TestLazyOpenMakesNoServerCall(t *testing.T) {
	c, _ := newCache(t, 0)
	b := newLocalBackend(t)
	b.put(t, "/a.txt", []byte("hello"))
	root := c.Root("local://a", b, Options{TRead: new(time.Hour)})
	if got := cat(t, root, "a.txt"); string(got) != "hello" {
		t.Fatalf("read %q", got)
	}
	before := b.total()
	for range 3 {
		n := lookup(t, root, "a.txt")
		if _, err := n.Attr(bg); err != nil {
			t.Fatal(err)
		}
		h := openNode(t, n, os.O_RDONLY)
		if got := readAll(t, h); string(got) != "hello" {
			t.Fatalf("read %q", got)
		}
		h.Close()
	}
	if after := b.total(); after != before {
		t.Fatalf("lookup, stat, open and read within T_read made %d server calls", after-before)
	}
	if ttl := lookup(t, root, "a.txt").(ns.Cached).CacheTTL(); ttl <= 0 || ttl > time.Hour {
		t.Fatalf("CacheTTL %v, want the remaining part of an hour", ttl)
	}
}

func TestRevalidationAfterTReadSeesChange(t *testing.T) {
	c, _ := newCache(t, 0)
	b := newLocalBackend(t)
	b.put(t, "/f", []byte("old"))
	const tread = time.Second
	root := c.Root("local://r", b, Options{TRead: new(tread)})
	start := time.Now()
	if got := cat(t, root, "f"); string(got) != "old" {
		t.Fatalf("read %q", got)
	}
	b.put(t, "/f", []byte("new contents"))
	if got := cat(t, root, "f"); time.Since(start) < tread && string(got) != "old" {
		t.Fatalf("within T_read the cache showed %q, want the cached %q", got, "old")
	}
	time.Sleep(tread + 100*time.Millisecond)
	if got := cat(t, root, "f"); string(got) != "new contents" {
		t.Fatalf("after T_read the cache showed %q", got)
	}
}

func TestAgePercentShortensTrust(t *testing.T) {
	c, _ := newCache(t, 0)
	b := newLocalBackend(t)
	b.put(t, "/young", []byte("v1"))
	// A file changed 10s ago is trusted for 1% of that: 100ms.
	old := time.Now().Add(-10 * time.Second)
	os.Chtimes(b.local("/young"), old, old)
	root := c.Root("local://age", b, Options{TRead: new(time.Hour), AgePercent: new(1)})
	if got := cat(t, root, "young"); string(got) != "v1" {
		t.Fatalf("read %q", got)
	}
	b.put(t, "/young", []byte("v2!"))
	time.Sleep(200 * time.Millisecond)
	if got := cat(t, root, "young"); string(got) != "v2!" {
		t.Fatalf("after age*1%% the cache showed %q", got)
	}
}

func TestDropForcesRevalidation(t *testing.T) {
	c, _ := newCache(t, 0)
	b := newLocalBackend(t)
	b.put(t, "/dir/f", []byte("one"))
	root := c.Root("local://drop", b, Options{TRead: new(time.Hour)})
	if got := cat(t, root, "dir/f"); string(got) != "one" {
		t.Fatalf("read %q", got)
	}
	lookup(t, root, "dir").(ns.Dir).ReadDir(bg)
	b.put(t, "/dir/f", []byte("two!"))
	b.put(t, "/dir/g", []byte("new file"))
	if got := cat(t, root, "dir/f"); string(got) != "one" {
		t.Fatalf("within T_read: %q", got)
	}
	if _, err := lookup(t, root, "dir").(ns.Dir).Lookup(bg, "g"); ns.Errno(err) != syscall.ENOENT {
		t.Fatalf("a name missing from a fresh listing: %v, want ENOENT", err)
	}
	c.Drop()
	if got := cat(t, root, "dir/f"); string(got) != "two!" {
		t.Fatalf("after Drop: %q", got)
	}
	if got := cat(t, root, "dir/g"); string(got) != "new file" {
		t.Fatalf("after Drop: %q", got)
	}
}

// sizelessList is a server whose listings give no sizes (an HTML index).
type sizelessList struct{ *localBackend }

func (s sizelessList) List(ctx context.Context, p string) ([]remote.Info, error) {
	infos, err := s.localBackend.List(ctx, p)
	for i := range infos {
		infos[i].Size = -1
	}
	return infos, err
}

func TestUnknownSizeIsStatedBeforeRead(t *testing.T) {
	c, _ := newCache(t, 0)
	b := newLocalBackend(t)
	b.put(t, "/page", []byte("twelve bytes"))
	root := c.Root("local://html", sizelessList{b}, Options{TRead: new(time.Hour)})
	ents, err := root.ReadDir(bg)
	if err != nil || len(ents) != 1 || ents[0].Attr.Size != 0 {
		t.Fatalf("listing: %v %v", ents, err)
	}
	if got := cat(t, root, "page"); string(got) != "twelve bytes" {
		t.Fatalf("read %q", got)
	}
	if b.n("Stat") != 1 {
		t.Fatalf("%d Stats, want one before the first read", b.n("Stat"))
	}
	if a, _ := lookup(t, root, "page").Attr(bg); a.Size != 12 {
		t.Fatalf("size %d after the Stat", a.Size)
	}
}

func TestCleanDataSurvivesRestartAndIsRevalidated(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	b := newLocalBackend(t)
	b.put(t, "/same", []byte("unchanged"))
	b.put(t, "/other", []byte("before"))
	c1, err := New(dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	root := c1.Root("local://restart", b, Options{TRead: new(time.Hour)})
	cat(t, root, "same")
	cat(t, root, "other")
	c1.Close()
	b.put(t, "/other", []byte("after!"))

	c2, err := New(dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	<-c2.indexed // what is read before is fetched again
	root = c2.Root("local://restart", b, Options{TRead: new(time.Hour)})
	stats, reads := b.n("Stat"), b.n("ReadRange")
	if got := cat(t, root, "same"); string(got) != "unchanged" {
		t.Fatalf("read %q", got)
	}
	if b.n("Stat") != stats+1 || b.n("ReadRange") != reads {
		t.Fatal("clean data from before the restart: want one Stat and no transfer")
	}
	if got := cat(t, root, "other"); string(got) != "after!" {
		t.Fatalf("a file changed while the daemon was down reads %q", got)
	}
}

// statLister is localBackend whose Stat lists the parent, as FTP's does.
type statLister struct{ *localBackend }

func (statLister) StatListsParent() {}

// TestValidateByListing: where Stat would list the directory anyway
// (remote.StatLister), files are validated by one listing of their
// directory, which validates their cached siblings too: reading 10 files
// after T_read costs one listing of their directory, not ten Stats (each
// of which would list it); a file removed on the server meanwhile is
// ENOENT.
func TestValidateByListing(t *testing.T) {
	c, _ := newCache(t, 0)
	b := statLister{newLocalBackend(t)}
	for i := range 10 {
		b.put(t, fmt.Sprintf("/d/f%d", i), []byte(fmt.Sprint("version one ", i)))
	}
	root := c.Root("local://lists", b, Options{TRead: new(time.Hour)})
	d := lookup(t, root, "d").(ns.Dir)
	d.ReadDir(bg)
	for i := range 10 {
		cat(t, root, fmt.Sprintf("d/f%d", i))
	}
	for i := range 9 {
		b.put(t, fmt.Sprintf("/d/f%d", i), []byte(fmt.Sprint("version two, longer ", i)))
	}
	os.Remove(b.local("/d/f9"))
	c.Drop()
	lists, stats := b.n("List"), b.n("Stat")
	for i := range 9 {
		if got, want := string(cat(t, root, fmt.Sprintf("d/f%d", i))), fmt.Sprint("version two, longer ", i); got != want {
			t.Fatalf("f%d after Drop: %q, want %q", i, got, want)
		}
	}
	if _, err := d.Lookup(bg, "f9"); ns.Errno(err) != syscall.ENOENT {
		t.Fatalf("a file removed on the server: %v, want ENOENT", err)
	}
	// One listing of / for d itself, one of d for its ten files.
	if n := b.n("List") - lists; n != 2 || b.n("Stat") != stats {
		t.Fatalf("validating d and its 10 files took %d listings and %d Stats, want 2 and 0", n, b.n("Stat")-stats)
	}
}

// TestStatByListingLingers: where a stat is a listing of the parent
// (remote.StatLister), the prefetch gate stays shut after it as after a
// stat (askLinger: the program may ask again at once), and not after a
// program's own listing, whose next question the listings ahead serve.
func TestStatByListingLingers(t *testing.T) {
	c, _ := newCache(t, 0)
	b := statLister{newLocalBackend(t)}
	b.put(t, "/d/f", []byte("data"))
	root := c.Root("local://lingers", b, Options{TRead: new(time.Hour)})
	g := root.(*dir).t.gate
	until := func() time.Time {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.until
	}
	before := time.Now()
	d := lookup(t, root, "d").(ns.Dir) // a stat of d, made by listing /
	looked := until()
	if !looked.After(before) || b.n("List") != 1 {
		t.Fatalf("after a lookup made by a listing (%d listings) the gate stays shut until %v, want after %v", b.n("List"), looked, before)
	}
	if _, err := d.ReadDir(bg); err != nil { // the program's own listing
		t.Fatal(err)
	}
	if u := until(); !u.Equal(looked) || b.n("List") != 2 {
		t.Fatalf("after the program's listing (%d listings) the gate stays shut until %v, want %v (no linger of its own)", b.n("List"), u, looked)
	}
	cat(t, root, "d/f")
	c.Drop()
	before = time.Now()
	cat(t, root, "d/f") // validated: stats of d and f, made by listing / and d
	if u := until(); !u.After(before) || b.n("List") != 4 {
		t.Fatalf("after a stat made by a listing (%d listings) the gate stays shut until %v, want after %v", b.n("List"), u, before)
	}
}
