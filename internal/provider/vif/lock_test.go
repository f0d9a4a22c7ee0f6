package vif

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"wirefs/internal/testsrv"
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

// TestSweepCgroups: the cgroup subtree of a namespace whose lock nobody
// holds (a daemon killed with -9) is removed; one whose lock is held
// stays.
func TestSweepCgroups(t *testing.T) {
	if os.Geteuid() != 0 {
		testsrv.Unavailable(t, "needs root (cgroups of its own)")
	}
	root, err := cgroup2Mount()
	if err != nil {
		testsrv.Unavailable(t, err.Error())
	}
	// A hierarchy of the test's own stands for the cgroup root: the
	// machine's wirefs.vif (running daemons' subtrees, whose locks are
	// not in this test's run directory) is never looked at.
	base, err := os.MkdirTemp(root, "wirefs-test-sweep-")
	if err != nil {
		testsrv.Unavailable(t, fmt.Sprintf("cannot make a cgroup: %v", err))
	}
	t.Cleanup(func() { removeTree(base, root) })
	runDir := t.TempDir()
	left := filepath.Join(base, "wirefs.vif", "net1")
	kept := filepath.Join(base, "wirefs.vif", "net2")
	for _, d := range []string{filepath.Join(left, "g1", "g2"), filepath.Join(kept, "g1")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	lockAt := filepath.Join(runDir, "vif-net2.lock")
	held, err := takeLock(lockAt)
	if err != nil {
		t.Fatal(err)
	}
	defer dropLock(held, lockAt)
	swept := sweepCgroups(base, runDir)
	if !slices.Contains(swept, left) || slices.Contains(swept, kept) {
		t.Errorf("swept %v; want %s and not %s", swept, left, kept)
	}
	if _, err := os.Stat(left); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the unmanaged subtree is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(kept, "g1")); err != nil {
		t.Errorf("the managed subtree went: %v", err)
	}
	if _, err := os.Stat(filepath.Join(runDir, "vif-net1.lock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the sweep left a lock file: %v", err)
	}
}
