// Package fuse is the FUSE door: it shows a namespace as a mounted file
// system. It knows nothing about protocols; it translates FUSE requests to
// the ns interfaces and errors to errnos, logging why.
package fuse

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"wirefs/internal/ns"
)

// Options configure a mount.
type Options struct {
	AllowOther  bool          // let other users in (needs user_allow_other for non-root)
	AttrTimeout time.Duration // kernel cache of attributes and entries of stable nodes
	DebugFUSE   bool          // log every FUSE request
	Log         *slog.Logger
}

// Server is a running mount.
type Server struct {
	*fuse.Server
	root *node
}

// Mount mounts n at dir and returns the running server.
func Mount(dir string, n *ns.Namespace, o Options) (*Server, error) {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	zero := time.Duration(0)
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real // /proc shows descriptors under the real path
	}
	root := &node{n: n.Root(), o: &o, d: newDoor(dir)}
	srv, err := fs.Mount(dir, root, &fs.Options{
		EntryTimeout:    &zero, // per node, in Lookup/Getattr
		AttrTimeout:     &zero,
		NegativeTimeout: &zero,
		// Mode 0 is a mode (open(O_CREAT, 0), chmod 0): go-fuse would
		// show it as 0644. Every node says its mode.
		NullPermissions: true,
		MountOptions: fuse.MountOptions{
			FsName:     "wirefs",
			Name:       "wirefs",
			AllowOther: o.AllowOther,
			// The largest requests the kernel allows: go-fuse caps this
			// at /proc/sys/fs/fuse/max_pages_limit (1 MiB by default).
			// 8 MiB bounds the buffer each request reader keeps.
			MaxWrite:    8 << 20,
			DirectMount: true, // mount(2) as root, fusermount3 otherwise
			EnablePoll:  true, // stream files report readiness (poll.go)
			Debug:       o.DebugFUSE,
			Options:     permissionChecks(o.AllowOther),
		},
	})
	if err != nil {
		return nil, err
	}
	return &Server{Server: srv, root: root}, nil
}

// permissionChecks: a mount that lets other users in has the kernel check
// every access against the mode and owner each node shows
// (default_permissions), as for a local file system; without it, anyone
// could read what the daemon's user may, with the daemon's credentials.
func permissionChecks(allowOther bool) []string {
	if allowOther {
		return []string{"default_permissions"}
	}
	return nil
}

// DropKernelCaches tells the kernel to forget every name, attribute and
// page it cached from this mount (SIGHUP, the control file), so that the
// next access asks the daemon, whose caches were dropped too.
func (s *Server) DropKernelCaches() {
	var walk func(in *fs.Inode)
	walk = func(in *fs.Inode) {
		for name, child := range in.Children() {
			walk(child)
			in.NotifyEntry(name)
		}
		in.NotifyContent(0, 0)
	}
	walk(&s.root.Inode)
}

// node is a namespace node seen through FUSE.
type node struct {
	fs.Inode
	n ns.Node
	o *Options
	d *door
	// shown is the length of a generated file's content that the
	// kernel holds in its page cache (generated.go).
	shown shownSize
}

var (
	_ fs.NodeLookuper    = (*node)(nil)
	_ fs.NodeReaddirer   = (*node)(nil)
	_ fs.NodeGetattrer   = (*node)(nil)
	_ fs.NodeSetattrer   = (*node)(nil)
	_ fs.NodeOpener      = (*node)(nil)
	_ fs.NodeCreater     = (*node)(nil)
	_ fs.NodeUnlinker    = (*node)(nil)
	_ fs.NodeRmdirer     = (*node)(nil)
	_ fs.NodeMkdirer     = (*node)(nil)
	_ fs.NodeRenamer     = (*node)(nil)
	_ fs.NodeFsyncer     = (*node)(nil)
	_ fs.NodeGetxattrer  = (*node)(nil)
	_ fs.NodeListxattrer = (*node)(nil)
	_ fs.NodeSetxattrer  = (*node)(nil)
	_ fs.NodeSymlinker   = (*node)(nil)
	_ fs.NodeReadlinker  = (*node)(nil)
	_ fs.NodeLinker      = (*node)(nil)
	_ fs.NodeStatfser    = (*node)(nil)
)

// No file here has extended attributes. ENOSYS, unlike ENODATA, makes the
// kernel stop asking for the whole mount: `ls -l` asks for ACLs and
// security labels of every file, which would cost a round trip each.
func (n *node) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	return 0, syscall.ENOSYS
}

func (n *node) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	return 0, syscall.ENOSYS
}

func (n *node) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	return syscall.ENOSYS
}

// Unlink removes a stored file. Network names cannot be removed (an
// endpoint goes away when its last descriptor is closed): EROFS.
func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	return n.remove(ctx, name, false)
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	return n.remove(ctx, name, true)
}

func (n *node) remove(ctx context.Context, name string, dir bool) syscall.Errno {
	r, ok := n.n.(ns.Remover)
	if !ok {
		return syscall.EROFS
	}
	if err := r.Remove(n.d.asking(ctx), name, dir); err != nil {
		return n.fail("remove", name, err)
	}
	return 0
}

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	s, ok := n.n.(ns.Symlinker)
	if !ok {
		return nil, syscall.EPERM // what symlink(2) says where links cannot be made
	}
	child, err := s.Symlink(ctx, target, name)
	if err != nil {
		return nil, n.fail("symlink", name, err)
	}
	return n.entry(ctx, name, child, out)
}

func (n *node) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	r, ok := n.n.(ns.Readlinker)
	if !ok {
		return nil, syscall.EINVAL // not a link
	}
	target, err := r.Readlink(ctx)
	if err != nil {
		return nil, n.fail("readlink", "", err)
	}
	return []byte(target), 0
}

// Link makes a hard link within one provider; across providers it is
// EXDEV, as between file systems.
func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	l, ok := n.n.(ns.Linker)
	if !ok {
		return nil, syscall.EPERM // what link(2) says where links cannot be made
	}
	child, err := l.Link(ctx, target.(*node).n, name)
	if err != nil {
		return nil, n.fail("link", name, err)
	}
	// The target's link count changed: drop the kernel's copy of its
	// attributes (offset -1: not its pages).
	target.EmbeddedInode().NotifyContent(-1, 0)
	return n.entry(ctx, name, child, out)
}

// Statfs reports the figures of the provider's file system (df, pathconf
// NAME_MAX), or honest defaults for names with none behind them.
func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	fi := ns.DefaultFSInfo()
	if s, ok := n.n.(ns.Statfser); ok {
		var err error
		if fi, err = s.Statfs(ctx); err != nil {
			return n.fail("statfs", "", err)
		}
	}
	out.Bsize, out.Frsize, out.NameLen = fi.Bsize, fi.Bsize, fi.Namelen
	out.Blocks, out.Bfree, out.Bavail = fi.Blocks, fi.Bfree, fi.Bavail
	out.Files, out.Ffree = fi.Files, fi.Ffree
	return 0
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	m, ok := n.n.(ns.Mkdirer)
	if !ok {
		return nil, syscall.ENOTSUP // names of endpoints are not made, they exist
	}
	child, err := m.Mkdir(n.d.asking(ctx), name, ns.FileMode(mode))
	if err != nil {
		return nil, n.fail("mkdir", name, err)
	}
	return n.entry(ctx, name, child, out)
}

// Rename moves a stored file within one provider; across providers it
// is EXDEV, so mv falls back to copy and remove.
func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	r, ok := n.n.(ns.Renamer)
	if !ok {
		return syscall.ENOTSUP // an address cannot be renamed
	}
	if flags != 0 {
		return syscall.EINVAL // RENAME_EXCHANGE, RENAME_NOREPLACE: no protocol offers them
	}
	to, ok := newParent.(*node).n.(ns.Dir)
	if !ok {
		return syscall.ENOTDIR
	}
	to, err := ns.Unalias(ctx, to)
	if err != nil {
		return n.fail("rename", newName, err)
	}
	if err := r.Rename(n.d.asking(ctx), name, to, newName); err != nil {
		return n.fail("rename", name, err)
	}
	return 0
}

// Fsync returns when the server has the file's data.
func (n *node) Fsync(ctx context.Context, fh fs.FileHandle, flags uint32) syscall.Errno {
	h, ok := fh.(*handle)
	if !ok {
		return 0
	}
	if s, ok := h.h.(ns.Syncer); ok {
		if err := s.Sync(ctx); err != nil {
			return n.fail("fsync", "", err)
		}
	}
	return 0
}

func volatile(n ns.Node) bool {
	v, ok := n.(ns.Volatile)
	return ok && v.Volatile()
}

// timeout is how long the kernel may cache n's entry and attributes:
// network endpoints never (every open must reach the daemon).
// Stored files bound it by their own consistency bound.
func (n *node) timeout(child ns.Node) time.Duration {
	if volatile(child) {
		return 0
	}
	if c, ok := child.(ns.Cached); ok {
		return c.CacheTTL()
	}
	return n.o.AttrTimeout
}

// fail turns a provider error into an errno and logs why. Expected
// outcomes (EINTR, a missing name) are logged at debug level only.
func (n *node) fail(op, name string, err error) syscall.Errno {
	errno := ns.Errno(err)
	lvl := slog.LevelWarn
	if errno == syscall.EINTR || (errno == syscall.ENOENT && op == "lookup") {
		lvl = slog.LevelDebug
	}
	p := strings.TrimPrefix(n.Path(nil)+"/"+name, "/")
	p = strings.TrimSuffix(p, "/")
	n.o.Log.Log(context.Background(), lvl, op+" failed", "path", p, "errno", errno.Error(), "why", err.Error())
	return errno
}

// fillAttr fills out with a, for the inode numbered ino: go-fuse fills
// in the number for GETATTR but not for SETATTR, and a zero there would
// become the file's inode number in the kernel (stat -c %i after chmod).
func fillAttr(a ns.Attr, ino uint64, out *fuse.Attr) {
	out.Ino = ino
	out.Mode = stableMode(a) | ns.UnixMode(a.Mode)
	switch {
	case a.Removed:
		out.Nlink = 0
	case a.Nlink > 0:
		out.Nlink = a.Nlink
	case a.Mode.IsDir():
		out.Nlink = 2
	default:
		out.Nlink = 1
	}
	out.Size = uint64(a.Size)
	out.Blocks = (out.Size + 511) / 512
	mtime, atime := a.Mtime, a.Atime
	if atime.IsZero() {
		atime = mtime
	}
	out.SetTimes(&atime, &mtime, &mtime)
	out.Uid, out.Gid = a.Uid, a.Gid
}

// fillAttr fills out with a, n's attributes, where a generated file
// shows the length of the content the kernel caches (generated.go): its
// size must stay that while the content is read from the page cache.
func (n *node) fillAttr(a ns.Attr, out *fuse.Attr) {
	if size, ok := n.shown.get(); ok {
		a.Size = size
	}
	fillAttr(a, n.StableAttr().Ino, out)
}

func stableMode(a ns.Attr) uint32 {
	switch {
	case a.Mode.IsDir():
		return syscall.S_IFDIR
	case a.Mode&os.ModeSymlink != 0:
		return syscall.S_IFLNK
	}
	return syscall.S_IFREG
}

func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	d, ok := n.n.(ns.Dir)
	if !ok {
		return nil, syscall.ENOTDIR
	}
	child, err := d.Lookup(n.d.asking(ctx), name)
	if err != nil {
		return nil, n.fail("lookup", name, err)
	}
	return n.entry(ctx, name, child, out)
}

// entry fills out for child, named name in n, and returns its inode.
func (n *node) entry(ctx context.Context, name string, child ns.Node, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	a, err := child.Attr(ctx)
	if err != nil {
		return nil, n.fail("stat", name, err)
	}
	t := n.timeout(child)
	out.SetEntryTimeout(t)
	out.SetAttrTimeout(t)
	// Reuse the inode a name already has, so that the kernel's dentry
	// stays valid (one LOOKUP per open, not two) and its caches live on —
	// except for a network name whose inode has open handles: each open
	// of such a name gets an inode of its own, because holds() tells open
	// files apart by inode. Endpoint nodes are made from the name alone,
	// so the old node is as good as the new one; a keyed node (a path of
	// an fs portal) is not, when the inode came by a rename.
	in := n.GetChild(name)
	if in == nil || in.StableAttr().Mode != stableMode(a) || (volatile(child) && !n.d.idle(in.StableAttr().Ino)) ||
		!ns.SameKey(in.Operations().(*node).n, child) {
		ino := n.d.numbers.forNew(n.StableAttr().Ino, name)
		in = n.NewInode(ctx, &node{n: child, o: n.o, d: n.d}, fs.StableAttr{Mode: stableMode(a), Ino: ino})
	}
	in.Operations().(*node).fillAttr(a, &out.Attr)
	return in, 0
}

func (n *node) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	d, ok := n.n.(ns.Dir)
	if !ok {
		return nil, syscall.ENOTDIR
	}
	ents, err := d.ReadDir(n.d.asking(ctx))
	if err != nil {
		return nil, n.fail("readdir", "", err)
	}
	out := make([]fuse.DirEntry, len(ents))
	for i, e := range ents {
		mode := stableMode(e.Attr)
		out[i] = fuse.DirEntry{Name: e.Name, Mode: mode}
		if in := n.GetChild(e.Name); in != nil && in.StableAttr().Mode == mode {
			out[i].Ino = in.StableAttr().Ino
		} else {
			out[i].Ino = n.d.numbers.listed(n.StableAttr().Ino, e.Name)
		}
	}
	return fs.NewListDirStream(out), 0
}

func (n *node) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	a, err := n.n.Attr(ctx)
	if err != nil {
		return n.fail("stat", "", err)
	}
	n.fillAttr(a, &out.Attr)
	out.SetTimeout(n.timeout(n.n))
	return 0
}

// Setattr changes the attributes of stored files (truncate, chmod,
// utimes). Other nodes accept and ignore changes: O_TRUNC on a stream
// (`echo hi > tcp/host:port`) must not fail.
func (n *node) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	s, ok := n.n.(ns.Setattrer)
	if !ok {
		return n.Getattr(ctx, fh, out)
	}
	var change ns.SetAttr
	if size, ok := in.GetSize(); ok {
		sz := int64(size)
		change.Size = &sz
	}
	if mode, ok := in.GetMode(); ok {
		m := ns.FileMode(mode)
		change.Mode = &m
	}
	if mtime, ok := in.GetMTime(); ok {
		change.Mtime = &mtime
	}
	if atime, ok := in.GetATime(); ok {
		change.Atime = &atime
	}
	if uid, ok := in.GetUID(); ok {
		change.Uid = &uid
	}
	if gid, ok := in.GetGID(); ok {
		change.Gid = &gid
	}
	var h ns.Handle
	if fh, ok := fh.(*handle); ok {
		h = fh.h
	}
	a, err := s.Setattr(n.d.asking(ctx), h, change)
	if err != nil {
		return n.fail("setattr", "", err)
	}
	if a.Mode.IsDir() && (change.Uid != nil || change.Gid != nil) {
		// A directory's owner may be its files' (a VIF's): drop the
		// kernel's copy of its children's attributes (offset -1: not
		// their pages).
		for _, child := range n.Children() {
			child.NotifyContent(-1, 0)
		}
	}
	n.fillAttr(a, &out.Attr)
	out.SetTimeout(n.timeout(n.n))
	return 0
}

// ReleaseLag bounds how long after close(2) returns the kernel may take
// to send FUSE RELEASE for the descriptor (it is sent asynchronously).
const ReleaseLag = 500 * time.Millisecond

func (d *door) caller(ctx context.Context) ns.Caller {
	c, ok := fuse.FromContext(ctx)
	if !ok {
		// Never for a kernel request; if it ever were, the caller
		// gets no one's rights rather than root's (uid 0).
		return ns.Caller{Uid: ns.NobodyID, Gid: ns.NobodyID, ReleaseLag: ReleaseLag}
	}
	pid := c.Pid
	return ns.Caller{Pid: pid, Uid: c.Uid, Gid: c.Gid, ReleaseLag: ReleaseLag,
		Holds: func(h ns.Handle) bool { return d.holds(pid, h) }}
}

// asking is ctx carrying the request's caller (ns.WithCaller).
func (d *door) asking(ctx context.Context) context.Context {
	return ns.WithCaller(ctx, func() ns.Caller { return d.caller(ctx) })
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	o, ok := n.n.(ns.Opener)
	if !ok {
		if _, isDir := n.n.(ns.Dir); isDir {
			return nil, 0, syscall.EISDIR
		}
		return nil, 0, syscall.EACCES
	}
	h, err := o.Open(ctx, n.d.caller(ctx), int(flags))
	if err != nil {
		return nil, 0, n.fail("open", "", err)
	}
	ino := n.StableAttr().Ino
	fh := &handle{h: h, n: n, ino: ino}
	alone := n.d.opened(h, ino)
	if _, seekable := h.(ns.ReaderAt); seekable {
		if g, ok := h.(ns.Generated); volatile(n.n) || ok && g.Generated() {
			// Made at open (.wirefs/stats, a VIF's rate): its size is
			// not known beforehand, so direct I/O, unless the content
			// can go to the page cache now (generated.go); and a file
			// with nothing to flush spares close its round trip.
			fl := uint32(fuse.FOPEN_DIRECT_IO)
			if !volatile(n.n) && alone && n.cacheGenerated(ctx, h, flags) {
				fl = fuse.FOPEN_KEEP_CACHE
			}
			if _, flushes := h.(ns.Flusher); !flushes {
				fl |= fuse.FOPEN_NOFLUSH
			}
			return fh, fl, 0
		}
		fl := fh.storedFileFlags(flags)
		return fh.withPassthrough(), fl, 0
	}
	// Streams: no page cache, no file position, and reads and writes on
	// one open file run in parallel (a blocked read must not hold up a
	// write on the same descriptor, as in the chat server). Closing a
	// descriptor has nothing to flush, so the kernel need not ask.
	return fh, fuse.FOPEN_DIRECT_IO | fuse.FOPEN_STREAM | fuse.FOPEN_NONSEEKABLE |
		fuse.FOPEN_PARALLEL_DIRECT_WRITES | fuse.FOPEN_NOFLUSH, 0
}

// Create is open with O_CREAT of a name the kernel has not looked up yet.
// Stored-file directories create the file; in the network directories
// names exist on demand, so it is a lookup followed by an open.
func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	if c, ok := n.n.(ns.Creator); ok {
		child, h, err := c.Create(ctx, n.d.caller(ctx), name, int(flags), ns.FileMode(mode))
		if err != nil {
			return nil, nil, 0, n.fail("create", name, err)
		}
		in, errno := n.entry(ctx, name, child, out)
		if errno != 0 {
			h.Close()
			return nil, nil, 0, errno
		}
		ino := in.StableAttr().Ino
		n.d.opened(h, ino)
		fh := &handle{h: h, n: in.Operations().(*node), ino: ino}
		fl := fh.storedFileFlags(flags)
		return in, fh.withPassthrough(), fl, 0
	}
	child, errno := n.Lookup(ctx, name, out)
	if errno != 0 {
		if errno == syscall.ENOENT {
			errno = syscall.EROFS
		}
		return nil, nil, 0, errno
	}
	fh, fl, errno := child.Operations().(*node).Open(ctx, flags)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	return child, fh, fl, 0
}

// handle serves an open namespace handle.
type handle struct {
	h   ns.Handle
	n   *node
	ino uint64 // the inode it was opened on
	// stored: a stored file's handle, opened in io mode (iomode.go)
	// with passthrough fd when that is ioPassthrough.
	stored    bool
	io        ioMode
	fd        int
	appending bool // O_APPEND: direct I/O, and readers' pages dropped after each write
	poll      pollState
}

var (
	_ fs.FileReader          = (*handle)(nil)
	_ fs.FileWriter          = (*handle)(nil)
	_ fs.FileReleaser        = (*handle)(nil)
	_ fs.FileFlusher         = (*handle)(nil)
	_ fs.FilePassthroughFder = passthroughHandle{}
)

// storedFileFlags chooses the I/O mode of a stored file's handle opened
// with flags (iomode.go) and returns its open flags: the kernel's page
// cache serves repeated reads, and keeps the pages of earlier opens when
// the provider says the file has not changed since. A handle that cannot
// write has nothing to flush at close(2), so the kernel need not ask (one
// round trip less per file for grep -r).
func (h *handle) storedFileFlags(flags uint32) uint32 {
	fd, canPassthrough := passthroughFd(h.h)
	_, writable := h.h.(ns.WriterAt)
	h.appending = writable && flags&syscall.O_APPEND != 0
	h.stored, h.fd = true, fd
	h.io = h.n.d.io.choose(h.ino, canPassthrough, h.appending)
	var fl uint32
	if p, ok := h.h.(ns.PageCacher); ok && p.KeepPageCache() {
		fl |= fuse.FOPEN_KEEP_CACHE
	}
	if h.io == ioDirect {
		fl = fuse.FOPEN_DIRECT_IO // a reader while appenders write (iomode.go)
	}
	if !writable {
		fl |= fuse.FOPEN_NOFLUSH
	} else if h.appending {
		// The cache puts each O_APPEND write at its own end of
		// file; the kernel's buffered write copies it into the
		// page cache where the kernel thinks the end is. Readers
		// of a file that several processes append to saw a NUL
		// byte at a record's start that way (the conformance
		// stress); direct I/O keeps appends out of the page cache.
		fl |= fuse.FOPEN_DIRECT_IO
	}
	return fl
}

// passthroughHandle is a handle the kernel reads with passthrough: the
// only kind that implements fs.FilePassthroughFder. It must be a type of
// its own: once one open of an inode has a backing file, go-fuse gives
// every later open of that inode the same backing (fs/bridge.go
// addBackingID) unless its handle lacks the interface — and a writer's
// writes would then go to the local copy behind the cache's back, never
// to be written back (records appended that way were lost).
type passthroughHandle struct{ *handle }

// PassthroughFd lets the kernel read a fully cached file straight from
// its local copy (FUSE passthrough, root only): the data path costs
// nothing.
// A handle that joins other passthrough opens has no fd of its own to
// offer (go-fuse uses theirs).
func (h passthroughHandle) PassthroughFd() (int, bool) { return h.fd, h.fd > 0 }

// withPassthrough returns h as go-fuse should see it.
func (h *handle) withPassthrough() fs.FileHandle {
	if h.io == ioPassthrough {
		return passthroughHandle{h}
	}
	return h
}

// passthroughFd is the local copy's descriptor when h can be read with
// passthrough: a kernel object that is a regular file (the kernel refuses
// sockets) that nobody writes through the mount (iomode.go).
func passthroughFd(h ns.Handle) (int, bool) {
	k, ok := h.(ns.KernelObject)
	if !ok {
		return 0, false
	}
	if u, ok := h.(ns.Unwritable); !ok || !u.Unwritable() {
		return 0, false
	}
	f, err := k.KernelFile()
	if err != nil {
		return 0, false
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return 0, false
	}
	return int(f.Fd()), true
}

func (h *handle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if h.wouldBlock(ctx, unix.POLLIN) {
		return nil, syscall.EAGAIN
	}
	var n int
	var err error
	switch r := h.h.(type) {
	case ns.ReaderAt:
		n, err = r.ReadAt(ctx, dest, off)
	case ns.Reader:
		n, err = r.Read(ctx, dest)
	default:
		return nil, syscall.EBADF
	}
	if err != nil && n == 0 {
		return nil, h.n.fail("read", "", err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

func (h *handle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	if h.wouldBlock(ctx, unix.POLLOUT) {
		return 0, syscall.EAGAIN
	}
	var n int
	var err error
	switch w := h.h.(type) {
	case ns.WriterAt:
		n, err = w.WriteAt(ctx, data, off)
	case ns.Writer:
		n, err = w.Write(ctx, data)
	default:
		return 0, syscall.EBADF
	}
	if err != nil && n == 0 {
		return 0, h.n.fail("write", "", err)
	}
	if h.appending && h.n.d.io.cached(h.ino) {
		// The bytes landed at the cache's end of file, past what
		// readers of the page cache hold as the last page (zeros
		// beyond the old end): drop their pages, or they read a
		// record of NULs (the conformance stress saw one).
		h.n.NotifyContent(0, 0)
	}
	return uint32(n), 0
}

// Flush runs at every close(2) of a descriptor, before close returns;
// the handle lives on until the last descriptor is gone (Release), as
// for any file. Stored files write back here, so close reports errors.
func (h *handle) Flush(ctx context.Context) syscall.Errno {
	if f, ok := h.h.(ns.Flusher); ok {
		if err := f.Flush(ctx); err != nil {
			return h.n.fail("flush", "", err)
		}
	}
	return 0
}

func (h *handle) Release(ctx context.Context) syscall.Errno {
	h.n.d.released(h.h, h.ino)
	if h.stored {
		h.n.d.io.release(h.ino, h.io)
	}
	if err := h.h.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		h.n.o.Log.Debug("close", "path", h.n.Path(nil), "err", err)
	}
	return 0
}
