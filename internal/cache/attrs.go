package cache

import (
	"context"
	"os"
	"path"
	"strings"
	"syscall"
	"time"

	"wirefs/internal/ns"
	"wirefs/internal/remote"
)

// Attributes, names and the operations that change them without changing
// a file's data: chmod, chown, utimes, symbolic and hard links, statfs.

// maxName is the longest file name Linux allows (NAME_MAX); FUSE lets
// names up to 1024 bytes through, which no server would store.
const maxName = 255

// Stored: opening a remote file or directory has no side effect.
func (f *file) Stored() bool { return true }
func (d *dir) Stored() bool  { return true }

func attrOf(info remote.Info) ns.Attr {
	a := ns.Attr{Mode: info.Mode, Size: max(info.Size, 0), Mtime: info.Mtime, Atime: info.Atime,
		Nlink: info.Nlink, Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}
	if info.Owner != nil {
		a.Uid, a.Gid = info.Owner.Uid, info.Owner.Gid
	}
	return a
}

func checkName(name string) error {
	switch {
	case name == "" || name == "." || name == ".." || strings.Contains(name, "/"):
		return ns.Errorf(syscall.EINVAL, "%q is not a file name", name)
	case len(name) > maxName:
		return ns.Errorf(syscall.ENAMETOOLONG, "a name of %d bytes: at most %d are allowed", len(name), maxName)
	}
	return nil
}

// modeBits are the bits chmod sets: permissions and setuid, setgid, sticky.
func modeBits(m os.FileMode) os.FileMode { return m & (os.ModePerm | specialBits) }

// dirChanged notes that the server changed directory p's entries, and so
// its mtime, at about now: the attributes the cache holds take now as
// their mtime and stay trusted as long as they were. Asking the server
// again cost a round trip per file a program made (over FTP a listing of
// p's parent), and compilers stat "." at every run.
func (t *tree) dirChanged(p string) { t.entriesChanged(p, false) }

// subdirsChanged is dirChanged for a directory made, removed or moved in
// or out of p: where the server reports link counts (9P), p's changed
// (find counts subdirectories by it), so p's attributes are asked again
// at the next stat.
func (t *tree) subdirsChanged(p string) { t.entriesChanged(p, true) }

func (t *tree) entriesChanged(p string, subdirs bool) {
	t.withDir(p, func(d *dir) {
		switch {
		case d.checked.IsZero(): // asked at the next stat anyway
		case subdirs && d.info.Nlink > 0:
			d.checked = time.Time{}
		default:
			d.info.Mtime = time.Now()
		}
	})
}

// listingStale makes the next lookup in directory p ask the server: an
// entry is not what its listing says, and what it is is not known.
func (t *tree) listingStale(p string) {
	t.withDir(p, func(d *dir) { d.listed = time.Time{} })
}

// withDir runs fn on directory p, if known, with its lock held.
func (t *tree) withDir(p string, fn func(d *dir)) {
	t.mu.Lock()
	d := t.dirs[p]
	t.mu.Unlock()
	if d != nil {
		d.mu.Lock()
		fn(d)
		d.mu.Unlock()
	}
}

// chown changes p's owner and group on the server (nil: unchanged).
func (t *tree) chown(ctx context.Context, p string, uid, gid *uint32) error {
	c, ok := t.w.(remote.Chowner)
	if !ok {
		return ns.Errorf(syscall.EPERM, "chown %s: %s cannot change owners", p, t.key)
	}
	id := func(v *uint32) int {
		if v == nil {
			return -1
		}
		return int(*v)
	}
	return c.Chown(ctx, p, id(uid), id(gid))
}

// newOwner is info's owner after a chown.
func newOwner(old *remote.Owner, uid, gid *uint32) *remote.Owner {
	o := remote.Owner{Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}
	if old != nil {
		o = *old
	}
	if uid != nil {
		o.Uid = *uid
	}
	if gid != nil {
		o.Gid = *gid
	}
	return &o
}

// times fills the times a is silent about from what info says.
func times(info remote.Info, a ns.SetAttr) (atime, mtime time.Time) {
	atime, mtime = info.Atime, info.Mtime
	if a.Mtime != nil {
		mtime = *a.Mtime
	}
	if a.Atime != nil {
		atime = *a.Atime
	}
	if atime.IsZero() {
		atime = mtime
	}
	return atime, mtime
}

// Setattr truncates (on open or closed files), changes the mode, the
// owner or the times.
func (f *file) Setattr(ctx context.Context, h ns.Handle, a ns.SetAttr) (ns.Attr, error) {
	t := f.t
	if t.w == nil {
		return ns.Attr{}, t.readOnly("change " + f.remotePath())
	}
	if a.Uid != nil || a.Gid != nil {
		// The server must have the file to give it away.
		if err := f.writeBack(ctx); err != nil {
			return ns.Attr{}, err
		}
		if err := t.chown(ctx, f.remotePath(), a.Uid, a.Gid); err != nil {
			return ns.Attr{}, err
		}
		f.mu.Lock()
		f.info.Owner = newOwner(f.info.Owner, a.Uid, a.Gid)
		f.mu.Unlock()
	}
	if a.Mode != nil {
		mode := modeBits(*a.Mode)
		if err := t.w.Chmod(ctx, f.remotePath(), mode); err != nil && !(f.isDirty() && ns.Errno(err) == syscall.ENOENT) {
			return ns.Attr{}, err
		}
		f.mu.Lock()
		f.info.Mode = f.info.Mode&^modeBits(^os.FileMode(0)) | mode
		if f.dirty {
			if err := f.saveRecordLocked(); err != nil {
				f.mu.Unlock()
				return ns.Attr{}, err
			}
		}
		f.mu.Unlock()
	}
	if a.Size != nil {
		if err := f.truncate(ctx, *a.Size); err != nil {
			return ns.Attr{}, err
		}
		// Through an open writable handle the change goes with the
		// handle's close; otherwise by the write-back rule now.
		if _, open := h.(*writeHandle); !open {
			if _, twrite := t.bounds(f.path); twrite == 0 {
				if err := f.writeBack(ctx); err != nil {
					return ns.Attr{}, err
				}
			} else {
				f.schedule(twrite)
			}
		}
	}
	if a.Mtime != nil || a.Atime != nil {
		f.mu.Lock()
		atime, mtime := times(f.info, a)
		f.mu.Unlock()
		if err := f.chtimes(ctx, atime, mtime); err != nil {
			return ns.Attr{}, err
		}
	}
	return f.Attr(ctx)
}

// chtimes sets f's times: on the server now, or, while f has changes the
// server does not have yet, right after they are stored (a store gives
// the file the server's clock). A server that cannot set times keeps its
// own, and the cache shows the ones asked for until it next asks the
// server (touch must not fail, and make compares what stat says).
func (f *file) chtimes(ctx context.Context, atime, mtime time.Time) error {
	t := f.t
	c, ok := t.w.(remote.Chtimer)
	if !ok {
		f.keepTimes(atime, mtime)
		return nil
	}
	f.mu.Lock()
	if f.dirty {
		f.mtime, f.info.Atime, f.wantTimes = mtime, atime, &[2]time.Time{atime, mtime}
		f.mu.Unlock()
		return nil
	}
	f.mu.Unlock()
	if err := c.Chtimes(ctx, f.remotePath(), atime, mtime); ns.Errno(err) == syscall.ENOTSUP {
		f.keepTimes(atime, mtime)
		return nil
	} else if err != nil {
		return err
	}
	f.mu.Lock()
	f.info.Mtime, f.version.Mtime, f.info.Atime = mtime, mtime, atime
	f.mu.Unlock()
	return nil
}

// keepTimes shows times the server could not take, until the next
// validation brings the server's.
func (f *file) keepTimes(atime, mtime time.Time) {
	f.t.c.log.Debug("cache: the server cannot set times; the cache shows them until it asks again", "server", f.t.key, "path", f.remotePath())
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dirty {
		f.mtime = mtime
	}
	f.info.Mtime, f.info.Atime = mtime, atime
}

// Setattr changes a directory's mode, owner or times.
func (d *dir) Setattr(ctx context.Context, h ns.Handle, a ns.SetAttr) (ns.Attr, error) {
	t := d.t
	p := d.remotePath()
	if t.w == nil {
		return ns.Attr{}, t.readOnly("change " + p)
	}
	if a.Size != nil {
		return ns.Attr{}, ns.Errorf(syscall.EISDIR, "truncate %s: a directory", p)
	}
	if a.Uid != nil || a.Gid != nil {
		if err := t.chown(ctx, p, a.Uid, a.Gid); err != nil {
			return ns.Attr{}, err
		}
		d.mu.Lock()
		d.info.Owner = newOwner(d.info.Owner, a.Uid, a.Gid)
		d.mu.Unlock()
	}
	if a.Mode != nil {
		mode := modeBits(*a.Mode)
		if err := t.w.Chmod(ctx, p, mode); err != nil {
			return ns.Attr{}, err
		}
		d.mu.Lock()
		d.info.Mode = os.ModeDir | mode
		d.mu.Unlock()
	}
	if a.Mtime != nil || a.Atime != nil {
		d.mu.Lock()
		atime, mtime := times(d.info, a)
		d.mu.Unlock()
		// As for files (chtimes): what the server cannot take, the
		// cache shows until it asks again.
		if c, ok := t.w.(remote.Chtimer); ok {
			if err := c.Chtimes(ctx, p, atime, mtime); err != nil && ns.Errno(err) != syscall.ENOTSUP {
				return ns.Attr{}, err
			}
		}
		d.mu.Lock()
		d.info.Atime, d.info.Mtime = atime, mtime
		d.mu.Unlock()
	}
	return d.Attr(ctx)
}

// link is a symbolic link on the server. It is made from a listing or a
// Stat each time it is looked up; its target is asked once per node.
type link struct {
	t      *tree
	path   string
	info   remote.Info
	target string // "" until read
}

var (
	_ ns.Readlinker = (*link)(nil)
	_ ns.Cached     = (*link)(nil)
	_ ns.Symlinker  = (*dir)(nil)
	_ ns.Linker     = (*dir)(nil)
	_ ns.Setattrer  = (*dir)(nil)
	_ ns.Statfser   = (*dir)(nil)
	_ ns.Statfser   = (*file)(nil)
	_ ns.Stored     = (*file)(nil)
	_ ns.Stored     = (*dir)(nil)
)

func (l *link) Attr(context.Context) (ns.Attr, error) { return attrOf(l.info), nil }

func (l *link) CacheTTL() time.Duration { tread, _ := l.t.bounds(l.path); return tread }

func (l *link) Readlink(ctx context.Context) (string, error) {
	if l.target != "" {
		return l.target, nil
	}
	s, ok := l.t.b.(remote.Symlinker)
	if !ok {
		return "", ns.Errorf(syscall.EINVAL, "%s on %s: the protocol has no symbolic links", l.path, l.t.key)
	}
	target, err := s.Readlink(ctx, l.path)
	if err == nil {
		l.target = target
	}
	return target, err
}

// Symlink makes name a symbolic link to target (taken verbatim).
func (d *dir) Symlink(ctx context.Context, target, name string) (ns.Node, error) {
	t := d.t
	p, err := d.child(name)
	if err != nil {
		return nil, err
	}
	if t.w == nil {
		return nil, t.readOnly("symlink " + p)
	}
	s, ok := t.w.(remote.Symlinker)
	if !ok {
		// What symlink(2) says of a file system without links.
		return nil, ns.Errorf(syscall.EPERM, "symlink %s: %s has no symbolic links", p, t.key)
	}
	if err := s.Symlink(ctx, target, p); err != nil {
		return nil, err
	}
	info := remote.Info{Name: name, Mode: os.ModeSymlink | 0o777, Size: int64(len(target)), Mtime: time.Now()}
	t.noteEntry(p, &info)
	t.dirChanged(d.remotePath())
	return &link{t: t, path: p, info: info, target: target}, nil
}

// Link makes name a hard link to target, a file of the same server.
func (d *dir) Link(ctx context.Context, target ns.Node, name string) (ns.Node, error) {
	t := d.t
	p, err := d.child(name)
	if err != nil {
		return nil, err
	}
	f, ok := target.(*file)
	if !ok || f.t != t {
		return nil, ns.Errorf(syscall.EXDEV, "link %s: the target is on another server", p)
	}
	if t.w == nil {
		return nil, t.readOnly("link " + p)
	}
	l, ok := t.w.(remote.Linker)
	if !ok {
		// What link(2) says of a file system without hard links.
		return nil, ns.Errorf(syscall.EPERM, "link %s: %s has no hard links", p, t.key)
	}
	// The server links what it has: our changes first.
	if err := f.writeBack(ctx); err != nil {
		return nil, err
	}
	if err := l.Link(ctx, f.remotePath(), p); err != nil {
		return nil, err
	}
	f.mu.Lock()
	info := f.info
	f.info.Nlink = max(f.info.Nlink, 1) + 1
	f.mu.Unlock()
	info.Name, info.Nlink = name, max(info.Nlink, 1)+1
	t.noteEntry(p, &info)
	t.dirChanged(d.remotePath())
	return t.node(p, info, time.Now(), t.c.epoch.Load()), nil
}

// Statfs reports the figures of the server's file system holding d.
func (d *dir) Statfs(ctx context.Context) (ns.FSInfo, error) {
	return d.t.statfs(ctx, d.remotePath())
}

func (f *file) Statfs(ctx context.Context) (ns.FSInfo, error) {
	return f.t.statfs(ctx, path.Dir(f.remotePath()))
}

// statfs asks the server; for a protocol or server that cannot say
// (FTP, HTTP) it reports the file system of the cache, where writes land
// first, with NAME_MAX: df then shows what can be written now, not 0.
func (t *tree) statfs(ctx context.Context, p string) (ns.FSInfo, error) {
	s, ok := t.b.(remote.Statfser)
	if !ok {
		return t.c.localFSInfo(), nil
	}
	fi, err := s.Statfs(ctx, p)
	switch {
	case ns.Errno(err) == syscall.ENOTSUP || ns.Errno(err) == syscall.ENOSYS:
		return t.c.localFSInfo(), nil
	case err != nil:
		return ns.FSInfo{}, err
	}
	out := ns.FSInfo{Bsize: fi.Bsize, Blocks: fi.Blocks, Bfree: fi.Bfree, Bavail: fi.Bavail,
		Files: fi.Files, Ffree: fi.Ffree, Namelen: fi.Namelen}
	if out.Namelen == 0 || out.Namelen > maxName {
		out.Namelen = maxName
	}
	if out.Bsize == 0 {
		out.Bsize = ns.DefaultFSInfo().Bsize
	}
	return out, nil
}

// localFSInfo is the figures of the cache directory's file system.
func (c *Cache) localFSInfo() ns.FSInfo {
	var st syscall.Statfs_t
	if err := syscall.Statfs(c.dir, &st); err != nil {
		return ns.DefaultFSInfo()
	}
	return ns.FSInfo{Bsize: uint32(st.Bsize), Blocks: st.Blocks, Bfree: st.Bfree, Bavail: st.Bavail,
		Files: st.Files, Ffree: st.Ffree, Namelen: maxName}
}
