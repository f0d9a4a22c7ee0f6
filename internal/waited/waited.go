// Package waited is the set of the daemon's children whose starter waits
// for them itself (exec portals' programs, through os/exec and a pidfd),
// shared with the reaper of every other child: `wirefs run` is a child
// subreaper and reaps its command's orphans, which are the daemon's
// children like the portals' programs. A reaper that took a program's
// exit would leave its starter without the exit status, and signalling
// the program's group after that could reach a process that reused its
// pid. The set is process-wide because children are.
package waited

import (
	"sync"
	"syscall"
	"unsafe"
)

var (
	// starting is held for reading while a child starts and is
	// entered in the set, for writing while a reaper asks about a pid:
	// a child that exits at once is in the set before a reaper sees it.
	starting sync.RWMutex
	mu       sync.Mutex
	pids     = map[int]bool{}
	released = make(chan struct{}, 1)
)

// Start calls start, which starts a child and returns its pid, and
// enters the pid in the set: no reaper that asks (Exited) reaps it.
func Start(start func() (pid int, err error)) error {
	starting.RLock()
	defer starting.RUnlock()
	pid, err := start()
	if err == nil {
		mu.Lock()
		pids[pid] = true
		mu.Unlock()
	}
	return err
}

// Reaped says the starter has reaped pid. A reaper that left pid alone
// hears it on Released and looks again for others.
func Reaped(pid int) {
	mu.Lock()
	delete(pids, pid)
	mu.Unlock()
	select {
	case released <- struct{}{}:
	default:
	}
}

// Released receives a value after a Reaped.
func Released() <-chan struct{} { return released }

// has reports whether pid is in the set, once children being started are
// entered.
func has(pid int) bool {
	starting.Lock()
	defer starting.Unlock()
	mu.Lock()
	defer mu.Unlock()
	return pids[pid]
}

// wall is __WALL: children of any kind (clone children, threads traced).
const wall = 0x40000000

// Exited returns the pid of a child that has exited and that its starter
// does not wait for itself, without reaping it (0: none now). A reaper
// reaps it with wait4(pid); when only children of the set have exited,
// it finds none until their starters have reaped them (Released).
func Exited() (int, error) {
	for {
		// siginfo_t: si_pid is the first field of its union, at
		// offset 16 on every 64-bit Linux (x/sys/unix does not show it).
		var info [128]byte
		_, _, e := syscall.Syscall6(syscall.SYS_WAITID, 0 /* P_ALL */, 0, uintptr(unsafe.Pointer(&info[0])),
			syscall.WEXITED|syscall.WNOHANG|0x1000000 /* WNOWAIT */ |wall, 0, 0)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		pid := int(*(*int32)(unsafe.Pointer(&info[16])))
		if pid == 0 || !has(pid) {
			return pid, nil
		}
		return 0, nil // the first exited child is its starter's: wait for Released
	}
}
