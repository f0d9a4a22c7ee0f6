package cache

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"wirefs/internal/ns"
)

// Several daemons of one user (a mount and any number of `wirefs run`)
// may start with the same cache directory. Two writers of one data file
// or one record would lose data, so a cache directory is used by one
// daemon at a time: each daemon holds an exclusive flock(2) on the "lock"
// file of the slot it uses. The first takes the directory itself; the
// others take the lowest free slot DIR/slots/N, a cache of its own with
// the same layout. A cache per daemon, rather than one owner serving the
// others, keeps every daemon independent of the others' lifetimes: when
// one is killed, nothing else stops working. What the daemons share is the
// servers: like two NFS clients, they see each other's changes after
// write-back and validation (T_read), and appends from several daemons
// reach the server as the server's own appends (remote.Appender).
//
// A killed daemon may leave dirty data in its slot. The next daemon that
// takes a slot moves the dirty files of every free slot into its own
// before scanning, so changes are written back by whichever daemon starts
// next, not only by one that happens to take that slot.

const slotsDir = "slots"

// maxSlots bounds how many daemons of one user can cache at once.
const maxSlots = 64

// slot is the cache directory a daemon holds, with its lock.
type slot struct {
	dir  string
	lock *os.File
}

// takeSlot locks dir, or the lowest free slot under it.
func takeSlot(dir string) (*slot, error) {
	for n := 0; n < maxSlots; n++ {
		d := dir
		if n > 0 {
			d = filepath.Join(dir, slotsDir, strconv.Itoa(n))
		}
		if err := privateDir(d); err != nil {
			return nil, err
		}
		lock, err := tryLock(d)
		if err != nil {
			return nil, err
		}
		if lock != nil {
			return &slot{dir: d, lock: lock}, nil
		}
	}
	return nil, ns.Errorf(syscall.EBUSY, "cache: %d daemons already use %s", maxSlots, dir)
}

// tryLock takes d's lock without waiting; nil when another daemon has it.
func tryLock(d string) (*os.File, error) {
	lock, err := os.OpenFile(filepath.Join(d, "lock"), os.O_RDWR|os.O_CREATE|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, ns.Errorf(ns.Errno(err), "cache: %v", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, nil
		}
		return nil, ns.Errorf(ns.Errno(err), "cache: locking %s: %v", d, err)
	}
	// For whoever wonders which daemon holds it.
	lock.Truncate(0)
	lock.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return lock, nil
}

// privateDir creates d with mode 0700, tightening a looser existing one:
// cached files are private.
func privateDir(d string) error {
	if err := os.MkdirAll(d, 0o700); err != nil {
		return ns.Errorf(ns.Errno(err), "cache: cannot create %s: %v", d, err)
	}
	fi, err := os.Stat(d)
	if err != nil {
		return ns.Errorf(ns.Errno(err), "cache: %v", err)
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(d, 0o700); err != nil {
			return ns.Errorf(ns.Errno(err), "cache: cannot make %s private: %v", d, err)
		}
	}
	return nil
}

// slotDirs lists the cache directories of every slot of the cache at
// base: base itself and base/slots/N.
func slotDirs(base string) []string {
	out := []string{base}
	ents, _ := os.ReadDir(filepath.Join(base, slotsDir))
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err == nil && e.IsDir() {
			out = append(out, filepath.Join(base, slotsDir, e.Name()))
		}
	}
	return out
}

// adoptOrphans moves the dirty files of every free slot of the cache at
// base into s (same file system: renames), so that this daemon writes
// them back. Clean data of free slots stays where it is.
func (s *slot) adoptOrphans(base string, log func(msg string, args ...any)) {
	for _, d := range slotDirs(base) {
		if d == s.dir {
			continue
		}
		lock, err := tryLock(d)
		if err != nil || lock == nil {
			continue // in use, or not ours to look at
		}
		moved := moveDirty(d, s.dir)
		lock.Close()
		if moved > 0 {
			log("cache: took over changes a stopped daemon left in its cache slot", "from", d, "files", moved)
		}
	}
}

// moveDirty moves every dirty record (ID.meta whose record says dirty)
// with its data from the sessions of slot from into the same sessions of
// slot to, and returns how many.
func moveDirty(from, to string) int {
	sessions, err := os.ReadDir(from)
	if err != nil {
		return 0
	}
	moved := 0
	for _, sess := range sessions {
		if !sess.IsDir() || sess.Name() == slotsDir {
			continue
		}
		src, dst := filepath.Join(from, sess.Name()), filepath.Join(to, sess.Name())
		names, err := os.ReadDir(src)
		if err != nil {
			continue
		}
		for _, n := range names {
			id, ok := strings.CutSuffix(n.Name(), ".meta")
			if !ok || !recordIsDirty(filepath.Join(src, n.Name())) {
				continue
			}
			if err := os.MkdirAll(dst, 0o700); err != nil {
				continue
			}
			if key, err := os.ReadFile(filepath.Join(src, "key")); err == nil {
				os.WriteFile(filepath.Join(dst, "key"), key, 0o600)
			}
			// The record first, and back if the data cannot follow: data
			// without its dirty record would pass for clean data.
			meta, data := filepath.Join(src, n.Name()), filepath.Join(src, id+".data")
			if os.Rename(meta, filepath.Join(dst, n.Name())) != nil {
				continue
			}
			if os.Rename(data, filepath.Join(dst, id+".data")) != nil {
				os.Rename(filepath.Join(dst, n.Name()), meta)
				continue
			}
			moved++
		}
	}
	return moved
}

func recordIsDirty(meta string) bool {
	b, err := os.ReadFile(meta)
	if err != nil {
		return false
	}
	r, _, err := decodeRecord(b)
	return err == nil && r.Dirty
}

// release unlocks the slot for the next daemon.
func (s *slot) release() error { return s.lock.Close() }
