package catch

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"wirefs/internal/ns"
)

// TestFastPathAgrees: the library's test of a name (fastpath.c's local)
// lets through only names the supervisor finds local without looking at
// the program: absolute names whose clean form is outside every root,
// relative names by names.go's mayBeURL and relMayReach (roots of
// Options.Roots, URL names on).
func TestFastPathAgrees(t *testing.T) {
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler (scripts/setup.sh installs it)")
	}
	bin := filepath.Join(t.TempDir(), "fastlocal")
	if out, err := exec.Command("cc", "-O2", "-o", bin, "testdata/fastlocal.c").CombinedOutput(); err != nil {
		t.Fatalf("cc: %v %s", err, out)
	}
	names := []string{
		"", "/", "//", "/.", "/..", "/net", "/net/", "/net/tcp/h:1", "//net/x", "/netx", "/ne",
		"/src", "/src/a.c", "/srcs/a", "/etc/hostname", "/etc/../net/tcp", "/usr/include/stdio.h",
		"/a/./net", "/./net", "/../net", "/a..b/c", "net", "net/tcp", "./net", ".//net/x", "././",
		".", "./", "..", "../net", "a/b", "a/../net", "src", "srcx/a", "x/net", "sftp://h/x",
		"http://h", "a/b://c", "://x", "h:/x", "x.c", "/tmp/a://b", "a:b", "dir/sftp://h",
	}
	// And names made of the pieces that matter, every one up to three
	// pieces long.
	pieces := []string{"/", ".", "..", "net", "src", "x", "://", ":"}
	var grow func(string, int)
	grow = func(p string, depth int) {
		names = append(names, p)
		if depth < 4 {
			for _, q := range pieces {
				grow(p+q, depth+1)
			}
		}
	}
	grow("", 0)
	cmd := exec.Command(bin)
	cmd.Env = []string{"WIREFS_CATCH_FIRSTS=/net/src", "WIREFS_CATCH_URL=1"}
	cmd.Stdin = strings.NewReader(strings.Join(names, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	m, err := newNames("/net", []string{"src"}, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	// What the library must answer: absolute names by the first
	// component of their clean form, relative ones by the cheap tests
	// whereIs makes before it looks at the target's working directory.
	local := func(p string) bool {
		switch {
		case p == "":
			return true
		case p[0] == '/':
			clean := path.Clean(p)
			first, _, _ := strings.Cut(clean[1:], "/")
			return clean == "/" || !m.firsts[first]
		}
		return !m.mayBeURL(p) && !m.relMayReach(p)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for _, name := range names {
		if !sc.Scan() {
			t.Fatal("short output")
		}
		got := sc.Text() == "1"
		if want := local(name); got != want {
			t.Errorf("%q: the library says local=%v, want %v", name, got, want)
		}
		// And whatever it lets through, the supervisor would have.
		if _, in := m.match(path.Clean(name)); got && strings.HasPrefix(name, "/") && in {
			t.Errorf("%q: let through, but the supervisor serves it", name)
		}
	}
}

// TestFastPathRealpath: the library's realpath gives what glibc's gives
// (result, the caller's buffer, errno) over symbolic links absolute and
// relative, loops, dangling links, names through files, "." and "..",
// relative names, and leaves to glibc's the names it must: names
// reaching the namespace, links longer than its buffers.
func TestFastPathRealpath(t *testing.T) {
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler (scripts/setup.sh installs it)")
	}
	bin := filepath.Join(t.TempDir(), "fastrealpath")
	if out, err := exec.Command("cc", "-O2", "-o", bin, "testdata/fastrealpath.c").CombinedOutput(); err != nil {
		t.Fatalf("cc: %v %s", err, out)
	}
	d := t.TempDir()
	for _, c := range [][2]string{{"d", ""}, {"d/e", ""}, {"f", "file"}, {"d/g", "file"},
		{"l1", "d"}, {"l2", d + "/d/e"}, {"loop", "loop"}, {"dangling", "nothere"},
		{"rel", "../" + filepath.Base(d) + "/d"}, {"tonet", "/net/tcp"}, {"hop", "l1"},
		{"long", strings.Repeat("d/../", 250) + "f"}} {
		p := filepath.Join(d, c[0])
		var err error
		switch c[1] {
		case "":
			err = os.Mkdir(p, 0o755)
		case "file":
			err = os.WriteFile(p, nil, 0o644)
		default:
			err = os.Symlink(c[1], p)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	same := []string{"/", "//", "/..", "/usr/bin/cc", d, d + "/", d + "/./d//e/", d + "/l1/g",
		d + "/hop/e/../g", d + "/l2/", d + "/rel/e/../g", d + "/f/", d + "/f/.", d + "/f/..",
		d + "/f/x", d + "/d/..", d + "/loop", d + "/dangling", d + "/nothere/x", d + "/l1/nothere"}
	// Relative names start from the working directory, d.
	same = append(same, "rel", "./x", "l1/g", "hop/e/../g", ".", "f/", "loop")
	glibc := []string{"", d + "/tonet/x", "/net/tcp", d + "/long", "tonet/x"}
	cmd := exec.Command(bin)
	cmd.Dir = d
	cmd.Env = []string{"WIREFS_CATCH_FIRSTS=/net"}
	cmd.Stdin = strings.NewReader(strings.Join(append(same, glibc...), "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(same)+len(glibc) {
		t.Fatalf("%d lines for %d names: %q", len(lines), len(same)+len(glibc), out)
	}
	for i, name := range append(same, glibc...) {
		want := "same"
		if i >= len(same) {
			want = "glibc"
		}
		if lines[i] != want {
			t.Errorf("%.80q: %s, want %s", name, lines[i], want)
		}
	}
}

// TestConnectAnswerLayout: fastpath.go writes the connect answer where
// fastpath.c's struct connect_answer has its fields, with its constants.
func TestConnectAnswerLayout(t *testing.T) {
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler (scripts/setup.sh installs it)")
	}
	bin := filepath.Join(t.TempDir(), "answerlayout")
	if out, err := exec.Command("cc", "-O2", "-o", bin, "testdata/answerlayout.c").CombinedOutput(); err != nil {
		t.Fatalf("cc: %v %s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintln(answerKind, answerAddr, answerNetns, answerType, answerProtocol, answerOptions,
		answerUserTimeout, answerSize, answerConnect, answerMake, optNoDelay, optReusable, connectMagic, socketMagic)
	if string(out) != want {
		t.Fatalf("fastpath.c: %q\nfastpath.go: %q", out, want)
	}
}

// TestWriteSocketAnswer: a recipe's answer, as the library reads it.
func TestWriteSocketAnswer(t *testing.T) {
	var a [answerSize]byte
	r := ns.SocketRecipe{Type: syscall.SOCK_STREAM, To: &unix.SockaddrInet6{Port: 8080, Addr: [16]byte{15: 1}}, NoDelay: true, UserTimeout: 1500 * time.Millisecond, Reusable: true}
	if err := writeSocketAnswer(uint32(os.Getpid()), uint64(uintptr(unsafe.Pointer(&a[0]))), r, 42); err != nil {
		t.Fatal(err)
	}
	u32 := func(off int) uint32 { return binary.LittleEndian.Uint32(a[off:]) }
	if u32(0) != unix.SizeofSockaddrInet6 || u32(answerKind) != answerMake ||
		binary.LittleEndian.Uint16(a[answerAddr:]) != unix.AF_INET6 || binary.BigEndian.Uint16(a[answerAddr+2:]) != 8080 ||
		a[answerAddr+8+15] != 1 || binary.LittleEndian.Uint64(a[answerNetns:]) != 42 ||
		u32(answerType) != syscall.SOCK_STREAM || u32(answerProtocol) != 0 || u32(answerOptions) != optNoDelay|optReusable || u32(answerUserTimeout) != 1500 {
		t.Fatalf("answer % x", a)
	}
}
