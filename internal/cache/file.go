package cache

import (
	"container/list"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"wirefs/internal/remote"
)

// A remote file in the cache: its state, its data file and record on
// disk, removal and eviction. The rest of a file's life has a file each:
// validate.go (attributes within T_read), open.go, fetch.go (reading what
// is missing), dirty.go (local changes), writeback.go (sending them) and
// attrs.go (chmod, chown, utimes, links).

// file is a remote file: its node, its cached attributes and its data in
// the cache. One file exists per remote path and session, shared by every
// handle.
type file struct {
	c    *Cache
	t    *tree  // nil while only found on disk by New
	dir  string // session directory
	id   string // on-disk name (ID.data, ID.meta); "" until something is stored
	meta bool   // ID.meta may exist (the record of a dirty file, or one without xattrs)
	// unrecorded: no record describes the data file: f is dirty and its
	// changes go at close (recordDirtyLocked), or f is clean again and
	// its record is written later (laterecord.go).
	unrecorded bool

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
	storedGen uint64 // the writeGen of the last changes a write-back stored
	// base, low, changed and retried say what changed since the
	// server's version, so that a write-back sends only that
	// (writeback.go). base is that version's length, -1 when the
	// whole file must be sent.
	base    int64
	low     int64
	changed ranges
	retried bool
	// diverged: the server's file is not our copy plus the changes
	// (another writer appended, or it was made anew from our appends):
	// once clean, the copy is dropped and the server asked again.
	diverged bool
	// appendsOnly: f is new here (base -1) and only O_APPEND writes
	// changed it, so its write-back appends to the server's file of its
	// name, made if missing, rather than replacing a file another
	// client made there meanwhile (appendCreating).
	appendsOnly bool
	// overwrites: plain (not O_APPEND) writes changed f since its base
	// (snapshot.rewritesEmpty).
	overwrites bool
	// fresh: f was made here and no store of it has succeeded yet, so
	// the server had no file of its name as far as the cache knows
	// (remote.FreshStorer).
	fresh       bool
	appendMu    sync.Mutex    // one O_APPEND write at a time: each takes the end
	storing     chan struct{} // a write-back in flight; closed when it ends
	appendAhead *openedAhead  // the server's file opened for the next append write-back (appendahead.go)
	pipe        *appendPipe   // the server's file the append write-backs in flight go through (appendpipe.go)
	sent        chan struct{} // the last write-back's send is done when closed: the next one's sends wait for it
	stream      *stream       // the store running while f is written (stream.go)
	streamTried bool          // a stream started since the last write-back began
	timer       *time.Timer   // the next write-back
	retry       time.Duration // the last retry delay
	// failure is why the last write-back failed (nil after a success);
	// refused says the server refused it for good, so that it is not
	// retried until the file is written or synced again.
	failure error
	refused bool
	removed bool

	elem      *list.Element // in the cache's LRU
	accounted int64         // clean bytes counted in the cache's total
	reserved  int64         // bytes of a prefetch of f not yet in accounted (Cache.reserved)
}

// blob is an open data file shared by its users; a dropped one lives on,
// unlinked, until its last user releases it.
type blob struct {
	f    *os.File
	refs int
}

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
		fd, err := openData(f.dataPath())
		if err != nil {
			return nil, diskError("opening a data file", err)
		}
		f.data = &blob{f: fd}
	}
	f.data.refs++
	return f.data, nil
}

// openData opens (or creates) a data file. os.OpenFile would try the
// descriptor with the network poller first, which takes five more system
// calls (fcntl, a refused epoll_ctl) for a regular file: a cost at every
// open/append/close cycle.
func openData(name string) (*os.File, error) {
	fd, err := syscall.Open(name, syscall.O_RDWR|syscall.O_CREAT|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
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
	f.giveUpStreamLocked("the data were dropped")
	f.dataGen++
	f.present = nil
	f.data = nil // its users keep the unlinked file until they release it
	if f.id != "" {
		f.removeDisk()
	}
	f.settleLocked()
}

// saveRecordLocked writes f's record; a dirty file's durably, since the
// record is then all that says the data must go to the server. A dirty
// file whose changes go at close has none until they outlive it
// (recordDirtyLocked).
func (f *file) saveRecordLocked() error {
	if f.id == "" || f.unrecorded {
		return nil
	}
	r := record{Path: f.path, Mode: uint32(f.info.Mode), Dirty: f.dirty,
		Size: f.version.Size, Mtime: f.version.Mtime, ETag: f.version.ETag,
		Ranges: encodeRanges(f.present), Boot: f.c.boot}
	if f.dirty {
		r.Size, r.Mtime = f.size, f.mtime
		if _, partial := f.partialLocked(); partial {
			r.Base = f.base
		}
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
	if err := writeAtomic(f.metaPath(), r.encode(), f.dirty); err != nil {
		return diskError("writing a record", err)
	}
	f.meta = true
	return nil
}

// recordDirtyLocked records that f is dirty, durably, when f's changes
// may outlive their close in the cache (T_write > 0). With T_write = 0
// they go to the server before close returns, and the record is written
// only if they outlive it after all (keepDirtyLocked: the write-back
// failed, or was interrupted); until then it is enough that no record
// calls the data file clean. A daemon killed meanwhile leaves a data file
// without a record, which the next start removes: changes whose close
// never returned, as a local file system may lose unsynced writes in a
// crash. Writing the record of every open/append/close cycle (a file
// created and renamed into place, then removed) cost more than the
// append itself on a near server.
func (f *file) recordDirtyLocked() error {
	if f.keptAfterClose() {
		f.unrecorded = false
		return f.saveRecordLocked()
	}
	if f.unrecorded {
		return nil // none to remove
	}
	if !f.c.noXattr.Load() {
		err := syscall.Removexattr(f.dataPath(), recordXattr)
		if err != nil && !errors.Is(err, syscall.ENODATA) && !errors.Is(err, syscall.ENOENT) && !errors.Is(err, syscall.ENOTSUP) {
			return diskError("removing a record", &os.PathError{Op: "removexattr", Path: f.dataPath(), Err: err})
		}
	}
	if f.meta {
		if err := os.Remove(f.metaPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
			return diskError("removing a record", err)
		}
		f.meta = false
	}
	f.unrecorded = true
	return nil
}

// keepDirtyLocked writes the record of a dirty file whose changes outlive
// the close that was to send them (recordDirtyLocked).
func (f *file) keepDirtyLocked() {
	if !f.dirty || !f.unrecorded {
		return
	}
	f.unrecorded = false
	if err := f.saveRecordLocked(); err != nil {
		f.unrecorded = true
		f.t.c.log.Warn("cache: cannot record changes kept in the cache; a crash would lose them", "path", f.path, "err", err)
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
