package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"wirefs/internal/testsrv"
)

// hostileNames reach an exec portal's program as one argument each,
// verbatim: no shell ever sees them.
var hostileNames = []string{"a;touch x", "$(id)", "`id`", "a b", `'"\`, "-n", "*", "%s", "x|y&z>w"}

// portals is the test's mounts file of portals, and what they need:
// a local echo server, an sshd to jump through, a tree for the fs
// portal, a FIFO that slow programs wait on.
type portals struct {
	config    string
	dir       string // scratch, searchable by nobody
	echo      *Peer  // TCP echo server
	udpEcho   *Peer  // UDP peer answering "echo:" + data
	closed    int    // a port nothing listens on
	stuck     int    // a port whose listen backlog is full: connect hangs
	fifo      string
	gate      *os.File // the FIFO's one writer, held until the slow programs may go
	sortOut   string   // where the O_WRONLY sort portal writes
	fsRoot    string
	sshdPort  int
	sshConfig string // Host bastion: the sshd, by key
}

// writableDir makes fsRoot/mine, nobody's, for the writing tests, and
// removes it after the test (the listing tests expect the tree as made).
func (p *portals) writableDir(t *testing.T) string {
	t.Helper()
	mine := filepath.Join(p.fsRoot, "mine")
	if err := os.Mkdir(mine, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chown(mine, 65534, 65534)
	t.Cleanup(func() { os.RemoveAll(mine) })
	return mine
}

// newPortals writes the mounts file (portal lines among ordinary lines).
func newPortals(t *testing.T) *portals {
	t.Helper()
	p := &portals{dir: t.TempDir(), echo: tcpServer(t, "127.0.0.1", freePort(t), "echo"), closed: freePort(t),
		udpEcho: udpPeer(t, "127.0.0.1", 0, true)}
	os.Chmod(p.dir, 0o755)
	os.Chmod(filepath.Dir(p.dir), 0o755) // the test's temporary directory: nobody searches it
	p.stuck, _ = testsrv.FullBacklog(t)
	p.fifo = filepath.Join(p.dir, "gate")
	if err := syscall.Mkfifo(p.fifo, 0o666); err != nil {
		t.Fatal(err)
	}
	// O_RDWR does not wait for a reader; the programs' opens then do not
	// wait for a writer, and all of them read EOF when it closes.
	var err error
	if p.gate, err = os.OpenFile(p.fifo, os.O_RDWR, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.gate.Close() })
	p.sortOut = filepath.Join(p.dir, "sorted")
	p.fsRoot = filepath.Join(p.dir, "tree")
	os.Mkdir(p.fsRoot, 0o755)
	os.WriteFile(filepath.Join(p.fsRoot, "public"), []byte("public\n"), 0o644)
	os.WriteFile(filepath.Join(p.fsRoot, "secret"), []byte("secret\n"), 0o600)

	sshd := testsrv.StartSSHD(t)
	p.sshdPort = sshd.Port
	sshConfig := filepath.Join(p.dir, "ssh_config")
	p.sshConfig = sshConfig
	known := filepath.Join(p.dir, "known_hosts")
	os.WriteFile(known, []byte(sshd.KnownHostsLine()), 0o644)
	os.WriteFile(sshConfig, fmt.Appendf(nil, `Host bastion
	HostName 127.0.0.1
	Port %d
	User %s
	IdentityFile %s
	IdentitiesOnly yes
	UserKnownHostsFile %s
	StrictHostKeyChecking yes
	BatchMode yes
`, sshd.Port, sshd.User, sshd.UserKeyFile, known), 0o644)

	p.config = filepath.Join(p.dir, "mounts")
	os.WriteFile(p.config, fmt.Appendf(nil, `# portals of the e2e tests
portal sorted   exec  sort
portal wsort    exec  sh -c 'sort > "$1"' sh %[1]s
portal cat      exec  cat
portal echo/    exec  printf %%%%s %%s
portal id       exec  sh -c 'id -u; id -g'
portal jump/    exec  ssh -F %[2]s -W %%s bastion   # ProxyCommand as a file
portal idle     exec  sleep 7777
portal fds      exec  ls -l /proc/self/fd
portal slow/    exec  sh -c 'cat "$1" >/dev/null; printf %%%%s "$2"' sh %[3]s %%s
portal db       tcp   127.0.0.1:%[4]d
portal refused  tcp   127.0.0.1:%[5]d
portal stuck    tcp   127.0.0.1:%[6]d
portal dgram    udp   127.0.0.1:%[8]d
portal logs/    fs    %[7]s
`, p.sortOut, sshConfig, p.fifo, p.echo.Port, p.closed, p.stuck, p.fsRoot, p.udpEcho.Port), 0o644)
	return p
}

// TestPortalMount: portals through the FUSE door, with real programs.
func TestPortalMount(t *testing.T) {
	if os.Geteuid() != 0 {
		testsrv.Unavailable(t, "portal tests run programs as nobody: root needed")
	}
	p := newPortals(t)
	m := mount(t, "--config", p.config, "--allow-other", "--connect-timeout", "60s")

	t.Run("exec modes", func(t *testing.T) {
		// O_WRONLY: close is EOF on sort's stdin; sort finishes.
		mustOK(t, "sort", bash(t, m, 10*time.Second, `printf 'b\nc\na\n' > "$M/wsort"`))
		if !waitFor(5*time.Second, func() bool { return readFile(p.sortOut) == "a\nb\nc\n" }) {
			t.Errorf("O_WRONLY sort wrote %q", readFile(p.sortOut))
		}
		// O_RDWR: cat answers each write.
		r := mustOK(t, "cat", py(t, m, 10*time.Second, `
import os, sys
fd = os.open(sys.argv[1] + "/cat", os.O_RDWR)
for w in [b"one\n", b"two\n"]:
    os.write(fd, w)
    got = b""
    while len(got) < len(w):
        got += os.read(fd, 100)
    print(got.decode(), end="")
os.close(fd)
`))
		equal(t, "cat through O_RDWR", r.Stdout, "one\ntwo\n")
		// O_RDONLY, the name verbatim.
		for _, name := range hostileNames {
			r := mustOK(t, "cat", run(t, 10*time.Second, "", "cat", m.P("echo/"+name)))
			equal(t, "argv of "+name, r.Stdout, name)
		}
		if _, err := os.Stat(filepath.Join("/", "x")); err == nil {
			t.Error("a name ran as a command")
		}
	})

	// The daemon's /dev/fuse is not the program's to read: with it, a
	// program run as the opener could take other users' requests and
	// answer them.
	t.Run("programs get no descriptor of the mount", func(t *testing.T) {
		r := mustOK(t, "fds", run(t, 10*time.Second, "", "cat", m.P("fds")))
		if strings.Contains(r.Stdout, "/dev/fuse") {
			t.Errorf("a portal program holds the daemon's FUSE connection:\n%s", r.Stdout)
		}
	})

	t.Run("ssh -W through a jump host", func(t *testing.T) {
		r := mustOK(t, "jump", py(t, m, 30*time.Second, `
import os, sys
fd = os.open(sys.argv[1] + "/jump/127.0.0.1:" + sys.argv[2], os.O_RDWR)
os.write(fd, b"through the bastion\n")
got = b""
while not got.endswith(b"\n"):
    got += os.read(fd, 100)
print(got.decode(), end="")
os.close(fd)
`, strconv.Itoa(p.echo.Port)))
		equal(t, "echo through ssh -W", r.Stdout, "through the bastion\n")
		// ProxyCommand as a file: ssh reaches the sshd through itself.
		r = mustOK(t, "ssh", bash(t, m, 30*time.Second,
			`ssh -F "$1" -o ProxyCommand="bash -c 'exec 3<>\"$M/jump/%h:%p\"; cat <&3 & cat >&3'" bastion echo via-a-proxy-file`, p.sshConfig))
		equal(t, "ssh with the portal as ProxyCommand", r.Stdout, "via-a-proxy-file\n")
	})

	t.Run("runs as the opener", func(t *testing.T) {
		r := asNobody(t, []string{"M=" + m.Dir}, `cat "$M/id"`)
		equal(t, "id as nobody", r.Stdout, "65534\n65534\n")
		equal(t, "id as root", mustOK(t, "id", run(t, 10*time.Second, "", "cat", m.P("id"))).Stdout, "0\n0\n")
	})

	t.Run("fs as the opener", func(t *testing.T) {
		equal(t, "public as nobody", asNobody(t, []string{"M=" + m.Dir}, `cat "$M/logs/public"`).Stdout, "public\n")
		r := asNobody(t, []string{"M=" + m.Dir}, `cat "$M/logs/secret"`)
		if r.Code == 0 || !strings.Contains(r.Stderr, "Permission denied") {
			t.Errorf("secret as nobody: %s", r)
		}
		direct := asNobody(t, []string{"M=" + m.Dir}, `cat "$1"`, filepath.Join(p.fsRoot, "secret"))
		if direct.Code == 0 {
			t.Errorf("nobody reads the secret directly: the test proves nothing")
		}
		equal(t, "secret as root", mustOK(t, "cat", run(t, 10*time.Second, "", "cat", m.P("logs/secret"))).Stdout, "secret\n")
		equal(t, "listing", mustOK(t, "ls", asNobody(t, []string{"M=" + m.Dir}, `ls "$M/logs"`)).Stdout, "public\nsecret\n")
	})

	t.Run("fs writes as the opener", func(t *testing.T) {
		p.writableDir(t)
		r := mustOK(t, "writes", asNobody(t, []string{"M=" + m.Dir}, `set -e
cd "$M/logs/mine"
umask 027
echo one > f; echo two >> f; cat f
echo three > f; cat f
mkdir d; mv f d/g; ls d; stat -c %a d/g d
rm d/g; rmdir d; ls
{ echo x > "$M/logs/new"; } 2>/dev/null || echo refused
{ : > "$M/logs/public"; } 2>/dev/null || echo refused
rm -f "$M/logs/public" 2>/dev/null || echo refused`))
		equal(t, "writes as nobody", r.Stdout, "one\ntwo\nthree\ng\n640\n750\nrefused\nrefused\nrefused\n")
		if b, _ := os.ReadFile(filepath.Join(p.fsRoot, "public")); string(b) != "public\n" {
			t.Errorf("root's file after nobody's attempts: %q", b)
		}
		if _, err := os.Stat(filepath.Join(p.fsRoot, "new")); err == nil {
			t.Errorf("nobody created a file in root's directory")
		}
	})

	t.Run("tcp alias", func(t *testing.T) {
		r := mustOK(t, "db", bash(t, m, 10*time.Second, `exec 3<>"$M/db"; echo hello >&3; head -1 <&3`))
		equal(t, "echo through /db", r.Stdout, "hello\n")
		r = mustOK(t, "dgram", bash(t, m, 10*time.Second, `exec 3<>"$M/dgram"; printf ping >&3; head -c 9 <&3`))
		equal(t, "a datagram through /dgram", r.Stdout, "echo:ping")
		// The same errno and message as tcp/ gives for the name.
		const openErr = `
import os, sys
try:
    os.open(sys.argv[2], os.O_RDWR)
except OSError as e:
    print(e.errno, e.strerror)
`
		alias := mustOK(t, "alias", py(t, m, 10*time.Second, openErr, m.P("refused")))
		direct := mustOK(t, "direct", py(t, m, 10*time.Second, openErr, m.P("tcp/127.0.0.1:"+strconv.Itoa(p.closed))))
		equal(t, "alias error", alias.Stdout, direct.Stdout)
		equal(t, "error", direct.Stdout, fmt.Sprintf("%d Connection refused\n", syscall.ECONNREFUSED))
	})

	t.Run("interrupt a blocked read", func(t *testing.T) {
		c := start(t, 30*time.Second, "", nil, "cat", m.P("idle"))
		// Its program runs: cat waits in its read, past its lookup and
		// open (a Ctrl-C there leaves no program to stop).
		var idle []int
		if !waitFor(10*time.Second, func() bool { idle = pgrep(m.pid, "sleep 7777"); return len(idle) == 1 }) {
			t.Fatalf("the idle portal's program does not run: %v", idle)
		}
		blockedInFUSE(t, c.cmd.Process.Pid)
		ctrlC(t, c, "cat idle")
		stopped := fmt.Sprintf(`portal=/idle name="" pid=%d status="signal: terminated" stopped_at_close=true`, idle[0])
		if !waitFor(10*time.Second, func() bool { return strings.Contains(readFile(m.Log), stopped) }) {
			t.Errorf("the program was not stopped:\n%s", tail(readFile(m.Log), 2000))
		}
	})

	t.Run("interrupt a blocked start", func(t *testing.T) {
		c := start(t, 30*time.Second, "", nil, "cat", m.P("stuck"))
		if !waitFor(5*time.Second, func() bool { return synSent(p.stuck) }) {
			t.Fatal("the connect does not hang")
		}
		blockedInFUSE(t, c.cmd.Process.Pid)
		ctrlC(t, c, "cat stuck")
		if !waitFor(5*time.Second, func() bool { return !synSent(p.stuck) }) {
			t.Error("the connect goes on after Ctrl-C")
		}
	})

	t.Run("parallel slow portals", func(t *testing.T) {
		var cats []*Proc
		for i := range 20 {
			cats = append(cats, start(t, 60*time.Second, "", nil, "cat", m.P(fmt.Sprintf("slow/n%d", i))))
		}
		awaitSlow(t, p, func() string {
			var b strings.Builder
			for i, c := range cats {
				if c.exited() {
					fmt.Fprintf(&b, "cat slow/n%d: %v, stderr %q\n", i, c.err, c.errb.String())
				}
			}
			return b.String()
		})
		mustOK(t, "listing while 20 portals wait", run(t, 5*time.Second, "", "ls", m.P("tcp/")))
		releaseSlow(t, p, func() []string {
			var outs []string
			for _, c := range cats {
				outs = append(outs, c.wait(t, 10*time.Second).Stdout)
			}
			return outs
		})
	})

	t.Run("no leaks", func(t *testing.T) {
		mustOK(t, "warm", run(t, 10*time.Second, "", "cat", m.P("echo/warm")))
		waitFor(3*time.Second, func() bool { return !hasChildren(m.pid) })
		base := m.Stats(t)
		r := mustOK(t, "opens", bash(t, m, 120*time.Second, `
for i in $(seq 200); do cat "$M/echo/$i" >/dev/null || exit 1; done
for i in $(seq 50); do exec 3<>"$M/cat"; exec 3<&-; done`))
		_ = r
		waitBaseline(t, m, base, "200 exec opens")
		if !waitFor(10*time.Second, func() bool { return !hasChildren(m.pid) }) {
			t.Errorf("the daemon has children left: %v", children(m.pid))
		}
	})
}

// awaitSlow waits until the 20 slow portals' programs all hold the FIFO
// open, waiting for its writer: 20 opens that returned while their
// programs block. When they do not, it says where each opener and
// program waits, and ended which openers have ended already, and how.
func awaitSlow(t *testing.T, p *portals, ended func() string) {
	t.Helper()
	if !waitFor(20*time.Second, func() bool { return len(holders(p.fifo)) == 20 }) {
		t.Fatalf("%d of 20 programs wait on the FIFO; openers that ended:\n%s\nwhere the openers wait:\n%s\nwhere the programs wait:\n%s",
			len(holders(p.fifo)), ended(), whereWaiting("slow/n"), whereWaiting(p.fifo))
	}
}

// whereWaiting says, for every process whose command line contains s,
// where in the kernel it waits (wchan, and the kernel stack root may
// read): a FUSE request not answered, or a lock before it is sent.
func whereWaiting(s string) string {
	var b strings.Builder
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, c := range cmdlines {
		argv, err := os.ReadFile(c)
		if err != nil || !strings.Contains(string(argv), s) {
			continue
		}
		dir := filepath.Dir(c)
		wchan, _ := os.ReadFile(dir + "/wchan")
		stack, _ := os.ReadFile(dir + "/stack")
		fmt.Fprintf(&b, "%s %q wchan %s\n%s", filepath.Base(dir), strings.ReplaceAll(string(argv), "\x00", " "), wchan, tail(string(stack), 600))
	}
	return b.String()
}

// releaseSlow lets the slow portals' programs go (EOF on the FIFO) and
// checks that all finish together, each with its own name, as outputs
// (in the order n0..n19) reports.
func releaseSlow(t *testing.T, p *portals, outputs func() []string) {
	t.Helper()
	t0 := time.Now()
	p.gate.Close()
	for i, out := range outputs() {
		equal(t, "slow portal output", out, fmt.Sprintf("n%d", i))
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("20 slow portals took %v to finish after their release", d)
	}
}

// holders are the processes but this one that have name open.
func holders(name string) []int {
	var pids []int
	links, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	seen := map[string]bool{strconv.Itoa(os.Getpid()): true}
	for _, l := range links {
		if target, err := os.Readlink(l); err == nil && target == name {
			pid := strings.Split(l, "/")[2]
			if !seen[pid] {
				seen[pid] = true
				n, _ := strconv.Atoi(pid)
				pids = append(pids, n)
			}
		}
	}
	return pids
}

// synSent reports whether a connect to port on loopback is under way.
func synSent(port int) bool {
	b, _ := os.ReadFile("/proc/net/tcp")
	for _, l := range strings.Split(string(b), "\n") {
		// sl local_address rem_address st: 02 is SYN_SENT.
		if f := strings.Fields(l); len(f) > 3 && strings.HasSuffix(f[2], fmt.Sprintf(":%04X", port)) && f[3] == "02" {
			return true
		}
	}
	return false
}

// children are the pids whose parent is pid, each with its state.
func children(pid int) []string {
	var out []string
	for p, pr := range processes() {
		if pr.ppid == pid {
			out = append(out, fmt.Sprintf("%d %s", p, pr.state))
		}
	}
	return out
}

// proc is a process's parent and state, as /proc/PID/stat shows them.
type proc struct {
	ppid  int
	state string
}

// processes reads every process's parent and state.
func processes() map[int]proc {
	out := map[int]proc{}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, s := range stats {
		b, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		// The fields after the command name: state, ppid, ...
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(s)))
		if len(f) > 1 {
			ppid, _ := strconv.Atoi(f[1])
			out[pid] = proc{ppid: ppid, state: f[0]}
		}
	}
	return out
}

func hasChildren(pid int) bool { return len(children(pid)) > 0 }

// TestPortalRun: portals under wirefs run: the program gets the pipe or
// socketpair itself.
func TestPortalRun(t *testing.T) {
	needCatch(t)
	p := newPortals(t)
	home := t.TempDir()
	runIn := func(script string, args ...string) Result {
		return run(t, 60*time.Second, "", "env", append([]string{"HOME=" + home, wirefsBin, "run", "--config", p.config,
			"--cache-dir", filepath.Join(home, "cache"), "--", "bash", "-c", script, "bash"}, args...)...)
	}

	t.Run("kernel objects and modes", func(t *testing.T) {
		r := mustOK(t, "run", runIn(`
exec 3</net/echo/x; readlink /proc/self/fd/3 | cut -d: -f1; cat <&3; echo
exec 3<>/net/cat; readlink /proc/self/fd/3 | cut -d: -f1; echo hi >&3; head -1 <&3
printf 'b\na\n' > /net/wsort
/usr/bin/python3 -c '
import os, socket
fd = os.open("/net/sorted", os.O_RDWR)
s = socket.socket(fileno=fd)
s.sendall(b"b\nc\na\n"); s.shutdown(socket.SHUT_WR)
print(s.makefile().read(), end="")'
`))
		equal(t, "run", r.Stdout, "pipe\nx\nsocket\nhi\na\nb\nc\n")
		if !waitFor(5*time.Second, func() bool { return readFile(p.sortOut) == "a\nb\n" }) {
			t.Errorf("O_WRONLY sort wrote %q", readFile(p.sortOut))
		}
	})

	t.Run("many opens", func(t *testing.T) {
		// Each program's SIGCHLD reaches the supervisor while it hands
		// over the next pipe; the supervisor, a child subreaper, leaves
		// the programs' exit to the portal, which logs it.
		log := filepath.Join(t.TempDir(), "log")
		r := mustOK(t, "run", run(t, 60*time.Second, "", "env", "HOME="+home, wirefsBin, "run", "--config", p.config, "--log", log,
			"--cache-dir", filepath.Join(home, "cache"), "--", python, "-c", `
import os
for i in range(300):
    fd = os.open("/net/echo/%d" % i, os.O_RDONLY)
    got = os.read(fd, 10)
    assert got == b"%d" % i, (i, got)
    os.close(fd)
print("ok")`))
		equal(t, "300 opens", r.Stdout, "ok\n")
		text := readFile(log)
		if n := strings.Count(text, `msg="portal program exited" portal=/echo`); n != 300 {
			t.Errorf("%d exits logged, want 300", n)
		}
		if strings.Contains(text, "status=<nil>") {
			t.Errorf("an exit status was lost:\n%s", tail(text, 2000))
		}
	})

	t.Run("a daemon that is not root", func(t *testing.T) {
		needNobody(t)
		// wirefs run as nobody: its portals run as nobody, the daemon's
		// own user, and open what nobody may open.
		tmp := sharedDir(t, 0o1777)
		env := []string{"HOME=" + tmp, "PATH=/usr/bin:/bin", "TMPDIR=" + tmp, "W=" + wirefsBin, "CFG=" + p.config}
		r := asNobody(t, env, `"$W" run --config "$CFG" -- bash -c 'cat /net/id; cat /net/logs/public; cat /net/logs/secret 2>&1 | sed "s/.*: //"'`)
		equal(t, "as nobody", r.Stdout, "65534\n65534\npublic\nPermission denied\n")
	})

	t.Run("argv verbatim", func(t *testing.T) {
		for _, name := range hostileNames {
			r := mustOK(t, "run", runIn(`cat "/net/echo/$1"`, name))
			equal(t, "argv of "+name, r.Stdout, name)
		}
	})

	t.Run("ssh -W and the tcp alias", func(t *testing.T) {
		r := mustOK(t, "run", runIn(`
exec 3<>"/net/jump/127.0.0.1:$1"; echo jumped >&3; head -1 <&3
exec 4<>/net/db; echo aliased >&4; head -1 <&4
cat /net/refused 2>&1 | sed 's/.*: //'; cat "/net/tcp/127.0.0.1:$2" 2>&1 | sed 's/.*: //'
ssh -F "$3" -o ProxyCommand="bash -c 'exec 3<>/net/jump/%h:%p; cat <&3 & cat >&3'" bastion echo via-a-proxy-file`,
			strconv.Itoa(p.echo.Port), strconv.Itoa(p.closed), p.sshConfig, strconv.Itoa(p.sshdPort)))
		equal(t, "run", r.Stdout, "jumped\naliased\nConnection refused\nConnection refused\nvia-a-proxy-file\n")
	})

	t.Run("fs", func(t *testing.T) {
		r := mustOK(t, "run", runIn(`cat /net/logs/public; readlink /proc/self/fd/3 3</net/logs/public`))
		equal(t, "run", r.Stdout, "public\n"+filepath.Join(p.fsRoot, "public")+"\n")
	})

	t.Run("fs writes", func(t *testing.T) {
		mine := p.writableDir(t)
		r := mustOK(t, "run", runIn(`set -e
cd /net/logs/mine
echo one > f; echo two >> f; cat f
echo three > f; cat f; mv f g; rm g; ls`))
		equal(t, "run", r.Stdout, "one\ntwo\nthree\n")
		if ents, _ := os.ReadDir(mine); len(ents) != 0 {
			t.Errorf("left in the tree: %v", ents)
		}
	})

	t.Run("Ctrl-C", func(t *testing.T) {
		var idle []int
		for _, name := range []string{"idle", "stuck"} {
			c := start(t, 60*time.Second, "", []string{"HOME=" + home}, wirefsBin, "run", "--config", p.config,
				"--cache-dir", filepath.Join(home, "cache"), "--", "cat", "/net/"+name)
			if name == "idle" {
				if !waitFor(10*time.Second, func() bool { idle = pgrep(c.cmd.Process.Pid, "sleep 7777"); return len(idle) > 0 }) {
					t.Fatal("the idle portal's program does not run")
				}
			} else if !waitFor(10*time.Second, func() bool { return synSent(p.stuck) }) {
				t.Fatal("the connect does not hang")
			}
			ctrlC(t, c, "cat "+name)
		}
		running := func() []int { return slices.DeleteFunc(slices.Clone(idle), func(pid int) bool { return !alive(pid) }) }
		if !waitFor(10*time.Second, func() bool { return len(running()) == 0 && !synSent(p.stuck) }) {
			t.Errorf("left running after Ctrl-C: %v, connect %v", running(), synSent(p.stuck))
		}
	})

	t.Run("parallel slow portals", func(t *testing.T) {
		listed, goOn := filepath.Join(p.dir, "listed"), filepath.Join(p.dir, "go-on")
		if err := syscall.Mkfifo(goOn, 0o666); err != nil {
			t.Fatal(err)
		}
		c := start(t, 60*time.Second, "", []string{"HOME=" + home}, wirefsBin, "run", "--config", p.config,
			"--cache-dir", filepath.Join(home, "cache"), "--", "bash", "-c", `
for i in $(seq 0 19); do cat /net/slow/n$i > "$1/out$i" & done
read x < "$2"
ls /net/tcp/ && touch "$3"
wait`, "bash", p.dir, goOn, listed)
		awaitSlow(t, p, func() string {
			if c.exited() {
				return fmt.Sprintf("wirefs run: %v, stdout %q, stderr %q", c.err, c.out.String(), c.errb.String())
			}
			return ""
		})
		if err := os.WriteFile(goOn, []byte("go\n"), 0); err != nil {
			t.Fatal(err)
		}
		if !waitFor(5*time.Second, func() bool { _, err := os.Stat(listed); return err == nil }) {
			t.Fatal("ls /net/tcp/ does not answer while 20 portals wait")
		}
		releaseSlow(t, p, func() []string {
			mustOK(t, "run", c.wait(t, 10*time.Second))
			var outs []string
			for i := range 20 {
				outs = append(outs, readFile(filepath.Join(p.dir, fmt.Sprintf("out%d", i))))
			}
			return outs
		})
	})
}

// pgrep lists the descendants of pid whose command line is cmdline: this
// test's programs, not those of another run of it on the machine.
func pgrep(pid int, cmdline string) []int {
	procs := processes()
	var out []int
	for p := range procs {
		a := p
		for a > 1 && a != pid {
			a = procs[a].ppid
		}
		if a != pid || p == pid {
			continue
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p)); err == nil && strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ") == cmdline {
			out = append(out, p)
		}
	}
	return out
}

// TestPortalBadLines: a bad portal line fails the mount, naming the file,
// the line and why.
func TestPortalBadLines(t *testing.T) {
	needFUSE(t)
	dir := t.TempDir()
	for _, tc := range []struct{ line, want string }{
		{"portal x pipe cat", `line 2: unknown portal provider "pipe" (known: exec, tcp, udp, fs)`},
		{"portal x exec no-such-program-wirefs", "line 2: portal /x: no-such-program-wirefs: not found"},
		{"portal x exec ssh -W %s h", "line 2: %s stands for the name below the prefix"},
		{"portal x tcp not:a:name:at:all", "line 2: portal /x: "},
		{"portal x/ fs " + filepath.Join(dir, "missing"), "line 2: portal /x: "},
		{"portal x exec 'open quote", "line 2: portal line: "},
	} {
		cfg := filepath.Join(dir, "mounts")
		os.WriteFile(cfg, []byte("portal ok exec cat\n"+tc.line+"\n"), 0o644)
		mnt := filepath.Join(dir, "mnt")
		os.Mkdir(mnt, 0o755)
		r := run(t, 20*time.Second, "", wirefsBin, "mount", "--config", cfg, "--log", filepath.Join(dir, "log"), mnt)
		if r.Code == 0 {
			bash(t, nil, 10*time.Second, `fusermount3 -u "$1" || umount "$1"`, mnt)
			t.Errorf("%q: the mount succeeded", tc.line)
			continue
		}
		if !strings.Contains(r.Stderr, cfg+": "+tc.want) {
			t.Errorf("%q: %s\nwant %s: %s", tc.line, r, cfg, tc.want)
		}
		// wirefs run reads the same file the same way.
		r = run(t, 20*time.Second, "", wirefsBin, "run", "--config", cfg, "--cache-dir", filepath.Join(dir, "cache"), "--", "true")
		if r.Code == 0 || !strings.Contains(r.Stderr, cfg+": "+tc.want) {
			t.Errorf("run, %q: %s\nwant %s: %s", tc.line, r, cfg, tc.want)
		}
	}
}
