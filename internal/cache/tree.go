package cache

import (
	"context"
	"errors"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"wirefs/internal/ns"
	"wirefs/internal/remote"
)

// tree is one server session: its backend, options and the nodes known on
// it. Lock order: tree.mu, then a file's io, then its mu; dir.mu, goMu,
// dirtyMu and the cache's lruMu are taken alone or last.
type tree struct {
	c    *Cache
	key  string
	b    remote.Backend
	w    remote.Writer // nil: every change is EROFS
	o    settings
	dir  string // session directory on disk
	root *dir

	ctx       context.Context // cancelled by close: ends transfers
	cancel    context.CancelFunc
	readAhead chan struct{} // semaphore: read-ahead fetches in flight
	gate      *gate         // the server's requests: prefetch waits for room (prefetch.go)
	spares    spares

	mu    sync.Mutex
	files map[string]*file // by remote path
	dirs  map[string]*dir

	dirtyMu sync.Mutex
	dirty   map[*file]bool // files with changes the server does not have

	recMu   sync.Mutex
	records map[*file]*time.Timer // clean records to write (laterecord.go)

	closing atomic.Bool // no new write-back timers
	goMu    sync.Mutex
	stopped bool // no new goroutines
	wg      sync.WaitGroup
}

func newTree(c *Cache, key string, b remote.Backend, opts Options) *tree {
	o := opts.settings()
	w, _ := b.(remote.Writer)
	if o.ReadOnly {
		w = nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &tree{
		c: c, key: key, b: b, w: w, o: o, dir: c.sessionDir(key),
		ctx: ctx, cancel: cancel, readAhead: make(chan struct{}, readAheadPerServer), gate: newGate(o.PrefetchRequests, &c.working),
		files: map[string]*file{}, dirs: map[string]*dir{}, dirty: map[*file]bool{},
	}
	// Failing here only means that nothing can be cached on disk; every
	// transfer that needs the disk then reports why.
	if err := os.MkdirAll(t.dir, 0o700); err != nil {
		c.log.Error("cache: cannot create a session directory", "dir", t.dir, "err", err)
	} else if err := os.WriteFile(filepath.Join(t.dir, "key"), []byte(key+"\n"), 0o600); err != nil {
		c.log.Error("cache: cannot name a session directory", "dir", t.dir, "err", err)
	}
	t.root = t.dirAt("/")
	return t
}

// adopt takes over the files New found on disk for this session and
// starts writing back the dirty ones.
func (t *tree) adopt(files map[string]*file) {
	var dirty []*file
	t.mu.Lock()
	for p, f := range files {
		f.mu.Lock()
		f.t = t
		if f.dirty {
			dirty = append(dirty, f)
		}
		f.mu.Unlock()
		t.files[p] = f
	}
	t.mu.Unlock()
	for _, f := range dirty {
		t.setDirty(f, true)
		if t.w == nil {
			t.c.log.Error("cache: a changed file cannot be written back: the server is mounted read-only", "server", t.key, "path", f.remotePath())
			continue
		}
		t.c.log.Info("cache: writing back a file changed before the daemon stopped", "server", t.key, "path", f.remotePath())
		f.schedule(0)
	}
}

// adoptClean takes over clean files index found on disk for this
// session; one whose path the tree already has (used before index got
// to it) is dropped.
func (t *tree) adoptClean(files []*file) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, f := range files {
		if t.files[f.path] != nil {
			f.dropFound()
			continue
		}
		f.mu.Lock()
		f.t = t
		f.mu.Unlock()
		t.files[f.path] = f
	}
}

// spawn runs fn in a goroutine that close waits for; false after close.
func (t *tree) spawn(fn func()) bool {
	if !t.enter() {
		return false
	}
	go func() {
		defer t.wg.Done()
		fn()
	}()
	return true
}

// enter registers a running goroutine (a timer's); the caller calls
// t.wg.Done. False after close.
func (t *tree) enter() bool {
	t.goMu.Lock()
	defer t.goMu.Unlock()
	if t.stopped {
		return false
	}
	t.wg.Add(1)
	return true
}

func (t *tree) setDirty(f *file, dirty bool) {
	t.dirtyMu.Lock()
	if dirty {
		t.dirty[f] = true
	} else {
		delete(t.dirty, f)
	}
	t.dirtyMu.Unlock()
}

func (t *tree) dirtyFiles() []*file {
	t.dirtyMu.Lock()
	defer t.dirtyMu.Unlock()
	out := make([]*file, 0, len(t.dirty))
	for f := range t.dirty {
		out = append(out, f)
	}
	return out
}

// close writes back the dirty files (within ctx), then ends every
// goroutine and the session.
func (t *tree) close(ctx context.Context) error {
	t.closing.Store(true)
	for _, f := range t.dirtyFiles() {
		f.stopTimer()
	}
	var errs []error
	if t.w != nil {
		for _, f := range t.dirtyFiles() {
			if err := f.writeBack(ctx); err != nil {
				t.c.log.Error("cache: changes not written back before closing; they stay on disk for the next start",
					"server", t.key, "path", f.remotePath(), "err", err)
			}
		}
	}
	t.recordAll()
	t.goMu.Lock()
	t.stopped = true
	t.goMu.Unlock()
	t.cancel()
	t.wg.Wait()
	t.removeSpares()
	if err := t.b.Close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// fresh reports whether something validated at checked in epoch is still
// trusted for bound.
func (t *tree) fresh(checked time.Time, epoch int64, bound time.Duration) bool {
	return !checked.IsZero() && epoch == t.c.epoch.Load() && time.Since(checked) < bound
}

// remaining is how much longer something validated at checked is trusted.
func (t *tree) remaining(checked time.Time, epoch int64, bound time.Duration) time.Duration {
	if !t.fresh(checked, epoch, bound) {
		return 0
	}
	return bound - time.Since(checked)
}

// bounds are T_read and T_write of the file at server path p: the mount's,
// or those of the longest per-file key that matches p.
func (t *tree) bounds(p string) (tread, twrite time.Duration) { return t.o.bounds(p) }

// bounds are T_read and T_write of the file at p, a key of s.Files' form:
// the mount's, or those the longest matching key of s.Files gives.
func (s settings) bounds(p string) (tread, twrite time.Duration) {
	tread, twrite = s.TRead, s.TWrite
	best := -1
	for k, fo := range s.Files {
		if len(k) <= best || !(k == p || strings.HasSuffix(k, "/") && strings.HasPrefix(p, k)) {
			continue
		}
		best = len(k)
		tread, twrite = s.TRead, s.TWrite
		set(&tread, fo.TRead)
		set(&twrite, fo.TWrite)
	}
	return tread, twrite
}

// trust is the read bound of the file at p with attributes info validated
// at checked: T_read, or less for young files when AgePercent is set, and
// none for a file with several names: each name is cached on its own, so
// only asking the server shows one name what was written through another.
func (t *tree) trust(p string, info remote.Info, checked time.Time) time.Duration {
	if info.Nlink > 1 {
		return 0
	}
	bound, _ := t.bounds(p)
	if t.o.AgePercent > 0 && !info.Mtime.IsZero() {
		age := max(checked.Sub(info.Mtime), 0)
		bound = min(bound, age*time.Duration(t.o.AgePercent)/100)
	}
	return bound
}

func (t *tree) fileAt(p string) *file {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.files[p]
	if f == nil {
		f = &file{c: t.c, t: t, dir: t.dir, path: p, info: remote.Info{Name: path.Base(p), Size: -1}, progress: make(chan struct{})}
		t.files[p] = f
	}
	return f
}

func (t *tree) dirAt(p string) *dir {
	t.mu.Lock()
	defer t.mu.Unlock()
	d := t.dirs[p]
	if d == nil {
		d = &dir{t: t, path: p}
		t.dirs[p] = d
	}
	return d
}

// node returns the node of p with attributes info learnt at at in epoch.
func (t *tree) node(p string, info remote.Info, at time.Time, epoch int64) ns.Node {
	if info.Mode&os.ModeSymlink != 0 {
		return &link{t: t, path: p, info: info}
	}
	if info.Mode.IsDir() {
		d := t.dirAt(p)
		d.observe(info, at, epoch)
		return d
	}
	f := t.fileAt(p)
	f.observe(info, at, epoch)
	return f
}

// known returns the node of p when what the cache knows of it needs no
// round trip: a file with local changes, or a node validated recently.
func (t *tree) known(p string) ns.Node {
	t.mu.Lock()
	f, d := t.files[p], t.dirs[p]
	t.mu.Unlock()
	if f != nil {
		f.mu.Lock()
		ok := f.dirty || (f.info.Size >= 0 && t.fresh(f.checked, f.epoch, t.trust(f.path, f.info, f.checked)))
		f.mu.Unlock()
		if ok {
			return f
		}
	}
	if d != nil {
		d.mu.Lock()
		ok := t.fresh(d.checked, d.epoch, t.o.DirTTL)
		d.mu.Unlock()
		if ok {
			return d
		}
	}
	return nil
}

// vanished forgets p after the server said, to a question asked at at,
// that it does not exist. A file that is open, has local changes, or was
// created or validated after at is newer than that answer and stays: a
// lookup that raced with a create must not discard the new file (an
// appender's next create then started an empty one, and its whole-file
// store replaced what the others had appended).
func (t *tree) vanished(p string, at time.Time) {
	t.mu.Lock()
	f := t.files[p]
	if f != nil {
		if f.newerThan(at) {
			t.mu.Unlock()
			return
		}
		delete(t.files, p)
	}
	t.mu.Unlock()
	if f != nil {
		f.discard()
	}
	t.noteEntry(p, nil)
}

// parentOf returns the known directory that holds p, or nil.
func (t *tree) parentOf(p string) *dir {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.dirs[path.Dir(p)]
}

// noteEntry records in the cached listing of p's parent that p now has
// attributes info, or (nil) is gone.
func (t *tree) noteEntry(p string, info *remote.Info) {
	d := t.parentOf(p)
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.names == nil {
		return
	}
	if info == nil {
		delete(d.names, path.Base(p))
	} else {
		i := *info
		i.Name = path.Base(p)
		d.names[i.Name] = i
	}
}

func (t *tree) readOnly(what string) error {
	return ns.Errorf(syscall.EROFS, "%s: %s is mounted read-only", what, t.key)
}

// call is a request shared by every caller that needs its answer.
type call struct {
	done  chan struct{}
	err   error
	names map[string]remote.Info // List's answer
	at    time.Time              // before the request was sent
}

// wait returns c's error, or ctx's when the caller gives up first (the
// request goes on for the others).
func (c *call) wait(ctx context.Context) error {
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// dir is a remote directory.
type dir struct {
	t  *tree
	mu sync.Mutex

	path    string // written with t.mu and mu held
	info    remote.Info
	checked time.Time
	epoch   int64

	names     map[string]remote.Info // the last listing; nil: none
	listed    time.Time
	listEpoch int64
	listing   *call // List in flight

	shown    time.Time // the listing (its listed) a program last read with ReadDir
	aheadFor time.Time // the listing whose files were prefetched
	queued   bool      // to be listed ahead
}

var (
	_ ns.Dir       = (*dir)(nil)
	_ ns.Creator   = (*dir)(nil)
	_ ns.Mkdirer   = (*dir)(nil)
	_ ns.Remover   = (*dir)(nil)
	_ ns.Renamer   = (*dir)(nil)
	_ ns.Cached    = (*dir)(nil)
	_ ns.Opener    = (*file)(nil)
	_ ns.Setattrer = (*file)(nil)
	_ ns.Cached    = (*file)(nil)
)

func (d *dir) remotePath() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.path
}

func (d *dir) child(name string) (string, error) {
	if err := checkName(name); err != nil {
		return "", err
	}
	return path.Join(d.remotePath(), name), nil
}

func (d *dir) observe(info remote.Info, at time.Time, epoch int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if epoch == d.epoch && at.Before(d.checked) {
		return // older news
	}
	if info.Mtime.IsZero() {
		// HTTP says a directory's time only in its parent's listing,
		// not when asked for the directory itself.
		info.Mtime = d.info.Mtime
	}
	d.info, d.checked, d.epoch = info, at, epoch
}

func (d *dir) Attr(ctx context.Context) (ns.Attr, error) {
	t := d.t
	d.mu.Lock()
	info, ok := d.info, t.fresh(d.checked, d.epoch, t.o.DirTTL)
	p := d.path
	d.mu.Unlock()
	if !ok {
		epoch, at := t.c.epoch.Load(), time.Now()
		var err error
		done := t.gate.ask(askLinger)
		info, err = t.b.Stat(ctx, p)
		done()
		switch {
		case err != nil && p == "/" && ctx.Err() == nil:
			// Some servers cannot stat their root (or HTTP's "/" is a
			// page); it is a directory all the same.
			t.c.log.Debug("cache: cannot stat the root", "server", t.key, "err", err)
			info = remote.Info{Name: "/", Mode: os.ModeDir | 0o755}
		case err != nil:
			if ns.Errno(err) == syscall.ENOENT {
				t.noteEntry(p, nil)
			}
			return ns.Attr{}, err
		case !info.Mode.IsDir() && p != "/":
			return ns.Attr{}, ns.Errorf(syscall.ENOTDIR, "%s on %s is no longer a directory", p, t.key)
		}
		info.Mode |= os.ModeDir
		d.observe(info, at, epoch)
	}
	return attrOf(info), nil
}

func (d *dir) CacheTTL() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.t.remaining(d.checked, d.epoch, d.t.o.DirTTL)
}

func (d *dir) Lookup(ctx context.Context, name string) (ns.Node, error) {
	t := d.t
	p, err := d.child(name)
	if err != nil {
		return nil, err
	}
	if n := t.known(p); n != nil {
		return n, nil
	}
	d.mu.Lock()
	if t.fresh(d.listed, d.listEpoch, t.o.DirTTL) {
		info, ok := d.names[name]
		at, epoch := d.listed, d.listEpoch
		d.mu.Unlock()
		if !ok {
			return nil, ns.Errorf(syscall.ENOENT, "%s: no such file on %s", p, t.key)
		}
		return t.node(p, info, at, epoch), nil
	}
	d.mu.Unlock()
	epoch, at := t.c.epoch.Load(), time.Now()
	info, err := t.statOf(ctx, p, at)
	if err != nil {
		if ns.Errno(err) == syscall.ENOENT {
			t.vanished(p, at)
		}
		return nil, err
	}
	if info.Mode.IsDir() && info.Mtime.IsZero() {
		// HTTP gives a directory's time only in its parent's listing.
		if names, err := d.list(ctx); err == nil {
			info.Mtime = names[name].Mtime
		}
	}
	info.Name = name
	return t.node(p, info, at, epoch), nil
}

// list returns the entries of d, from the cache while fresh; concurrent
// callers share one List.
func (d *dir) list(ctx context.Context) (map[string]remote.Info, error) {
	t := d.t
	return d.listIf(ctx, func() bool { return t.fresh(d.listed, d.listEpoch, t.o.DirTTL) }, time.Time{})
}

// listSince is list for an answer the server gave after since, however
// fresh an older one is: a file validated by its directory's listing
// (remote.StatLister) needs one newer than its attributes.
func (d *dir) listSince(ctx context.Context, since time.Time) (map[string]remote.Info, error) {
	return d.listIf(ctx, func() bool { return d.names != nil && !d.listed.Before(since) }, since)
}

// listIf returns the cached listing while cached (called with d.mu held)
// says it will do, else a listing begun at since or later, joining one in
// flight (any, for a zero since) or waiting out an older one.
func (d *dir) listIf(ctx context.Context, cached func() bool, since time.Time) (map[string]remote.Info, error) {
	for {
		d.mu.Lock()
		if cached() {
			names := copyNames(d.names)
			d.mu.Unlock()
			return names, nil
		}
		c, err := d.listingLocked(ctx)
		d.mu.Unlock()
		if err != nil {
			return nil, err
		}
		if err := c.wait(ctx); err != nil {
			return nil, err
		}
		if !c.at.Before(since) {
			return copyNames(c.names), nil
		}
	}
}

// listingLocked (d.mu held) returns the listing in flight, or starts one.
func (d *dir) listingLocked(ctx context.Context) (*call, error) {
	t := d.t
	if c := d.listing; c != nil {
		return c, nil
	}
	c := &call{done: make(chan struct{}), at: time.Now()}
	d.listing = c
	p := d.path
	lctx := t.ctx
	if remote.IsBackground(ctx) {
		lctx = remote.Background(lctx) // listed ahead
	}
	linger := time.Duration(0) // a program's listing: the listings ahead serve its next one
	if forStat(ctx) {
		linger = askLinger
	}
	if !t.spawn(func() { d.fetchList(lctx, c, p, linger) }) {
		d.listing = nil
		return nil, ns.Errorf(syscall.EIO, "%s is closed", t.key)
	}
	return c, nil
}

// fetchList lists p for c; a program's listing is a question at the
// gate, which lingers after it (for a stat made through a listing).
func (d *dir) fetchList(ctx context.Context, c *call, p string, linger time.Duration) {
	t := d.t
	epoch, at := t.c.epoch.Load(), time.Now()
	if !remote.IsBackground(ctx) {
		defer t.gate.ask(linger)()
	}
	infos, err := t.b.List(ctx, p)
	names := make(map[string]remote.Info, len(infos))
	var files []*file
	var dirs []*dir
	if err == nil {
		t.mu.Lock()
		for _, info := range infos {
			if checkName(info.Name) != nil {
				continue
			}
			names[info.Name] = info
			cp := path.Join(p, info.Name)
			if f := t.files[cp]; f != nil && !info.Mode.IsDir() {
				files = append(files, f)
			}
			if sd := t.dirs[cp]; sd != nil && info.Mode.IsDir() {
				dirs = append(dirs, sd)
			}
		}
		t.mu.Unlock()
		// Known nodes learn their new attributes: a changed file loses
		// its stale data now.
		for _, f := range files {
			f.observe(names[path.Base(f.remotePath())], at, epoch)
		}
		for _, sd := range dirs {
			sd.observe(names[path.Base(sd.remotePath())], at, epoch)
		}
	}
	d.mu.Lock()
	if err == nil {
		d.names, d.listed, d.listEpoch = names, at, epoch
	}
	d.listing = nil
	c.err, c.names = err, names
	close(c.done)
	d.mu.Unlock()
}

func copyNames(m map[string]remote.Info) map[string]remote.Info {
	out := make(map[string]remote.Info, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// ReadDir lists d with attributes, so that `ls -l` costs one List.
// Attributes the cache knows better (local changes, a later Stat) win;
// files created here but not yet stored are listed too.
func (d *dir) ReadDir(ctx context.Context) ([]ns.DirEntry, error) {
	t := d.t
	names, err := d.list(ctx)
	if err != nil {
		return nil, err
	}
	d.shownToProgram(names)
	p := d.remotePath()
	out := make([]ns.DirEntry, 0, len(names))
	t.mu.Lock()
	known := make(map[string]*file)
	for name, info := range names {
		if f := t.files[path.Join(p, name)]; f != nil && !info.Mode.IsDir() {
			known[name] = f
		}
	}
	t.mu.Unlock()
	for name, info := range names {
		a := attrOf(info)
		if f := known[name]; f != nil {
			if fa, ok := f.localAttr(); ok {
				a = fa
			}
		}
		out = append(out, ns.DirEntry{Name: name, Attr: a})
	}
	for _, f := range t.dirtyFiles() {
		fp := f.remotePath()
		if _, listed := names[path.Base(fp)]; !listed && path.Dir(fp) == p {
			a, _ := f.localAttr()
			out = append(out, ns.DirEntry{Name: path.Base(fp), Attr: a})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Create opens name with O_CREAT: an existing file is opened (EEXIST with
// O_EXCL); a new one exists in the cache, dirty, until its first
// write-back (at close with T_write = 0).
func (d *dir) Create(ctx context.Context, c ns.Caller, name string, flags int, perm os.FileMode) (ns.Node, ns.Handle, error) {
	t := d.t
	p, err := d.child(name)
	if err != nil {
		return nil, nil, err
	}
	if t.w == nil {
		return nil, nil, t.readOnly("create " + p)
	}
	n, err := d.Lookup(ctx, name)
	switch {
	case err == nil && flags&os.O_EXCL != 0:
		return nil, nil, ns.Errorf(syscall.EEXIST, "%s already exists on %s", p, t.key)
	case err == nil:
		f, ok := n.(*file)
		if !ok {
			return nil, nil, ns.Errorf(syscall.EISDIR, "%s is a directory", p)
		}
		h, err := f.Open(ctx, c, flags)
		if err != nil {
			return nil, nil, err
		}
		return f, h, nil
	case ns.Errno(err) != syscall.ENOENT:
		return nil, nil, err
	}
	f := t.fileAt(p)
	info, created, err := f.create(modeBits(perm), flags&os.O_TRUNC != 0)
	if err != nil {
		return nil, nil, err
	}
	if !created {
		// Another create got there between our lookup and now: this
		// is an open of its file, as open(2) would be.
		if flags&os.O_EXCL != 0 {
			return nil, nil, ns.Errorf(syscall.EEXIST, "%s already exists on %s", p, t.key)
		}
		h, err := f.Open(ctx, c, flags)
		if err != nil {
			return nil, nil, err
		}
		return f, h, nil
	}
	t.noteEntry(p, &info)
	// A new file is stored at its close whatever the open mode
	// (open(O_CREAT|O_RDONLY) makes an empty file too).
	return f, f.newHandle(flags&^syscall.O_ACCMODE | syscall.O_RDWR), nil
}

func (d *dir) Mkdir(ctx context.Context, name string, perm os.FileMode) (ns.Node, error) {
	t := d.t
	p, err := d.child(name)
	if err != nil {
		return nil, err
	}
	if t.w == nil {
		return nil, t.readOnly("mkdir " + p)
	}
	if err := t.w.Mkdir(ctx, p, modeBits(perm)); err != nil {
		return nil, err
	}
	t.subdirsChanged(d.remotePath())
	info := remote.Info{Name: name, Mode: os.ModeDir | modeBits(perm), Mtime: time.Now()}
	t.noteEntry(p, &info)
	nd := t.dirAt(p)
	now, epoch := time.Now(), t.c.epoch.Load()
	nd.mu.Lock()
	// We just made it: it is empty, its attributes are what we asked
	// for, and asking would cost a round trip (over FTP a listing of
	// the parent: one per directory of a cp -r).
	nd.names, nd.listed, nd.listEpoch = map[string]remote.Info{}, now, epoch
	nd.info, nd.checked, nd.epoch = info, now, epoch
	nd.mu.Unlock()
	return nd, nil
}

func (d *dir) Remove(ctx context.Context, name string, isDir bool) error {
	t := d.t
	p, err := d.child(name)
	if err != nil {
		return err
	}
	if t.w == nil {
		return t.readOnly("remove " + p)
	}
	if isDir {
		if err := t.w.Rmdir(ctx, p); err != nil {
			return err
		}
		t.subdirsChanged(d.remotePath())
		t.forgetTree(p)
		t.noteEntry(p, nil)
		return nil
	}
	t.mu.Lock()
	f := t.files[p]
	t.mu.Unlock()
	localOnly := false
	if f != nil {
		f.keepForHandles(ctx)
		localOnly = f.quiesce()
	}
	if err := t.w.Remove(ctx, p); err != nil && !(localOnly && ns.Errno(err) == syscall.ENOENT) {
		return err
	}
	t.dirChanged(d.remotePath())
	t.mu.Lock()
	if t.files[p] == f {
		delete(t.files, p)
	}
	t.mu.Unlock()
	if f != nil {
		f.discard()
	}
	t.noteEntry(p, nil)
	return nil
}

// forgetTree forgets p and everything below it.
func (t *tree) forgetTree(p string) {
	var gone []*file
	t.mu.Lock()
	for fp, f := range t.files {
		if fp == p || strings.HasPrefix(fp, p+"/") {
			gone = append(gone, f)
			delete(t.files, fp)
		}
	}
	for dp := range t.dirs {
		if dp == p || strings.HasPrefix(dp, p+"/") {
			delete(t.dirs, dp)
		}
	}
	t.mu.Unlock()
	for _, f := range gone {
		f.discard()
	}
}

// Rename renames on the server, then moves what the cache knows (cached
// data included) to the new name. Changes not yet on the server are
// written back first, so that the server renames the current contents.
func (d *dir) Rename(ctx context.Context, name string, to ns.Dir, toName string) error {
	t := d.t
	td, ok := to.(*dir)
	if !ok || td.t != t {
		return ns.Errorf(syscall.EXDEV, "rename across servers")
	}
	from, err := d.child(name)
	if err != nil {
		return err
	}
	dst, err := td.child(toName)
	if err != nil {
		return err
	}
	if t.w == nil {
		return t.readOnly("rename " + from)
	}
	if from == dst {
		return nil
	}
	for _, f := range t.dirtyFiles() {
		if fp := f.remotePath(); fp == from || strings.HasPrefix(fp, from+"/") {
			if err := f.writeBack(ctx); err != nil {
				return err
			}
		}
	}
	t.mu.Lock()
	replaced := t.files[dst]
	_, movesDir := t.dirs[from]
	t.mu.Unlock()
	if replaced != nil {
		replaced.keepForHandles(ctx)
	}
	if err := t.w.Rename(ctx, from, dst); err != nil {
		return err
	}
	d.mu.Lock()
	info, listed := d.names[name]
	d.mu.Unlock()
	changed := t.dirChanged
	if movesDir || info.Mode.IsDir() {
		changed = t.subdirsChanged
	}
	changed(d.remotePath())
	changed(td.remotePath())
	t.move(from, dst)
	t.noteEntry(from, nil)
	if listed {
		t.noteEntry(dst, &info)
	} else if td.remotePath() != d.remotePath() || name != toName {
		td.mu.Lock()
		td.listed = time.Time{} // we do not know its attributes: list again
		td.mu.Unlock()
	}
	return nil
}

// move renames the nodes at and below from to dst; whatever was at dst is
// forgotten.
func (t *tree) move(from, dst string) {
	t.forgetTree(dst)
	var moved []*file
	t.mu.Lock()
	for fp, f := range t.files {
		if np, ok := under(fp, from, dst); ok {
			delete(t.files, fp)
			t.files[np] = f
			f.mu.Lock()
			f.path = np
			f.info.Name = path.Base(np)
			f.mu.Unlock()
			moved = append(moved, f)
		}
	}
	for dp, d := range t.dirs {
		if np, ok := under(dp, from, dst); ok {
			delete(t.dirs, dp)
			t.dirs[np] = d
			d.mu.Lock()
			d.path = np
			d.mu.Unlock()
		}
	}
	t.mu.Unlock()
	for _, f := range moved {
		f.mu.Lock()
		f.saveRecordLocked() // the record names the path
		f.mu.Unlock()
	}
}

// under maps p from below old to below new.
func under(p, old, new string) (string, bool) {
	if p == old {
		return new, true
	}
	if rest, ok := strings.CutPrefix(p, old+"/"); ok {
		return path.Join(new, rest), true
	}
	return "", false
}
