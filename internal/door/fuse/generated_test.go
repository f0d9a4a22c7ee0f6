package fuse_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	fusedoor "wirefs/internal/door/fuse"
	"wirefs/internal/ns"
	"wirefs/internal/testsrv"
)

// genFile is a generated file, as a VIF's stats and rate are: each open
// makes its content (content(n) for the n-th open, or the value last
// written), which that handle reads until it is closed.
type genFile struct {
	content func(n int) string
	mu      sync.Mutex
	opens   int
	value   string
	handles []*genHandle
}

func (f *genFile) Attr(ctx context.Context) (ns.Attr, error) {
	return ns.Attr{Mode: 0o644, Mtime: time.Unix(1e9, 0)}, nil
}

// CacheTTL: the kernel keeps its entry and attributes, as for a VIF's files.
func (f *genFile) CacheTTL() time.Duration { return time.Minute }

func (f *genFile) Open(ctx context.Context, c ns.Caller, flags int) (ns.Handle, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opens++
	h := &genHandle{f: f, content: []byte(f.value), closed: make(chan struct{})}
	if f.content != nil {
		h.content = []byte(f.content(f.opens))
	}
	f.handles = append(f.handles, h)
	return h, nil
}

// last is the handle of the latest open.
func (f *genFile) last() *genHandle {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.handles[len(f.handles)-1]
}

type genHandle struct {
	f       *genFile
	content []byte
	mu      sync.Mutex
	reads   int
	closed  chan struct{}
}

func (h *genHandle) ReadAt(ctx context.Context, b []byte, off int64) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reads++
	if off >= int64(len(h.content)) {
		return 0, nil
	}
	return copy(b, h.content[off:]), nil
}

func (h *genHandle) WriteAt(ctx context.Context, b []byte, off int64) (int, error) {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	h.f.value = strings.TrimSpace(string(b))
	return len(b), nil
}

func (h *genHandle) Generated() bool { return true }

func (h *genHandle) Close() error { close(h.closed); return nil }

// released waits for the kernel's RELEASE of h (sent after close returns).
func (h *genHandle) released(t *testing.T) {
	t.Helper()
	select {
	case <-h.closed:
	case <-time.After(10 * time.Second):
		t.Fatal("no RELEASE 10 s after close")
	}
}

func (h *genHandle) readCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.reads
}

// mountGen mounts f as "gen" and returns its path.
func mountGen(t *testing.T, f *genFile) string {
	t.Helper()
	names := ns.New()
	names.Mount("gen", f)
	mnt := t.TempDir()
	srv, err := fusedoor.Mount(mnt, names, fusedoor.Options{AttrTimeout: time.Minute})
	if err != nil {
		testsrv.Unavailable(t, "FUSE: "+err.Error())
	}
	t.Cleanup(func() { srv.Unmount() })
	return filepath.Join(mnt, "gen")
}

// counter's n-th content has a length that grows and shrinks.
func counter(n int) string { return fmt.Sprintf("open %d %s\n", n, strings.Repeat("x", n*7%5)) }

// TestGeneratedFresh: each open of a generated file reads the content made
// at that open, whether its length grew, shrank or stayed, and fstat shows
// that length while it is open.
func TestGeneratedFresh(t *testing.T) {
	f := &genFile{content: counter}
	path := mountGen(t, f)
	alone := true // no earlier handle still open: the page cache's
	for i := 1; i <= 40; i++ {
		fd := open(t, path, syscall.O_RDONLY)
		fsize := size(t, fd)
		got := readAllFrom(t, fd)
		syscall.Close(fd)
		want := counter(i)
		if got != want {
			t.Fatalf("open %d read %q, want %q", i, got, want)
		}
		if alone && fsize != int64(len(want)) {
			t.Errorf("open %d: fstat size %d, want %d", i, fsize, len(want))
		}
		// Now and then the next open is the only one; otherwise the
		// RELEASE of this one may come after it.
		if alone = i%3 == 0; alone {
			f.last().released(t)
		}
	}
}

// The test reads and writes with plain system calls: os.File would add
// each descriptor to Go's poller, whose epoll_ctl asks this very process
// (the file server) for the file's readiness while holding the poller's
// lock, which the server needs to hear the question.

func open(t *testing.T, path string, flags int) int {
	t.Helper()
	fd, err := syscall.Open(path, flags|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	return fd
}

func size(t *testing.T, fd int) int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		t.Fatal(err)
	}
	return st.Size
}

// readAllFrom reads fd to its end.
func readAllFrom(t *testing.T, fd int) string {
	t.Helper()
	var b bytes.Buffer
	buf := make([]byte, 8192)
	for {
		n, err := syscall.Read(fd, buf)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return b.String()
		}
		b.Write(buf[:n])
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	fd := open(t, path, syscall.O_RDONLY)
	defer syscall.Close(fd)
	return readAllFrom(t, fd)
}

func writeFile(t *testing.T, path, value string) {
	t.Helper()
	fd := open(t, path, syscall.O_WRONLY|syscall.O_TRUNC)
	defer syscall.Close(fd)
	if _, err := syscall.Write(fd, []byte(value)); err != nil {
		t.Fatal(err)
	}
}

// TestGeneratedOverlapping: two opens of one generated file at once each
// read their own content, whichever reads first, and a third open while
// the second is still open reads its own.
func TestGeneratedOverlapping(t *testing.T) {
	f := &genFile{content: counter}
	path := mountGen(t, f)
	for round := 0; round < 10; round++ {
		a := open(t, path, syscall.O_RDONLY)
		ha := f.last()
		b := open(t, path, syscall.O_RDONLY)
		hb := f.last()
		first, second := a, b
		hfirst, hsecond := ha, hb
		if round%2 == 1 {
			first, second, hfirst, hsecond = b, a, hb, ha
		}
		if got := readAllFrom(t, first); got != string(hfirst.content) {
			t.Fatalf("round %d: first reader read %q, want its own %q", round, got, hfirst.content)
		}
		if got := readAllFrom(t, second); got != string(hsecond.content) {
			t.Fatalf("round %d: second reader read %q, want its own %q", round, got, hsecond.content)
		}
		syscall.Close(a)
		ha.released(t)
		c := open(t, path, syscall.O_RDONLY) // b is still open
		hc := f.last()
		if got := readAllFrom(t, c); got != string(hc.content) {
			t.Fatalf("round %d: third reader read %q, want its own %q", round, got, hc.content)
		}
		syscall.Close(c)
		if got := readAllFrom(t, b); got != "" { // b read to its end before
			t.Fatalf("round %d: b read %q more after a third open", round, got)
		}
		syscall.Close(b)
		hb.released(t)
		hc.released(t)
	}
}

// TestGeneratedAfterWrite: a read after a write sees the value written,
// of whatever length, as a VIF's rate after `echo 2mbit > rate`.
func TestGeneratedAfterWrite(t *testing.T) {
	f := &genFile{value: "10gbit"}
	path := mountGen(t, f)
	for _, v := range []string{"2mbit", "256kbit", "3mbit", "1gbit", "100mbit", "7"} {
		writeFile(t, path, v+"\n")
		if got := readFile(t, path); got != v {
			t.Fatalf("read %q after writing %q", got, v)
		}
		f.last().released(t)
	}
	// a reader that opened before the write keeps what it opened
	r := open(t, path, syscall.O_RDONLY)
	writeFile(t, path, "5mbit\n")
	if got := readAllFrom(t, r); got != "7" {
		t.Errorf("a reader opened before the write read %q, want %q", got, "7")
	}
	syscall.Close(r)
	if got := readFile(t, path); got != "5mbit" {
		t.Errorf("read %q after the write, want 5mbit", got)
	}
}

// TestGeneratedServedByKernel: an open that is the file's only one has its
// content read by the kernel from the page cache: once open(2) has
// returned (the door read the content while answering OPEN), neither
// fstat nor reading to the end reaches the handle.
func TestGeneratedServedByKernel(t *testing.T) {
	f := &genFile{content: func(n int) string { return fmt.Sprintf("open %04d\n", n) }}
	path := mountGen(t, f)
	for i := 1; i <= 5; i++ {
		fd := open(t, path, syscall.O_RDONLY)
		h := f.last()
		before := h.readCount()
		fsize := size(t, fd)
		got := readAllFrom(t, fd)
		syscall.Close(fd)
		if got != string(h.content) || fsize != int64(len(got)) {
			t.Fatalf("read %q (fstat size %d), want %q", got, fsize, h.content)
		}
		if n := h.readCount() - before; n != 0 {
			t.Errorf("open %d: %d READs reached the handle after open returned, want 0", i, n)
		}
		h.released(t)
	}
}
