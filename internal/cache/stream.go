package cache

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"

	"wirefs/internal/remote"
)

// Stores that run while the program writes. A file that the write-back
// will store whole (storeRoute: a new file, or one the server has empty
// that plain writes fill: `cp`, `dd`, a compiler's output, `cmd > file`)
// was uploaded only from its close on: at 10 ms a 64 MiB dd wrote into
// the cache in 61 ms and its close then waited 0.5 s for the upload.
// Once such a file holds streamFrom bytes, and the backend can
// (remote.StreamStorer), its store starts at once, reading the bytes as
// they are written (a stream); the write-back at close ends the stream at
// the file's length and waits for it instead of starting the store.
//
// A stream is only a head start. It is given up, and the write-back
// stores as before, as soon as its bytes might not be the file: a write
// anywhere but at its end, an append, a truncation, a rename, a removal,
// a mode that differs at close, a failed store. The bytes it has read are
// never written again while it runs, and its data stay under the store's
// temporary name until the write-back ends it (Store's promise), so a
// stream given up leaves nothing behind.

// streamFrom is the length from which a file being filled is stored as it
// is written: below it, the store at close takes a round trip or two.
const streamFrom = 8 << 20

// stream is a store running while its file is written. Its fields after
// done and err are guarded by the file's mu.
type stream struct {
	path string
	perm os.FileMode
	b    *blob // the file's data, held until the store returns
	done chan struct{}
	err  error // the store's result, once done is closed

	next    int64 // where the next write must start: the end of the writes so far
	avail   int64 // the end of the writes done (none in flight below it)
	writing int   // writes in flight between avail and next
	end     int64 // the length a write-back ended the stream at; -1: open
	// gaveUp, once set, is what every read returns: the stream was
	// given up, or its store returned.
	gaveUp error
	more   chan struct{}  // closed and replaced when avail, end or gaveUp change
	reads  sync.WaitGroup // reads of b in progress
}

// streamAheadLocked starts f's stream after a plain write, if f is to be
// stored whole and is long enough, and none ran since the last write-back
// began (streamTried).
func (f *file) streamAheadLocked() {
	// (After every plain write: the cheap checks first.)
	if f.stream != nil || f.streamTried || f.size < streamFrom || !f.dirty || f.removed || f.diverged {
		return
	}
	t := f.t
	ss, ok := t.w.(remote.StreamStorer)
	if !ok {
		return
	}
	if _, partial := f.partialLocked(); partial || t.route(f.changesLocked()) != storeRoute {
		return
	}
	f.streamTried = true
	if !t.enter() {
		return
	}
	b, err := f.acquireLocked()
	if err != nil {
		t.wg.Done()
		return
	}
	st := &stream{path: f.path, perm: f.info.Mode.Perm() | f.info.Mode&specialBits, b: b, done: make(chan struct{}),
		next: f.size, avail: f.size, end: -1, more: make(chan struct{})}
	f.stream = st
	t.c.log.Debug("cache: storing a file while it is written", "server", t.key, "path", st.path, "written", st.avail)
	go func() {
		defer t.wg.Done()
		err := ss.StoreStream(t.ctx, st.path, &streamReader{f: f, st: st}, st.perm)
		f.mu.Lock()
		st.err = err
		if f.stream == st { // failed before a write-back ended it
			f.stream = nil
		}
		st.stopLocked(errors.New("the store ended"))
		f.mu.Unlock()
		st.reads.Wait()
		f.mu.Lock()
		f.releaseLocked(st.b)
		f.mu.Unlock()
		close(st.done)
	}()
}

// giveUpStreamLocked gives up f's stream, if any, for why.
func (f *file) giveUpStreamLocked(why string) {
	st := f.stream
	if st == nil {
		return
	}
	f.stream = nil
	f.t.c.log.Debug("cache: the store begun while the file was written is given up; the write-back stores the file",
		"server", f.t.key, "path", st.path, "why", why)
	st.stopLocked(errors.New("given up: " + why))
}

// takeStream hands the write-back of snapshot s, sent through the
// store route with permissions perm, f's stream if it has every byte of
// s; one that has not is given up.
func (f *file) takeStream(s snapshot, perm os.FileMode) *stream {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.stream
	switch {
	case st == nil:
		return nil
	case st.path != s.path:
		f.giveUpStreamLocked("renamed")
		return nil
	case st.perm != perm:
		f.giveUpStreamLocked("its mode changed")
		return nil
	case st.avail < s.size:
		// (No write is in flight below the snapshot's end.)
		f.giveUpStreamLocked("it lacks bytes")
		return nil
	}
	f.stream = nil
	st.end = s.size
	st.changedLocked()
	return st
}

// finish waits for the stream's store, which ends at the length that
// takeStream set; when ctx ends first, the stream is given up.
func (st *stream) finish(ctx context.Context, f *file) error {
	select {
	case <-st.done:
		return st.err
	case <-ctx.Done():
		f.mu.Lock()
		st.stopLocked(ctx.Err())
		f.mu.Unlock()
		return ctx.Err()
	}
}

// writingLocked counts a write of [off, end) (appending: at the end,
// wherever that is) that is about to go into f's data file, and returns
// the stream that must hear when it is done (writtenLocked), if any.
func (f *file) writingLocked(off, end int64, appending bool) *stream {
	st := f.stream
	switch {
	case st == nil:
		return nil
	case appending:
		f.giveUpStreamLocked("an append")
		return nil
	case off != st.next:
		f.giveUpStreamLocked("a write elsewhere than at its end")
		return nil
	}
	st.next = end
	st.writing++
	return st
}

// writtenLocked ends a write that writingLocked counted; full: all of
// its bytes are in the data file.
func (f *file) writtenLocked(st *stream, full bool) {
	st.writing--
	if !full && f.stream == st {
		f.giveUpStreamLocked("a write failed")
	}
	if st.writing == 0 && st.gaveUp == nil {
		st.avail = st.next
		st.changedLocked()
	}
}

func (st *stream) changedLocked() {
	close(st.more)
	st.more = make(chan struct{})
}

// stopLocked makes every later read fail with why (the first reason stays).
func (st *stream) stopLocked(why error) {
	if st.gaveUp == nil {
		st.gaveUp = why
		st.changedLocked()
	}
}

// streamReader reads a stream's bytes as they are written, up to the end
// a write-back set.
type streamReader struct {
	f   *file
	st  *stream
	off int64
}

func (r *streamReader) Read(p []byte) (int, error) {
	f, st := r.f, r.st
	f.mu.Lock()
	for st.gaveUp == nil && r.off >= st.avail && (st.end < 0 || r.off < st.end) {
		more := st.more
		f.mu.Unlock()
		<-more
		f.mu.Lock()
	}
	if st.gaveUp != nil {
		f.mu.Unlock()
		return 0, st.gaveUp
	}
	limit := st.avail
	if st.end >= 0 {
		limit = min(limit, st.end)
	}
	if r.off >= limit {
		f.mu.Unlock()
		return 0, io.EOF
	}
	st.reads.Add(1)
	f.mu.Unlock()
	defer st.reads.Done()
	n, err := st.b.f.ReadAt(p[:min(int64(len(p)), limit-r.off)], r.off)
	r.off += int64(n)
	if err != nil && !(err == io.EOF && n > 0) {
		return n, diskError("reading a data file", err)
	}
	return n, nil
}
