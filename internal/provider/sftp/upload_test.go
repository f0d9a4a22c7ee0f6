package sftp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"wirefs/internal/leakcheck"
	"wirefs/internal/ns"
	"wirefs/internal/remote/remotetest"
	"wirefs/internal/testsrv"
)

// smallTmpfs mounts a 1 MiB tmpfs for the test, on a temporary directory
// it returns.
func smallTmpfs(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir).CombinedOutput(); err != nil {
		testsrv.Unavailable(t, fmt.Sprintf("cannot mount a small tmpfs: %v: %s", err, out))
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	return dir
}

func randomBytes(n int, seed int64) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

// TestFailedUploadFullDisk: an upload that fills the server's disk fails
// with ENOSPC and leaves the old file whole under its name, and no
// temporary — through one session, and spread over the streams (to a
// distant server), where any of them may hit it.
func TestFailedUploadFullDisk(t *testing.T) {
	e := newEnv(t)
	dir := smallTmpfs(t)
	old := randomBytes(100<<10, 1)
	p := filepath.Join(dir, "f.bin")
	if err := os.WriteFile(p, old, 0o600); err != nil {
		t.Fatal(err)
	}
	b := e.dial(t, alias)
	data := randomBytes(4<<20, 2)
	err := b.Store(context.Background(), p, bytes.NewReader(data), int64(len(data)), 0o644)
	wantErrno(t, "store 4 MiB into 1 MiB", err, syscall.ENOSPC)
	remotetest.CheckIntact(t, p, old)
	noTemporaries(t, dir)
	distant(t, b)
	data = randomBytes(spreadStore+1<<20, 2)
	err = b.Store(context.Background(), p, bytes.NewReader(data), int64(len(data)), 0o644)
	wantErrno(t, "a spread store of 9 MiB into 1 MiB", err, syscall.ENOSPC)
	remotetest.CheckIntact(t, p, old)
	noTemporaries(t, dir)

	// What fits replaces the file whole, with its mode.
	small := randomBytes(200<<10, 3)
	if err := b.Store(context.Background(), p, bytes.NewReader(small), int64(len(small)), 0o644); err != nil {
		t.Fatal(err)
	}
	remotetest.CheckIntact(t, p, small)
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("the replaced file has mode %v, want the old one's 0600", fi.Mode())
	}
}

// TestFailedUploadCutConnection: the connection breaks half-way through
// an upload; the old file stays whole, and the temporary is removed on a
// new connection.
func TestFailedUploadCutConnection(t *testing.T) {
	e := newEnv(t)
	fwd := testsrv.Forward(t, e.srv.Addr)
	o := e.o
	o.AcceptNewHostKeys = true
	e.o = o
	b := e.dial(t, e.srv.User+"@"+fwd.Addr)
	ctx := context.Background()
	dir := t.TempDir()
	p := filepath.Join(dir, "f.bin")
	old := randomBytes(300<<10, 1)
	if err := b.Store(ctx, p, bytes.NewReader(old), int64(len(old)), 0o644); err != nil {
		t.Fatal(err)
	}
	remotetest.CheckIntact(t, p, old)

	fwd.CutAfter(1 << 20)
	data := randomBytes(8<<20, 2)
	err := b.Store(ctx, p, bytes.NewReader(data), int64(len(data)), 0o644)
	if err == nil || fwd.Cuts() != 1 {
		t.Fatalf("store through a cut connection: %v (cuts %d)", err, fwd.Cuts())
	}
	t.Logf("the store failed as it should: %v", err)
	remotetest.CheckIntact(t, p, old)
}

// TestStoreSizesAroundOnePacket: a store that fits in one write sends
// the write and the close together (fillOne); larger ones stream. Both
// sides of the line, and an empty file, arrive whole with the mode asked.
func TestStoreSizesAroundOnePacket(t *testing.T) {
	e := newEnv(t)
	b := e.dial(t, alias)
	dir := t.TempDir()
	for i, n := range []int{0, 1, 4 << 10, openSSHPacket - 1, openSSHPacket, openSSHPacket + 1, 3*openSSHPacket + 7} {
		p := filepath.Join(dir, fmt.Sprintf("f%d", n))
		data := randomBytes(n, int64(i))
		if err := b.Store(context.Background(), p, bytes.NewReader(data), int64(n), 0o640); err != nil {
			t.Fatalf("store %d bytes: %v", n, err)
		}
		remotetest.CheckIntact(t, p, data)
		if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o640 {
			t.Errorf("%d bytes: mode %v, want 0640", n, fi.Mode())
		}
	}
	// A source shorter than it said: EIO, and nothing under the name.
	p := filepath.Join(dir, "short")
	if err := b.Store(context.Background(), p, bytes.NewReader(make([]byte, 10)), 20, 0o644); ns.Errno(err) != syscall.EIO {
		t.Fatalf("store of 10 bytes said to be 20: %v, want EIO", err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("a failed store left %s: %v", p, err)
	}
	noTemporaries(t, dir)
}

// TestFailedSmallUploadFullDisk: a store of one write, sent with its
// close, that the full disk refuses fails with ENOSPC: the new name is
// not made, a replaced file stays whole, and no temporary is left,
// although the close (answered with the write) succeeded.
func TestFailedSmallUploadFullDisk(t *testing.T) {
	e := newEnv(t)
	dir := smallTmpfs(t)
	old := randomBytes(8<<10, 1)
	p := filepath.Join(dir, "f.bin")
	if err := os.WriteFile(p, old, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "filler"), make([]byte, 900<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	b := e.dial(t, alias)
	data := randomBytes(200<<10, 2) // one write: less than a packet
	err := b.Store(context.Background(), p, bytes.NewReader(data), int64(len(data)), 0o644)
	wantErrno(t, "replace with 200 KiB on a full disk", err, syscall.ENOSPC)
	remotetest.CheckIntact(t, p, old)
	n := filepath.Join(dir, "new.bin")
	err = b.Store(context.Background(), n, bytes.NewReader(data), int64(len(data)), 0o644)
	wantErrno(t, "store a new 200 KiB file on a full disk", err, syscall.ENOSPC)
	if _, err := os.Stat(n); !os.IsNotExist(err) {
		t.Fatalf("a failed store left %s: %v", n, err)
	}
	noTemporaries(t, dir)
}

// noTemporaries fails the test if dir holds a store's temporary file.
func noTemporaries(t *testing.T, dir string) {
	t.Helper()
	for _, name := range remotetest.Temporaries(dir) {
		t.Errorf("a temporary was left: %s", name)
	}
}

// gatedReader reads r, and stops after its first at bytes until open is
// closed.
type gatedReader struct {
	r    io.Reader
	at   int64
	read int64
	open chan struct{}
}

func (g *gatedReader) Read(p []byte) (int, error) {
	if g.read >= g.at {
		<-g.open
	} else if int64(len(p)) > g.at-g.read {
		p = p[:g.at-g.read]
	}
	n, err := g.r.Read(p)
	g.read += int64(n)
	return n, err
}

// TestSpreadStore: a large store to a distant server is spread over the
// connection's streams as soon as they are ready: the first large store of a connection
// starts them, and while it is still reading its data every stream has
// the file open on the server beside the main session. The file arrives
// whole with its mode, a second store spreads at once, and a source
// shorter than it said fails with EIO and leaves nothing.
func TestSpreadStore(t *testing.T) {
	e := newEnv(t)
	base := leakcheck.Take(t)
	b := e.dial(t, alias)
	distant(t, b)
	dir := t.TempDir()
	p := filepath.Join(dir, "big.bin")
	data := randomBytes(spreadStore+3<<20+12345, 1)
	g := &gatedReader{r: bytes.NewReader(data), at: spreadStore / 2, open: make(chan struct{})}
	stored := make(chan error, 1)
	go func() { stored <- b.Store(context.Background(), p, g, int64(len(data)), 0o640) }()
	deadline := time.Now().Add(10 * time.Second)
	for n := openOnServer(t, dir); n < 1+streamCount; n = openOnServer(t, dir) {
		if time.Now().After(deadline) {
			close(g.open)
			t.Fatalf("%d handles of the store's file open on the server, want %d (the main session and every stream)", n, 1+streamCount)
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(g.open)
	if err := <-stored; err != nil {
		t.Fatal(err)
	}
	remotetest.CheckIntact(t, p, data)
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", fi.Mode())
	}
	again := randomBytes(2*spreadStore, 2)
	if err := b.Store(context.Background(), p, bytes.NewReader(again), int64(len(again)), 0o644); err != nil {
		t.Fatal(err)
	}
	remotetest.CheckIntact(t, p, again)
	short := filepath.Join(dir, "short")
	if err := b.Store(context.Background(), short, bytes.NewReader(data[:spreadStore]), spreadStore+1, 0o644); ns.Errno(err) != syscall.EIO {
		t.Fatalf("a store of %d bytes said to be one more: %v, want EIO", spreadStore, err)
	}
	if _, err := os.Stat(short); !os.IsNotExist(err) {
		t.Fatalf("a failed store left %s: %v", short, err)
	}
	noTemporaries(t, dir)
	b.Close()
	base.Check(t)
}

// distant makes b's connection count as one to a distant server, once
// its own measure of the round trip is in.
func distant(t *testing.T, b *backend) {
	t.Helper()
	c := current(t, b)
	measured(t, c)
	c.rtt.Store(int64(spreadRTT))
}

// measured waits until c has measured its round trip (measureRTT).
func measured(t *testing.T, c *conn) {
	t.Helper()
	waitFor(t, "the round trip to be measured", func() bool { return c.rtt.Load() != 0 })
}
