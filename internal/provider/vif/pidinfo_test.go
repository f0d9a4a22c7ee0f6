package vif

import (
	"os"
	"os/exec"
	"testing"
)

// TestInfoOf: the pidfd's answer and /proc's (older kernels) agree.
func TestInfoOf(t *testing.T) {
	base, err := cgroup2Mount()
	if err != nil {
		t.Skip(err)
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	p := &Provider{base: base}
	viaPidfd, err := pidfdInfoOf(cmd.Process.Pid)
	if err != nil {
		t.Skipf("no PIDFD_GET_INFO here (%v): /proc is the only way", err)
	}
	if _, err := p.infoOf(1 << 30); err == nil {
		t.Error("a process that does not exist has info (pidfd)")
	}
	noPidfdInfo.Store(true)
	defer noPidfdInfo.Store(false)
	viaProc, err := p.infoOf(cmd.Process.Pid)
	if err != nil || viaProc != viaPidfd || viaProc.uid != uint32(os.Getuid()) {
		t.Fatalf("/proc says %+v, %v; the pidfd %+v (uid %d)", viaProc, err, viaPidfd, os.Getuid())
	}
	if _, err := p.infoOf(1 << 30); err == nil {
		t.Error("a process that does not exist has info (/proc)")
	}
}
