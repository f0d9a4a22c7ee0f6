package catch

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"
)

// A tracee is a thread stopped under ptrace, in which the supervisor runs
// system calls of its choosing (x86-64 only). Two things need it: chdir
// into the namespace (the target must change its own working directory)
// and wirefs attach (the target must install the filter itself).
//
// All requests come from one OS thread, as ptrace demands: the caller
// locks its goroutine to its thread for the tracee's lifetime.
type tracee struct {
	tid   int
	saved syscall.PtraceRegs // as stopped; restored by detach
	mem   *os.File           // /proc/TID/mem
	insn  uint64             // address of a syscall instruction
	patch []byte             // original bytes at insn, if we wrote one there
}

const (
	ptraceSeize     = 0x4206
	ptraceInterrupt = 0x4207
	ptraceEventStop = 128
	optTraceSysGood = 1

	// Kernel-internal return values of an interrupted system call,
	// which signal delivery turns into a restart (arch/x86 signal.c).
	errRestartSys     = 512
	errRestartNoIntr  = 513
	errRestartNoHand  = 514
	errRestartBlock   = 516
	sysRestartSyscall = 219
)

var syscallInsn = []byte{0x0f, 0x05}

// seize attaches to thread tid and stops it. The caller's goroutine must
// be locked to its OS thread.
func seize(tid int) (*tracee, error) {
	if runtime.GOARCH != "amd64" {
		return nil, errors.New("ptrace injection is implemented for x86-64 only")
	}
	if _, _, e := syscall.Syscall6(syscall.SYS_PTRACE, ptraceSeize, uintptr(tid), 0, optTraceSysGood, 0, 0); e != 0 {
		return nil, fmt.Errorf("ptrace(PTRACE_SEIZE, %d): %w", tid, e)
	}
	t := &tracee{tid: tid}
	if _, _, e := syscall.Syscall6(syscall.SYS_PTRACE, ptraceInterrupt, uintptr(tid), 0, 0, 0, 0); e != 0 {
		syscall.PtraceDetach(tid)
		return nil, fmt.Errorf("ptrace(PTRACE_INTERRUPT): %w", e)
	}
	if err := t.waitStop(func(ws syscall.WaitStatus) bool {
		return ws.StopSignal() == syscall.SIGTRAP && ws.TrapCause() == ptraceEventStop
	}); err != nil {
		syscall.PtraceDetach(tid)
		return nil, err
	}
	if err := syscall.PtraceGetRegs(tid, &t.saved); err != nil {
		syscall.PtraceDetach(tid)
		return nil, fmt.Errorf("PTRACE_GETREGS: %w", err)
	}
	mem, err := os.OpenFile(procPath(uint32(tid), "mem"), os.O_RDWR, 0)
	if err != nil {
		syscall.PtraceDetach(tid)
		return nil, err
	}
	t.mem = mem
	return t, nil
}

// waitStop waits for the stop want accepts. Other stops (a signal
// arriving meanwhile) are passed on to the tracee, which a signal-delivery
// stop does by being resumed with the signal... except that we must stay
// stopped: such a signal is remembered and re-queued at detach.
func (t *tracee) waitStop(want func(syscall.WaitStatus) bool) error {
	for {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(t.tid, &ws, 0x40000000 /* __WALL */, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("wait for thread %d: %w", t.tid, err)
		}
		if ws.Exited() || ws.Signaled() {
			return fmt.Errorf("thread %d ended", t.tid)
		}
		if want(ws) {
			return nil
		}
		// A signal-delivery stop: deliver it and keep waiting (the
		// interrupt or syscall stop is still to come).
		sig := 0
		if ws.StopSignal() != syscall.SIGTRAP {
			sig = int(ws.StopSignal())
		}
		if err := syscall.PtraceSyscall(t.tid, sig); err != nil {
			return err
		}
	}
}

func isSyscallStop(ws syscall.WaitStatus) bool {
	return ws.Stopped() && ws.StopSignal() == syscall.SIGTRAP|0x80
}

// inSyscall reports whether the tracee stopped while in a system call that
// will be restarted (its registers hold a restart code).
func (t *tracee) restartCode() (int64, bool) {
	if int64(t.saved.Orig_rax) < 0 {
		return 0, false
	}
	switch rax := -int64(t.saved.Rax); rax {
	case errRestartSys, errRestartNoIntr, errRestartNoHand, errRestartBlock:
		return rax, true
	}
	return 0, false
}

// write copies b into the tracee at addr.
func (t *tracee) write(addr uint64, b []byte) error {
	_, err := t.mem.WriteAt(b, int64(addr))
	return err
}

// findInsn finds a syscall instruction to run injected calls from: the
// one the tracee stopped after, or else one written at its rip (restored
// by detach).
func (t *tracee) findInsn() error {
	var b [2]byte
	if _, err := t.mem.ReadAt(b[:], int64(t.saved.Rip-2)); err == nil && b == [2]byte{0x0f, 0x05} {
		t.insn = t.saved.Rip - 2
		return nil
	}
	orig := make([]byte, 2)
	if _, err := t.mem.ReadAt(orig, int64(t.saved.Rip)); err != nil {
		return err
	}
	if err := t.write(t.saved.Rip, syscallInsn); err != nil {
		return err
	}
	t.insn, t.patch = t.saved.Rip, orig
	return nil
}

// call runs system call nr with args in the tracee and returns its result
// (negative: -errno).
func (t *tracee) call(nr uint64, args ...uint64) (int64, error) {
	if t.insn == 0 {
		if err := t.findInsn(); err != nil {
			return 0, err
		}
	}
	r := t.saved
	r.Rip = t.insn
	r.Rax = nr
	// orig_rax -1: no restart logic applies to this stop any more.
	r.Orig_rax = ^uint64(0)
	var a [6]uint64
	copy(a[:], args)
	r.Rdi, r.Rsi, r.Rdx, r.R10, r.R8, r.R9 = a[0], a[1], a[2], a[3], a[4], a[5]
	if err := syscall.PtraceSetRegs(t.tid, &r); err != nil {
		return 0, fmt.Errorf("PTRACE_SETREGS: %w", err)
	}
	for range 2 { // the entry stop, then the exit stop
		if err := syscall.PtraceSyscall(t.tid, 0); err != nil {
			return 0, err
		}
		if err := t.waitStop(isSyscallStop); err != nil {
			return 0, err
		}
	}
	if err := syscall.PtraceGetRegs(t.tid, &r); err != nil {
		return 0, err
	}
	return int64(r.Rax), nil
}

// detach restores the tracee as it was stopped and lets it go. A system
// call it was in is restarted, as signal delivery would have done: the
// injected calls left the kernel's own restart path.
func (t *tracee) detach() error {
	defer t.mem.Close()
	if t.patch != nil {
		t.write(t.insn, t.patch)
	}
	r := t.saved
	if code, ok := t.restartCode(); ok && t.insn != 0 {
		r.Rip -= 2
		r.Rax = r.Orig_rax
		if code == errRestartBlock {
			r.Rax = sysRestartSyscall
		}
	}
	if err := syscall.PtraceSetRegs(t.tid, &r); err != nil {
		syscall.PtraceDetach(t.tid)
		return err
	}
	return syscall.PtraceDetach(t.tid)
}

// stackScratch returns an address below the tracee's stack pointer, past
// the x86-64 red zone, where size bytes can be written while it is
// stopped.
func (t *tracee) stackScratch(size int) uint64 {
	return (t.saved.Rsp - 128 - uint64(size) - 64) &^ 15
}

// chdir makes the target change its working directory to w's directory
// on the private door: a supervisor cannot set another process's working
// directory, so the target's chdir is restarted with the private name in
// place of its own (written below its stack, in the first argument
// register, which is put back once the call returns). The program then
// sees the private name in getcwd and /proc/PID/cwd; relative names from
// there go to the door without trapping at all. chroot is refused.
func (s *server) chdir(n *notif, c call, w where) {
	if n.Nr != syscall.SYS_CHDIR || s.mnt == "" {
		s.respond(n.ID, 0, syscall.ENOTSUP)
		return
	}
	name := []byte(s.private(w) + "\x00")
	s.ptraceMu.Lock()
	defer s.ptraceMu.Unlock()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t, err := seize(int(n.Pid))
	if err != nil {
		// Traced already (strace, gdb), or ptrace is not allowed.
		s.log.Warn("catch: chdir into the namespace needs ptrace", "pid", n.Pid, "err", err)
		s.respond(n.ID, 0, syscall.ENOTSUP)
		return
	}
	// The interrupt ended the notification: the call is to be
	// restarted, and runs with our name when it is.
	if _, restart := t.restartCode(); !restart || t.saved.Orig_rax != syscall.SYS_CHDIR {
		t.detach()
		return
	}
	addr := t.stackScratch(len(name))
	r := t.saved
	r.Rdi = addr
	err = t.write(addr, name)
	if err == nil {
		err = syscall.PtraceSetRegs(t.tid, &r)
	}
	for i := 0; err == nil && i < 2; i++ { // the restarted call's entry, then its exit
		if err = syscall.PtraceSyscall(t.tid, 0); err == nil {
			err = t.waitStop(isSyscallStop)
		}
	}
	if err == nil {
		if err = syscall.PtraceGetRegs(t.tid, &r); err == nil {
			r.Rdi = t.saved.Rdi
			err = syscall.PtraceSetRegs(t.tid, &r)
		}
	}
	if err != nil {
		s.log.Warn("catch: chdir into the namespace failed", "pid", n.Pid, "err", err)
	}
	t.mem.Close()
	syscall.PtraceDetach(t.tid)
}
