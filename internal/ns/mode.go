package ns

import (
	"os"
	"syscall"
)

// UnixMode is the permission and setuid, setgid, sticky bits of m as
// stat(2) has them and chmod(2) takes them.
func UnixMode(m os.FileMode) uint32 {
	u := uint32(m.Perm())
	if m&os.ModeSetuid != 0 {
		u |= syscall.S_ISUID
	}
	if m&os.ModeSetgid != 0 {
		u |= syscall.S_ISGID
	}
	if m&os.ModeSticky != 0 {
		u |= syscall.S_ISVTX
	}
	return u
}

// FileMode is UnixMode's inverse: the permission and setuid, setgid,
// sticky bits of a mode_t (the file type bits are left out).
func FileMode(u uint32) os.FileMode {
	m := os.FileMode(u).Perm()
	if u&syscall.S_ISUID != 0 {
		m |= os.ModeSetuid
	}
	if u&syscall.S_ISGID != 0 {
		m |= os.ModeSetgid
	}
	if u&syscall.S_ISVTX != 0 {
		m |= os.ModeSticky
	}
	return m
}
