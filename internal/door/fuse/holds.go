package fuse

import (
	"bytes"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"wirefs/internal/ns"
)

// door is the state of one mount that answers ns.Caller.Holds: which
// inode each open handle was opened on, and where the mount is.
type door struct {
	mnt  string
	mu   sync.Mutex
	inos map[ns.Handle]uint64
}

func (d *door) opened(h ns.Handle, ino uint64) {
	if !reflect.TypeOf(h).Comparable() {
		return // cannot be a map key; nobody can ask about it either
	}
	d.mu.Lock()
	d.inos[h] = ino
	d.mu.Unlock()
}

func (d *door) released(h ns.Handle) {
	if !reflect.TypeOf(h).Comparable() {
		return
	}
	d.mu.Lock()
	delete(d.inos, h)
	d.mu.Unlock()
}

// holds reports whether process (or thread) pid has a descriptor open on
// the inode where h was opened. Every open of a network name gets an inode
// of its own, so the inode identifies the open file. It reads
// /proc/PID/fd links (no request to this file system) and, for those under
// the mount, the ino line of /proc/PID/fdinfo.
func (d *door) holds(pid uint32, h ns.Handle) bool {
	d.mu.Lock()
	ino, ok := d.inos[h]
	d.mu.Unlock()
	if !ok || pid == 0 {
		return false
	}
	dir := "/proc/" + strconv.FormatUint(uint64(pid), 10)
	ents, err := os.ReadDir(dir + "/fd")
	if err != nil {
		return false
	}
	want := []byte("ino:\t" + strconv.FormatUint(ino, 10) + "\n")
	for _, e := range ents {
		target, err := os.Readlink(dir + "/fd/" + e.Name())
		if err != nil || !strings.HasPrefix(target, d.mnt+"/") {
			continue
		}
		info, err := os.ReadFile(dir + "/fdinfo/" + e.Name())
		if err == nil && bytes.Contains(info, want) {
			return true
		}
	}
	return false
}
