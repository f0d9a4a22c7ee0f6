// Package portal is seed 004's portal file system (puffs §4.6, after
// 4.4BSD's portalfs): namespace paths whose open runs a provider and
// hands the opener a descriptor the provider made. Exec portals run a
// program and give its pipe or socketpair; fs portals open files of a
// local tree as the opener. (tcp and udp portals are names of the
// netstream provider; the command mounts them.) The package knows
// processes and descriptors, not FUSE or seccomp: every handle is a real
// kernel object that a door may pass on or serve.
package portal

import (
	"context"
	"errors"
	"io"
	"os"
	"slices"
	"syscall"

	"wirefs/internal/ns"
	"wirefs/internal/procstatus"
)

// identity is who an opener is: what a program runs as and what files
// are opened as.
type identity struct {
	uid, gid uint32
	groups   []uint32
}

// opener is c's identity: the uid and gid the door reported and the
// supplementary groups of the calling thread, read from its /proc
// status. The groups are taken only when that status shows the same
// filesystem uid and gid as the door reported, so a thread that exited
// meanwhile (its id reused) lends no groups: the opener then has its
// primary group only, never more than it had.
func opener(c ns.Caller) identity {
	id := identity{uid: c.Uid, gid: c.Gid}
	if c.Pid == 0 {
		return id
	}
	s, err := procstatus.Read(c.Pid)
	if err != nil {
		return id
	}
	if fsuid, ok := s.ID("Uid", 3); !ok || fsuid != c.Uid {
		return id
	}
	if fsgid, ok := s.ID("Gid", 3); !ok || fsgid != c.Gid {
		return id
	}
	id.groups = s.Groups()
	return id
}

// mustSwitch reports whether acting as id needs the daemon to switch
// credentials: not when the daemon is id (same uid, gid and groups), nor
// when the daemon is not root and id is its own user, whatever id's
// groups (it could not take other groups, and a user gains nothing from
// acting as their own process). A daemon that is not root refuses every
// other user (EACCES).
func mustSwitch(id identity) (bool, error) {
	if os.Geteuid() != 0 {
		if uint32(os.Geteuid()) != id.uid {
			return false, ns.Errorf(syscall.EACCES, "the daemon runs as uid %d and cannot act as uid %d (run it as root to serve other users)", os.Geteuid(), id.uid)
		}
		return false, nil
	}
	return !daemonIs(id), nil
}

// daemonIs reports whether the daemon is id: same uid, gid and groups.
func daemonIs(id identity) bool {
	if uint32(os.Geteuid()) != id.uid || uint32(os.Getegid()) != id.gid {
		return false
	}
	gs, err := syscall.Getgroups()
	if err != nil {
		return false
	}
	own := make([]uint32, len(gs))
	for i, g := range gs {
		own[i] = uint32(g)
	}
	slices.Sort(own)
	want := slices.Sorted(slices.Values(id.groups))
	return slices.Equal(slices.Compact(own), slices.Compact(want))
}

// stream is a portal's end of a pipe or socketpair: a kernel object the
// catcher door gives the program itself, and a stream the FUSE door
// serves (Read and Write wake up when ctx is cancelled, through the
// deadlines of Go's poller, which the file is registered with).
type stream struct{ f *os.File }

var (
	_ ns.KernelObject = (*stream)(nil)
	_ ns.Reader       = (*stream)(nil)
	_ ns.Writer       = (*stream)(nil)
)

func (s *stream) Read(ctx context.Context, p []byte) (int, error) {
	return ns.Interruptible(ctx, s.f.SetReadDeadline, func() (int, error) {
		n, err := s.f.Read(p)
		if errors.Is(err, io.EOF) {
			err = nil
		}
		return n, err
	})
}

func (s *stream) Write(ctx context.Context, p []byte) (int, error) {
	return ns.Interruptible(ctx, s.f.SetWriteDeadline, func() (int, error) { return s.f.Write(p) })
}

func (s *stream) KernelFile() (*os.File, error) { return s.f, nil }

func (s *stream) Close() error { return s.f.Close() }
