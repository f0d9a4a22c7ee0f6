package ns

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeDir is a provider directory: a fixed set of children (files or
// directories), each with a recognisable size so tests can tell which
// provider answered.
type fakeDir struct {
	id       string
	size     int64
	children map[string]Node
	lookups  []string
	readErr  error
}

type fakeFile struct {
	id   string
	size int64
}

func (f *fakeFile) Attr(context.Context) (Attr, error) { return Attr{Mode: 0o644, Size: f.size}, nil }

func newFakeDir(id string, size int64, files ...string) *fakeDir {
	d := &fakeDir{id: id, size: size, children: map[string]Node{}}
	for i, f := range files {
		d.children[f] = &fakeFile{id: id + "/" + f, size: size*100 + int64(i)}
	}
	return d
}

func (d *fakeDir) Attr(context.Context) (Attr, error) {
	return Attr{Mode: os.ModeDir | 0o700, Size: d.size}, nil
}

func (d *fakeDir) Lookup(ctx context.Context, name string) (Node, error) {
	d.lookups = append(d.lookups, name)
	if n, ok := d.children[name]; ok {
		return n, nil
	}
	return nil, Errorf(syscall.ENOENT, "%s: no %s", d.id, name)
}

func (d *fakeDir) ReadDir(ctx context.Context) ([]DirEntry, error) {
	if d.readErr != nil {
		return nil, d.readErr
	}
	var out []DirEntry
	for name, n := range d.children {
		a, _ := n.Attr(ctx)
		out = append(out, DirEntry{Name: name, Attr: a})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func names(ents []DirEntry) string {
	var s []string
	for _, e := range ents {
		s = append(s, e.Name)
	}
	return strings.Join(s, " ")
}

func attrOf(t *testing.T, n Node) Attr {
	t.Helper()
	a, err := n.Attr(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// testNS mounts tcp, sftp (a provider of its own) and sftp/me@host.
func testNS() (*Namespace, *fakeDir, *fakeDir, *fakeDir) {
	n := New()
	tcp := newFakeDir("tcp", 1, "127.0.0.1:80")
	sftp := newFakeDir("sftp", 2, "other@host", "me@host")
	me := newFakeDir("me", 3, "file.txt")
	n.Mount("tcp", tcp)
	n.Mount("/sftp/me@host/", me) // leading/trailing slashes are cleaned
	n.Mount("sftp", sftp)
	return n, tcp, sftp, me
}

func TestResolveLongestPrefix(t *testing.T) {
	n, tcp, sftp, me := testNS()
	ctx := context.Background()
	tests := []struct {
		path string
		want Node
	}{
		{"tcp", tcp},
		{"/tcp/", tcp},
		{"tcp/127.0.0.1:80", tcp.children["127.0.0.1:80"]},
		{"sftp/me@host", me},
		{"sftp/me@host/file.txt", me.children["file.txt"]},
		{"sftp/./me@host//file.txt", me.children["file.txt"]},
		{"sftp/x/../me@host/file.txt", me.children["file.txt"]},
		// Not in the table: falls through to the shallower provider.
		{"sftp/other@host", sftp.children["other@host"]},
	}
	for _, tt := range tests {
		got, err := n.Resolve(ctx, tt.path)
		if err != nil {
			t.Errorf("Resolve(%q): %v", tt.path, err)
			continue
		}
		if got != tt.want {
			t.Errorf("Resolve(%q) = %#v, want %#v", tt.path, got, tt.want)
		}
	}
	// "sftp" itself is a table directory (it has a mount below) whose
	// attributes are the sftp provider's.
	d, err := n.Resolve(ctx, "sftp")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := d.(Dir); !ok {
		t.Fatalf("sftp is %T, not a Dir", d)
	}
	if a := attrOf(t, d); a.Size != 2 || !a.Mode.IsDir() {
		t.Fatalf("sftp attr %+v, want the sftp provider's", a)
	}
	// The longer prefix wins: me@host was never asked of the sftp provider.
	for _, l := range sftp.lookups {
		if l == "me@host" {
			t.Fatalf("sftp provider was asked for me@host: %v", sftp.lookups)
		}
	}
}

func TestResolveErrors(t *testing.T) {
	n, _, _, _ := testNS()
	ctx := context.Background()
	for _, tt := range []struct {
		path  string
		errno syscall.Errno
	}{
		{"nosuch", syscall.ENOENT},
		{"tcp/nosuch", syscall.ENOENT},
		{"sftp/nobody@host", syscall.ENOENT},
		{"sftp/me@host/nosuch", syscall.ENOENT},
		{"tcp/127.0.0.1:80/x", syscall.ENOTDIR},
		{"sftp/me@host/file.txt/x", syscall.ENOTDIR},
	} {
		_, err := n.Resolve(ctx, tt.path)
		if Errno(err) != tt.errno {
			t.Errorf("Resolve(%q) = %v (errno %v), want %v", tt.path, err, Errno(err), tt.errno)
		}
	}
}

func TestRootAndSynthesizedDirs(t *testing.T) {
	n := New()
	deep := newFakeDir("deep", 7, "f")
	n.Mount("a/b/c", deep)
	n.Mount("a/x", newFakeDir("x", 8))
	n.Mount("tcp", newFakeDir("tcp", 1))
	ctx := context.Background()

	root, err := n.Resolve(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if a := attrOf(t, root); !a.Mode.IsDir() || a.Mode.Perm() != 0o555 || a.Uid != uint32(os.Getuid()) {
		t.Fatalf("root attr %+v", a)
	}
	if r2, _ := n.Resolve(ctx, "/"); fmt.Sprint(r2) != fmt.Sprint(root) {
		t.Fatalf("Resolve(/) differs from Resolve(\"\")")
	}
	ents, err := root.(Dir).ReadDir(ctx)
	if err != nil || names(ents) != "a tcp" {
		t.Fatalf("root ReadDir = %q, %v; want \"a tcp\"", names(ents), err)
	}
	for _, e := range ents {
		if !e.Attr.Mode.IsDir() {
			t.Errorf("root entry %s is not a directory: %+v", e.Name, e.Attr)
		}
	}
	for _, p := range []string{"a", "a/b"} {
		d, err := n.Resolve(ctx, p)
		if err != nil {
			t.Fatalf("Resolve(%q): %v", p, err)
		}
		if a := attrOf(t, d); !a.Mode.IsDir() || a.Mode.Perm() != 0o555 {
			t.Fatalf("synthesized %s: attr %+v", p, a)
		}
	}
	a, _ := n.Resolve(ctx, "a")
	ents, err = a.(Dir).ReadDir(ctx)
	if err != nil || names(ents) != "b x" {
		t.Fatalf("a ReadDir = %q, %v; want \"b x\"", names(ents), err)
	}
	// Names in synthesized directories that no mount covers do not exist.
	if _, err := n.Resolve(ctx, "a/nosuch"); Errno(err) != syscall.ENOENT {
		t.Fatalf("a/nosuch: %v", err)
	}
	if got, err := n.Resolve(ctx, "a/b/c/f"); err != nil || got != deep.children["f"] {
		t.Fatalf("a/b/c/f = %v, %v", got, err)
	}
	// A mount whose name merely starts like a directory is not below it.
	n.Mount("ab/y", newFakeDir("y", 9))
	ents, _ = a.(Dir).ReadDir(ctx)
	if names(ents) != "b x" {
		t.Fatalf("a ReadDir after mounting ab/y = %q", names(ents))
	}
}

func TestReadDirMergesMountsWithProvider(t *testing.T) {
	n, _, _, _ := testNS()
	n.Mount("sftp/zed@host", newFakeDir("zed", 4))
	ctx := context.Background()
	d, err := n.Resolve(ctx, "sftp")
	if err != nil {
		t.Fatal(err)
	}
	ents, err := d.(Dir).ReadDir(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(ents); got != "me@host other@host zed@host" {
		t.Fatalf("ReadDir(sftp) = %q, want the provider's names merged with the mounts, once each, sorted", got)
	}
}

// TestReadDirShowsLongestPrefixAttr: a name that is both a mount point and
// a name in the shallower provider must list with the attributes of the
// node Lookup returns (the longer prefix), or `ls -l` and `stat` disagree
// and a door caching readdirplus attributes serves the wrong ones.
func TestReadDirShowsLongestPrefixAttr(t *testing.T) {
	n, _, _, me := testNS()
	ctx := context.Background()
	d, _ := n.Resolve(ctx, "sftp")
	ents, err := d.(Dir).ReadDir(ctx)
	if err != nil {
		t.Fatal(err)
	}
	node, err := n.Resolve(ctx, "sftp/me@host")
	if err != nil || node != me {
		t.Fatalf("Resolve(sftp/me@host) = %v, %v", node, err)
	}
	want := attrOf(t, node)
	for _, e := range ents {
		if e.Name == "me@host" && e.Attr != want {
			t.Fatalf("ReadDir(sftp) lists me@host with %+v (the sftp provider's file), but Lookup gives the mount with %+v", e.Attr, want)
		}
	}
}

func TestReadDirProviderError(t *testing.T) {
	n, _, sftp, _ := testNS()
	sftp.readErr = Errorf(syscall.EHOSTUNREACH, "down")
	d, _ := n.Resolve(context.Background(), "sftp")
	if _, err := d.(Dir).ReadDir(context.Background()); Errno(err) != syscall.EHOSTUNREACH {
		t.Fatalf("ReadDir error %v, want the provider's", err)
	}
}

func TestMountReplaces(t *testing.T) {
	n := New()
	a, b := newFakeDir("a", 1), newFakeDir("b", 2)
	n.Mount("tcp", a)
	n.Mount("/tcp", b)
	got, err := n.Resolve(context.Background(), "tcp")
	if err != nil || got != b {
		t.Fatalf("Resolve(tcp) = %v, %v; want the later mount", got, err)
	}
	ents, _ := n.Root().ReadDir(context.Background())
	if names(ents) != "tcp" {
		t.Fatalf("root lists %q", names(ents))
	}
}

// A lazy mount is made on the first resolution through it, once, and not
// by resolving other mounts; its error is the resolution's.
func TestMountLazy(t *testing.T) {
	n := New()
	n.Mount("tcp", newFakeDir("tcp", 1, "h:80"))
	made := 0
	sftp := newFakeDir("sftp", 2, "f")
	n.MountLazy("sftp", func() (Node, error) {
		made++
		return sftp, nil
	})
	n.MountLazy("vif", func() (Node, error) {
		return nil, Errorf(syscall.EACCES, "vif: refused")
	})
	ctx := context.Background()
	if _, err := n.Resolve(ctx, "tcp/h:80"); err != nil || made != 0 {
		t.Fatalf("Resolve(tcp/h:80) = %v, made %d times; want nil, 0", err, made)
	}
	for range 2 {
		got, err := n.Resolve(ctx, "sftp/f")
		if err != nil || got != sftp.children["f"] {
			t.Fatalf("Resolve(sftp/f) = %v, %v", got, err)
		}
	}
	if made != 1 {
		t.Fatalf("made %d times, want 1", made)
	}
	if _, err := n.Resolve(ctx, "vif/x"); Errno(err) != syscall.EACCES {
		t.Fatalf("Resolve(vif/x) = %v, want EACCES", err)
	}
	ents, err := n.Root().ReadDir(ctx)
	if err != nil || names(ents) != "sftp tcp" {
		t.Fatalf("root lists %q, %v; want the mounts that could be made", names(ents), err)
	}
}

func TestErrorType(t *testing.T) {
	err := Errorf(syscall.ECONNREFUSED, "tcp/%s: refused", "h:1")
	if err.Error() != "tcp/h:1: refused" {
		t.Fatalf("Error() = %q", err.Error())
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatal("errors.Is(*Error, its errno) is false")
	}
	if !errors.Is(fmt.Errorf("wrapped: %w", err), syscall.ECONNREFUSED) {
		t.Fatal("errors.Is through a wrap is false")
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestErrno(t *testing.T) {
	opErr := func(op string, errno syscall.Errno) error {
		return &net.OpError{Op: op, Net: "tcp", Err: os.NewSyscallError(op, errno)}
	}
	tests := []struct {
		name string
		err  error
		want syscall.Errno
	}{
		{"nil", nil, 0},
		{"bare errno", syscall.EPIPE, syscall.EPIPE},
		{"connect refused", opErr("connect", syscall.ECONNREFUSED), syscall.ECONNREFUSED},
		{"bind in use", opErr("bind", syscall.EADDRINUSE), syscall.EADDRINUSE},
		{"read reset", opErr("read", syscall.ECONNRESET), syscall.ECONNRESET},
		{"write pipe", opErr("write", syscall.EPIPE), syscall.EPIPE},
		{"unreachable", opErr("connect", syscall.ENETUNREACH), syscall.ENETUNREACH},
		{"wrapped op error", fmt.Errorf("dial: %w", opErr("connect", syscall.EHOSTUNREACH)), syscall.EHOSTUNREACH},
		{"ns.Error", Errorf(syscall.EACCES, "no"), syscall.EACCES},
		{"wrapped ns.Error", fmt.Errorf("x: %w", Errorf(syscall.EDESTADDRREQ, "no")), syscall.EDESTADDRREQ},
		{"ns.Error wins over its cause", &Error{Errno: syscall.ENOENT, Msg: "x"}, syscall.ENOENT},
		{"canceled", context.Canceled, syscall.EINTR},
		{"wrapped canceled", fmt.Errorf("x: %w", context.Canceled), syscall.EINTR},
		{"op canceled", &net.OpError{Op: "dial", Net: "tcp", Err: context.Canceled}, syscall.EINTR},
		{"deadline", context.DeadlineExceeded, syscall.ETIMEDOUT},
		{"io deadline", os.ErrDeadlineExceeded, syscall.ETIMEDOUT},
		{"op io deadline", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, syscall.ETIMEDOUT},
		{"connect timed out", opErr("connect", syscall.ETIMEDOUT), syscall.ETIMEDOUT},
		{"net timeout", &net.OpError{Op: "read", Net: "tcp", Err: timeoutErr{}}, syscall.ETIMEDOUT},
		{"closed", net.ErrClosed, syscall.EBADF},
		{"op closed", &net.OpError{Op: "read", Net: "tcp", Err: net.ErrClosed}, syscall.EBADF},
		{"file closed", os.ErrClosed, syscall.EBADF},
		{"dns not found", &net.DNSError{Err: "no such host", Name: "x", IsNotFound: true}, syscall.ENOENT},
		{"op dns not found", &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "x", IsNotFound: true}}, syscall.ENOENT},
		{"dns timeout", &net.DNSError{Err: "timeout", Name: "x", IsTimeout: true}, syscall.ETIMEDOUT},
		{"dns server failure", &net.DNSError{Err: "server misbehaving", Name: "x", IsTemporary: true}, syscall.EAGAIN},
		{"eof", io.EOF, syscall.EIO},
		{"plain", errors.New("something"), syscall.EIO},
	}
	for _, tt := range tests {
		if got := Errno(tt.err); got != tt.want {
			t.Errorf("%s: Errno(%v) = %v (%d), want %v (%d)", tt.name, tt.err, got, got, tt.want, tt.want)
		}
	}
}

// TestErrnoRealErrors maps errors the net package really returns.
func TestErrnoRealErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if _, err := net.Listen("tcp", addr); Errno(err) != syscall.EADDRINUSE {
		t.Errorf("second listen: %v -> %v, want EADDRINUSE", err, Errno(err))
	}
	ln.Close()
	if _, err := net.Dial("tcp", addr); Errno(err) != syscall.ECONNREFUSED {
		t.Errorf("dial closed port: %v -> %v, want ECONNREFUSED", err, Errno(err))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr); Errno(err) != syscall.EINTR {
		t.Errorf("cancelled dial: %v -> %v, want EINTR", err, Errno(err))
	}
	c1, _ := tcpPair(t)
	c1.SetReadDeadline(time.Now())
	if _, err := c1.Read(make([]byte, 1)); Errno(err) != syscall.ETIMEDOUT {
		t.Errorf("deadline read: %v -> %v, want ETIMEDOUT", err, Errno(err))
	}
	c1.Close()
	if _, err := c1.Read(make([]byte, 1)); Errno(err) != syscall.EBADF {
		t.Errorf("read after close: %v -> %v, want EBADF", err, Errno(err))
	}
}

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ch := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			ch <- nil
			return
		}
		ch <- c
	}()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b := <-ch
	if b == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

func TestInterruptibleWakesBlockedRead(t *testing.T) {
	a, b := tcpPair(t)
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	reading := make(chan struct{})
	go func() {
		_, err := Interruptible(ctx, a.SetReadDeadline, func() (int, error) {
			close(reading)
			return a.Read(make([]byte, 10))
		})
		res <- err
	}()
	<-reading // the read starts now, with nothing to read
	cancel()
	select {
	case err := <-res:
		if !errors.Is(err, context.Canceled) || Errno(err) != syscall.EINTR {
			t.Fatalf("interrupted read: %v (errno %v), want context.Canceled/EINTR", err, Errno(err))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancel did not wake the blocked read")
	}
	// The connection is still usable: the deadline was cleared.
	b.Write([]byte("hi"))
	buf := make([]byte, 10)
	n, err := Interruptible(context.Background(), a.SetReadDeadline, func() (int, error) { return a.Read(buf) })
	if err != nil || string(buf[:n]) != "hi" {
		t.Fatalf("read after interrupt: %q, %v", buf[:n], err)
	}
}

func TestInterruptibleNoCancel(t *testing.T) {
	a, b := tcpPair(t)
	b.Write([]byte("x"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	buf := make([]byte, 1)
	n, err := Interruptible(ctx, a.SetReadDeadline, func() (int, error) { return a.Read(buf) })
	if n != 1 || err != nil {
		t.Fatalf("read = %d, %v", n, err)
	}
	// A real deadline (not ours) is not reported as EINTR.
	a.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	_, err = Interruptible(ctx, a.SetReadDeadline, func() (int, error) { return a.Read(buf) })
	if Errno(err) != syscall.ETIMEDOUT {
		t.Fatalf("own deadline: %v -> %v, want ETIMEDOUT", err, Errno(err))
	}
}

// TestInterruptibleLeavesNoStaleDeadline: when ctx ends while (or just
// before) the call completes, Interruptible must not leave the past
// deadline on the connection, or the next, uncancelled read fails at once
// with a timeout.
func TestInterruptibleLeavesNoStaleDeadline(t *testing.T) {
	a, b := tcpPair(t)
	buf := make([]byte, 1)
	for i := 0; i < 2000; i++ {
		if _, err := b.Write([]byte("xy")); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // already ended: AfterFunc runs its function at once, in another goroutine
		Interruptible(ctx, a.SetReadDeadline, func() (int, error) { return io.ReadFull(a, buf) })
		// The next read, not interrupted, must see the data.
		ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
		n, err := Interruptible(ctx2, a.SetReadDeadline, func() (int, error) { return io.ReadFull(a, buf) })
		cancel2()
		if err != nil || n != 1 {
			t.Fatalf("iteration %d: uncancelled read after a cancelled one = %d, %v (errno %v)", i, n, err, Errno(err))
		}
	}
}

func TestSocketHandle(t *testing.T) {
	a, b := tcpPair(t)
	h := Socket(a)
	ctx := context.Background()
	if n, err := h.(Writer).Write(ctx, []byte("ping")); n != 4 || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(b, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("peer read %q, %v", buf, err)
	}
	f, err := h.(KernelObject).KernelFile()
	if err != nil || f == nil {
		t.Fatalf("KernelFile = %v, %v", f, err)
	}
	if f2, _ := h.(KernelObject).KernelFile(); f2 != f {
		t.Fatal("KernelFile not memoized")
	}
	b.Write([]byte("pong"))
	if n, err := h.(Reader).Read(ctx, buf); err != nil || string(buf[:n]) != "pong"[:n] || n == 0 {
		t.Fatalf("Read = %q, %v", buf[:n], err)
	}
	b.Close()
	// EOF is a zero read without error.
	for {
		n, err := h.(Reader).Read(ctx, buf)
		if err != nil {
			t.Fatalf("Read at EOF: %v", err)
		}
		if n == 0 {
			break
		}
	}
	if err := h.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// A read on a closed handle is EOF, not an error.
	if n, err := h.(Reader).Read(ctx, buf); n != 0 || err != nil {
		t.Fatalf("Read after Close = %d, %v", n, err)
	}
}

func TestSocketFile(t *testing.T) {
	a, b := tcpPair(t)
	f, err := a.(*net.TCPConn).File()
	if err != nil {
		t.Fatal(err)
	}
	a.Close() // f is the socket now
	released := 0
	h := SocketFile(f, func() { released++ })
	if kf, err := h.(KernelObject).KernelFile(); kf != f || err != nil {
		t.Fatalf("KernelFile = %v, %v; want the file itself", kf, err)
	}
	ctx := context.Background()
	if n, err := h.(Writer).Write(ctx, []byte("ping")); n != 4 || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(b, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("peer read %q, %v", buf, err)
	}
	b.Write([]byte("pong"))
	if n, err := h.(Reader).Read(ctx, buf); err != nil || n == 0 || string(buf[:n]) != "pong"[:n] {
		t.Fatalf("Read = %q, %v", buf[:n], err)
	}
	if err := h.Close(); err != nil || released != 1 {
		t.Fatalf("Close: %v, release ran %d times", err, released)
	}
	// The peer sees the end: no copy of the socket is left open.
	b.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := b.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("peer after Close: %d, %v; want EOF", n, err)
	}
	if n, err := h.(Reader).Read(ctx, buf); n != 0 || err != nil {
		t.Fatalf("Read after Close = %d, %v; want EOF", n, err)
	}
}

// A socket file closed before anything was read or written never makes
// a net.Conn, and reads as EOF.
func TestSocketFileClosedUnused(t *testing.T) {
	a, _ := tcpPair(t)
	f, err := a.(*net.TCPConn).File()
	if err != nil {
		t.Fatal(err)
	}
	h := SocketFile(f, nil)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if n, err := h.(Reader).Read(context.Background(), make([]byte, 1)); n != 0 || err != nil {
		t.Fatalf("Read after Close = %d, %v; want EOF", n, err)
	}
}

func TestSocketHandleNoKernelFile(t *testing.T) {
	c1, c2 := net.Pipe()
	defer c2.Close()
	h := Socket(c1)
	defer h.Close()
	if _, err := h.(KernelObject).KernelFile(); Errno(err) != syscall.EOPNOTSUPP {
		t.Fatalf("KernelFile of a pipe: %v, want EOPNOTSUPP", err)
	}
}

func TestSocketHandleReadCancel(t *testing.T) {
	a, _ := tcpPair(t)
	h := Socket(a)
	// Cancelled before or during the read: either way it ends in EINTR.
	ctx, cancel := context.WithCancel(context.Background())
	go cancel()
	_, err := h.(Reader).Read(ctx, make([]byte, 1))
	if Errno(err) != syscall.EINTR {
		t.Fatalf("cancelled Read: %v, want EINTR", err)
	}
}

// TestMountFile: a single file may be mounted at a prefix (a portal):
// it is found and listed like a directory's entry, at the top level and
// below a synthesized directory.
func TestMountFile(t *testing.T) {
	n, _, _, _ := testNS()
	db := &fakeFile{id: "db", size: 7}
	n.Mount("db", db)
	n.Mount("svc/db", db)
	for _, p := range []string{"db", "svc/db"} {
		got, err := n.Resolve(context.Background(), p)
		if err != nil || got != Node(db) {
			t.Errorf("%s: %v %v", p, got, err)
		}
	}
	if _, err := n.Resolve(context.Background(), "db/x"); Errno(err) != syscall.ENOTDIR {
		t.Errorf("below a file: %v", err)
	}
	ents, err := n.Root().ReadDir(context.Background())
	if err != nil || !strings.Contains(names(ents), "db") || !strings.Contains(names(ents), "svc") {
		t.Errorf("listing: %v %v", names(ents), err)
	}
}

// TestWithCaller: a context carries who asks; the caller is computed
// once, when first asked, and not at all if nobody asks.
func TestWithCaller(t *testing.T) {
	if _, ok := CallerOf(context.Background()); ok {
		t.Error("a bare context has a caller")
	}
	calls := 0
	ctx := WithCaller(context.Background(), func() Caller { calls++; return Caller{Pid: 7, Uid: 65534} })
	if calls != 0 {
		t.Error("computed before anyone asked")
	}
	for range 2 {
		if c, ok := CallerOf(ctx); !ok || c.Pid != 7 || c.Uid != 65534 {
			t.Errorf("got %+v %v", c, ok)
		}
	}
	if calls != 1 {
		t.Errorf("computed %d times", calls)
	}
}

// clean takes a name that is clean already as it is, and cleans any other
// as path.Clean does.
func TestClean(t *testing.T) {
	for _, p := range []string{"", "a", "a/b", "net/tcp/127.0.0.1:80", "/a", "a/", "a//b", "./a", "a/.", "a/../b", "..", ".", "/", "//", "a/..b", "a/.b/c."} {
		if got, want := clean(p), strings.Trim(path.Clean("/"+p), "/"); got != want {
			t.Errorf("clean(%q) = %q, want %q", p, got, want)
		}
	}
}

func FuzzClean(f *testing.F) {
	f.Add("net/tcp/127.0.0.1:80")
	f.Add("a//b/./c/../")
	f.Fuzz(func(t *testing.T, p string) {
		if got, want := clean(p), strings.Trim(path.Clean("/"+p), "/"); got != want {
			t.Errorf("clean(%q) = %q, want %q", p, got, want)
		}
	})
}
