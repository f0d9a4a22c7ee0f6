package vif

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// The per-network-namespace lock is a file in RunDir, vif-netN.lock, that
// its daemon holds with flock(2) and removes when it stops: a file per
// namespace ever used would otherwise accumulate (every test's netns
// left one). Removing a lock file is safe because whoever takes a lock
// checks, once it holds it, that the file it locked is still the one at
// the path: a daemon that opened the file just before its holder removed
// it has locked a file nobody else will ever see, and opens the path
// again.

// errLocked: another process holds the lock.
var errLocked = errors.New("locked")

// takeLock opens (creating) the lock file at path and locks it, or
// returns errLocked.
func takeLock(path string) (*os.File, error) {
	for {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|syscall.O_CLOEXEC, 0o644)
		if err != nil {
			return nil, err
		}
		current, err := lockOpened(f, path)
		if current {
			return f, nil
		}
		f.Close()
		if err != nil {
			return nil, err
		}
	}
}

// lockOpened locks f, which was opened at path, and reports whether f is
// still the file at path (false, nil: it was removed or replaced since f
// was opened; the lock on it is worthless and f is unlocked).
func lockOpened(f *os.File, path string) (bool, error) {
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return false, errLocked
		}
		return false, err
	}
	held, err1 := f.Stat()
	there, err2 := os.Stat(path)
	if err1 == nil && err2 == nil && os.SameFile(held, there) {
		return true, nil
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false, nil
}

// dropLock removes the lock file at path, which f holds, and releases
// it: removed while held, so nobody can have locked it in between.
func dropLock(f *os.File, path string) {
	os.Remove(path)
	f.Close()
}

// sweepLocks removes the lock files in dir that nobody holds: those of
// daemons killed with -9 (the kernel released their locks), in network
// namespaces that may be gone.
func sweepLocks(dir string) {
	names, _ := filepath.Glob(filepath.Join(dir, "vif-net*.lock"))
	for _, path := range names {
		f, err := os.OpenFile(path, os.O_RDWR|syscall.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		if current, _ := lockOpened(f, path); current {
			dropLock(f, path)
		} else {
			f.Close()
		}
	}
}

// sweepCgroups removes the cgroup subtrees (base/wirefs.vif/netN) that
// no daemon manages: those of daemons killed with -9 in namespaces no
// daemon started in again (most often gone: a test's netns). A daemon
// clears its own namespace's leftovers when it starts; these nobody
// would. A subtree is swept only with its namespace's lock held, so a
// daemon starting there meanwhile waits for it or finds it gone; its
// processes go back to base (removeTree). It returns the subtrees
// removed.
func sweepCgroups(base, runDir string) []string {
	var swept []string
	ents, _ := os.ReadDir(filepath.Join(base, "wirefs.vif"))
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "net") {
			continue
		}
		lockAt := filepath.Join(runDir, "vif-"+e.Name()+".lock")
		f, err := takeLock(lockAt)
		if err != nil {
			continue // its daemon runs (or ours: its own leftovers are start's)
		}
		dir := filepath.Join(base, "wirefs.vif", e.Name())
		if removeTree(dir, base) == nil {
			swept = append(swept, dir)
		}
		dropLock(f, lockAt)
	}
	if len(swept) > 0 {
		_ = syscall.Rmdir(filepath.Join(base, "wirefs.vif")) // as Close does, when no namespace uses it
	}
	return swept
}
