package ftp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"wirefs/internal/remote"
	"wirefs/internal/remote/remotetest"
	"wirefs/internal/testsrv"
)

// TestFailedUploadFullDisk: an upload that fills the server's disk fails
// and leaves the old file whole under its name, and no
// temporary; one that fits replaces it, keeping its mode.
func TestFailedUploadFullDisk(t *testing.T) {
	f := newFixture(t, map[string]string{"small/": ""})
	dir, uid, gid := f.smallDisk(t, "small", "1m")
	p := filepath.Join(dir, "f.bin")
	old := randomBytes(100 << 10)
	mustDo(t, os.WriteFile(p, old, 0o600))
	mustDo(t, os.Chown(p, uid, gid))

	b := f.dial(t, remote.Options{})
	data := randomBytes(4 << 20)
	err := b.Store(context.Background(), "/small/f.bin", bytes.NewReader(data), int64(len(data)), 0o644)
	// vsftpd says "451 Failure writing to local file.": EIO, not ENOSPC.
	if err == nil {
		t.Fatal("a store of 4 MiB into 1 MiB succeeded")
	}
	remotetest.CheckIntact(t, p, old)

	small := randomBytes(200 << 10)
	mustDo(t, b.Store(context.Background(), "/small/f.bin", bytes.NewReader(small), int64(len(small)), 0o644))
	remotetest.CheckIntact(t, p, small)
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("the replaced file has mode %v, want the old one's 0600", fi.Mode())
	}
}

// smallDisk mounts a tmpfs of size on the fixture's directory name, owned
// by the FTP user (whose uid and gid it returns with its path).
func (f *fixture) smallDisk(t *testing.T, name, size string) (dir string, uid, gid int) {
	t.Helper()
	dir = filepath.Join(f.root, name)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		testsrv.Unavailable(t, fmt.Sprintf("cannot mount a small tmpfs: %v: %s", err, out))
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	u, err := user.Lookup(strings.Split(f.server, "@")[0])
	mustDo(t, err)
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	mustDo(t, os.Chown(dir, uid, gid))
	return dir, uid, gid
}

// gate is a reader that stops after n bytes until resume is closed,
// closing reached when it gets there.
type gate struct {
	r       io.Reader
	n       int64
	once    sync.Once
	reached chan struct{}
	resume  chan struct{}
}

func (g *gate) Read(p []byte) (int, error) {
	if g.n <= 0 {
		g.once.Do(func() { close(g.reached) })
		<-g.resume
	} else if int64(len(p)) > g.n {
		p = p[:g.n]
	}
	n, err := g.r.Read(p)
	g.n -= int64(n)
	return n, err
}

// TestFailedUploadServerKilled: the server dies half-way through an
// upload (every vsftpd process killed) and comes back; the old file is
// whole, and the temporary is deleted on a new connection.
func TestFailedUploadServerKilled(t *testing.T) {
	f := newFixture(t, map[string]string{"dir/": ""})
	p := filepath.Join(f.root, "dir", "f.bin")
	old := randomBytes(300 << 10)
	b := f.dial(t, remote.Options{})
	ctx := context.Background()
	mustDo(t, b.Store(ctx, "/dir/f.bin", bytes.NewReader(old), int64(len(old)), 0o644))
	remotetest.CheckIntact(t, p, old)

	data := randomBytes(8 << 20)
	g := &gate{r: bytes.NewReader(data), n: 1 << 20, reached: make(chan struct{}), resume: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- b.Store(ctx, "/dir/f.bin", g, int64(len(data)), 0o644) }()
	<-g.reached
	f.srv.Kill()
	f.srv.Start()
	close(g.resume)
	if err := <-done; err == nil {
		t.Fatal("a store whose server was killed half-way succeeded")
	} else {
		t.Logf("the store failed as it should: %v", err)
	}
	remotetest.CheckIntact(t, p, old)
}

// TestStoreInPlaceWhereNoTemporary: in a directory where the user may
// write a file but not create one, the temporary cannot be made, and
// stores there go straight to the name (as before), from then on.
func TestStoreInPlaceWhereNoTemporary(t *testing.T) {
	f := newFixture(t, map[string]string{"locked/": "", "locked/f": "old"})
	dir := filepath.Join(f.root, "locked")
	mustDo(t, os.Chown(dir, 0, 0)) // root's, 0755: the FTP user cannot add to it
	b := f.dial(t, remote.Options{})
	for _, data := range []string{"the new contents", "again"} {
		mustDo(t, b.Store(context.Background(), "/locked/f", strings.NewReader(data), int64(len(data)), 0o644))
		remotetest.CheckIntact(t, filepath.Join(dir, "f"), []byte(data))
	}
	if _, learnt := b.noTemp.Load("/locked"); !learnt || b.inPlace.Load() {
		t.Error("the session did not learn that temporaries cannot be made in /locked (and only there)")
	}
}

// TestStoreOnOneConnection: a store asks for the replaced file's mode
// with STAT ahead of the STOR on the STOR's own connection, so a session's
// first store uses the connection the dial logged in (the STAT on a second
// connection cost a login of its own, which a compile's close waited
// for), and the mode is kept.
func TestStoreOnOneConnection(t *testing.T) {
	f := newFixture(t, map[string]string{"dir/": "", "dir/old": "old data"})
	mustDo(t, os.Chmod(filepath.Join(f.root, "dir/old"), 0o604))
	ctx := context.Background()
	for _, name := range []string{"new", "old"} {
		b := f.dial(t, remote.Options{})
		users, stats := f.srv.Commands("USER"), f.srv.Commands("STAT")
		mustDo(t, b.Store(ctx, "/dir/"+name, strings.NewReader("new data"), 8, 0o640))
		if n := f.srv.Commands("USER") - users; n != 0 {
			t.Errorf("a store of %s logged in %d more times, want none", name, n)
		}
		if n := f.srv.Commands("STAT") - stats; n != 1 {
			t.Errorf("a store of %s sent STAT %d times, want once", name, n)
		}
		mustDo(t, b.Close())
	}
	for name, want := range map[string]os.FileMode{"new": 0o640, "old": 0o604} {
		p := filepath.Join(f.root, "dir", name)
		remotetest.CheckIntact(t, p, []byte("new data"))
		if fi, _ := os.Stat(p); fi.Mode().Perm() != want {
			t.Errorf("%s has mode %v, want %v", name, fi.Mode().Perm(), want)
		}
	}
}

// TestStoreWithoutSTAT: on a server that refuses STAT of a path, a store
// still keeps a replaced file's mode, from SIZE and the directory's
// listing after the data, and gives a new file the mode asked for.
func TestStoreWithoutSTAT(t *testing.T) {
	f := newFixture(t, map[string]string{"dir/": "", "dir/old": "old data"}, testsrv.VsftpdDeny("STAT"))
	mustDo(t, os.Chmod(filepath.Join(f.root, "dir/old"), 0o604))
	b := f.dial(t, remote.Options{})
	ctx := context.Background()
	for range 2 { // the first learns that STAT is refused, the second does not ask
		mustDo(t, b.Store(ctx, "/dir/old", strings.NewReader("new data"), 8, 0o640))
		mustDo(t, b.Store(ctx, "/dir/new", strings.NewReader("new data"), 8, 0o640))
		for name, want := range map[string]os.FileMode{"new": 0o640, "old": 0o604} {
			p := filepath.Join(f.root, "dir", name)
			remotetest.CheckIntact(t, p, []byte("new data"))
			if fi, _ := os.Stat(p); fi.Mode().Perm() != want {
				t.Errorf("%s has mode %v, want %v", name, fi.Mode().Perm(), want)
			}
		}
	}
	if n := f.srv.Commands("STAT"); n != 1 {
		t.Errorf("STAT was sent %d times, want once (then the server is known to refuse it)", n)
	}
	if n := f.srv.Commands("LIST"); n < 2 {
		t.Errorf("the replaced file's mode came from %d listings, want one per store", n)
	}
}
