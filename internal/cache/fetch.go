package cache

import (
	"context"
	"errors"
	"io"
	"syscall"
	"time"

	"wirefs/internal/ns"
	"wirefs/internal/remote"
)

// Fetching: the ranges readers miss come from the server into the sparse
// data file, one ReadRange per missing range shared by every reader
// waiting for it, extended by read-ahead when a read-ahead slot is free.

// fetch is one ReadRange in flight into the data file.
type fetch struct {
	off, end int64
	waiters  int // readers waiting for it; when the last one gives up, it is cancelled
	cancel   context.CancelFunc
	finished bool
	err      error
}

// errDropped ends a fetch whose data were dropped meanwhile.
var errDropped = errors.New("cached data dropped during the fetch")

// length returns f's size, asking the server when it is not known (e.g.
// an HTML listing gave none).
func (f *file) length(ctx context.Context) (int64, error) {
	f.mu.Lock()
	n := f.lengthLocked()
	f.mu.Unlock()
	if n >= 0 {
		return n, nil
	}
	if err := f.validate(ctx); err != nil {
		return 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if n = f.lengthLocked(); n < 0 {
		return 0, ns.Errorf(syscall.EIO, "%s on %s: the server does not tell its size", f.path, f.t.key)
	}
	return n, nil
}

// need returns once [off, end) is in the data file, fetching what is
// missing; h (nil for whole-file fetches) paces the read-ahead.
func (f *file) need(ctx context.Context, off, end int64, h *handle) error {
	return f.await(ctx, off, end, h, false)
}

// await is need for a program (foreground: counted in the server's gate,
// so that prefetch makes room) or for prefetch (background: its fetches
// tell the backend so, remote.Background).
func (f *file) await(ctx context.Context, off, end int64, h *handle, background bool) error {
	if !background {
		defer f.t.gate.foreground()()
	}
	var joined *fetch
	defer func() {
		if joined != nil {
			f.leave(joined, false)
		}
	}()
	for {
		f.mu.Lock()
		if joined != nil && joined.finished && joined.err != nil {
			err := joined.err
			f.mu.Unlock()
			return err
		}
		if n := f.lengthLocked(); n >= 0 {
			// Cut meanwhile (a truncation): nothing is left to fetch
			// beyond the new end, and asking for it would never end.
			end = min(end, n)
		}
		g, missing := f.present.gap(off, end)
		if !missing {
			f.mu.Unlock()
			return nil
		}
		fe := f.fetchAt(g.off)
		if fe == nil {
			var err error
			if fe, err = f.startFetchLocked(g, h, background); err != nil {
				f.mu.Unlock()
				return err
			}
		}
		if fe != joined {
			if joined != nil {
				joined.waiters--
			}
			fe.waiters++
			joined = fe
		}
		progress := f.progress
		f.mu.Unlock()
		select {
		case <-progress:
		case <-ctx.Done():
			f.leave(joined, true)
			joined = nil
			return ctx.Err()
		}
	}
}

// leave stops waiting for fe; the last reader to give up cancels it.
func (f *file) leave(fe *fetch, abandon bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fe.waiters--
	if abandon && fe.waiters == 0 && !fe.finished {
		fe.cancel()
	}
}

func (f *file) fetchAt(off int64) *fetch {
	for _, fe := range f.fetches {
		if fe.off <= off && off < fe.end {
			return fe
		}
	}
	return nil
}

// startFetchLocked starts fetching the missing g, extended by read-ahead
// when h asks for it and the server has a read-ahead slot free: demand
// fetches never wait for a slot, read-ahead never takes more than
// readAheadPerServer, so bulk transfers cannot crowd out Stat and List.
func (f *file) startFetchLocked(g span, h *handle, background bool) (*fetch, error) {
	t := f.t
	end := g.end
	slot := false
	if h != nil {
		if ra := h.readAhead(g.off); ra > 0 {
			select {
			case t.readAhead <- struct{}{}:
				slot = true
				end += ra
			default:
			}
		}
	}
	end = max(end, g.off+minFetch)
	end = min(end, f.lengthLocked(), f.present.nextStart(g.off))
	for _, fe := range f.fetches {
		if fe.off > g.off {
			end = min(end, fe.off)
		}
	}
	if slot && end <= g.end {
		<-t.readAhead // nothing left to read ahead
		slot = false
	}
	if h != nil {
		h.fetched(end)
	}
	b, err := f.acquireLocked()
	if err != nil {
		if slot {
			<-t.readAhead
		}
		return nil, err
	}
	ctx, cancel := context.WithCancel(t.ctx)
	if background {
		ctx = remote.Background(ctx)
	}
	fe := &fetch{off: g.off, end: end, cancel: cancel}
	gen, p := f.dataGen, f.path
	if !t.spawn(func() { f.run(ctx, fe, b, gen, p, slot) }) {
		cancel()
		f.releaseLocked(b)
		if slot {
			<-t.readAhead
		}
		return nil, ns.Errorf(syscall.EIO, "%s is closed", t.key)
	}
	f.fetches = append(f.fetches, fe)
	return fe, nil
}

func (f *file) run(ctx context.Context, fe *fetch, b *blob, gen uint64, p string, slot bool) {
	t := f.t
	err := f.copyIn(ctx, fe, b, gen, p)
	fe.cancel()
	if slot {
		<-t.readAhead
	}
	if errors.Is(err, errDropped) {
		err = nil // readers find their bytes missing and fetch the new version
	}
	f.mu.Lock()
	for i, x := range f.fetches {
		if x == fe {
			f.fetches = append(f.fetches[:i], f.fetches[i+1:]...)
			break
		}
	}
	fe.finished, fe.err = true, err
	f.releaseLocked(b)
	if gen == f.dataGen && !f.dirty {
		if serr := f.saveRecordLocked(); serr != nil {
			t.c.log.Warn("cache: cannot save a record", "err", serr)
		}
	}
	f.settleLocked()
	f.broadcastLocked()
	f.mu.Unlock()
	if err != nil && ctx.Err() == nil {
		t.c.log.Debug("cache: fetch failed", "server", t.key, "path", p, "off", fe.off, "err", err)
	}
	t.c.evict()
}

// copyIn copies [fe.off, fe.end) of p from the server into the data file,
// recording each chunk as it arrives so that readers go on at once.
func (f *file) copyIn(ctx context.Context, fe *fetch, b *blob, gen uint64, p string) error {
	t := f.t
	rc, err := t.b.ReadRange(ctx, p, fe.off, fe.end-fe.off)
	if err != nil {
		return err
	}
	defer rc.Close()
	buf := make([]byte, min(256<<10, fe.end-fe.off))
	for pos := fe.off; pos < fe.end; {
		n, rerr := io.ReadFull(rc, buf[:min(int64(len(buf)), fe.end-pos)])
		if n > 0 {
			if err := f.put(b, gen, buf[:n], pos); err != nil {
				return err
			}
			pos += int64(n)
		}
		switch {
		case rerr == io.EOF || rerr == io.ErrUnexpectedEOF:
			f.mu.Lock()
			f.checked = time.Time{} // revalidate at the next open
			f.mu.Unlock()
			return ns.Errorf(syscall.EIO, "%s on %s changed while being read: it ended at byte %d, not %d", p, t.key, pos, fe.end)
		case rerr != nil:
			return rerr
		}
	}
	return nil
}

// put writes fetched bytes at off unless the data were dropped meanwhile.
func (f *file) put(b *blob, gen uint64, data []byte, off int64) error {
	f.io.RLock()
	defer f.io.RUnlock()
	f.mu.Lock()
	stale := gen != f.dataGen
	f.mu.Unlock()
	if stale {
		return errDropped
	}
	if _, err := b.f.WriteAt(data, off); err != nil {
		return diskError("writing fetched data", err)
	}
	f.mu.Lock()
	f.present = f.present.add(off, off+int64(len(data)))
	f.broadcastLocked()
	f.mu.Unlock()
	return nil
}
