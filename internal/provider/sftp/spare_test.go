package sftp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"wirefs/internal/remote"
	"wirefs/internal/remote/remotetest"
)

// spareIn waits until dir (a local path) holds a spare and returns its
// inode; the spare is opened in the background after a store.
func spareIn(t *testing.T, dir string) (name string, ino uint64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if remote.IsSpare(e.Name()) {
				fi, err := e.Info()
				if err == nil {
					return e.Name(), fi.Sys().(*syscall.Stat_t).Ino
				}
			}
		}
	}
	t.Fatalf("no spare appeared in %s", dir)
	return "", 0
}

// keepSpares keeps every unused spare for a second during the test, so
// that a store issued after the test saw a spare takes it however loaded
// the machine is (unused ones otherwise go 100 ms after a fast burst).
func keepSpares(t *testing.T) {
	lo, hi := spareIdleMin, spareIdleMax
	spareIdleMin, spareIdleMax = time.Second, time.Second
	t.Cleanup(func() { spareIdleMin, spareIdleMax = lo, hi })
}

// storeNew returns a func that stores a new file in dir with store
// (Store or StoreFresh) and checks that the server has it whole, with the
// mode asked for.
func storeNew(t *testing.T, dir string, store func(context.Context, string, io.Reader, int64, os.FileMode) error) func(name string, data []byte, perm os.FileMode) {
	return func(name string, data []byte, perm os.FileMode) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := store(context.Background(), p, bytes.NewReader(data), int64(len(data)), perm); err != nil {
			t.Fatalf("store %s: %v", name, err)
		}
		remotetest.CheckIntact(t, p, data)
		if fi, _ := os.Stat(p); fi.Mode().Perm() != perm {
			t.Errorf("%s has mode %v, want %v", name, fi.Mode().Perm(), perm)
		}
	}
}

func inode(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// TestStoresTakeSpares: small stores that come one after another into a
// directory get their temporaries opened ahead: the third store's file
// is the spare opened after the second (the same inode), renamed into
// place, whole, with the mode asked. Listings leave spares out, an
// unused spare is removed once idle, and none is left after the
// session closes.
func TestStoresTakeSpares(t *testing.T) {
	keepSpares(t)
	e := newEnv(t)
	b := e.dial(t, alias)
	dir := t.TempDir()
	store := storeNew(t, dir, b.Store)
	store("one.o", []byte("first"), 0o644)
	store("two.o", []byte("second"), 0o644)
	spare, ino := spareIn(t, dir)
	list, err := b.List(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, fi := range list {
		if remote.IsSpare(fi.Name) {
			t.Errorf("the listing shows the spare %s", fi.Name)
		}
	}
	store("three.o", []byte("third"), 0o640)
	if got := inode(t, filepath.Join(dir, "three.o")); got != ino {
		t.Errorf("three.o is inode %d, not the spare %s (%d): the store did not take it", got, spare, ino)
	}
	// The next spare, untaken, goes once idle.
	next, _ := spareIn(t, dir)
	for deadline := time.Now().Add(spareIdleMax + 10*time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, next)); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the unused spare %s is still there after %v", next, spareIdleMax)
		}
	}
	// A spare opened at the session's close is removed with it.
	store("four.o", []byte("4"), 0o644)
	store("five.o", []byte("5"), 0o644)
	spareIn(t, dir)
	b.Close()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".wirefs-") {
			t.Errorf("left after the session closed: %s", e.Name())
		}
	}
}

// TestSpareReplacesKeepingWhatWasThere: a store that took a spare learns
// what the name holds only with its data's answer: a file it replaces
// keeps its mode, and a directory at the name fails the store (EISDIR)
// without a temporary left.
func TestSpareReplacesKeepingWhatWasThere(t *testing.T) {
	keepSpares(t)
	e := newEnv(t)
	b := e.dial(t, alias)
	dir := t.TempDir()
	kept := filepath.Join(dir, "kept")
	if err := os.WriteFile(kept, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"a", "b", "kept", "c", "sub"} {
		if name == "kept" || name == "sub" {
			spareIn(t, dir) // so that this store takes one
		}
		data := []byte(fmt.Sprintf("data %d", i))
		err := b.Store(context.Background(), filepath.Join(dir, name), bytes.NewReader(data), int64(len(data)), 0o644)
		if name == "sub" {
			wantErrno(t, "store over a directory", err, syscall.EISDIR)
			continue
		}
		if err != nil {
			t.Fatalf("store %s: %v", name, err)
		}
		remotetest.CheckIntact(t, filepath.Join(dir, name), data)
	}
	if fi, _ := os.Stat(kept); fi.Mode().Perm() != 0o600 {
		t.Errorf("the replaced file has mode %v, want its own 0600", fi.Mode())
	}
	if left := remotetest.Temporaries(dir); len(left) > 0 {
		t.Errorf("temporaries left: %v", left)
	}
}

// TestDirectoryWithSpareGoes: a directory whose spare is ready (or being
// opened) right after a burst of stores can be removed once its files
// are (make clean, rm -rf right after a build), and renamed without the
// spare moving along: the session removes its spares there first.
func TestDirectoryWithSpareGoes(t *testing.T) {
	keepSpares(t)
	e := newEnv(t)
	b := e.dial(t, alias)
	ctx := context.Background()
	burst := func(dir string) {
		t.Helper()
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"a.o", "b.o"} {
			if err := b.Store(ctx, filepath.Join(dir, name), bytes.NewReader([]byte(name)), int64(len(name)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	root := t.TempDir()
	gone := filepath.Join(root, "obj")
	burst(gone) // the spare may still be opening: Rmdir waits for it
	for _, name := range []string{"a.o", "b.o"} {
		if err := b.Remove(ctx, filepath.Join(gone, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Rmdir(ctx, gone); err != nil {
		t.Fatalf("rmdir of a directory whose files were removed: %v", err)
	}
	moved := filepath.Join(root, "src")
	burst(moved)
	spareIn(t, moved)
	to := filepath.Join(root, "dst")
	if err := b.Rename(ctx, moved, to); err != nil {
		t.Fatal(err)
	}
	if left := remotetest.Temporaries(to); len(left) > 0 {
		t.Errorf("temporaries moved along: %v", left)
	}
	ents, _ := os.ReadDir(to)
	for _, e := range ents {
		if remote.IsSpare(e.Name()) {
			t.Errorf("the spare moved along with its directory: %s", e.Name())
		}
	}
	// Stores into the renamed directory and a new one of the old name work.
	burst(moved)
	for _, dir := range []string{to, moved} {
		data := []byte("after the rename")
		if err := b.Store(ctx, filepath.Join(dir, "c.o"), bytes.NewReader(data), int64(len(data)), 0o644); err != nil {
			t.Fatal(err)
		}
		remotetest.CheckIntact(t, filepath.Join(dir, "c.o"), data)
	}
}
