// Package procfd answers, from /proc, whether a process has a descriptor
// open on a given inode of a file system: what both doors need for seed
// 000's concurrent-server rule (only a process that holds the server file
// may open its name again). It reads /proc/PID/fd links and the ino line
// of /proc/PID/fdinfo, so it never sends a request to the file system
// being asked about (which may be the caller itself).
package procfd

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// Find returns the number of a descriptor of process (or thread) pid
// whose path is under prefix (a mount point followed by "/") and whose
// inode is ino. hint, a descriptor number found earlier, is tried first:
// a process that reopens a server file usually holds it in the same
// descriptor, and trying it first makes the check O(1) instead of a scan
// of every descriptor.
func Find(pid uint32, prefix string, ino uint64, hint string) (fd string, ok bool) {
	if pid == 0 {
		return "", false
	}
	dir := "/proc/" + strconv.FormatUint(uint64(pid), 10)
	want := []byte("ino:\t" + strconv.FormatUint(ino, 10) + "\n")
	has := func(fd string) bool {
		target, err := os.Readlink(dir + "/fd/" + fd)
		if err != nil || !strings.HasPrefix(target, prefix) {
			return false
		}
		info, err := os.ReadFile(dir + "/fdinfo/" + fd)
		return err == nil && bytes.Contains(info, want)
	}
	if hint != "" && has(hint) {
		return hint, true
	}
	ents, err := os.ReadDir(dir + "/fd")
	if err != nil {
		return "", false
	}
	for _, e := range ents {
		if e.Name() != hint && has(e.Name()) {
			return e.Name(), true
		}
	}
	return "", false
}
