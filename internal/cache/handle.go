package cache

import (
	"context"
	"io"
	"math/bits"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"wirefs/internal/ns"
)

// handle is an open file served by the daemon: reads come from the data
// file, fetching misses.
type handle struct {
	f    *file
	keep bool // the kernel may keep its pages: nothing changed since the last open

	mu     sync.Mutex
	next   int64 // where this handle's last fetch ended: a miss there is sequential
	window int64 // its read-ahead
	blob   *blob // the data file, kept open between reads (f.mu)
}

// kernelHandle is a complete, clean file: the data file itself, which the
// doors give to the kernel (FUSE passthrough, fd injection).
type kernelHandle struct {
	*handle
	kf *os.File
}

// writeHandle is a handle opened for writing; appending with O_APPEND.
type writeHandle struct {
	*handle
	appending bool
	// unflushed: written through since its last Flush. Only then may
	// Close find changes of its own that nobody sends; a file dirty
	// with another handle's writes is that handle's to flush (several
	// appenders to one file close while the others' bytes wait).
	unflushed atomic.Bool
}

var (
	_ ns.ReaderAt     = (*handle)(nil)
	_ ns.PageCacher   = (*handle)(nil)
	_ ns.Syncer       = (*handle)(nil)
	_ ns.KernelObject = (*kernelHandle)(nil)
	_ ns.Unwritable   = (*kernelHandle)(nil)
	_ ns.WriterAt     = (*writeHandle)(nil)
	_ ns.Flusher      = (*writeHandle)(nil)
)

func (h *handle) KeepPageCache() bool { return h.keep }

func (k *kernelHandle) KernelFile() (*os.File, error) { return k.kf, nil }

// Unwritable: the server cannot be written, so no open of the file will
// write it.
func (k *kernelHandle) Unwritable() bool { return k.f.t.w == nil }

// readAhead returns how far a miss at off should read ahead: the window
// doubles while misses are sequential.
func (h *handle) readAhead(off int64) int64 {
	base := h.f.t.o.ReadAhead
	if base == 0 {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if off == h.next && h.window > 0 {
		h.window = min(2*h.window, max(base, maxReadAhead))
	} else {
		h.window = base
	}
	return h.window
}

func (h *handle) fetched(end int64) {
	h.mu.Lock()
	h.next = end
	h.mu.Unlock()
}

// ReadAt reads from the cache, fetching what is missing. A short count
// (without error) means the end of the file.
func (h *handle) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	f := h.f
	for {
		size, err := f.length(ctx)
		if err != nil {
			return 0, err
		}
		if off >= size || len(p) == 0 {
			return 0, nil
		}
		end := min(off+int64(len(p)), size)
		if n, ok, err := h.readPresent(p[:end-off], off); ok || err != nil {
			if err == nil {
				h.prefetch(end)
			}
			return n, err
		}
		f.t.siblingsAhead(f)
		if err := f.need(ctx, off, end, h); err != nil {
			return 0, err
		}
	}
}

// prefetch keeps a sequential reader's pipe full: the next window is
// fetched before the reader gets there (only when a read-ahead slot is
// free), and the more sequential misses made its window grow, the more
// windows are in flight at once (at 50 ms one request at a time cannot
// fill the link): one while the window is the base read-ahead, started
// once the reader is within half a window of where it ends, up to
// readAheadDepth once it has doubled that many times less one. A reader
// that has not read sequentially gets no more than the one window.
func (h *handle) prefetch(pos int64) {
	f := h.f
	t := f.t
	for len(t.readAhead) < cap(t.readAhead) {
		h.mu.Lock()
		next, window := h.next, h.window
		h.mu.Unlock()
		if window == 0 {
			return
		}
		depth := min(readAheadDepth, bits.Len64(uint64(window/max(t.o.ReadAhead, 1))))
		if depth < 1 || next-pos > int64(depth-1)*window+window/2 || pos < next-int64(depth)*window {
			return
		}
		f.mu.Lock()
		ahead := 0
		for _, fe := range f.fetches {
			if fe.end > pos {
				ahead++
			}
		}
		g, missing := f.present.gap(next, f.lengthLocked())
		if ahead >= depth || !missing || g.off != next || f.fetchAt(next) != nil {
			f.mu.Unlock()
			return
		}
		_, err := f.startFetchLocked(span{next, next}, h, false) // a failure shows at the reader's next miss
		f.mu.Unlock()
		if err != nil {
			return
		}
		h.mu.Lock()
		moved := h.next != next
		h.mu.Unlock()
		if !moved {
			return // no slot was free after all
		}
	}
}

// readPresent reads p at off if all of it is in the data file (ok).
func (h *handle) readPresent(p []byte, off int64) (n int, ok bool, err error) {
	f := h.f
	f.io.RLock()
	defer f.io.RUnlock()
	f.mu.Lock()
	if _, missing := f.present.gap(off, off+int64(len(p))); missing {
		f.mu.Unlock()
		return 0, false, nil
	}
	b, err := h.holdDataLocked()
	f.mu.Unlock()
	if err != nil {
		return 0, true, err
	}
	n, err = b.f.ReadAt(p, off)
	if err == io.EOF && n < len(p) {
		return n, true, ns.Errorf(syscall.EIO, "cache: the data file of %s is shorter than its record", f.remotePath())
	}
	if err != nil {
		return n, true, diskError("reading", err)
	}
	return n, true, nil
}

// Sync is fsync: it returns when the server has the file.
func (h *handle) Sync(ctx context.Context) error {
	if h.f.t.w == nil {
		return nil
	}
	return h.f.writeBack(ctx)
}

func (h *handle) Close() error {
	f := h.f
	f.io.Lock()
	defer f.io.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opens--
	if h.blob != nil {
		f.releaseLocked(h.blob)
		h.blob = nil
	}
	if f.opens == 0 {
		f.dropAheadLocked() // opened for appends that did not come
	}
	if f.opens == 0 && f.removed && f.dirty {
		// The last handle of a file unlinked while open (discard).
		f.dirty = false
		f.dropDataLocked()
	}
	return nil
}

func (k *kernelHandle) Close() error {
	k.handle.Close()
	return k.kf.Close()
}

func (w *writeHandle) WriteAt(ctx context.Context, p []byte, off int64) (int, error) {
	w.holdData()
	w.unflushed.Store(true)
	return w.f.writeAt(ctx, p, off, w.appending)
}

// holdData keeps the data file open while the handle is: the writes, the
// making dirty and the write-back at close then share one open of it, not
// one each.
func (h *handle) holdData() {
	h.f.mu.Lock()
	h.holdDataLocked() // a failure shows in the write
	h.f.mu.Unlock()
}

// holdDataLocked returns the data file the handle holds, which is the
// file's current one.
func (h *handle) holdDataLocked() (*blob, error) {
	f := h.f
	if h.blob != nil && h.blob == f.data {
		return h.blob, nil
	}
	if h.blob != nil {
		f.releaseLocked(h.blob)
		h.blob = nil
	}
	var err error
	h.blob, err = f.acquireLocked()
	return h.blob, err
}

// Flush runs at every close(2): with T_write = 0 it returns once the
// server has the file (its errors are close's); otherwise it makes the
// change durable locally and schedules the write-back T_write later.
func (w *writeHandle) Flush(ctx context.Context) error {
	f := w.f
	w.unflushed.Store(false)
	if !f.isDirty() {
		return nil
	}
	_, twrite := f.t.bounds(f.path)
	if twrite == 0 {
		return f.writeBack(ctx)
	}
	f.mu.Lock()
	b, err := f.acquireLocked()
	f.mu.Unlock()
	if err == nil {
		if serr := b.f.Sync(); serr != nil {
			err = diskError("syncing", serr)
		}
		f.mu.Lock()
		f.releaseLocked(b)
		f.mu.Unlock()
	}
	f.schedule(twrite)
	return err
}

// Close makes sure a change is not left behind when the door did not
// flush.
func (w *writeHandle) Close() error {
	f := w.f
	w.handle.Close()
	if !w.unflushed.Load() {
		return nil
	}
	f.mu.Lock()
	pending := f.dirty && f.timer == nil && f.storing == nil
	if pending {
		f.keepDirtyLocked()
	}
	f.mu.Unlock()
	if pending {
		_, twrite := f.t.bounds(f.path)
		f.schedule(twrite)
	}
	return nil
}
