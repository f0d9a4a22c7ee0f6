package catch

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"
)

// HelperArg is the hidden first argument with which Run starts the wirefs
// binary again as the exec helper: `wirefs __wirefs-catch-exec FD CMD ARGS…`.
// Any binary that links this package (wirefs, the package's tests) becomes
// the helper when started that way: see init.
const HelperArg = "__wirefs-catch-exec"

func init() {
	if len(os.Args) > 1 && os.Args[1] == HelperArg {
		execHelper(os.Args[2:])
	}
}

// Messages from the helper to the supervisor, on the socketpair. "ok"
// carries the listener fd; the others carry a sentence and an exit status.
const (
	msgOK          = "ok"
	msgUnavailable = "unavailable:" // seccomp user notification cannot be used
	msgNotFound    = "notfound:"    // the command was not found (status 127)
)

// execHelper runs on the main thread during package initialization (the Go
// runtime locks init to the main thread). It installs the filter on this
// thread only, hands the listener to the supervisor and execs CMD from
// this same thread, so CMD and all its descendants inherit the filter; the
// runtime's other threads vanish at exec. It never returns.
func execHelper(args []string) {
	runtime.LockOSThread()
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "wirefs: internal helper: missing arguments")
		os.Exit(2)
	}
	fd, err := strconv.Atoi(args[0])
	if err != nil {
		os.Exit(2)
	}
	syscall.CloseOnExec(fd)
	argv := args[1:]
	send := func(msg string, rights []byte) {
		if err := syscall.Sendmsg(fd, []byte(msg), rights, nil, 0); err != nil {
			fmt.Fprintln(os.Stderr, "wirefs: internal helper:", err)
			os.Exit(2)
		}
	}

	// Find the program before the filter is in place.
	path, err := exec.LookPath(argv[0])
	if err != nil && !errors.Is(err, exec.ErrDot) {
		send(msgNotFound+fmt.Sprintf("%s: command not found", argv[0]), nil)
		os.Exit(127)
	}

	listener, err := installFilter()
	if err != nil {
		send(msgUnavailable+err.Error(), nil)
		os.Exit(1)
	}
	// From here on this thread's path calls wait for the supervisor,
	// which starts serving once it has the listener.
	send(msgOK, syscall.UnixRights(listener))
	syscall.Close(listener)
	syscall.Close(fd)

	os.Unsetenv(trapsEnv)
	err = syscall.Exec(path, argv, os.Environ())
	// Reached only if exec failed; the filter is still installed, which
	// is harmless for the few calls left.
	status := 126
	if errors.Is(err, syscall.ENOENT) {
		status = 127
	}
	fmt.Fprintf(os.Stderr, "wirefs run: %s: %v\n", argv[0], err)
	os.Exit(status)
}

// trapsEnv carries the trapped set to the exec helper when it is not
// trapNamespace (a number: a trapSet); the helper removes it before exec.
const trapsEnv = "WIREFS_CATCH_TRAPS"

func helperTraps() trapSet {
	if v, err := strconv.Atoi(os.Getenv(trapsEnv)); err == nil {
		return trapSet(v)
	}
	return trapNamespace
}

// installFilter sets no_new_privs and installs the trapping filter on the
// calling thread, returning the notification listener.
func installFilter() (int, error) {
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0, 0, 0, 0); e != 0 {
		return -1, fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", e)
	}
	traps := helperTraps()
	var fastIP uint64
	if traps&trapFast != 0 {
		fastIP = trampIP
	}
	prog := buildFilter(trappedNumbers(traps), fastIP)
	fprog := syscall.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	r, _, e := syscall.RawSyscall(sysSeccomp, seccompSetModeFilt, filterFlagNewListener, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if e != 0 {
		return -1, fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER, NEW_LISTENER): %w", e)
	}
	return int(r), nil
}

// probeListener installs an allow-all filter with a listener on a
// throwaway thread (it exits with its goroutine, still locked), to learn
// before anything else is set up whether the helper will be able to. The
// kernel refuses a second listener in one filter chain (EBUSY).
func probeListener() error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0, 0, 0, 0); e != 0 {
			errc <- fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", e)
			return
		}
		prog := []syscall.SockFilter{{Code: bpfRetK, K: retAllow}}
		fprog := syscall.SockFprog{Len: 1, Filter: &prog[0]}
		r, _, e := syscall.RawSyscall(sysSeccomp, seccompSetModeFilt, filterFlagNewListener, uintptr(unsafe.Pointer(&fprog)))
		runtime.KeepAlive(prog)
		if e != 0 {
			errc <- fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER, NEW_LISTENER): %w", e)
			return
		}
		syscall.Close(int(r))
		errc <- nil
	}()
	return <-errc
}
