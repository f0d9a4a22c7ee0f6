package vif

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestLockFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "vif-net1.lock")
	held, err := takeLock(path)
	if err != nil {
		t.Fatal(err)
	}
	if f, err := takeLock(path); !errors.Is(err, errLocked) {
		t.Fatalf("a second takeLock: %v, %v; want errLocked", f, err)
	}
	// a daemon that opened the file just before the holder removed it
	late, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	dropLock(held, path)
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the lock file after dropLock: %v", err)
	}
	if current, err := lockOpened(late, path); current || err != nil {
		t.Fatalf("lockOpened of a removed lock file = %v, %v; want false: that lock excludes nobody", current, err)
	}
	again, err := takeLock(path)
	if err != nil {
		t.Fatal(err)
	}
	defer dropLock(again, path)

	// sweepLocks removes what nobody holds (a daemon killed with -9),
	// not what is held
	stale := filepath.Join(dir, "vif-net2.lock")
	if err := os.WriteFile(stale, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	sweepLocks(dir)
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a lock file nobody holds after sweepLocks: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("a held lock file after sweepLocks: %v", err)
	}
}
