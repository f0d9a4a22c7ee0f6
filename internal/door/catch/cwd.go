package catch

import (
	"strings"
	"syscall"
)

// A thread that changed into a namespace directory (chdir) works in the
// private door's copy of it: that is where the kernel resolves its
// relative names. getcwd is answered with the name the program knows
// instead, so that a shell's `pwd -P`, make's CURDIR and the names that
// realpath builds stay in the namespace. /proc/PID/cwd still shows the
// door's name. Any other working directory is the kernel's to report.

// getcwd answers getcwd(buf, size) of n.
func (s *server) getcwd(n *notif) {
	if s.mnt == "" {
		s.cont(n.ID)
		return
	}
	var buf [pathMax]byte
	k, err := syscall.Readlink(procPath(n.Pid, "cwd"), buf[:])
	if err != nil {
		s.cont(n.ID)
		return
	}
	name, ok := s.cwdName(string(buf[:k]))
	if !ok {
		s.cont(n.ID)
		return
	}
	s.nServed.Add(1)
	if uint64(len(name)+1) > n.Args[1] {
		s.respond(n.ID, 0, syscall.ERANGE)
		return
	}
	if errno := s.writeTarget(n, n.Args[0], append([]byte(name), 0)); errno != 0 {
		s.respond(n.ID, 0, errno)
		return
	}
	s.respond(n.ID, int64(len(name)+1), 0)
}

// cwdName returns the name a program knows for the working directory cwd
// when cwd is on the private door.
func (s *server) cwdName(cwd string) (string, bool) {
	rest, ok := strings.CutPrefix(cwd, s.mnt+"/"+nsDir)
	switch {
	case !ok:
		return "", false
	case rest == "":
		return s.names.local(""), true
	case rest[0] == '/':
		return s.names.local(rest[1:]), true
	}
	return "", false
}
