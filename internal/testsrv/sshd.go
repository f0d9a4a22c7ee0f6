package testsrv

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// SSHD is a real OpenSSH sshd on 127.0.0.1 serving the sftp subsystem
// (internal-sftp) to the user running the test, who logs in with UserKey.
type SSHD struct {
	Addr string // 127.0.0.1:PORT
	Port int
	// ReadOnlyPort serves the same files read-only (internal-sftp -R):
	// a server that refuses writes even to root.
	ReadOnlyPort int
	User         string // the login user: the user running the test
	HostKey      ssh.PublicKey
	UserKey      ssh.Signer
	// UserKeyFile is UserKey as an unencrypted OpenSSH private key file
	// (mode 0600), for an IdentityFile line.
	UserKeyFile string
	// Home is an empty directory for the client side to use as $HOME
	// (its .ssh/config, known_hosts); sshd never looks at it.
	Home string

	t       testing.TB
	bin     string
	config  string
	logFile string
	cmd     *exec.Cmd
	exited  chan error
}

// StartSSHD starts sshd -D -e -f CONFIG with a throwaway host key and
// user key, everything it writes in a temporary directory, and stops it
// (and every session it serves) when the test ends. As root it lets root
// in by key only; as another user, sshd can only log in that user, which
// is the login user either way.
func StartSSHD(t testing.TB) *SSHD {
	t.Helper()
	bin := Need(t, "sshd")
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		// The privilege separation directory sshd insists on as root.
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			Unavailable(t, "sshd needs /run/sshd: "+err.Error())
		}
	}
	dir := t.TempDir()
	s := &SSHD{
		User: me.Username,
		Home: t.TempDir(),
		t:    t, bin: bin,
		config:      filepath.Join(dir, "sshd_config"),
		logFile:     filepath.Join(dir, "sshd.log"),
		UserKeyFile: filepath.Join(dir, "id_ed25519"),
	}
	hostSigner := sshdKey(t, filepath.Join(dir, "ssh_host_ed25519_key"))
	s.HostKey = hostSigner.PublicKey()
	s.UserKey = sshdKey(t, s.UserKeyFile)
	sshdWriteFile(t, filepath.Join(dir, "authorized_keys"), string(ssh.MarshalAuthorizedKey(s.UserKey.PublicKey())))

	// Password authentication is offered (and always fails: root has no
	// usable password and prohibit-password refuses it anyway) so that
	// clients can be tested against a wrong password.
	startOnFreePort(t, func(port int) error {
		s.Port, s.ReadOnlyPort = port, FreePort(t)
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port))
		conf := fmt.Sprintf(`ListenAddress 127.0.0.1:%d
ListenAddress 127.0.0.1:%[4]d
HostKey %[2]s/ssh_host_ed25519_key
PidFile %[2]s/sshd.pid
AuthorizedKeysFile %[2]s/authorized_keys
StrictModes no
UsePAM no
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication yes
KbdInteractiveAuthentication no
AllowUsers %[3]s
Subsystem sftp internal-sftp
LogLevel VERBOSE
MaxStartups 100
MaxSessions 100
Match LocalPort %[4]d
	ForceCommand internal-sftp -R
`, s.Port, dir, me.Username, s.ReadOnlyPort)
		sshdWriteFile(t, s.config, conf)
		if out, err := exec.Command(bin, "-t", "-f", s.config).CombinedOutput(); err != nil {
			Unavailable(t, fmt.Sprintf("sshd rejects its test configuration: %v: %s", err, out))
		}
		return s.start()
	})
	t.Cleanup(s.Stop)
	return s
}

// KnownHostsLine is the known_hosts line that trusts this server's host
// key on both its ports.
func (s *SSHD) KnownHostsLine() string {
	return fmt.Sprintf("[127.0.0.1]:%d,[127.0.0.1]:%d %s", s.Port, s.ReadOnlyPort, ssh.MarshalAuthorizedKey(s.HostKey))
}

// Start starts sshd again after Stop, on the same port with the same keys.
func (s *SSHD) Start() {
	s.t.Helper()
	if err := s.start(); err != nil {
		s.t.Fatal(err)
	}
}

func (s *SSHD) start() error {
	if s.cmd != nil {
		return nil
	}
	log, err := os.OpenFile(s.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	// sshd re-executes itself, so it needs its absolute path.
	cmd := exec.Command(s.bin, "-D", "-e", "-f", s.config)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start sshd: %v", err)
	}
	s.cmd, s.exited = cmd, make(chan error, 1)
	go func() { s.exited <- cmd.Wait() }()

	deadline := time.Now().Add(10 * time.Second)
	for {
		// Its own sockets, not those of whoever else may have bound
		// a port first.
		if listensOn(cmd.Process.Pid, s.Port) && listensOn(cmd.Process.Pid, s.ReadOnlyPort) {
			c, err := net.DialTimeout("tcp", s.Addr, time.Second)
			if err == nil {
				// Read the banner so that sshd is known to be
				// serving, not just listening.
				c.SetReadDeadline(time.Now().Add(5 * time.Second))
				buf := make([]byte, 4)
				_, err = c.Read(buf)
				c.Close()
				if err == nil && string(buf) == "SSH-" {
					return nil
				}
			}
		}
		select {
		case err := <-s.exited:
			s.cmd = nil
			if log := s.Log(); bindFailed(log) {
				return fmt.Errorf("sshd could not bind ports %d, %d: %w:\n%s", s.Port, s.ReadOnlyPort, errPortTaken, log)
			}
			return fmt.Errorf("sshd exited (%v) before accepting connections:\n%s", err, s.Log())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("sshd does not accept connections on %s after 10s:\n%s", s.Addr, s.Log())
		}
	}
}

// Stop kills sshd and every session it serves, like a crash of the
// server machine: clients see their connections reset.
func (s *SSHD) Stop() {
	if s.cmd == nil {
		return
	}
	s.signalAll(syscall.SIGKILL)
	<-s.exited
	s.cmd = nil
}

// Pause stops (SIGSTOP) sshd and its sessions: connections stay open but
// nothing answers, like a stalled server. Resume undoes it.
func (s *SSHD) Pause() { s.signalAll(syscall.SIGSTOP) }

// Resume continues a paused server.
func (s *SSHD) Resume() { s.signalAll(syscall.SIGCONT) }

// Log returns what sshd has logged so far.
func (s *SSHD) Log() string {
	b, _ := os.ReadFile(s.logFile)
	return string(b)
}

// signalAll signals sshd and its descendants. Sessions call setsid(), so
// the process group does not reach them: walk the process tree instead.
func (s *SSHD) signalAll(sig syscall.Signal) {
	if s.cmd == nil {
		return
	}
	pids := append(descendants(s.cmd.Process.Pid), s.cmd.Process.Pid)
	for _, pid := range pids {
		syscall.Kill(pid, sig)
	}
}

// descendants lists the children of pid, grandchildren first.
func descendants(pid int) []int {
	parent := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The command name in parentheses may hold spaces: fields
		// start after the last ')'. Field 2 after it is the ppid.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) > 1 {
			ppid, _ := strconv.Atoi(f[1])
			parent[p] = ppid
		}
	}
	var walk func(int) []int
	walk = func(pp int) []int {
		var out []int
		for p, ppid := range parent {
			if ppid == pp {
				out = append(append(out, walk(p)...), p)
			}
		}
		return out
	}
	return walk(pid)
}

// sshdKey writes a new ed25519 private key in OpenSSH format to file.
func sshdKey(t testing.TB, file string) ssh.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	sshdWriteFile(t, file, string(pem.EncodeToMemory(block)))
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return signer
}

func sshdWriteFile(t testing.TB, name, data string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}
