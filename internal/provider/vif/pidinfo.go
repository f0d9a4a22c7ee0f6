package vif

import (
	"errors"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"wirefs/internal/ns"
	"wirefs/internal/procstatus"
)

// pidInfo is what attaching needs to know of a process: its real uid
// (who may attach it) and the id of its cgroup in the unified hierarchy
// (the inode number of the cgroup's directory, which is how groups are
// known: group.id).
type pidInfo struct {
	uid    uint32
	cgroup uint64
}

// pidfdInfo is struct pidfd_info of linux/pidfd.h (its first version,
// 64 bytes), which PIDFD_GET_INFO fills.
type pidfdInfo struct {
	mask                                                       uint64
	cgroupID                                                   uint64
	pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid uint32
	fsgid, spare                                               uint32
}

const (
	pidfdGetInfo      = 0xc040ff0b // _IOWR(PIDFS_IOCTL_MAGIC, 11, struct pidfd_info)
	pidfdInfoCreds    = 1 << 1
	pidfdInfoCgroupID = 1 << 2
)

// noPidfdInfo: the kernel (before 6.13) has no PIDFD_GET_INFO.
var noPidfdInfo atomic.Bool

var errNoPidfdInfo = errors.New("no PIDFD_GET_INFO")

// infoOf asks the kernel about pid: through a pidfd (PIDFD_GET_INFO, three
// system calls, about 5 µs), else from /proc/PID/status and
// /proc/PID/cgroup (15-30 µs each: the kernel writes out the whole
// status). Every lookup of proc/PID and of its links asks.
func (p *Provider) infoOf(pid int) (pidInfo, error) {
	if !noPidfdInfo.Load() {
		info, err := pidfdInfoOf(pid)
		switch {
		case err == nil:
			return info, nil
		case errors.Is(err, unix.ESRCH):
			return pidInfo{}, ns.Errorf(syscall.ENOENT, "no process %d", pid)
		case errors.Is(err, errNoPidfdInfo):
			noPidfdInfo.Store(true)
		}
		// else a thread's id (pidfd_open takes processes): /proc knows it
	}
	b, err := readFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return pidInfo{}, ns.Errorf(syscall.ENOENT, "no process %d", pid)
	}
	uid, ok := procstatus.Status(b).ID("Uid", 0)
	if !ok {
		return pidInfo{}, ns.Errorf(syscall.ENOENT, "no process %d", pid)
	}
	cg, err := processCgroup(pid)
	if err != nil {
		return pidInfo{}, ns.Errorf(syscall.ENOENT, "no process %d", pid)
	}
	id, err := cgroupID(filepath.Join(p.base, cg))
	if err != nil {
		return pidInfo{}, ns.Errorf(syscall.ENOENT, "process %d: %v", pid, err)
	}
	return pidInfo{uid: uid, cgroup: id}, nil
}

func pidfdInfoOf(pid int) (pidInfo, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return pidInfo{}, err
	}
	defer unix.Close(fd)
	info := pidfdInfo{mask: pidfdInfoCreds | pidfdInfoCgroupID}
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), pidfdGetInfo, uintptr(unsafe.Pointer(&info)))
	switch {
	case errno == unix.ENOTTY || errno == unix.EINVAL:
		return pidInfo{}, errNoPidfdInfo
	case errno != 0:
		return pidInfo{}, errno
	case info.mask&(pidfdInfoCreds|pidfdInfoCgroupID) != pidfdInfoCreds|pidfdInfoCgroupID:
		return pidInfo{}, errNoPidfdInfo // no cgroup v2 id
	}
	return pidInfo{uid: info.ruid, cgroup: info.cgroupID}, nil
}
