package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"wirefs/internal/testsrv"
)

// wirefs splice, run as the built binary with no mount: the ends are real
// files and loopback sockets the test holds; every copy is checked with
// sha256. Nothing here needs root.

// peer is a loopback listener whose one client the test talks to.
type peer struct {
	l    net.Listener
	conn chan *net.TCPConn
}

func listenPeer(t *testing.T) *peer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &peer{l: l, conn: make(chan *net.TCPConn, 1)}
	go func() {
		c, err := l.Accept()
		l.Close()
		if err != nil {
			close(p.conn)
			return
		}
		p.conn <- c.(*net.TCPConn)
	}()
	t.Cleanup(func() { l.Close() })
	return p
}

// name is the peer's namespace name: the splice connects to it.
func (p *peer) name() string { return "tcp/" + p.l.Addr().String() }

// receive reads everything the splice sends to p.
func (p *peer) receive() <-chan []byte {
	out := make(chan []byte, 1)
	go func() {
		c, ok := <-p.conn
		if !ok {
			out <- nil
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		out <- b
	}()
	return out
}

// send gives the splice b, then closes.
func (p *peer) send(b []byte) {
	go func() {
		c, ok := <-p.conn
		if !ok {
			return
		}
		c.Write(b)
		c.Close()
	}()
}

func randomData(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func writeTemp(t *testing.T, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// spliceCmd is wirefs splice -q ARGS, killed if it runs for two minutes
// (a hang fails its test, not the whole run).
func spliceCmd(t *testing.T, args ...string) *exec.Cmd {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return exec.CommandContext(ctx, wirefsBin, append([]string{"splice", "-q"}, args...)...)
}

func runSplice(t *testing.T, args ...string) (string, int) {
	t.Helper()
	out, err := spliceCmd(t, args...).CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

func mustSplice(t *testing.T, args ...string) {
	t.Helper()
	if out, code := runSplice(t, args...); code != 0 {
		t.Fatalf("wirefs splice %q: exit %d\n%s", args, code, out)
	}
}

func equalSum(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if sha256.Sum256(got) != sha256.Sum256(want) {
		t.Fatalf("%s: got %d bytes, not the %d sent", what, len(got), len(want))
	}
}

func TestSpliceFileToSocket(t *testing.T) {
	data := randomData(20<<20 + 3)
	src := writeTemp(t, data)
	p := listenPeer(t)
	got := p.receive()
	mustSplice(t, src, p.name())
	equalSum(t, "file→socket", <-got, data)
}

func TestSpliceSocketToFile(t *testing.T) {
	data := randomData(9<<20 + 1)
	p := listenPeer(t)
	p.send(data)
	dst := filepath.Join(t.TempDir(), "out")
	mustSplice(t, p.name(), dst)
	got, _ := os.ReadFile(dst)
	equalSum(t, "socket→file", got, data)
}

func TestSpliceSocketToSocket(t *testing.T) {
	data := randomData(12 << 20)
	in, out := listenPeer(t), listenPeer(t)
	in.send(data)
	got := out.receive()
	// Both through the prefix spelling, as a mounted /net would name them.
	mustSplice(t, "/net/"+in.name(), out.name())
	equalSum(t, "socket→socket", <-got, data)
}

func TestSpliceStdinToFile(t *testing.T) {
	data := randomData(5<<20 + 17)
	dst := filepath.Join(t.TempDir(), "out")
	cmd := spliceCmd(t, "-", dst)
	cmd.Stdin = bytes.NewReader(data) // a pipe from the test
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got, _ := os.ReadFile(dst)
	equalSum(t, "stdin→file", got, data)
}

func TestSpliceFileToFile(t *testing.T) {
	data := randomData(7<<20 + 5)
	src := writeTemp(t, data)
	dst := filepath.Join(t.TempDir(), "out")
	mustSplice(t, src, dst)
	got, _ := os.ReadFile(dst)
	equalSum(t, "file→file", got, data)
	// And to stdout, a pipe.
	cmd := spliceCmd(t, src, "-")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	equalSum(t, "file→stdout", out, data)
}

func TestSpliceSplitToThree(t *testing.T) {
	data := randomData(10<<20 + 11)
	src := writeTemp(t, data)
	a, b := listenPeer(t), listenPeer(t)
	ga, gb := a.receive(), b.receive()
	dst := filepath.Join(t.TempDir(), "out")
	mustSplice(t, src, a.name(), b.name(), dst)
	equalSum(t, "split 1", <-ga, data)
	equalSum(t, "split 2", <-gb, data)
	got, _ := os.ReadFile(dst)
	equalSum(t, "split 3", got, data)
}

// Merge of three files of 4 KiB records with --block 4k: every record in
// the result is whole and each source's records keep their order.
func TestSpliceMergeOfThree(t *testing.T) {
	const rec, count = 4096, 500
	var srcs []string
	var want int
	for s := range 3 {
		var buf bytes.Buffer
		for i := range count {
			r := bytes.Repeat([]byte{byte('A' + s)}, rec)
			copy(r[1:], fmt.Sprintf("%06d", i))
			buf.Write(r)
		}
		srcs = append(srcs, writeTemp(t, buf.Bytes()))
		want += buf.Len()
	}
	dst := listenPeer(t)
	got := dst.receive()
	mustSplice(t, append([]string{"--merge", "--block", "4k"}, append(srcs, dst.name())...)...)
	out := <-got
	if len(out) != want {
		t.Fatalf("merged %d bytes, want %d", len(out), want)
	}
	next := map[byte]int{}
	for off := 0; off < len(out); off += rec {
		r := out[off : off+rec]
		if r[0] < 'A' || r[0] > 'C' || r[rec-1] != r[0] {
			t.Fatalf("the record at %d is not whole", off)
		}
		i, _ := strconv.Atoi(string(r[1:7]))
		if i != next[r[0]] {
			t.Fatalf("source %c: record %d where %d was due", r[0], i, next[r[0]])
		}
		next[r[0]]++
	}
}

// --both relays both ways and passes each half-close on: each side sends,
// shuts down its write side, and still gets all the other side sends.
func TestSpliceRelayHalfClose(t *testing.T) {
	up, down := randomData(6<<20), randomData(4<<20+9)
	a, b := listenPeer(t), listenPeer(t)
	var wg sync.WaitGroup
	var atA, atB []byte
	wg.Go(func() {
		c := <-a.conn
		if c == nil {
			return
		}
		defer c.Close()
		c.Write(up)
		c.CloseWrite()
		atA, _ = io.ReadAll(c)
	})
	wg.Go(func() {
		c := <-b.conn
		if c == nil {
			return
		}
		defer c.Close()
		atB, _ = io.ReadAll(c) // ends with the relayed half-close
		c.Write(down)
		c.CloseWrite()
	})
	mustSplice(t, "--both", a.name(), b.name())
	wg.Wait()
	equalSum(t, "a→b", atB, up)
	equalSum(t, "b→a", atA, down)
}

// The rate is honoured within loose bounds; the benchmark measures it.
func TestSpliceRate(t *testing.T) {
	data := randomData(512 << 10)
	src := writeTemp(t, data)
	p := listenPeer(t)
	got := p.receive()
	start := time.Now()
	mustSplice(t, "--rate", "4mbit", src, p.name())
	equalSum(t, "paced", <-got, data)
	want := time.Second // 512 KiB at 500 kB/s
	if el := time.Since(start); el < want*7/10 || el > want*5 {
		t.Errorf("512 KiB at 4mbit took %v, want about %v", el, want)
	}
}

func TestSpliceErrors(t *testing.T) {
	src := writeTemp(t, []byte("x"))
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{src, "tcp/" + addr}, 1, "wirefs splice: connect " + addr + ": Connection refused\n"},
		{[]string{"/nonexistent/x", src + ".out"}, 1, "wirefs splice: open /nonexistent/x: No such file or directory\n"},
		{[]string{src}, 2, "wirefs: splice: want SRC DST [DST...], got 1 argument; see 'wirefs splice --help'\n"},
		{[]string{"--rate", "fast", src, src + ".2"}, 2, ""},
		{[]string{"--fork", src, src + ".2"}, 2, "wirefs: splice: --fork goes with --both; see 'wirefs splice --help'\n"},
	} {
		out, code := runSplice(t, c.args...)
		if code != c.code || (c.msg != "" && out != c.msg) {
			t.Errorf("wirefs splice %q: exit %d, %q; want exit %d, %q", c.args, code, out, c.code, c.msg)
		}
	}
}

// A sink that resets mid-transfer: exit 1, a message naming the end and
// the cause.
func TestSplicePeerReset(t *testing.T) {
	src := writeTemp(t, randomData(64<<20))
	p := listenPeer(t)
	go func() {
		c := <-p.conn
		if c == nil {
			return
		}
		io.ReadFull(c, make([]byte, 1<<20))
		c.SetLinger(0)
		c.Close()
	}()
	out, code := runSplice(t, src, p.name())
	if code != 1 || !regexp.MustCompile(`^wirefs splice: write `+regexp.QuoteMeta(p.name())+`: (Connection reset by peer|Broken pipe)\n$`).MatchString(out) {
		t.Fatalf("exit %d, %q", code, out)
	}
}

// Ctrl-C stops a splice cleanly: exit 130 and the bytes moved.
func TestSpliceInterrupt(t *testing.T) {
	in, out := listenPeer(t), listenPeer(t)
	cmd := spliceCmd(t, in.name(), out.name())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	src := <-in.conn
	dst := <-out.conn
	if src == nil || dst == nil {
		t.Fatal("the splice did not connect")
	}
	defer src.Close()
	defer dst.Close()
	chunk := randomData(100 << 10)
	src.Write(chunk)
	if _, err := io.ReadFull(dst, make([]byte, len(chunk))); err != nil {
		t.Fatal(err)
	}
	// The splice has moved the chunk and waits for more: interrupt it.
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v, stderr %q", err, stderr.String())
	}
	if want := fmt.Sprintf("wirefs splice: interrupted: %d bytes moved\n", len(chunk)); stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
	if n, _ := dst.Read(make([]byte, 1)); n != 0 {
		t.Error("the sink got more than was sent")
	}
}

// The file interface through the mount: clone, ctl, status, the owner's
// directory, and a relay made from ctl lines alone (a port forwarder).
func TestSpliceCtlThroughMount(t *testing.T) {
	m := mount(t)
	clone, err := os.OpenFile(m.P("splice/clone"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer clone.Close()
	b := make([]byte, 32)
	k, _ := clone.Read(b)
	n := strings.TrimSpace(string(b[:k]))
	dir := m.P("splice/" + n)
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("splice/%s: %v %v", n, fi, err)
	}
	data := randomData(8<<20 + 3)
	src := writeTemp(t, data)
	p := listenPeer(t)
	got := p.receive()
	if err := os.WriteFile(dir+"/ctl", []byte("from "+src+" to "+p.name()+"\n"), 0); err != nil {
		t.Fatal(err)
	}
	equalSum(t, "ctl file→socket", <-got, data)
	st, _ := os.ReadFile(dir + "/status")
	if !regexp.MustCompile(`^done 8388611 \d+ \d+\.\d{3}\n$`).Match(st) {
		t.Errorf("status %q", st)
	}
	if err := os.WriteFile(dir+"/ctl", []byte("from nowhere\n"), 0); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("a bad ctl line: %v, want EINVAL", err)
	}
	r := run(t, 10*time.Second, "", "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "cat", dir+"/status")
	if r.Code == 0 || !strings.Contains(r.Stderr, "Permission denied") {
		t.Errorf("nobody reading another's status: %s", r)
	}

	// A port forwarder from a shell: relay SERVER CLIENT.
	back := listenPeer(t)
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	fwd := l.Addr().String()
	l.Close()
	script := `exec 3<>"$M/splice/clone"; read n <&3
echo "relay tcp/` + fwd + `:: ` + back.name() + `" > "$M/splice/$n/ctl" || exit 1
echo ready; read _ ; cat "$M/splice/$n/status"`
	proc := startBash(t, m, script)
	defer proc.terminate()
	proc.waitOutput(t, 10*time.Second, "ready")
	up := randomData(1 << 20)
	atBack := back.receive()
	c, err := net.Dial("tcp", fwd)
	if err != nil {
		t.Fatal(err)
	}
	c.Write(up)
	c.(*net.TCPConn).CloseWrite()
	equalSum(t, "forwarded", <-atBack, up)
	io.ReadAll(c) // the relay passes the back end's close on
	c.Close()
	io.WriteString(proc.stdin, "\n")
	r = proc.wait(t, 10*time.Second)
	if !regexp.MustCompile(`(?m)^done 1048576 `).MatchString(r.Stdout) {
		t.Errorf("forwarder: %s", r)
	}
}

// The ctl interface under wirefs run (the catcher door): a shell splices
// a file to a socket with no mount and no new tool.
func TestSpliceCtlUnderRun(t *testing.T) {
	needCatch(t)
	data := randomData(2<<20 + 1)
	src := writeTemp(t, data)
	p := listenPeer(t)
	got := p.receive()
	// The shell holds the clone until the status says done (a loop of
	// reads, no sleep), then reports it.
	script := `exec 3<>/net/splice/clone && read n <&3 &&
echo "from $1 to $2" > /net/splice/$n/ctl || exit 1
for i in $(seq 100000); do read -r st rest < /net/splice/$n/status; [ "$st" = running ] || break; done
echo "$st $rest"`
	r := catchRun(t, t.TempDir(), script, src, p.name())
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "done 2097153 ") {
		t.Fatalf("%s", r)
	}
	b := <-got
	equalSum(t, "ctl under run", b, data)
}

// Permission refusals: an ordinary user cannot splice from a file only
// root may read; the message and exit status are cp's.
func TestSplicePermission(t *testing.T) {
	if os.Geteuid() != 0 {
		testsrv.Unavailable(t, "needs root to run the splice as another user")
	}
	secret := writeTemp(t, []byte("root only"))
	os.Chmod(secret, 0o600)
	os.Chmod(filepath.Dir(secret), 0o755)
	r := run(t, 20*time.Second, "", "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
		wirefsBin, "splice", "-q", secret, "/dev/null")
	if r.Code != 1 || r.Stderr != "wirefs splice: open "+secret+": Permission denied\n" {
		t.Errorf("nobody splicing root's file: %s", r)
	}
}

// A remote file (sftp, the test sshd) → socket, twice (the second read
// comes from the cache), and socket → a new remote file.
func TestSpliceSFTP(t *testing.T) {
	s := testsrv.StartSSHD(t)
	root, _ := serverTree(t)
	home := sshHome(t, s, true)
	data := randomData(3<<20 + 5)
	if err := os.WriteFile(filepath.Join(root, "big.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_CACHE_HOME=" + t.TempDir()}
	splice := func(args ...string) Result {
		return run(t, 60*time.Second, "", "env", append(append(env, wirefsBin, "splice", "-q"), args...)...)
	}
	for i := range 2 {
		p := listenPeer(t)
		got := p.receive()
		mustOK(t, "sftp → socket", splice("sftp/testhost"+root+"/big.bin", p.name()))
		equalSum(t, fmt.Sprintf("sftp → socket, run %d", i+1), <-got, data)
	}
	p := listenPeer(t)
	p.send(data)
	mustOK(t, "socket → sftp", splice(p.name(), "sftp://testhost"+root+"/up.bin"))
	b, _ := os.ReadFile(filepath.Join(root, "up.bin"))
	equalSum(t, "socket → sftp", b, data)
}
