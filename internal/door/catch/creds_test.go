package catch

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// startAs starts `sleep` as uid/gid (nil: as this process) and returns it;
// it is killed at the end of the test.
func startAs(t *testing.T, cred *syscall.Credential) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// The credentials are the thread's filesystem ids, whether they come from
// a kept pidfd or from /proc, and for root as for anyone else (as root,
// the owner of /proc/TID does not tell root from a thread that is not
// dumpable, so the /proc path reads the status file).
func TestCreds(t *testing.T) {
	ids := []*syscall.Credential{nil}
	if os.Getuid() == 0 {
		ids = append(ids, &syscall.Credential{Uid: 65534, Gid: 65533, Groups: []uint32{}})
	}
	for _, cred := range ids {
		cmd := startAs(t, cred)
		wantUID, wantGID := uint32(os.Getuid()), uint32(os.Getgid())
		if cred != nil {
			wantUID, wantGID = cred.Uid, cred.Gid
		}
		tid := uint32(cmd.Process.Pid)
		var c credSource
		defer c.close()
		for i := range 2 { // opens a pidfd, then uses the kept one
			uid, gid, err := c.creds(tid)
			if err != nil || uid != wantUID || gid != wantGID {
				t.Fatalf("creds (call %d) = %d, %d, %v; want %d, %d", i, uid, gid, err, wantUID, wantGID)
			}
		}
		if c.off {
			t.Logf("no PIDFD_GET_INFO here: /proc was read")
		} else if len(c.pidfds) != 1 {
			t.Fatalf("%d pidfds kept, want 1", len(c.pidfds))
		}
		uid, gid, err := credsFromProc(tid)
		if err != nil || uid != wantUID || gid != wantGID {
			t.Fatalf("credsFromProc = %d, %d, %v; want %d, %d", uid, gid, err, wantUID, wantGID)
		}
	}
}

// A pidfd names one thread: once it is gone the kept pidfd is dropped and
// the question fails (ESRCH), rather than answering with a dead thread's
// ids or another thread's that got the same number.
func TestCredsThreadGone(t *testing.T) {
	cmd := startAs(t, nil)
	tid := uint32(cmd.Process.Pid)
	var c credSource
	defer c.close()
	if _, _, err := c.creds(tid); err != nil {
		t.Fatal(err)
	}
	if c.off {
		t.Skip("no PIDFD_GET_INFO (Linux 6.13) here: /proc is read")
	}
	cmd.Process.Kill()
	cmd.Wait()
	if _, _, err := c.creds(tid); err != syscall.ESRCH {
		t.Fatalf("creds of a reaped thread: %v, want ESRCH", err)
	}
	if len(c.pidfds) != 0 {
		t.Fatalf("%d pidfds kept after the thread went", len(c.pidfds))
	}
}

// The kept pidfds are bounded, and closed by close.
func TestCredsBounded(t *testing.T) {
	var c credSource
	cmds := make([]*exec.Cmd, maxPidfds+1)
	for i := range cmds {
		cmds[i] = startAs(t, nil)
	}
	for _, cmd := range cmds {
		if _, _, err := c.creds(uint32(cmd.Process.Pid)); err != nil {
			t.Fatal(err)
		}
		if len(c.pidfds) > maxPidfds {
			t.Fatalf("%d pidfds kept, more than %d", len(c.pidfds), maxPidfds)
		}
	}
	c.close()
	if len(c.pidfds) != 0 || !c.off {
		t.Fatalf("after close: %d pidfds, off %v", len(c.pidfds), c.off)
	}
	// Closed, it still answers, from /proc.
	if uid, _, err := c.creds(uint32(cmds[0].Process.Pid)); err != nil || uid != uint32(os.Getuid()) {
		t.Fatalf("creds after close = %d, %v", uid, err)
	}
}
