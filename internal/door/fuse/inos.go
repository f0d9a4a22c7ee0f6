package fuse

import "sync"

// inoNumbers gives every inode of the mount its number, and gives a name
// its number as early as a directory listing: READDIRPLUS writes each
// entry's d_ino before go-fuse looks the name up, so without a number
// known then, readdir(3) says d_ino = 0xffffffff while stat(2) says
// another (tar, rsync, find -inum and `ls -i` compare them).
//
// A listed name that has no inode yet gets a pending number, which the
// lookup that follows takes. Numbers are never reused and start small
// (root is 1), so 32-bit stat(2) callers get them without EOVERFLOW.
type inoNumbers struct {
	mu      sync.Mutex
	last    uint64
	pending map[inoKey]uint64
}

type inoKey struct {
	dir  uint64
	name string
}

// maxPending bounds the numbers listings gave out that no lookup took
// (names listed and never looked up). Forgetting them only means such a
// name gets another number at its lookup than its listing said.
const maxPending = 1 << 16

// listed returns the number a listing of dir shows for name, which has no
// inode yet.
func (m *inoNumbers) listed(dir uint64, name string) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := inoKey{dir, name}
	if ino, ok := m.pending[k]; ok {
		return ino
	}
	if m.pending == nil || len(m.pending) >= maxPending {
		m.pending = map[inoKey]uint64{}
	}
	ino := m.nextLocked()
	m.pending[k] = ino
	return ino
}

// forNew returns the number of a new inode for name in dir: the one a
// listing gave it, or a fresh one.
func (m *inoNumbers) forNew(dir uint64, name string) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := inoKey{dir, name}
	if ino, ok := m.pending[k]; ok {
		delete(m.pending, k)
		return ino
	}
	return m.nextLocked()
}

func (m *inoNumbers) nextLocked() uint64 {
	if m.last == 0 {
		m.last = 1 // the root's
	}
	m.last++
	return m.last
}
