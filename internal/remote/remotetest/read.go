package remotetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"wirefs/internal/leakcheck"
	"wirefs/internal/ns"
	"wirefs/internal/remote"
)

// Reader is what the read suite needs of one protocol's test server: it
// runs on this machine and serves a local directory, read-only ones too.
type Reader struct {
	// Dial opens a fresh session whose no-progress bound is timeout.
	Dial func(t *testing.T, timeout time.Duration) remote.Backend
	// Dir returns a fresh, empty local directory the server serves.
	Dir func(t *testing.T) string
	// Path is the backend's name for the local path local.
	Path func(local string) string
	// Pause stalls the server until Resume; nil when it cannot be
	// stalled (then the stall cases are left out, and say so).
	Pause, Resume func()
	// Restart stops the server (every connection drops) and starts it
	// again on the same address; nil when it cannot.
	Restart func()
	// Stranger opens a session as a user who neither owns the files the
	// test makes nor is root; nil when the server acts as root here.
	Stranger func(t *testing.T) remote.Backend
}

// Read runs the suite every protocol passes, readable or writable: a big
// file whole and in ranges, concurrent readers, a stalled server failing
// within its bound, a cancelled call returning at once and leaking
// nothing. Every byte is compared with the local file the server serves.
func Read(t *testing.T, s Reader) {
	for _, c := range []struct {
		name string
		can  bool // the server has the hooks the case needs
		run  func(*testing.T, Reader)
	}{
		{"BigFile", true, bigFile},
		{"ConcurrentReaders", true, concurrentReaders},
		{"Stall", s.Pause != nil, stall},
		{"CancelStalled", s.Pause != nil, cancelStalled},
		{"ServerRestart", s.Restart != nil, serverRestart},
		{"PermissionDenied", s.Stranger != nil, permissionDenied},
	} {
		if !c.can {
			t.Logf("%s left out: this test server has no hook for it (stall, restart or another user)", c.name)
			continue
		}
		t.Run(c.name, func(t *testing.T) { c.run(t, s) })
	}
}

func (s Reader) session(t *testing.T, timeout time.Duration) remote.Backend {
	t.Helper()
	b := s.Dial(t, timeout)
	t.Cleanup(func() { b.Close() })
	return b
}

// file puts size random bytes in a new file of the served directory and
// returns them and its backend name.
func (s Reader) file(t *testing.T, size int) ([]byte, string) {
	t.Helper()
	data := make([]byte, size)
	rand.Read(data)
	local := filepath.Join(s.Dir(t), "data.bin")
	if err := os.WriteFile(local, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return data, s.Path(local)
}

func readRange(ctx context.Context, b remote.Backend, p string, off, n int64) ([]byte, error) {
	r, err := b.ReadRange(ctx, p, off, n)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

func bigFile(t *testing.T, s Reader) {
	data, p := s.file(t, 8<<20+123)
	b := s.session(t, 10*time.Second)
	ctx := context.Background()
	if info, err := b.Stat(ctx, p); err != nil || info.Size != int64(len(data)) {
		t.Fatalf("Stat = %+v, %v; want %d bytes", info, err, len(data))
	}
	got, err := readRange(ctx, b, p, 0, -1)
	if err != nil || sha256.Sum256(got) != sha256.Sum256(data) {
		t.Fatalf("read whole: %d bytes, %v; not the file's %d", len(got), err, len(data))
	}
	for _, r := range [][2]int64{{0, 1}, {4<<20 - 7, 1 << 20}, {int64(len(data)) - 10, 10}, {int64(len(data)) - 10, 100}} {
		got, err := readRange(ctx, b, p, r[0], r[1])
		want := data[r[0]:min(r[0]+r[1], int64(len(data)))]
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("ReadRange(%d, %d): %d bytes, %v; want %d", r[0], r[1], len(got), err, len(want))
		}
	}
}

func concurrentReaders(t *testing.T, s Reader) {
	data, p := s.file(t, 4<<20)
	b := s.session(t, 10*time.Second)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			off := int64(i) * 512 << 10
			got, err := readRange(context.Background(), b, p, off, 512<<10)
			if err != nil || !bytes.Equal(got, data[off:off+512<<10]) {
				t.Errorf("reader %d: %d bytes, %v", i, len(got), err)
			}
		})
	}
	wg.Wait()
}

// stall: a server that answers nothing fails the call with ETIMEDOUT
// after the no-progress bound (not the test's timeout), and the session
// works again once the server does.
func stall(t *testing.T, s Reader) {
	_, p := s.file(t, 100)
	b := s.session(t, time.Second)
	ctx := context.Background()
	if _, err := b.Stat(ctx, p); err != nil {
		t.Fatal(err)
	}
	s.Pause()
	resumed := false
	defer func() {
		if !resumed {
			s.Resume()
		}
	}()
	done := make(chan error, 1)
	go func() { _, err := readRange(ctx, b, p, 0, -1); done <- err }()
	select {
	case err := <-done:
		if ns.Errno(err) != syscall.ETIMEDOUT {
			t.Fatalf("read from a stalled server: %v (errno %v), want ETIMEDOUT", err, ns.Errno(err))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a read from a stalled server did not fail within 30 s (bound 1 s)")
	}
	s.Resume()
	resumed = true
	if _, err := b.Stat(ctx, p); err != nil {
		t.Fatalf("after the server came back: %v", err)
	}
}

// cancelStalled: a call cancelled while the server stalls returns EINTR
// at once, and closing the session leaves no goroutine or descriptor.
func cancelStalled(t *testing.T, s Reader) {
	_, p := s.file(t, 100)
	base := leakcheck.Take(t)
	b := s.Dial(t, time.Minute)
	ctx := context.Background()
	if _, err := b.Stat(ctx, p); err != nil {
		t.Fatal(err)
	}
	s.Pause()
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { _, err := readRange(cctx, b, p, 0, -1); done <- err }()
	cancel()
	select {
	case err := <-done:
		if ns.Errno(err) != syscall.EINTR {
			t.Errorf("cancelled read: %v (errno %v), want EINTR", err, ns.Errno(err))
		}
	case <-time.After(30 * time.Second):
		t.Error("a cancelled read did not return (the server stalls for a minute's bound)")
	}
	b.Close()
	s.Resume()
	base.Check(t)
}

// serverRestart: a session whose server restarted between two calls
// reconnects for the second (the one retry on a reused connection that
// dropped), and reads the same bytes.
func serverRestart(t *testing.T, s Reader) {
	data, p := s.file(t, 1000)
	b := s.session(t, 10*time.Second)
	ctx := context.Background()
	if _, err := b.Stat(ctx, p); err != nil {
		t.Fatal(err)
	}
	s.Restart()
	if _, err := b.Stat(ctx, p); err != nil {
		t.Fatalf("stat after the server restarted: %v", err)
	}
	if got, err := readRange(ctx, b, p, 0, -1); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read after the server restarted: %d bytes, %v", len(got), err)
	}
}

// permissionDenied: the server's refusal of a file its user may not read
// is EACCES, and the session goes on serving what it may.
func permissionDenied(t *testing.T, s Reader) {
	dir := s.Dir(t)
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "public"), []byte("p"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := s.Stranger(t)
	t.Cleanup(func() { b.Close() })
	ctx := context.Background()
	_, err := readRange(ctx, b, s.Path(filepath.Join(dir, "secret")), 0, -1)
	if ns.Errno(err) != syscall.EACCES {
		t.Fatalf("read of another user's 0600 file: %v (errno %v), want EACCES", err, ns.Errno(err))
	}
	if got, err := readRange(ctx, b, s.Path(filepath.Join(dir, "public")), 0, -1); err != nil || string(got) != "p" {
		t.Fatalf("read of a 0644 file after a refusal: %q, %v", got, err)
	}
}
