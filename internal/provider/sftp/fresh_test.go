package sftp

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestFreshStoresTakeSpares: new small files stored one after another
// take the spares as Store's do (the third file is the spare's inode,
// renamed into place whole, with the mode asked for), with the rename
// sent behind the data instead of after their answer; nothing is left
// beside them.
func TestFreshStoresTakeSpares(t *testing.T) {
	keepSpares(t)
	e := newEnv(t)
	b := e.dial(t, alias)
	dir := t.TempDir()
	store := storeNew(t, dir, b.StoreFresh)
	store("one.o", []byte("first"), 0o644)
	store("two.o", []byte("second"), 0o600)
	spare, ino := spareIn(t, dir)
	store("three.o", randomBytes(20<<10, 3), 0o640)
	if got := inode(t, filepath.Join(dir, "three.o")); got != ino {
		t.Errorf("three.o is inode %d, not the spare %s (%d): the store did not take it", got, spare, ino)
	}
	store("empty.o", nil, 0o644)
	b.Close()
	noTemporaries(t, dir)
}

// TestFreshStoreFullDisk: a fresh store that the server's full disk
// fails (the rename went behind the write, as it does), into a temporary
// of its own or into a spare, leaves nothing under the name, and no
// temporary.
func TestFreshStoreFullDisk(t *testing.T) {
	keepSpares(t)
	e := newEnv(t)
	dir := smallTmpfs(t)
	if err := os.WriteFile(filepath.Join(dir, "filler"), make([]byte, 900<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	b := e.dial(t, alias)
	n := filepath.Join(dir, "new.bin")
	data := randomBytes(200<<10, 2) // one write: less than a packet
	// The first store in the directory: no spare yet, a temporary of its own.
	err := b.StoreFresh(context.Background(), n, bytes.NewReader(data), int64(len(data)), 0o644)
	wantErrno(t, "store a new 200 KiB file on a full disk, without a spare", err, syscall.ENOSPC)
	if _, err := os.Stat(n); !os.IsNotExist(err) {
		t.Fatalf("a failed store left %s: %v", n, err)
	}
	noTemporaries(t, dir)
	for _, name := range []string{"a", "b"} {
		if err := b.StoreFresh(context.Background(), filepath.Join(dir, name), bytes.NewReader([]byte(name)), 1, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	spare, _ := spareIn(t, dir)
	err = b.StoreFresh(context.Background(), n, bytes.NewReader(data), int64(len(data)), 0o644)
	wantErrno(t, "store a new 200 KiB file on a full disk", err, syscall.ENOSPC)
	if _, err := os.Stat(n); !os.IsNotExist(err) {
		t.Fatalf("a failed store left %s: %v", n, err)
	}
	if _, err := os.Stat(filepath.Join(dir, spare)); !os.IsNotExist(err) {
		t.Errorf("the spare %s is still there: the store did not take it, and the test does not test storeFreshInSpare", spare)
	}
	b.Close()
	noTemporaries(t, dir)
}
