// Package cache turns any remote.Backend (and remote.Writer) into namespace
// nodes backed by a private on-disk cache, with the consistency of Ufo §5.3
// and the lazy open of puffs §3.2:
//
//   - An open for reading does not contact the server while the file's
//     attributes were validated less than T_read ago; after that it
//     validates them (Stat: size, mtime, ETag) and forgets cached data of a
//     changed file. Attributes and directory listings are cached with the
//     same kind of bound, and listings carry attributes, so `ls -l` is one
//     List and a name missing from a fresh listing is ENOENT at once.
//   - Files are fetched lazily by ranges into sparse data files: a read of
//     present bytes is served at once, a miss fetches what is needed plus a
//     bounded read-ahead (at most readAheadPerServer read-aheads per server
//     run at a time, so they never starve Stat and List). Concurrent misses
//     of one range share one fetch. A fully present, clean file is opened as
//     a kernel object (the data file itself) for FUSE passthrough.
//   - Writes go to the data file. With T_write = 0 (the default) close(2)
//     returns once the server has the file, and the file is marked dirty
//     durably only if its changes outlive that close; with T_write > 0 it
//     is marked before the first write returns, and the store happens that
//     long after the last close. fsync always waits for the server. Failed
//     write-backs are retried with backoff, never dropped, and dirty files
//     left by a killed daemon are written back when their server is used
//     again.
//
// On disk, under the cache directory (mode 0700): one subdirectory per
// server session (a hash of its key, with a file "key" naming it), holding
// per cached file ID.data (sparse data) and its JSON record: for clean
// data an extended attribute of ID.data, for dirty data (or where the file
// system has no user attributes) the file ID.meta, which wins over the
// attribute. Creating a file costs far more than setting an attribute on
// some file systems (~0.5 ms on ext4 here): a cold read of a small file
// creates one file, not two.
package cache

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"wirefs/internal/ns"
	"wirefs/internal/remote"
)

// Defaults, and the fixed bounds of the implementation.
const (
	DefaultTRead     = 30 * time.Second
	DefaultReadAhead = 1 << 20
	DefaultLimit     = 1 << 30 // bytes of clean data kept when New is given 0

	DefaultPrefetchRequests = 32        // background requests in flight per server
	DefaultPrefetchDir      = 8 << 20   // bytes of one directory's files fetched ahead per listing
	DefaultPrefetchFile     = 256 << 10 // the largest file fetched ahead
	DefaultReaddirAhead     = 64        // subdirectories listed ahead of a program's listing

	maxReadAhead       = 8 << 20          // read-ahead doubles on sequential misses up to this
	minFetch           = 128 << 10        // a miss fetches at least this much
	readAheadPerServer = 6                // concurrent read-ahead fetches per server
	readAheadDepth     = 4                // windows a sequential reader may have in flight
	closeFlushTimeout  = 30 * time.Second // how long Close waits for write-backs
	firstRetry         = 500 * time.Millisecond
	maxRetry           = 5 * time.Minute
)

// Options are the consistency and transfer settings of one mount. Every
// pointer field is optional: nil means the default the field names; a
// value given is used as it is, zero included (TRead 0 validates on every
// open). The zero Options are the defaults. Negative values count as 0.
type Options struct {
	// TRead: attributes and data are trusted this long after they were
	// validated with the server. nil: DefaultTRead; 0: validate on every
	// open.
	TRead *time.Duration
	// AgePercent bounds the trust further as in Alex: a file whose mtime
	// is age old is trusted for min(TRead, age*AgePercent/100), because
	// old files change less often. nil or 0: off.
	AgePercent *int
	// TWrite: write-back delay after close. nil or 0: write through at
	// close: when close(2) returns, the server has the file.
	TWrite *time.Duration
	// DirTTL: how long directory listings are trusted. nil: TRead; 0: not
	// at all.
	DirTTL *time.Duration
	// ReadAhead: bytes fetched beyond a miss, doubling on sequential
	// misses up to 8 MiB. nil: DefaultReadAhead; 0: none.
	ReadAhead *int64
	// PrefetchRequests bounds the background requests (files fetched
	// and directories listed ahead, prefetch.go) one server has in
	// flight. nil: DefaultPrefetchRequests; 0: no prefetch at all.
	PrefetchRequests *int
	// PrefetchDir: once a program that listed a directory reads one of
	// its files, the directory's other files of at most PrefetchFile
	// bytes are fetched ahead, up to PrefetchDir bytes per listing.
	// nil: DefaultPrefetchDir, DefaultPrefetchFile; 0: no file is.
	PrefetchDir, PrefetchFile *int64
	// ReaddirAhead: when a program lists a directory, up to this many of
	// its subdirectories are listed ahead (ls -lR, find). nil:
	// DefaultReaddirAhead; 0: none.
	ReaddirAhead *int
	// ReadOnly refuses every change with EROFS even when the backend can
	// write.
	ReadOnly bool
	// Files overrides TRead and TWrite for single files or subtrees
	// (Ufo's per-file bounds), keyed by "SERVER/PATH" as in the
	// namespace: "me@host/home/me/live.log", or "me@host/home/me/logs/"
	// for everything below. The longest matching key wins; Servers gives
	// each server's tree the keys of that server.
	Files map[string]FileOptions
}

// FileOptions are per-file consistency bounds, over the mount's: a nil
// field keeps the mount's value, a value given is used as it is (TRead 0:
// validate on every open; TWrite 0: write through at close).
type FileOptions struct {
	TRead, TWrite *time.Duration
}

// settings are Options with the defaults applied: what a tree uses.
type settings struct {
	TRead, TWrite, DirTTL time.Duration
	AgePercent            int
	ReadAhead             int64
	PrefetchRequests      int
	PrefetchDir           int64
	PrefetchFile          int64
	ReaddirAhead          int
	ReadOnly              bool
	Files                 map[string]FileOptions
}

func (o Options) settings() settings {
	s := settings{TRead: DefaultTRead, ReadAhead: DefaultReadAhead, ReadOnly: o.ReadOnly, Files: o.Files,
		PrefetchRequests: DefaultPrefetchRequests, PrefetchDir: DefaultPrefetchDir, PrefetchFile: DefaultPrefetchFile,
		ReaddirAhead: DefaultReaddirAhead}
	set(&s.PrefetchRequests, o.PrefetchRequests)
	set(&s.PrefetchDir, o.PrefetchDir)
	set(&s.PrefetchFile, o.PrefetchFile)
	set(&s.ReaddirAhead, o.ReaddirAhead)
	set(&s.TRead, o.TRead)
	s.DirTTL = s.TRead
	set(&s.DirTTL, o.DirTTL)
	set(&s.TWrite, o.TWrite)
	set(&s.ReadAhead, o.ReadAhead)
	set(&s.AgePercent, o.AgePercent)
	return s
}

// set sets *v to *p, when p is given, and not below 0.
func set[T time.Duration | int | int64](v *T, p *T) {
	if p != nil {
		*v = max(*p, 0)
	}
}

// Bounds returns T_read and T_write of the file key ("SERVER/PATH", as the
// keys of Files) under o: the mount's, or those of the longest key of
// Files that matches, each field the per-file line leaves unset keeping
// the mount's.
func (o Options) Bounds(key string) (tread, twrite time.Duration) {
	return o.settings().bounds(key)
}

// Cache is the on-disk cache shared by every mounted server.
type Cache struct {
	dir   string
	slot  *slot // held until Close: no other daemon writes in dir
	limit int64
	log   *slog.Logger
	boot  string
	since time.Time

	// epoch counts Drops: validations made in an earlier epoch are stale.
	epoch atomic.Int64
	// noXattr: the file system has no user attributes, so clean records
	// are .meta files too.
	noXattr atomic.Bool

	ctx    context.Context // cancelled by Close: ends dials
	cancel context.CancelFunc
	wg     sync.WaitGroup // dial goroutines and index

	mu      sync.Mutex
	trees   map[string]*tree            // by key
	scanned map[string]map[string]*file // files found on disk by New, by session directory and path, until Root adopts them
	indexed chan struct{}               // closed when index ends
	closed  bool

	evictMu sync.Mutex // one eviction pass at a time
	lruMu   sync.Mutex // innermost lock: taken with a file's mu held
	lru     *list.List // files with data on disk, most recently used first
	used    int64      // bytes of clean data on disk
	// reserved: bytes of prefetches in flight, not yet in used: a
	// fetch's bytes move from one to the other as they are counted
	// (settleLocked), so that none counts twice.
	reserved int64

	working working // OnBackground
}

// New opens the cache in dir, creating it with mode 0700 (and tightening
// a looser existing one, since cached files are private). limit is the
// number of bytes of clean data kept (0: DefaultLimit); least recently used
// clean files are evicted beyond it, dirty data never. New finds dirty
// files left by a daemon that was killed; each is written back when Root
// is called with its key.
func New(dir string, limit int64, log *slog.Logger) (*Cache, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if limit <= 0 {
		limit = DefaultLimit
	}
	s, err := takeSlot(dir)
	if err != nil {
		return nil, err
	}
	if s.dir != dir {
		log.Info("cache: another daemon uses the cache directory; this one caches in a slot of its own", "dir", s.dir)
	}
	s.adoptOrphans(dir, log.Warn)
	ctx, cancel := context.WithCancel(context.Background())
	c := &Cache{
		dir: s.dir, slot: s, limit: limit, log: log, boot: bootID(), since: time.Now(),
		ctx: ctx, cancel: cancel,
		trees: map[string]*tree{}, scanned: map[string]map[string]*file{}, indexed: make(chan struct{}),
		lru: list.New(),
	}
	todo := c.scan()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.index(todo)
	}()
	return c, nil
}

// sessionDir is the directory of the session with key.
func (c *Cache) sessionDir(key string) string {
	h := sha256.Sum256([]byte(key))
	return filepath.Join(c.dir, hex.EncodeToString(h[:16]))
}

// The start-up scan is two steps, so that a mount never waits for a
// large cache: scan (in New) reads the names in every session directory
// and the records of changed files (ID.meta), which must be known before a
// server is used; index (in the background) reads the records of clean
// data files, one extended attribute each, and hands them to their trees
// (100k cached files take seconds). A file used before its record is
// indexed is fetched again and its old record dropped; until index ends,
// eviction does not count the data it has not seen yet.

// found is a file found on disk by the start-up scan.
type found struct {
	f       *file
	use     time.Time // when it was last used: its record's mtime
	session string    // its session directory's name
}

// unindexed are the clean data files of one session directory whose
// records index reads.
type unindexed struct {
	session, sdir string
	ids           []string
}

// beforeIndex is called when index starts (tests hold it there).
var beforeIndex = func(ctx context.Context) {}

// scan finds every session directory's files (see above): the records of
// changed files now, the clean data files to index.
func (c *Cache) scan() []unindexed {
	sessions, err := os.ReadDir(c.dir)
	if err != nil {
		c.log.Error("cache: cannot read the cache directory", "dir", c.dir, "err", err)
		return nil
	}
	var todo []unindexed
	for _, s := range sessions {
		if !s.IsDir() || s.Name() == slotsDir {
			continue
		}
		sdir := filepath.Join(c.dir, s.Name())
		names, err := os.ReadDir(sdir)
		if err != nil {
			c.log.Error("cache: cannot read a session directory", "dir", sdir, "err", err)
			continue
		}
		listed := make(map[string]bool, len(names))
		for _, n := range names {
			listed[n.Name()] = true
		}
		files := map[string]*file{}
		clean := unindexed{session: s.Name(), sdir: sdir}
		for _, n := range names {
			name := n.Name()
			id, ext := strings.TrimSuffix(name, filepath.Ext(name)), filepath.Ext(name)
			switch {
			case ext == ".tmp":
				os.Remove(filepath.Join(sdir, name)) // an interrupted record write
			case ext == ".data" && !listed[id+".meta"]:
				clean.ids = append(clean.ids, id)
			case ext == ".meta":
				if f, _ := c.load(sdir, id, true); f != nil {
					keepOne(files, f)
				}
			}
		}
		dirty := 0
		for _, f := range files {
			f.settle()
			if f.dirty {
				dirty++
			}
		}
		if dirty > 0 {
			key, _ := os.ReadFile(filepath.Join(sdir, "key"))
			c.log.Warn("cache: files with changes not yet on the server; they are written back when the server is used again",
				"server", strings.TrimSpace(string(key)), "files", dirty)
		}
		c.scanned[s.Name()] = files
		if len(clean.ids) > 0 {
			todo = append(todo, clean)
		}
	}
	return todo
}

// keepOne puts f in files, by path; of two records for one path the dirty
// one stays (else the later), and the other is dropped.
func keepOne(files map[string]*file, f *file) {
	old := files[f.path]
	switch {
	case old == nil:
	case old.dirty && !f.dirty:
		f.dropFound()
		return
	default:
		old.dropFound()
	}
	files[f.path] = f
}

// dropFound removes the data and record of a clean file found on disk
// that nobody uses.
func (f *file) dropFound() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.present, f.dirty = nil, false
	f.removeDisk()
	f.settleLocked()
}

// index reads the records of the clean data files scan found (see above),
// until Close.
func (c *Cache) index(todo []unindexed) {
	defer close(c.indexed)
	beforeIndex(c.ctx)
	var all []found
	for _, u := range todo {
		for _, id := range u.ids {
			if c.ctx.Err() != nil {
				return // the next start indexes them
			}
			if f, use := c.load(u.sdir, id, false); f != nil {
				all = append(all, found{f, use, u.session})
			}
		}
	}
	// Behind what the trees used meanwhile, the oldest last.
	sort.Slice(all, func(i, j int) bool { return all[i].use.After(all[j].use) })
	for _, x := range all {
		x.f.settleBehind()
	}
	c.mu.Lock()
	trees := map[string]*tree{}
	for _, t := range c.trees {
		trees[filepath.Base(t.dir)] = t
	}
	adopt := map[*tree][]*file{}
	for _, x := range all {
		if t := trees[x.session]; t != nil {
			adopt[t] = append(adopt[t], x.f)
		} else {
			keepOne(c.scanned[x.session], x.f)
		}
	}
	c.mu.Unlock()
	for t, files := range adopt {
		t.adoptClean(files)
	}
	c.evict()
}

// load reads the record of id: its .meta file when inMeta, else the
// attribute of its data file. nil when it is unusable (then it is removed).
func (c *Cache) load(sdir, id string, inMeta bool) (*file, time.Time) {
	f := &file{c: c, dir: sdir, id: id, meta: inMeta, progress: make(chan struct{})}
	var b []byte
	var fi os.FileInfo
	var err, serr error
	if inMeta {
		b, err = os.ReadFile(f.metaPath())
		fi, serr = os.Stat(f.metaPath())
	} else {
		b, err = readXattr(f.dataPath())
		fi, serr = os.Stat(f.dataPath())
		if err != nil {
			f.removeDisk() // data whose record never made it
			return nil, time.Time{}
		}
	}
	if err != nil || serr != nil {
		c.log.Error("cache: cannot read a record", "file", f.metaPath(), "err", errors.Join(err, serr))
		return nil, time.Time{}
	}
	r, rs, err := decodeRecord(b)
	if err != nil {
		c.log.Error("cache: removing a damaged record", "file", f.dataPath(), "err", err)
		f.removeDisk()
		return nil, time.Time{}
	}
	f.path = r.Path
	f.info = remote.Info{Name: filepath.Base(r.Path), Mode: os.FileMode(r.Mode), Size: r.Size, Mtime: r.Mtime, ETag: r.ETag}
	f.version = f.info
	if r.Dirty {
		data, err := os.Stat(f.dataPath())
		if err != nil {
			c.log.Error("cache: the data of a changed file is missing", "path", r.Path, "err", err)
			f.removeDisk()
			return nil, time.Time{}
		}
		f.dirty, f.base = true, -1 // what changed is not recorded: send it whole
		f.size = data.Size()
		f.present = ranges{}.add(0, f.size)
		f.mtime = data.ModTime()
		if r.Base > 0 && r.Base <= f.size {
			// Appends to a file not all cached: they are the changes,
			// sent again in place (they may have landed before the
			// daemon died); the rest is the server's.
			f.base, f.low, f.retried = r.Base, r.Base, true
			f.changed = ranges{}.add(r.Base, f.size)
			f.present = rs.add(r.Base, f.size)
		}
	} else if r.Boot != c.boot {
		f.removeDisk() // written before a reboot: the bytes may not be there
		return nil, time.Time{}
	} else {
		f.present = rs
	}
	return f, fi.ModTime()
}

// Root returns the tree of the server session identified by key (e.g.
// "sftp://me@host:22"), built on b with options o. The cache owns b from
// now on and closes it in Close; when key already has a tree, that tree is
// returned and b is closed. Dirty files left on disk for key by an earlier
// daemon are written back now. Root must not be called after Close.
func (c *Cache) Root(key string, b remote.Backend, o Options) ns.Dir {
	c.mu.Lock()
	if t := c.trees[key]; t != nil {
		c.mu.Unlock()
		if !sameBackend(t.b, b) {
			b.Close()
		}
		return t.root
	}
	t := newTree(c, key, b, o)
	files := c.scanned[filepath.Base(t.dir)]
	delete(c.scanned, filepath.Base(t.dir))
	c.trees[key] = t
	c.mu.Unlock()

	t.adopt(files)
	return t.root
}

// sameBackend compares backends without panicking on types that cannot
// be compared.
func sameBackend(a, b remote.Backend) bool {
	return reflect.TypeOf(a) == reflect.TypeOf(b) && reflect.TypeOf(a).Comparable() && a == b
}

// Drop forgets every validation, attribute and listing (SIGHUP, the
// control file): the next use of anything asks the server again. Cached
// data stays on disk and is reused if revalidation finds it unchanged.
func (c *Cache) Drop() {
	c.epoch.Add(1)
	c.log.Info("cache: dropped every validation, attribute and listing")
}

// Close writes back what is pending (waiting at most closeFlushTimeout;
// what is not written stays dirty on disk for the next start), ends every
// transfer and closes the sessions.
func (c *Cache) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait() // dials: their sessions are among the trees below

	c.mu.Lock()
	trees := make([]*tree, 0, len(c.trees))
	for _, t := range c.trees {
		trees = append(trees, t)
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), closeFlushTimeout)
	defer cancel()
	var errs []error
	for _, t := range trees {
		errs = append(errs, t.close(ctx))
	}
	c.working.close()
	errs = append(errs, c.slot.release())
	return errors.Join(errs...)
}

// settle is called with f.mu held after f's data or dirtiness changed: it
// updates the bytes of clean data accounted to f and its place in the LRU.
func (f *file) settleLocked() {
	c := f.c
	clean := int64(0)
	if !f.dirty {
		clean = f.present.bytes()
	}
	c.lruMu.Lock()
	defer c.lruMu.Unlock()
	if grown := clean - f.accounted; grown > 0 && f.reserved > 0 {
		moved := min(grown, f.reserved)
		f.reserved -= moved
		c.reserved -= moved
	}
	c.used += clean - f.accounted
	f.accounted = clean
	switch {
	case f.elem == nil && (f.present.bytes() > 0 || f.dirty):
		f.elem = c.lru.PushFront(f)
	case f.elem != nil && f.present.bytes() == 0 && !f.dirty:
		c.lru.Remove(f.elem)
		f.elem = nil
	case f.elem != nil:
		c.lru.MoveToFront(f.elem)
	}
}

func (f *file) settle() {
	f.mu.Lock()
	f.settleLocked()
	f.mu.Unlock()
}

// settleBehind is settle for a file found by index: it goes behind the
// files used since the start, as the least recently used.
func (f *file) settleBehind() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.settleLocked()
	if f.elem != nil {
		f.c.lruMu.Lock()
		f.c.lru.MoveToBack(f.elem)
		f.c.lruMu.Unlock()
	}
}

// evict removes least recently used clean files until the clean data fits
// the limit. Files that are dirty, open or being transferred stay.
func (c *Cache) evict() {
	if !c.evictMu.TryLock() {
		return // another pass is running and will see our bytes
	}
	defer c.evictMu.Unlock()
	for {
		c.lruMu.Lock()
		over := c.used > c.limit
		var victims []*file
		for e := c.lru.Back(); e != nil && over && len(victims) < 64; e = e.Prev() {
			if f := e.Value.(*file); f.accounted > 0 {
				victims = append(victims, f)
			}
		}
		c.lruMu.Unlock()
		evicted := false
		for _, f := range victims {
			evicted = f.evict() || evicted
			c.lruMu.Lock()
			over = c.used > c.limit
			c.lruMu.Unlock()
			if !over {
				return
			}
		}
		if !evicted {
			return
		}
	}
}

// diskError wraps a local disk error with its errno.
func diskError(what string, err error) error {
	return ns.Errorf(ns.Errno(err), "cache: %s: %v", what, err)
}
