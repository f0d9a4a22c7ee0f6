package waited

import (
	"os/exec"
	"runtime"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// startExited starts true (through Start when waitedFor) and returns it
// once it has exited, unreaped.
func startExited(t *testing.T, waitedFor bool) *exec.Cmd {
	t.Helper()
	pidfd := -1
	cmd := exec.Command("true")
	cmd.SysProcAttr = &syscall.SysProcAttr{PidFD: &pidfd}
	start := func() (int, error) {
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	}
	var err error
	if waitedFor {
		err = Start(start)
	} else {
		_, err = start()
	}
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(pidfd)
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	for {
		if n, err := unix.Poll(fds, -1); n == 1 || err != syscall.EINTR {
			return cmd
		}
	}
}

// TestExited: a reaper is shown the children nobody else waits for, never
// one in the set, and hears when its starter has reaped it.
func TestExited(t *testing.T) {
	// Children belong to the thread that forked them, and waitid(2)
	// looks at the calling thread's first: both are forked, and asked
	// about, from one thread, where the older is listed first.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	other := startExited(t, false) // the older child: listed first
	mine := startExited(t, true)
	pid, err := Exited()
	if err != nil || pid != other.Process.Pid {
		t.Fatalf("Exited: %d %v, want %d", pid, err, other.Process.Pid)
	}
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
		t.Fatal(err)
	}
	if pid, err := Exited(); err != nil || pid != 0 {
		t.Fatalf("with only a waited child exited: %d %v, want 0", pid, err)
	}
	if err := mine.Wait(); err != nil {
		t.Fatalf("the starter's own wait: %v", err)
	}
	Reaped(mine.Process.Pid)
	select {
	case <-Released():
	default:
		t.Error("Reaped did not signal Released")
	}
	if has(mine.Process.Pid) {
		t.Error("still in the set after Reaped")
	}
}
