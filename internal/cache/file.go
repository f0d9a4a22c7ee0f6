package cache

import (
	"container/list"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"wirefs/internal/ns"
	"wirefs/internal/remote"
)

// file is a remote file: its node, its cached attributes and its data in
// the cache. One file exists per remote path and session, shared by every
// handle.
type file struct {
	c    *Cache
	t    *tree  // nil while only found on disk by New
	dir  string // session directory
	id   string // on-disk name (ID.data, ID.meta); "" until something is stored
	meta bool   // ID.meta may exist (the record of a dirty file, or one without xattrs)

	// io is held shared while bytes move between the data file and the
	// network or a reader, and exclusively to drop, truncate or evict the
	// data, so that nobody reads bytes a drop just declared absent.
	io sync.RWMutex
	mu sync.Mutex

	path       string      // written with t.mu and mu held
	info       remote.Info // last known attributes; Size -1: unknown
	checked    time.Time   // when info was validated with the server; zero: never
	epoch      int64       // the cache's epoch at that time
	validating *call       // Stat in flight

	version  remote.Info // the server's version the clean data belong to
	present  ranges      // bytes present in the data file
	data     *blob       // the open data file, while someone uses it
	dataGen  uint64      // bumped when the data are dropped or truncated: in-flight fetches are void
	openGen  uint64      // dataGen+writeGen at the last open (PageCacher)
	fetches  []*fetch
	progress chan struct{} // closed and replaced when data arrive or a fetch ends
	opens    int           // open handles

	dirty bool      // the server does not have our changes yet
	size  int64     // length while dirty (the data file's)
	mtime time.Time // last local change while dirty
	// wantTimes are the access and modification times set while dirty,
	// for the server once the data is stored (not kept across a crash).
	wantTimes *[2]time.Time
	writeGen  uint64 // bumped by every local change
	// base, low, changed and retried say what changed since the
	// server's version, so that a write-back sends only that
	// (writeback.go). base is that version's length, -1 when the
	// whole file must be sent.
	base     int64
	low      int64
	changed  ranges
	retried  bool
	appendMu sync.Mutex    // one O_APPEND write at a time: each takes the end
	storing  chan struct{} // a write-back in flight; closed when it ends
	timer    *time.Timer   // the next write-back
	retry    time.Duration // the last retry delay
	// failure is why the last write-back failed (nil after a success);
	// refused says the server refused it for good, so that it is not
	// retried until the file is written or synced again.
	failure error
	refused bool
	removed bool

	elem      *list.Element // in the cache's LRU
	accounted int64         // clean bytes counted in the cache's total
}

// blob is an open data file shared by its users; a dropped one lives on,
// unlinked, until its last user releases it.
type blob struct {
	f    *os.File
	refs int
}

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

func newID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (f *file) dataPath() string { return filepath.Join(f.dir, f.id+".data") }
func (f *file) metaPath() string { return filepath.Join(f.dir, f.id+".meta") }

func (f *file) removeDisk() {
	os.Remove(f.dataPath())
	os.Remove(f.metaPath())
	f.meta = false
}

func (f *file) remotePath() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.path
}

func (f *file) isDirty() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dirty
}

func (f *file) lengthLocked() int64 {
	if f.dirty {
		return f.size
	}
	return f.info.Size
}

func (f *file) freshLocked() bool {
	return f.t.fresh(f.checked, f.epoch, f.t.trust(f.path, f.info, f.checked))
}

func (f *file) completeLocked() bool {
	size := f.lengthLocked()
	_, missing := f.present.gap(0, size)
	return size >= 0 && !missing
}

func (f *file) broadcastLocked() {
	close(f.progress)
	f.progress = make(chan struct{})
}

func (f *file) acquireLocked() (*blob, error) {
	if f.data == nil {
		if f.id == "" && f.t != nil && f.dir == f.t.dir {
			f.id = f.t.takeSpare()
		}
		if f.id == "" {
			f.id = newID()
		}
		fd, err := os.OpenFile(f.dataPath(), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, diskError("opening a data file", err)
		}
		f.data = &blob{f: fd}
	}
	f.data.refs++
	return f.data, nil
}

func (f *file) releaseLocked(b *blob) {
	b.refs--
	if b.refs == 0 {
		b.f.Close()
		if f.data == b {
			f.data = nil
		}
	}
}

// dropDataLocked forgets the cached data (io held exclusively).
func (f *file) dropDataLocked() {
	f.dataGen++
	f.present = nil
	f.data = nil // its users keep the unlinked file until they release it
	if f.id != "" {
		f.removeDisk()
	}
	f.settleLocked()
}

// saveRecordLocked writes f's record; durably when f is dirty and its
// changes stay in the cache after close (T_write > 0), since the record
// is then all that says the data must go to the server. With T_write = 0
// they go at close, and a program's write before that close is as lost
// to a power cut as on a local file system without fsync: two fsyncs at
// the first write of every open/append/close cycle bought nothing.
func (f *file) saveRecordLocked() error {
	if f.id == "" {
		return nil
	}
	r := record{Path: f.path, Mode: uint32(f.info.Mode), Dirty: f.dirty,
		Size: f.version.Size, Mtime: f.version.Mtime, ETag: f.version.ETag,
		Ranges: encodeRanges(f.present), Boot: f.c.boot}
	if f.dirty {
		r.Size, r.Mtime = f.size, f.mtime
	}
	if !f.dirty && !f.c.noXattr.Load() {
		err := setXattr(f.dataPath(), r.encode())
		switch {
		case err == nil:
			// A record of the dirty past would win over the new one.
			if f.meta {
				if err := os.Remove(f.metaPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
					return diskError("removing a record", err)
				}
				f.meta = false
			}
			return nil
		case errors.Is(err, os.ErrNotExist):
			return nil // no data, nothing to describe
		case errors.Is(err, syscall.ENOTSUP): // from now on, .meta files
			f.c.noXattr.Store(true)
		case errors.Is(err, syscall.E2BIG), errors.Is(err, syscall.ENOSPC):
			// Too long for an attribute (many ranges): a .meta file.
		default:
			return diskError("writing a record", err)
		}
	}
	if err := writeAtomic(f.metaPath(), r.encode(), f.dirty && f.keptAfterClose()); err != nil {
		return diskError("writing a record", err)
	}
	f.meta = true
	return nil
}

// sameVersion reports whether a and b describe the same contents, by
// every validator both know. Nothing in common means we cannot tell, and
// then the data must be fetched again.
func sameVersion(a, b remote.Info) bool {
	comparable := false
	if a.ETag != "" && b.ETag != "" {
		if a.ETag != b.ETag {
			return false
		}
		comparable = true
	}
	if a.Size >= 0 && b.Size >= 0 {
		if a.Size != b.Size {
			return false
		}
		comparable = true
	}
	if !a.Mtime.IsZero() && !b.Mtime.IsZero() {
		if !sameTime(a.Mtime, b.Mtime) {
			return false
		}
		comparable = true
	}
	return comparable
}

// sameTime compares mtimes at the coarser precision of the two: listings
// often give minutes (FTP LIST, HTML indexes) or seconds where Stat gives
// more, and that is no change.
func sameTime(a, b time.Time) bool {
	for _, p := range []time.Duration{time.Minute, time.Second} {
		if a.Truncate(p).Equal(a) || b.Truncate(p).Equal(b) {
			return a.Truncate(p).Equal(b.Truncate(p))
		}
	}
	return a.Equal(b)
}

// merge fills what next does not say from prev, a report of the same
// version.
func merge(prev, next remote.Info) remote.Info {
	if next.Size < 0 {
		next.Size = prev.Size
	}
	if next.Mtime.IsZero() {
		next.Mtime = prev.Mtime
	}
	if next.ETag == "" {
		next.ETag = prev.ETag
	}
	return next
}

// observe records attributes the server reported at at in epoch; cached
// data of another version are dropped. Local changes win until written
// back.
func (f *file) observe(info remote.Info, at time.Time, epoch int64) {
	f.io.Lock()
	defer f.io.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dirty || f.removed || (epoch == f.epoch && at.Before(f.checked)) {
		return
	}
	info.Name = path.Base(f.path)
	if sameVersion(f.version, info) {
		f.version = merge(f.version, info)
		info = merge(f.info, info)
	} else {
		if len(f.present) > 0 || len(f.fetches) > 0 {
			f.t.c.log.Debug("cache: file changed on the server", "server", f.t.key, "path", f.path)
		}
		f.dropDataLocked()
		f.version = info
	}
	f.info, f.checked, f.epoch = info, at, epoch
}

// validate asks the server for f's attributes (concurrent callers share
// one Stat).
func (f *file) validate(ctx context.Context) error {
	t := f.t
	f.mu.Lock()
	if f.dirty {
		f.mu.Unlock()
		return nil
	}
	c := f.validating
	if c == nil {
		c = &call{done: make(chan struct{})}
		f.validating = c
		p := f.path
		if !t.spawn(func() { f.stat(c, p) }) {
			f.validating = nil
			f.mu.Unlock()
			return ns.Errorf(syscall.EIO, "%s is closed", t.key)
		}
	}
	f.mu.Unlock()
	return c.wait(ctx)
}

func (f *file) stat(c *call, p string) {
	t := f.t
	epoch, at := t.c.epoch.Load(), time.Now()
	info, err := t.b.Stat(t.ctx, p)
	switch {
	case err == nil && info.Mode.IsDir():
		err = ns.Errorf(syscall.EISDIR, "%s on %s is now a directory", p, t.key)
	case err == nil:
		f.observe(info, at, epoch)
		t.noteEntry(p, &info)
	case ns.Errno(err) == syscall.ENOENT:
		t.vanished(p, at)
	}
	f.mu.Lock()
	f.validating = nil
	c.err = err
	close(c.done)
	f.mu.Unlock()
}

// localAttr returns f's attributes and whether they need no round trip.
func (f *file) localAttr() (ns.Attr, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.removed {
		a := attrOf(f.info)
		a.Removed = true
		if f.dirty { // still open (discard)
			a.Size, a.Mtime = f.size, f.mtime
		}
		return a, true // gone from the server: nothing to ask
	}
	if f.dirty {
		a := attrOf(f.info)
		a.Size, a.Mtime = f.size, f.mtime
		return a, true
	}
	return attrOf(f.info), f.info.Size >= 0 && f.freshLocked()
}

// Attr returns the attributes of the last validation, validating first
// when they are older than the read bound.
func (f *file) Attr(ctx context.Context) (ns.Attr, error) {
	if a, ok := f.localAttr(); ok {
		return a, nil
	}
	if err := f.validate(ctx); err != nil {
		return ns.Attr{}, err
	}
	a, _ := f.localAttr()
	return a, nil
}

// CacheTTL is the remaining trust: doors never cache longer than T_read.
func (f *file) CacheTTL() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dirty {
		tread, _ := f.t.bounds(f.path)
		return tread
	}
	return f.t.remaining(f.checked, f.epoch, f.t.trust(f.path, f.info, f.checked))
}

// Open validates f unless its attributes are trusted (lazy open: no round
// trip). Opening for writing needs a writable server; O_TRUNC empties the
// file at once.
func (f *file) Open(ctx context.Context, c ns.Caller, flags int) (ns.Handle, error) {
	t := f.t
	write := flags&syscall.O_ACCMODE != syscall.O_RDONLY
	if write && t.w == nil {
		return nil, t.readOnly("open " + f.remotePath() + " for writing")
	}
	if write && flags&syscall.O_TRUNC != 0 {
		if err := f.truncate(ctx, 0); err != nil {
			return nil, err
		}
		return f.newHandle(flags), nil
	}
	f.mu.Lock()
	trusted := f.dirty || (f.info.Size >= 0 && f.freshLocked())
	f.mu.Unlock()
	if !trusted {
		if err := f.validate(ctx); err != nil {
			return nil, err
		}
	}
	return f.newHandle(flags), nil
}

// newHandle opens a handle with open(2) flags: for writing, daemon-served;
// for reading a complete clean file, the data file itself (a kernel
// object).
func (f *file) newHandle(flags int) ns.Handle {
	write := flags&syscall.O_ACCMODE != syscall.O_RDONLY
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opens++
	gen := f.dataGen + f.writeGen
	h := &handle{f: f, keep: gen == f.openGen}
	f.openGen = gen
	f.settleLocked() // used: to the front of the LRU
	if write {
		return &writeHandle{h, flags&syscall.O_APPEND != 0}
	}
	if !f.dirty && f.completeLocked() {
		if f.id == "" {
			f.id = newID() // an empty file
		}
		kf, err := os.OpenFile(f.dataPath(), os.O_RDONLY|os.O_CREATE, 0o600)
		if err == nil {
			return &kernelHandle{h, kf}
		}
		f.t.c.log.Warn("cache: cannot open a cached file; serving it through the daemon", "path", f.path, "err", err)
	}
	return h
}

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
		g, missing := f.present.gap(off, end)
		if !missing {
			f.mu.Unlock()
			return nil
		}
		fe := f.fetchAt(g.off)
		if fe == nil {
			var err error
			if fe, err = f.startFetchLocked(g, h); err != nil {
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
func (f *file) startFetchLocked(g span, h *handle) (*fetch, error) {
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

// makeDirty marks f dirty, durably: from then on the data file is the
// file, and it survives a crash until written back. The data file must
// hold the file first: all of it (to < 0), or what a truncation to length
// to keeps.
func (f *file) makeDirty(ctx context.Context, to int64) error {
	for {
		f.mu.Lock()
		dirty, trusted := f.dirty, f.info.Size >= 0 && f.freshLocked()
		f.mu.Unlock()
		if dirty {
			return nil
		}
		keep := int64(0)
		if to != 0 {
			if !trusted {
				if err := f.validate(ctx); err != nil {
					return err
				}
			}
			size, err := f.length(ctx)
			if err != nil {
				return err
			}
			keep = size
			if to > 0 {
				keep = min(size, to)
			}
			if err := f.need(ctx, 0, keep, nil); err != nil {
				return err
			}
		}
		f.io.Lock()
		f.mu.Lock()
		done, err := f.dirty, error(nil)
		if _, missing := f.present.gap(0, keep); !done && !missing && (to >= 0 || f.lengthLocked() == keep) {
			length := keep
			if to >= 0 {
				length = to
			}
			err, done = f.markDirtyLocked(length), true
		}
		f.mu.Unlock()
		f.io.Unlock()
		if done {
			return err
		}
	}
}

// markDirtyLocked (io held exclusively) makes the data file, of length
// size, the file's contents.
func (f *file) markDirtyLocked(size int64) error {
	b, err := f.acquireLocked()
	if err != nil {
		return err
	}
	defer f.releaseLocked(b)
	if err := b.f.Truncate(size); err != nil {
		return diskError("sizing a data file", err)
	}
	f.dataGen++ // fetches still running belong to the old contents
	f.present = ranges{}.add(0, size)
	f.dirty, f.size, f.mtime = true, size, f.info.Mtime
	// The changes apply to the server's version, whose length is
	// known once it was stored or validated.
	f.base, f.low, f.changed, f.retried = f.version.Size, size, nil, false
	if f.version.Size >= 0 && size < f.version.Size {
		f.low = size
	}
	if err := f.saveRecordLocked(); err != nil {
		f.dirty = false
		return err
	}
	f.t.setDirty(f, true)
	f.settleLocked()
	return nil
}

// truncate sets f's length to size, keeping what comes before.
func (f *file) truncate(ctx context.Context, size int64) error {
	for {
		if err := f.makeDirty(ctx, size); err != nil {
			return err
		}
		f.io.Lock()
		f.mu.Lock()
		if !f.dirty { // written back meanwhile: again
			f.mu.Unlock()
			f.io.Unlock()
			continue
		}
		b, err := f.acquireLocked()
		if err == nil {
			if terr := b.f.Truncate(size); terr != nil {
				err = diskError("truncating a data file", terr)
			}
			f.releaseLocked(b)
		}
		if err == nil {
			f.dataGen++
			f.writeGen++
			f.present = ranges{}.add(0, size)
			f.noteChangeLocked(min(size, f.size), -1)
			f.size, f.mtime = size, time.Now()
		}
		f.mu.Unlock()
		f.io.Unlock()
		return err
	}
}

// keptAfterClose reports whether f's changes may outlive its close in the
// cache alone (T_write > 0).
func (f *file) keptAfterClose() bool {
	if f.t == nil {
		return true
	}
	_, twrite := f.t.bounds(f.path)
	return twrite > 0
}

// create makes f a new, empty file with permissions perm that exists in
// the cache (dirty) until written back.
//
// created is false, and nothing changes, when f exists already: another
// create made it, or a lookup found it, since the caller's lookup.
func (f *file) create(perm os.FileMode) (info remote.Info, created bool, err error) {
	f.io.Lock()
	defer f.io.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.info.Size >= 0 && !f.removed {
		return f.info, false, nil
	}
	f.dropDataLocked()
	now := time.Now()
	f.removed = false
	f.info = remote.Info{Name: path.Base(f.path), Mode: perm, Size: 0, Mtime: now}
	f.version = remote.Info{Size: -1}
	f.checked, f.epoch = now, f.t.c.epoch.Load()
	if err := f.markDirtyLocked(0); err != nil {
		return remote.Info{}, false, err
	}
	f.mtime = now
	f.writeGen++
	return f.info, true, nil
}

// newerThan reports whether f knows more than an answer about it from the
// server asked at at: it is open, has local changes or a write-back
// running, or was created or validated since.
func (f *file) newerThan(at time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.opens > 0 || f.dirty || f.storing != nil || f.checked.After(at)
}

// writeAt writes p at off, or at the end of the file when appending
// (O_APPEND: the end as the cache knows it, which the kernel's idea of the
// length may lag behind when another client appended).
func (f *file) writeAt(ctx context.Context, p []byte, off int64, appending bool) (int, error) {
	if appending {
		f.appendMu.Lock()
		defer f.appendMu.Unlock()
	}
	for {
		if err := f.makeDirty(ctx, -1); err != nil {
			return 0, err
		}
		// io is held shared until the bytes and the new length are
		// recorded: a write-back takes it exclusively to take its
		// snapshot and to settle, so it never sees a write half done
		// (a store of the old length marked as the current version
		// lost the appended bytes, and the next write filled them
		// with zeros).
		f.io.RLock()
		f.mu.Lock()
		if !f.dirty { // written back meanwhile
			f.mu.Unlock()
			f.io.RUnlock()
			continue
		}
		if appending {
			off = f.size
		}
		b, err := f.acquireLocked()
		f.mu.Unlock()
		n := 0
		if err == nil {
			n, err = b.f.WriteAt(p, off)
			if err != nil {
				err = diskError("writing", err)
			}
		}
		f.mu.Lock()
		if b != nil {
			f.releaseLocked(b)
		}
		f.writeGen++
		f.mtime = time.Now()
		if n > 0 {
			// A write past the end leaves a hole of zeros, and the
			// local copy of a dirty file is the whole truth: the hole
			// is present too (an assembler seeks ahead and writes
			// sections out of order; reading the hole must not ask
			// the server, which does not have the file yet).
			f.present = f.present.add(min(off, f.size), off+int64(n))
			f.noteChangeLocked(min(off, f.size), off+int64(n))
			f.size = max(f.size, off+int64(n))
		}
		f.mu.Unlock()
		f.io.RUnlock()
		return n, err
	}
}

// discard forgets f and its data for good (it was removed).
func (f *file) discard() {
	f.stopTimer()
	f.io.Lock()
	f.mu.Lock()
	if f.opens > 0 {
		// Unlinked while open: its handles read and write the local
		// copy until the last one closes (handle.Close), as with a
		// local file, and nothing is written back. The record goes,
		// so a restart does not bring it back.
		f.size = f.lengthLocked()
		f.removed, f.dirty = true, true
		os.Remove(f.metaPath())
	} else {
		f.removed, f.dirty = true, false
		f.dropDataLocked()
	}
	f.mu.Unlock()
	f.io.Unlock()
	if f.t != nil {
		f.t.setDirty(f, false)
	}
}

// keepForHandles fetches what f's open handles may still read before the
// server's copy goes (remove, rename over): the local copy must be whole
// then, for they keep reading it (see discard).
func (f *file) keepForHandles(ctx context.Context) {
	f.mu.Lock()
	open := f.opens > 0 && !f.dirty
	f.mu.Unlock()
	if !open {
		return // a dirty copy is whole already
	}
	size, err := f.length(ctx)
	if err == nil {
		err = f.need(ctx, 0, size, nil)
	}
	if err != nil {
		f.t.c.log.Warn("cache: a removed file's open handles will miss what could not be fetched",
			"server", f.t.key, "path", f.path, "err", err)
	}
}

// evict drops f's clean data to make room; false when f is in use.
func (f *file) evict() bool {
	f.io.Lock()
	defer f.io.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dirty || f.opens > 0 || f.data != nil || len(f.fetches) > 0 || f.storing != nil || f.accounted == 0 {
		return false
	}
	f.present = nil
	f.removeDisk()
	f.settleLocked()
	return true
}
