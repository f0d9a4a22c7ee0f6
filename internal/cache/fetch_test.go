package cache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"wirefs/internal/ns"
)

func TestPartialReadFetchesOnlyTheRange(t *testing.T) {
	c, _ := newCache(t, 0)
	b := newLocalBackend(t)
	data := pattern(20 << 20)
	b.put(t, "/big", data)
	const ra = 64 << 10
	root := c.Root("local://p", b, Options{ReadAhead: new(int64(ra))})
	h := openNode(t, lookup(t, root, "big"), os.O_RDONLY)
	defer h.Close()
	buf := make([]byte, 4096)
	off := int64(5 << 20)
	if n, err := h.(ns.ReaderAt).ReadAt(bg, buf, off); err != nil || n != len(buf) {
		t.Fatalf("read: %d, %v", n, err)
	}
	if !bytes.Equal(buf, data[off:off+4096]) {
		t.Fatal("wrong bytes")
	}
	if n := b.n("ReadRange"); n != 1 {
		t.Fatalf("%d ReadRange calls, want 1", n)
	}
	b.mu.Lock()
	r := b.reads[0]
	b.mu.Unlock()
	if r.off != off || r.end-r.off > max(4096+ra, minFetch) {
		t.Fatalf("fetched [%d, %d), want from %d at most %d bytes", r.off, r.end, off, max(4096+ra, minFetch))
	}
	waitFor(t, "the fetch to end", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.bytesRead == r.end-r.off
	})
	// The same range again, and a part of the read-ahead: no transfer.
	for _, o := range []int64{off, off + 8192} {
		if _, err := h.(ns.ReaderAt).ReadAt(bg, buf, o); err != nil || !bytes.Equal(buf, data[o:o+4096]) {
			t.Fatalf("reread at %d: %v", o, err)
		}
	}
	if n := b.n("ReadRange"); n != 1 {
		t.Fatalf("%d ReadRange calls after rereading cached bytes, want 1", n)
	}
}

func TestSequentialReadAheadGrows(t *testing.T) {
	c, _ := newCache(t, 0)
	b := newLocalBackend(t)
	data := pattern(30 << 20)
	b.put(t, "/seq", data)
	root := c.Root("local://s", b, Options{})
	h := openNode(t, lookup(t, root, "seq"), os.O_RDONLY)
	defer h.Close()
	if got := readAll(t, h); !bytes.Equal(got, data) {
		t.Fatal("sequential read returned wrong bytes")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	largest := int64(0)
	for _, r := range b.reads {
		largest = max(largest, r.end-r.off)
	}
	if largest <= DefaultReadAhead+64<<10 || largest > maxReadAhead+64<<10 {
		t.Fatalf("largest fetch %d bytes: read-ahead should grow beyond %d, up to %d", largest, DefaultReadAhead, maxReadAhead)
	}
	if len(b.reads) > 30 {
		t.Fatalf("%d fetches for 30 MiB", len(b.reads))
	}
}

// TestReadAheadKeepsWindowsInFlight: a sequential reader has several
// read-ahead windows in flight at once, not one at a time (at 50 ms one
// request cannot fill the link), and no more than readAheadDepth.
func TestReadAheadKeepsWindowsInFlight(t *testing.T) {
	c, _ := newCache(t, 0)
	b := newLocalBackend(t)
	data := pattern(64 << 20)
	b.put(t, "/big", data)
	root := c.Root("local://depth", b, Options{})
	h := openNode(t, lookup(t, root, "big"), os.O_RDONLY)
	defer h.Close()
	buf := make([]byte, 128<<10)
	if _, err := h.(ns.ReaderAt).ReadAt(bg, buf, 0); err != nil {
		t.Fatal(err)
	}
	f := h.(*handle).f
	// The first fetch (the read and its window) may still be streaming
	// when ReadAt returns; a window is not read ahead of one in flight.
	waitFor(t, "the first fetch to end", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.fetches) == 0
	})
	b.mu.Lock()
	b.stall = make(chan struct{})
	b.mu.Unlock()
	// Reading what the first fetch brought starts the next windows
	// before the reader gets there (before ReadAt returns).
	for off := int64(len(buf)); off < DefaultReadAhead; off += int64(len(buf)) {
		if _, err := h.(ns.ReaderAt).ReadAt(bg, buf, off); err != nil {
			t.Fatal(err)
		}
	}
	f.mu.Lock()
	var ahead []span
	for _, fe := range f.fetches {
		if fe.off > 0 {
			ahead = append(ahead, span{fe.off, fe.end})
		}
	}
	f.mu.Unlock()
	if len(ahead) != readAheadDepth {
		t.Errorf("%d read-ahead windows in flight, want %d: %v", len(ahead), readAheadDepth, ahead)
	}
	close(b.stall)
	if got := readAll(t, h); !bytes.Equal(got, data) {
		t.Fatal("wrong bytes")
	}
}

func TestCancelDuringStalledFetch(t *testing.T) {
	c, _ := newCache(t, 0)
	b := newLocalBackend(t)
	b.put(t, "/s", pattern(1<<20))
	root := c.Root("local://stall", b, Options{})
	f := lookup(t, root, "s").(*file)
	h := openNode(t, f, os.O_RDONLY)
	defer h.Close()
	b.stall = make(chan struct{})
	defer close(b.stall)
	ctx, cancel := context.WithCancel(bg)
	done := make(chan error, 1)
	go func() {
		_, err := h.(ns.ReaderAt).ReadAt(ctx, make([]byte, 4096), 0)
		done <- err
	}()
	waitFor(t, "the fetch to start", func() bool { return b.n("ReadRange") == 1 })
	cancel()
	select {
	case err := <-done:
		if ns.Errno(err) != syscall.EINTR {
			t.Fatalf("cancelled read: %v, want EINTR", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled read did not return")
	}
	waitFor(t, "the abandoned fetch to end", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.fetches) == 0
	})
}

func TestConcurrentReadersShareOneFetch(t *testing.T) {
	c, _ := newCache(t, 0)
	b := newLocalBackend(t)
	data := pattern(256 << 10)
	b.put(t, "/shared", data)
	root := c.Root("local://share", b, Options{})
	f := lookup(t, root, "shared").(*file)
	b.stall = make(chan struct{})
	const readers = 8
	var wg sync.WaitGroup
	errs := make(chan error, readers)
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, err := f.Open(bg, ns.Caller{}, os.O_RDONLY)
			if err != nil {
				errs <- err
				return
			}
			defer h.Close()
			buf := make([]byte, 8192)
			if _, err := h.(ns.ReaderAt).ReadAt(bg, buf, 4096); err != nil {
				errs <- err
			} else if !bytes.Equal(buf, data[4096:4096+8192]) {
				errs <- errors.New("wrong bytes")
			}
		}()
	}
	waitFor(t, "every reader to wait for the fetch", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.fetches) == 1 && f.fetches[0].waiters == readers
	})
	close(b.stall)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := b.n("ReadRange"); n != 1 {
		t.Fatalf("%d fetches for one range read by %d readers", n, readers)
	}
}

func TestReadAheadLeavesRoomForMetadata(t *testing.T) {
	c, _ := newCache(t, 0)
	b := newLocalBackend(t)
	// More readers than read-ahead slots.
	readers := readAheadPerServer + 2
	for i := range readers {
		b.put(t, fmt.Sprintf("/bulk%d", i), pattern(4<<20))
	}
	b.put(t, "/dir/small", []byte("s"))
	root := c.Root("local://meta", b, Options{})
	var handles []ns.Handle
	for i := range readers {
		handles = append(handles, openNode(t, lookup(t, root, fmt.Sprintf("bulk%d", i)), os.O_RDONLY))
	}
	b.stall = make(chan struct{})
	var wg sync.WaitGroup
	for _, h := range handles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.(ns.ReaderAt).ReadAt(bg, make([]byte, 4096), 0)
		}()
	}
	waitFor(t, "the stalled fetches", func() bool { return b.n("ReadRange") == readers })
	tr := c.trees["local://meta"]
	if n := len(tr.readAhead); n != readAheadPerServer {
		t.Fatalf("%d read-aheads in flight, want at most %d", n, readAheadPerServer)
	}
	b.mu.Lock()
	reads := append([]span(nil), b.reads...)
	b.mu.Unlock()
	long := 0
	for _, r := range reads {
		if r.end-r.off > minFetch {
			long++
		}
	}
	if long != readAheadPerServer {
		t.Fatalf("%d fetches read ahead, want %d: %v", long, readAheadPerServer, reads)
	}
	// Metadata still goes through while bulk transfers stall.
	if _, err := lookup(t, root, "dir").(ns.Dir).ReadDir(bg); err != nil {
		t.Fatal(err)
	}
	close(b.stall)
	wg.Wait()
	for _, h := range handles {
		h.Close()
	}
}

// BenchmarkColdSequentialRead reads a 64 MiB file the cache has not seen
// (with a local server: this measures the cache's own cost).
func BenchmarkColdSequentialRead(b *testing.B) {
	data := pattern(64 << 20)
	for b.Loop() {
		b.StopTimer()
		c, err := New(b.TempDir(), 1<<30, nil)
		if err != nil {
			b.Fatal(err)
		}
		lb := &localBackend{root: b.TempDir(), calls: map[string]int{}}
		os.WriteFile(lb.local("/f"), data, 0o644)
		root := c.Root("local://bench", lb, Options{})
		n, _ := root.Lookup(bg, "f")
		h, _ := n.(ns.Opener).Open(bg, ns.Caller{}, os.O_RDONLY)
		buf := make([]byte, 128<<10)
		b.StartTimer()
		for off := int64(0); ; {
			n, err := h.(ns.ReaderAt).ReadAt(bg, buf, off)
			if err != nil {
				b.Fatal(err)
			}
			if n == 0 {
				break
			}
			off += int64(n)
		}
		b.StopTimer()
		h.Close()
		c.Close()
		b.StartTimer()
	}
	b.SetBytes(int64(len(data)))
}
