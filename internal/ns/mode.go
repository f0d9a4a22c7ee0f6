package ns

import (
	"os"
	"syscall"
)

// specialBits pairs the setuid, setgid and sticky bits of os.FileMode
// with their mode_t values.
var specialBits = [...]struct {
	file os.FileMode
	unix uint32
}{{os.ModeSetuid, syscall.S_ISUID}, {os.ModeSetgid, syscall.S_ISGID}, {os.ModeSticky, syscall.S_ISVTX}}

// UnixMode is the permission and setuid, setgid, sticky bits of m as
// stat(2) has them and chmod(2) takes them.
func UnixMode(m os.FileMode) uint32 {
	u := uint32(m.Perm())
	for _, b := range specialBits {
		if m&b.file != 0 {
			u |= b.unix
		}
	}
	return u
}

// FileMode is UnixMode's inverse: the permission and setuid, setgid,
// sticky bits of a mode_t (the file type bits are left out).
func FileMode(u uint32) os.FileMode {
	m := os.FileMode(u).Perm()
	for _, b := range specialBits {
		if u&b.unix != 0 {
			m |= b.file
		}
	}
	return m
}
