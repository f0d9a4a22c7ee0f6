package testsrv

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Diod starts the real diod 9P2000.L server on 127.0.0.1 exporting the
// given directories (and "ctl", diod's synthetic control file system, if
// it is one of them) and returns its address. The server is killed when
// the test ends.
func Diod(t testing.TB, exports ...string) (addr string) {
	t.Helper()
	return StartDiod(t, exports...).Addr
}

// DiodServer is a running diod that a test can stop, freeze and restart
// on the same address.
type DiodServer struct {
	Addr string
	port int
	t    testing.TB
	argv []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited
}

// StartDiod is Diod for tests that kill, pause or restart the server.
//
// The flags: -f stays in the foreground and logs to stderr (captured into
// the test log); -n needs no MUNGE credentials; -c points at an empty
// configuration so that /etc/diod.conf cannot change the test. As root,
// diod switches to the attaching uid for every request, so permissions
// are checked as that user. As an ordinary user diod cannot switch, and
// only the user running it may attach, which is what wirefs does by
// default (it attaches as the caller's uid).
func StartDiod(t testing.TB, exports ...string) *DiodServer {
	t.Helper()
	diod := Need(t, "diod")
	if len(exports) == 0 {
		t.Fatal("testsrv.Diod: nothing to export")
	}
	conf := filepath.Join(t.TempDir(), "diod.conf")
	if err := os.WriteFile(conf, []byte("-- empty: the command line says everything\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &DiodServer{t: t}
	t.Cleanup(s.Kill)
	startOnFreePort(t, func(port int) error {
		s.port = port
		s.Addr = fmt.Sprintf("127.0.0.1:%d", port)
		s.argv = []string{diod, "-f", "-n", "-c", conf, "-L", "stderr", "-l", s.Addr}
		for _, e := range exports {
			s.argv = append(s.argv, "-e", e)
		}
		return s.start()
	})
	return s
}

// Start runs the server (again) and waits until it accepts connections.
func (s *DiodServer) Start() {
	s.t.Helper()
	if err := s.start(); err != nil {
		s.t.Fatal(err)
	}
}

func (s *DiodServer) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("testsrv.Diod: already running")
	}
	cmd := exec.Command(s.argv[0], s.argv[1:]...)
	out := &diodLog{t: s.t, prefix: "diod: "}
	cmd.Stderr = out
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("testsrv.Diod: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait() // also finishes copying its output into the test log
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited
	deadline := time.Now().Add(10 * time.Second)
	// Its own socket, not a connection accepted by whoever else may
	// have bound the port first.
	for !listensOn(cmd.Process.Pid, s.port) {
		select {
		case <-exited:
			s.cmd, s.exited = nil, nil
			if out.bindFailed() {
				return fmt.Errorf("testsrv.Diod: %s: %w", s.Addr, errPortTaken)
			}
			return fmt.Errorf("testsrv.Diod: diod exited before accepting connections: %s", strings.Join(s.argv, " "))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("testsrv.Diod: diod does not listen on %s after 10s", s.Addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// Kill kills the server (SIGKILL: no goodbye to its clients) and waits
// for it to exit. It does nothing when the server is not running.
func (s *DiodServer) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGCONT) // a stopped process dies only once continued
	s.cmd.Process.Kill()
	<-s.exited
	s.cmd, s.exited = nil, nil
}

// Pause stops the server (SIGSTOP): connections stay open and nothing
// is answered, as with a hung server. It returns once every thread has
// stopped, so that nothing sent afterwards is read. Resume continues it.
func (s *DiodServer) Pause() {
	s.t.Helper()
	s.signal(syscall.SIGSTOP)
	s.mu.Lock()
	pid := s.cmd.Process.Pid
	s.mu.Unlock()
	for deadline := time.Now().Add(10 * time.Second); !allStopped(pid); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			s.t.Fatalf("testsrv.Diod: diod (pid %d) does not stop", pid)
		}
	}
}

// allStopped reports whether every thread of process pid is stopped
// (state T in /proc/PID/task/TID/stat).
func allStopped(pid int) bool {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, task := range tasks {
		stat, err := os.ReadFile(task)
		i := bytes.LastIndexByte(stat, ')')
		if err != nil || i < 0 || i+2 >= len(stat) || stat[i+2] != 'T' {
			return false
		}
	}
	return true
}

// Resume continues a paused server.
func (s *DiodServer) Resume() { s.signal(syscall.SIGCONT) }

func (s *DiodServer) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		s.cmd.Process.Signal(sig)
	}
}

// diodLog writes diod's output into the test log, line by line, and
// notes whether diod said its port was taken.
type diodLog struct {
	t      testing.TB
	prefix string
	mu     sync.Mutex
	buf    []byte
	taken  bool
}

func (l *diodLog) bindFailed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.taken
}

func (l *diodLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		l.t.Log(l.prefix + string(l.buf[:i]))
		l.taken = l.taken || bindFailed(string(l.buf[:i]))
		l.buf = l.buf[i+1:]
	}
}
