package vif

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"

	"wirefs/internal/ns"
)

// sleeping returns a provider on this machine's cgroup v2 tree and a
// process of the test's user that lives until the test ends.
func sleeping(t *testing.T) (*Provider, int) {
	t.Helper()
	base, err := cgroup2Mount()
	if err != nil {
		t.Skip(err)
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return &Provider{base: base}, cmd.Process.Pid
}

// TestInfoOf: the pidfd's answer and /proc's (older kernels) agree.
func TestInfoOf(t *testing.T) {
	p, pid := sleeping(t)
	viaPidfd, err := pidfdInfoOf(pid)
	if err != nil {
		t.Skipf("no PIDFD_GET_INFO here (%v): /proc is the only way", err)
	}
	if _, err := p.infoOf(1 << 30); err == nil {
		t.Error("a process that does not exist has info (pidfd)")
	}
	noPidfdInfo.Store(true)
	defer noPidfdInfo.Store(false)
	viaProc, err := p.infoOf(pid)
	if err != nil || viaProc != viaPidfd || viaProc.uid != uint32(os.Getuid()) {
		t.Fatalf("/proc says %+v, %v; the pidfd %+v (uid %d)", viaProc, err, viaPidfd, os.Getuid())
	}
	if _, err := p.infoOf(1 << 30); err == nil {
		t.Error("a process that does not exist has info (/proc)")
	}
}

// TestInfoOfThread: a thread's id is looked up in /proc (pidfd_open takes
// only processes), and does not turn the pidfd way off for everyone.
func TestInfoOfThread(t *testing.T) {
	base, err := cgroup2Mount()
	if err != nil {
		t.Skip(err)
	}
	p := &Provider{base: base}
	self, err := p.infoOf(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// a thread of this process other than the first (Go starts several)
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	tid := 0
	for _, e := range tasks {
		if n, _ := strconv.Atoi(e.Name()); n != os.Getpid() {
			tid = n
		}
	}
	if tid == 0 {
		t.Skip("one thread only")
	}
	info, err := p.infoOf(tid)
	if err != nil || info != self {
		t.Fatalf("thread %d: %+v, %v; its process %+v", tid, info, err, self)
	}
	if noPidfdInfo.Load() {
		t.Error("a thread's id turned PIDFD_GET_INFO off")
	}
}

// TestMayMove: moving a process is checked against its owner as it is
// now (a door keeps proc/PID for a second, its pid may be reused): the
// owner may, root may, another user may not, and a process that is gone
// cannot be moved.
func TestMayMove(t *testing.T) {
	p, pid := sleeping(t)
	me, other := uint32(os.Getuid()), uint32(65534)
	if me == other {
		other = 1
	}
	if err := p.mayMove(ns.Caller{Uid: me}, pid); err != nil {
		t.Errorf("its owner (uid %d) may not move it: %v", me, err)
	}
	if err := p.mayMove(ns.Caller{Uid: 0}, pid); err != nil {
		t.Errorf("root may not move it: %v", err)
	}
	if err := p.mayMove(ns.Caller{Uid: other}, pid); ns.Errno(err) != syscall.EPERM {
		t.Errorf("uid %d moving uid %d's process: %v, want EPERM", other, me, err)
	}
	if err := p.mayMove(ns.Caller{Uid: other}, 1<<30); ns.Errno(err) != syscall.ENOENT {
		t.Errorf("moving a process that does not exist: %v, want ENOENT", err)
	}
}
