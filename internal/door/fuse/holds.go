package fuse

import (
	"reflect"
	"sync"

	"wirefs/internal/ns"
	"wirefs/internal/procfd"
)

// door is the state of one mount that answers ns.Caller.Holds: which
// inode each open handle was opened on, how many handles each inode has,
// and where the mount is.
type door struct {
	mnt   string
	mu    sync.Mutex
	inos  map[ns.Handle]uint64
	opens map[uint64]int // inode -> open handles
	// hints remembers the descriptor through which a process was last
	// found holding a handle, so that a server process reopening its
	// file in a loop costs one descriptor check, not a scan of all its
	// descriptors (which grow with every client it keeps open).
	hints map[holdKey]string
	// io chooses each stored file handle's I/O mode (iomode.go).
	io ioModes
	// numbers numbers the inodes (inos.go).
	numbers inoNumbers
}

type holdKey struct {
	pid uint32
	h   ns.Handle
}

func newDoor(mnt string) *door {
	return &door{mnt: mnt, inos: map[ns.Handle]uint64{}, opens: map[uint64]int{}, hints: map[holdKey]string{}}
}

func comparable(h ns.Handle) bool { return reflect.TypeOf(h).Comparable() }

// opened counts h, opened on inode ino, and reports whether it is the
// only handle open there.
func (d *door) opened(h ns.Handle, ino uint64) (alone bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.opens[ino]++
	if comparable(h) { // others cannot be map keys; nobody can ask about them either
		d.inos[h] = ino
	}
	return d.opens[ino] == 1
}

func (d *door) released(h ns.Handle, ino uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.opens[ino]--; d.opens[ino] <= 0 {
		delete(d.opens, ino)
	}
	if comparable(h) {
		delete(d.inos, h)
		for k := range d.hints {
			if k.h == h {
				delete(d.hints, k)
			}
		}
	}
}

// idle reports whether no handle is open on inode ino.
func (d *door) idle(ino uint64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.opens[ino] == 0
}

// holds reports whether process (or thread) pid has a descriptor open on
// the inode where h was opened. While a handle is open its inode is its
// own (Lookup gives a name a fresh inode when the old one is in use), so
// the inode identifies the open file. The descriptor found is remembered
// as the next check's hint.
func (d *door) holds(pid uint32, h ns.Handle) bool {
	if pid == 0 || !comparable(h) {
		return false
	}
	key := holdKey{pid, h}
	d.mu.Lock()
	ino, ok := d.inos[h]
	hint := d.hints[key]
	d.mu.Unlock()
	if !ok {
		return false
	}
	fd, found := procfd.Find(pid, d.mnt+"/", ino, hint)
	if found && fd != hint {
		d.mu.Lock()
		if _, open := d.inos[h]; open {
			d.hints[key] = fd
		}
		d.mu.Unlock()
	}
	return found
}
