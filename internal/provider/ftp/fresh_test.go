package ftp

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"wirefs/internal/remote"
	"wirefs/internal/remote/remotetest"
	"wirefs/internal/testsrv"
)

// waitPool waits until cond, which reads b's pool under b.mu, holds.
func waitPool(t *testing.T, b *Backend, what string, cond func() bool) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		b.mu.Lock()
		ok, changed := cond(), b.changed
		b.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}

// TestStoreFreshUnderItsName: new small files stored back to back go
// under their names with no temporary (no RNFR) once the session has a
// data connection made ahead (the first store, on a connection without
// one, goes through Store), each with its bytes and the mode asked for;
// the back-to-back transfers log in one more connection beside the first
// (takeIdle), and no more.
func TestStoreFreshUnderItsName(t *testing.T) {
	f := newFixture(t, map[string]string{"dir/": ""})
	b := f.dial(t, remote.Options{})
	ctx := context.Background()
	want := map[string][]byte{}
	for i := range 6 {
		name := fmt.Sprintf("f%d.c", i)
		data := randomBytes(100 + i*(freshMax/6))
		want[name] = data
		mustDo(t, b.StoreFresh(ctx, "/dir/"+name, bytes.NewReader(data), int64(len(data)), 0o640))
	}
	waitPool(t, b, "the connection logged in ahead", func() bool { return b.dialing == 0 && len(b.live) == 2 })
	if n := f.srv.Commands("RNFR"); n != 1 {
		t.Errorf("6 fresh stores sent RNFR %d times, want once (the first, without a data connection made ahead)", n)
	}
	if n := f.srv.Commands("USER"); n != 2 {
		t.Errorf("the session logged in %d times, want 2", n)
	}
	entries, err := os.ReadDir(filepath.Join(f.root, "dir"))
	mustDo(t, err)
	if len(entries) != len(want) {
		t.Errorf("the server's directory has %d entries, want %d (a temporary left?)", len(entries), len(want))
	}
	for name, data := range want {
		p := filepath.Join(f.root, "dir", name)
		remotetest.CheckIntact(t, p, data)
		if fi, err := os.Stat(p); err == nil && fi.Mode().Perm() != 0o640 {
			t.Errorf("%s has mode %v, want 0640", name, fi.Mode().Perm())
		}
	}
	// Larger than freshMax: Store's temporary, as before.
	big := randomBytes(freshMax + 1)
	mustDo(t, b.StoreFresh(ctx, "/dir/big", bytes.NewReader(big), int64(len(big)), 0o644))
	remotetest.CheckIntact(t, filepath.Join(f.root, "dir", "big"), big)
	if n := f.srv.Commands("RNFR"); n != 2 {
		t.Errorf("a store above freshMax sent RNFR %d times in all, want 2", n)
	}
}

// TestStoreFreshFullDisk: a fresh store that the server fails half-way
// (its disk full: 451) leaves nothing under the name, and no temporary;
// a file of that name that another client made meanwhile stays after such
// a failure, and is replaced when the store succeeds.
func TestStoreFreshFullDisk(t *testing.T) {
	f := newFixture(t, map[string]string{"small/": "", "dir/": ""})
	dir, uid, gid := f.smallDisk(t, "small", "64k")
	mustDo(t, os.WriteFile(filepath.Join(dir, "filler"), make([]byte, 56<<10), 0o644))

	b := f.dial(t, remote.Options{})
	ctx := context.Background()
	// A first store gives the connection its data connection made ahead.
	mustDo(t, b.StoreFresh(ctx, "/dir/first", strings.NewReader("first"), 5, 0o644))
	rnfr := f.srv.Commands("RNFR")
	data := randomBytes(freshMax)
	if err := b.StoreFresh(ctx, "/small/f.bin", bytes.NewReader(data), int64(len(data)), 0o644); err == nil {
		t.Fatal("a store of 16 KiB into 8 KiB of room succeeded")
	} else {
		t.Logf("the store failed as it should: %v", err)
	}
	if n := f.srv.Commands("RNFR"); n != rnfr {
		t.Error("the failed store went through a temporary: the test does not test StoreFresh")
	}
	entries, err := os.ReadDir(dir)
	mustDo(t, err)
	for _, e := range entries {
		if e.Name() != "filler" {
			t.Errorf("the failed store left %s on the server", e.Name())
		}
	}
	// A file that another client made under the name meanwhile is not
	// deleted after a failure (SIZE found it): it was not ours.
	theirs := filepath.Join(dir, "theirs")
	mustDo(t, os.WriteFile(theirs, []byte("t"), 0o644))
	mustDo(t, os.Chown(theirs, uid, gid))
	if err := b.StoreFresh(ctx, "/small/theirs", bytes.NewReader(data), int64(len(data)), 0o644); err == nil {
		t.Fatal("a store of 16 KiB into 8 KiB of room succeeded")
	}
	if _, err := os.Stat(theirs); err != nil {
		t.Errorf("a failed fresh store deleted the file another client made under its name: %v", err)
	}

	other := filepath.Join(f.root, "dir", "made-meanwhile")
	mustDo(t, os.WriteFile(other, []byte("another client's"), 0o644))
	mustDo(t, os.Chown(other, uid, gid))
	mustDo(t, b.StoreFresh(ctx, "/dir/made-meanwhile", strings.NewReader("ours"), 4, 0o644))
	remotetest.CheckIntact(t, other, []byte("ours"))
}

// TestMkdirOneRoundTrip: Mkdir sends SITE CHMOD only where the mode MKD
// gave (STAT -a's "." line, read in the same round trip) is not the mode
// asked for, and never to a directory someone else made (MKD refused);
// the first fresh store after a Mkdir finds the data connection it made
// ahead (no temporary, no RNFR).
func TestMkdirOneRoundTrip(t *testing.T) {
	f := newFixture(t, map[string]string{"theirs/": ""})
	mustDo(t, os.Chmod(filepath.Join(f.root, "theirs"), 0o711))
	b := f.dial(t, remote.Options{})
	ctx := context.Background()
	mode := func(p string) os.FileMode {
		t.Helper()
		fi, err := os.Stat(filepath.Join(f.root, p))
		mustDo(t, err)
		return fi.Mode().Perm()
	}
	chmods := func() int { return f.srv.Commands("SITE CHMOD") }

	// vsftpd's local_umask 022: MKD makes 0755.
	mustDo(t, b.Mkdir(ctx, "/same", 0o755))
	if n := chmods(); n != 0 || mode("same") != 0o755 {
		t.Errorf("Mkdir of the server's own mode: %d SITE CHMOD, mode %v; want none, 0755", n, mode("same"))
	}
	mustDo(t, b.Mkdir(ctx, "/other", 0o750))
	if n := chmods(); n != 1 || mode("other") != 0o750 {
		t.Errorf("Mkdir of another mode: %d SITE CHMOD, mode %v; want 1, 0750", n, mode("other"))
	}
	data := randomBytes(1000)
	mustDo(t, b.StoreFresh(ctx, "/same/f", bytes.NewReader(data), int64(len(data)), 0o644))
	if n := f.srv.Commands("RNFR"); n != 0 {
		t.Errorf("the first fresh store after a Mkdir went through a temporary (%d RNFR)", n)
	}
	if got, err := os.ReadFile(filepath.Join(f.root, "same/f")); err != nil || !bytes.Equal(got, data) {
		t.Errorf("stored file: %d bytes, %v", len(got), err)
	}
	before := chmods()
	wantErrno(t, "Mkdir of a directory someone else made", b.Mkdir(ctx, "/theirs", 0o755), syscall.EEXIST)
	if n := chmods() - before; n != 0 || mode("theirs") != 0o711 {
		t.Errorf("Mkdir of an existing directory: %d SITE CHMOD, its mode %v; want none, 0711 as it was", n, mode("theirs"))
	}
	// (Listings are STATs too: of the parents.)
	if n := f.srv.Commands("STAT -a /same") + f.srv.Commands("STAT -a /other") + f.srv.Commands("STAT -a /theirs"); n != 3 {
		t.Errorf("3 Mkdirs sent STAT of their directory %d times", n)
	}

}

// TestMkdirWithoutStat: a server that refuses STAT gets SITE CHMOD after
// every MKD, as before.
func TestMkdirWithoutStat(t *testing.T) {
	f := newFixture(t, nil, testsrv.VsftpdDeny("STAT"))
	b := f.dial(t, remote.Options{})
	ctx := context.Background()
	mustDo(t, b.Mkdir(ctx, "/d", 0o755))
	mustDo(t, b.Mkdir(ctx, "/e", 0o700))
	if n := f.srv.Commands("SITE CHMOD"); n != 2 {
		t.Errorf("2 Mkdirs without STAT sent SITE CHMOD %d times, want 2", n)
	}
	for name, want := range map[string]os.FileMode{"d": 0o755, "e": 0o700} {
		if fi, err := os.Stat(filepath.Join(f.root, name)); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want mode %v", name, fi.Mode(), err, want)
		}
	}
}
