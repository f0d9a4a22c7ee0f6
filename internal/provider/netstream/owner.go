package netstream

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// owner is the process that bound a server name. Seed 000's concurrent
// server rule: while the server file is open, only this process and the
// processes it forked while holding the file may open the name again (each
// such open accepts the next client). Anyone else gets EACCES.
type owner struct {
	tgid  int
	since uint64 // clock ticks since boot when the file was opened
}

func newOwner(pid uint32) owner {
	return owner{tgid: tgidOf(int(pid)), since: bootTicks()}
}

// admits reports whether the process (thread) pid may reopen the server.
func (o owner) admits(pid uint32) bool {
	cur := tgidOf(int(pid))
	if cur <= 0 || o.tgid <= 0 {
		return false
	}
	child := -1 // the process directly below cur on the way up
	for depth := 0; depth < 4096; depth++ {
		if cur == o.tgid {
			if child < 0 {
				return true
			}
			_, start, err := procStat(child)
			// +1: the opener's clock reading and the fork may share a tick.
			return err == nil && start+1 >= o.since
		}
		ppid, _, err := procStat(cur)
		if err != nil || ppid <= 1 {
			return false
		}
		child, cur = cur, ppid
	}
	return false
}

// tgidOf maps a thread id (what FUSE reports) to its process id.
func tgidOf(tid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return -1
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("Tgid:")); ok {
			n, err := strconv.Atoi(string(bytes.TrimSpace(v)))
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}

// procStat returns a process's parent and start time (ticks since boot).
func procStat(pid int) (ppid int, start uint64, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	// The command name (field 2) may hold spaces and parentheses: skip to
	// the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); ppid is field 4, starttime field 22.
	if len(f) < 20 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: short", pid)
	}
	ppid, err = strconv.Atoi(f[1])
	if err == nil {
		start, err = strconv.ParseUint(f[19], 10, 64)
	}
	return ppid, start, err
}

// bootTicks is now, in the clock ticks (USER_HZ, 100 on Linux) that
// /proc/PID/stat uses for start times.
func bootTicks() uint64 {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0
	}
	secs, _, _ := strings.Cut(string(b), " ")
	whole, frac, _ := strings.Cut(secs, ".")
	w, _ := strconv.ParseUint(whole, 10, 64)
	f, _ := strconv.ParseUint((frac + "00")[:2], 10, 64)
	return w*100 + f
}
