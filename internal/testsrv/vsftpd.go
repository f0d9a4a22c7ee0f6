package testsrv

import (
	"bufio"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"io/fs"
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
)

// VsftpdOption changes how Vsftpd runs the server.
type VsftpdOption func(*vsftpdSetup)

type vsftpdSetup struct {
	localUser bool
	maxPerIP  int
	denied    []string
	pool      **x509.CertPool
	server    **VsftpdServer
}

// VsftpdLocalUser logs in as a local user created for this test only
// (useradd; userdel when the test ends) with a random password, chrooted
// to root, which it owns and may write at the top level. Without it the
// login is anonymous (see Vsftpd).
func VsftpdLocalUser() VsftpdOption { return func(s *vsftpdSetup) { s.localUser = true } }

// VsftpdTLS turns on explicit FTPS (AUTH TLS, data connections protected)
// with a throwaway certificate for 127.0.0.1; *pool receives its trust root.
func VsftpdTLS(pool **x509.CertPool) VsftpdOption {
	return func(s *vsftpdSetup) { s.pool = pool }
}

// VsftpdMaxPerIP limits the sessions one client address may have at
// once, as servers on the Internet do (vsftpd's max_per_ip): a login
// beyond them is refused with "421 There are too many connections from
// your internet address."
func VsftpdMaxPerIP(n int) VsftpdOption { return func(s *vsftpdSetup) { s.maxPerIP = n } }

// VsftpdDeny makes the server refuse the commands cmds (vsftpd's
// cmds_denied: "550 Permission denied."), as servers that lack them do.
func VsftpdDeny(cmds ...string) VsftpdOption {
	return func(s *vsftpdSetup) { s.denied = append(s.denied, cmds...) }
}

// VsftpdControl hands the test the running server so that it can stall,
// kill and restart it.
func VsftpdControl(server **VsftpdServer) VsftpdOption {
	return func(s *vsftpdSetup) { s.server = server }
}

// Vsftpd starts the real vsftpd serving root on 127.0.0.1 at a free port
// with a throwaway configuration, and stops it when the test ends. It
// returns the address and the login: "anonymous" with an empty password by
// default, or the throwaway local user of VsftpdLocalUser.
//
// vsftpd needs root (it chroots and changes user per session); without
// root the test is Unavailable. Anonymous sessions run as the system user
// "ftp", and vsftpd refuses an anonymous root that user can write (it
// ignores allow_writeable_chroot for anonymous logins), so root itself is
// made root-owned 0755 and everything already below it is given to "ftp":
// anonymous tests write in subdirectories. Files the test creates later
// keep their owner, which is how a test makes something the FTP user may
// not write.
func Vsftpd(t testing.TB, root string, opts ...VsftpdOption) (addr, login, password string) {
	t.Helper()
	var setup vsftpdSetup
	for _, o := range opts {
		o(&setup)
	}
	bin := Need(t, "vsftpd")
	if os.Geteuid() != 0 {
		Unavailable(t, "vsftpd needs root: it chroots and switches user for every session")
	}
	dir := t.TempDir()

	// The directory vsftpd chroots its unprivileged helper into: empty,
	// owned by root and not writable by anyone else.
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}

	// listen_port is added by the start below.
	conf := fmt.Sprintf(`listen=YES
listen_address=127.0.0.1
background=NO
seccomp_sandbox=NO
secure_chroot_dir=%s
xferlog_enable=YES
xferlog_std_format=NO
log_ftp_protocol=YES
syslog_enable=NO
dual_log_enable=NO
vsftpd_log_file=%s/vsftpd.log
use_localtime=NO
hide_ids=NO
write_enable=YES
connect_from_port_20=NO
pasv_enable=YES
pasv_address=127.0.0.1
pasv_addr_resolve=NO
idle_session_timeout=600
data_connection_timeout=600
`, empty, dir)
	// No pasv_min_port/pasv_max_port: the kernel picks each passive port,
	// so servers of tests running in parallel never collide.

	if setup.localUser {
		login, password = throwawayUser(t, root)
		conf += `anonymous_enable=NO
local_enable=YES
pam_service_name=vsftpd
userlist_enable=NO
chroot_local_user=YES
allow_writeable_chroot=YES
local_umask=022
chmod_enable=YES
`
	} else {
		login = "anonymous"
		giveToFTPUser(t, root)
		conf += fmt.Sprintf(`anonymous_enable=YES
local_enable=NO
no_anon_password=YES
ftp_username=ftp
anon_root=%s
anon_upload_enable=YES
anon_mkdir_write_enable=YES
anon_other_write_enable=YES
anon_umask=022
`, root)
	}
	if len(setup.denied) > 0 {
		conf += "cmds_denied=" + strings.Join(setup.denied, ",") + "\n"
	}
	if setup.maxPerIP > 0 {
		conf += fmt.Sprintf("max_per_ip=%d\n", setup.maxPerIP)
	}
	if setup.pool != nil {
		*setup.pool = nginxCert(t, filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"))
		// vsftpd's default cipher list (DES-CBC3-SHA) is one Go no
		// longer offers.
		conf += fmt.Sprintf(`ssl_enable=YES
rsa_cert_file=%[1]s/cert.pem
rsa_private_key_file=%[1]s/key.pem
ssl_ciphers=HIGH
ssl_tlsv1=YES
ssl_sslv2=NO
ssl_sslv3=NO
allow_anon_ssl=YES
force_local_logins_ssl=YES
force_local_data_ssl=YES
force_anon_logins_ssl=YES
force_anon_data_ssl=YES
require_ssl_reuse=NO
`, dir)
	}
	confFile := filepath.Join(dir, "vsftpd.conf")
	s := &VsftpdServer{t: t, bin: bin, conf: confFile, logFile: filepath.Join(dir, "vsftpd.out"),
		protocolLog: filepath.Join(dir, "vsftpd.log"), limited: setup.maxPerIP > 0}
	startOnFreePort(t, func(port int) error {
		nginxWriteFile(t, confFile, conf+fmt.Sprintf("listen_port=%d\n", port))
		s.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		return s.start()
	})
	// Registered after serve's cleanup, so it runs first: session
	// processes outlive a killed listener, and a stopped server cannot
	// act on SIGTERM.
	t.Cleanup(func() { s.signalAll(syscall.SIGKILL); s.signalAll(syscall.SIGCONT) })
	if setup.server != nil {
		*setup.server = s
	}
	return s.addr, login, password
}

// VsftpdServer is a running vsftpd: its listener and one process per
// session.
type VsftpdServer struct {
	t       testing.TB
	bin     string
	conf    string
	addr    string
	logFile string
	cmd     *exec.Cmd
	// protocolLog is vsftpd's log of every command (log_ftp_protocol).
	protocolLog string
	limited     bool // max_per_ip is set: Start settles
}

// Commands counts the commands the server was sent whose verb is verb
// ("RETR", "EPSV"): what a client cost it.
func (s *VsftpdServer) Commands(verb string) int {
	s.t.Helper()
	b, err := os.ReadFile(s.protocolLog)
	if err != nil {
		s.t.Fatal(err)
	}
	// FTP command: Client "127.0.0.1", "RETR /f"
	return strings.Count(string(b), `FTP command: Client "127.0.0.1", "`+verb)
}

// Start starts vsftpd (again, after Kill) on the same address and waits
// until it accepts connections.
func (s *VsftpdServer) Start() {
	s.t.Helper()
	if err := s.start(); err != nil {
		s.t.Fatal(err)
	}
}

func (s *VsftpdServer) start() error {
	s.t.Helper()
	f, err := os.OpenFile(s.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer f.Close() // vsftpd has its own copies
	s.cmd = exec.Command(s.bin, s.conf)
	// vsftpd writes why it cannot start ("500 OOPS: could not bind
	// listening IPv4 socket") to descriptor 0, its FTP client's in
	// inetd mode.
	s.cmd.Stdin, s.cmd.Stdout, s.cmd.Stderr = f, f, f
	_, port, _ := net.SplitHostPort(s.addr)
	p, _ := strconv.Atoi(port)
	if err := serve(s.t, s.cmd, p, s.logFile); err != nil { // any TCP server: waits for it, stops it at the end
		return err
	}
	if s.limited {
		s.settle()
	}
	return nil
}

// settle waits until the sessions of the readiness probes have ended.
// vsftpd counts a session against max_per_ip until the listener reaps
// its process: under load the probe's was still there when a test
// logged in, the server refused a login the test counted on, and
// TestServerLimitsLogins waited for ever. A second probe reads the
// greeting (its session, and so the first probe's before it, was
// forked); then the listener has no child once both are reaped. (Only
// with max_per_ip: elsewhere a client reconnecting meanwhile, to a
// restarted server, would have a session of its own.)
func (s *VsftpdServer) settle() {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	c, err := net.DialTimeout("tcp", s.addr, 10*time.Second)
	if err != nil {
		s.t.Fatalf("vsftpd on %s: %v", s.addr, err)
	}
	c.SetDeadline(deadline)
	_, err = bufio.NewReader(c).ReadString('\n')
	c.Close()
	if err != nil {
		s.t.Fatalf("vsftpd on %s sends no greeting: %v", s.addr, err)
	}
	for len(descendants(s.cmd.Process.Pid)) > 0 {
		if time.Now().After(deadline) {
			s.t.Fatalf("vsftpd's probe sessions on %s have not ended after 10s", s.addr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Kill kills the listener and every session, like a crash of the machine
// serving: clients see their connections reset.
func (s *VsftpdServer) Kill() {
	s.signalAll(syscall.SIGKILL)
	// Reap the listener (serve's goroutine waits for it) so that the
	// port is free for Start.
	for i := 0; i < 500 && processAlive(s.cmd.Process.Pid); i++ {
		time.Sleep(10 * time.Millisecond)
	}
}

// Stall stops every vsftpd process (SIGSTOP): connections stay open and
// nothing answers, like a hung server. Resume undoes it.
func (s *VsftpdServer) Stall() { s.signalAll(syscall.SIGSTOP) }

// Resume continues a stalled server.
func (s *VsftpdServer) Resume() { s.signalAll(syscall.SIGCONT) }

// signalAll sends sig to the listener and all its descendants (the
// session processes).
func (s *VsftpdServer) signalAll(sig syscall.Signal) {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	for _, pid := range descendants(s.cmd.Process.Pid) {
		syscall.Kill(pid, sig)
	}
	syscall.Kill(s.cmd.Process.Pid, sig)
}

func processAlive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
	return !strings.HasPrefix(strings.TrimSpace(rest), "Z")
}

// throwawayUser creates a local user for this test whose home is root,
// gives it root's tree, sets a random password through chpasswd's stdin
// (never argv) and removes the user when the test ends.
func throwawayUser(t testing.TB, root string) (name, password string) {
	t.Helper()
	buf := make([]byte, 12)
	rand.Read(buf)
	name = "wfsftp" + hex.EncodeToString(buf[:5])
	password = hex.EncodeToString(buf[5:])
	// useradd and userdel take a lock on /etc/passwd; other tests may
	// hold it for a moment.
	retry := func(args ...string) error {
		var err error
		var out []byte
		for i := 0; i < 50; i++ {
			if out, err = exec.Command(args[0], args[1:]...).CombinedOutput(); err == nil {
				return nil
			}
			time.Sleep(100 * time.Millisecond)
		}
		return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
	if err := retry("useradd", "--no-create-home", "--home-dir", root, "--shell", "/bin/sh", "--user-group", name); err != nil {
		Unavailable(t, "cannot create a throwaway FTP user: "+err.Error())
	}
	t.Cleanup(func() {
		if err := retry("userdel", name); err != nil {
			t.Errorf("remove throwaway FTP user: %v", err)
		}
	})
	chpasswd := exec.Command("chpasswd")
	chpasswd.Stdin = strings.NewReader(name + ":" + password + "\n")
	if out, err := chpasswd.CombinedOutput(); err != nil {
		t.Fatalf("chpasswd: %v: %s", err, out)
	}
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	chownTree(t, root, u, true)
	letTraverse(t, filepath.Dir(root))
	return name, password
}

// letTraverse lets every user pass through dir and its ancestors (o+x,
// not read), as vsftpd changes into the local user's home as that user
// before it chroots; t.TempDir's directories are 0700. The modes are put
// back when the test ends.
func letTraverse(t testing.TB, dir string) {
	t.Helper()
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if mode := fi.Mode().Perm(); mode&0o001 == 0 {
			if err := os.Chmod(d, mode|0o001); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(d, mode) })
		}
		if d == filepath.Dir(d) {
			return
		}
	}
}

// giveToFTPUser prepares root for anonymous logins: root itself owned by
// root and 0755, everything below owned by the system user "ftp".
func giveToFTPUser(t testing.TB, root string) {
	t.Helper()
	u, err := user.Lookup("ftp")
	if err != nil {
		Unavailable(t, "vsftpd's anonymous user \"ftp\" does not exist")
	}
	if err := os.Chown(root, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	chownTree(t, root, u, false)
}

func chownTree(t testing.TB, root string, u *user.User, includeRoot bool) {
	t.Helper()
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root && !includeRoot {
			return nil
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		t.Fatal(err)
	}
}
