package portal

import (
	"context"
	"errors"
	"io"
	"os"
	"path"
	"slices"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"wirefs/internal/ns"
)

// FS returns the directory of an fs portal: the local tree at root, where
// every lookup, listing and open is made with the asker's credentials
// (as) and resolved with openat2(RESOLVE_BENEATH), so that a program
// confined to the namespace reaches exactly that tree and exactly what
// its user could read or change there directly. Opened files are the
// real files (kernel objects). Files can be written, created, truncated,
// removed and renamed, directories made and removed, modes and times set
// — all as the asker, so the tree's own permissions decide.
func (p *Provider) FS(root string) (ns.Dir, error) {
	st, err := os.Stat(root)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, ns.Errorf(syscall.ENOTDIR, "%s: not a directory", root)
	}
	return &fsDir{t: &fsTree{root: root}, rel: "."}, nil
}

type fsTree struct{ root string }

// asker is who asks in ctx (ns.CallerOf). Lookups and listings need to
// know: a door that does not say is refused.
func asker(ctx context.Context) (identity, error) {
	c, ok := ns.CallerOf(ctx)
	if !ok {
		return identity{}, ns.Errorf(syscall.EACCES, "fs portal: the door did not say who asks")
	}
	return opener(c), nil
}

// beneath opens rel (relative to the root) with flags as the calling
// thread's credentials allow, never resolving to anything outside the
// tree: the root itself is opened by its full path first, so the asker
// needs search permission on the root's ancestors too, as for a direct
// open.
func (t *fsTree) beneath(rel string, flags int) (int, error) {
	root, err := unix.Open(t.root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(root)
	return openat2(root, rel, flags)
}

func openat2(dir int, rel string, flags int, perm ...uint32) (int, error) {
	how := &unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS}
	if len(perm) > 0 {
		how.Mode = uint64(perm[0]) // with O_CREAT
	}
	for {
		fd, err := unix.Openat2(dir, rel, how)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// failed makes an error of a system call's on rel, saying why.
func (t *fsTree) failed(op, rel string, err error) error {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return err
	}
	if errno == syscall.EXDEV {
		return ns.OpError(syscall.EACCES, "fs portal "+t.root, op, rel, errors.New("a symbolic link leads out of the tree"))
	}
	return ns.OpError(errno, "fs portal "+t.root, op, rel, err)
}

// stat is the attributes of rel, following symbolic links within the
// tree, as the calling thread may see them.
func (t *fsTree) stat(rel string) (ns.Attr, error) {
	fd, err := t.beneath(rel, unix.O_PATH)
	if err != nil {
		return ns.Attr{}, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return ns.Attr{}, err
	}
	return attrOf(&st), nil
}

func attrOf(st *unix.Stat_t) ns.Attr {
	m := ns.FileMode(st.Mode)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= os.ModeDir
	case unix.S_IFREG:
	default:
		m |= os.ModeIrregular
	}
	return ns.Attr{Mode: m, Size: st.Size, Uid: st.Uid, Gid: st.Gid, Nlink: uint32(st.Nlink),
		Mtime: time.Unix(st.Mtim.Unix()), Atime: time.Unix(st.Atim.Unix())}
}

// node is a name of the tree, a directory or a file.
func (t *fsTree) node(rel string, a ns.Attr) ns.Node {
	if a.Mode.IsDir() {
		return &fsDir{t: t, rel: rel}
	}
	return &fsFile{t: t, rel: rel}
}

// attr is rel's attributes as the asker in ctx sees them, or as the
// daemon when no asker is known (fstat of a descriptor: the node was
// reached by a lookup made as its opener).
func (t *fsTree) attr(ctx context.Context, rel string) (ns.Attr, error) {
	var a ns.Attr
	stat := func() (err error) { a, err = t.stat(rel); return err }
	var err error
	if c, ok := ns.CallerOf(ctx); ok {
		err = as(opener(c), stat)
	} else {
		err = stat()
	}
	if err != nil {
		return ns.Attr{}, t.failed("stat", rel, err)
	}
	return a, nil
}

type fsDir struct {
	t   *fsTree
	rel string
}

// Volatile: names are looked up afresh by every asker, as that asker.
func (d *fsDir) Volatile() bool { return true }

func (d *fsDir) Attr(ctx context.Context) (ns.Attr, error) { return d.t.attr(ctx, d.rel) }

func (d *fsDir) Lookup(ctx context.Context, name string) (ns.Node, error) {
	id, err := asker(ctx)
	if err != nil {
		return nil, err
	}
	rel := path.Join(d.rel, name)
	var a ns.Attr
	if err := as(id, func() (err error) { a, err = d.t.stat(rel); return err }); err != nil {
		return nil, d.t.failed("lookup", rel, err)
	}
	return d.t.node(rel, a), nil
}

// ReadDir lists the directory as the asker: reading it needs their read
// permission, each entry's attributes their search permission. Entries
// whose symbolic links lead out of the tree (or nowhere) are left out.
func (d *fsDir) ReadDir(ctx context.Context) ([]ns.DirEntry, error) {
	id, err := asker(ctx)
	if err != nil {
		return nil, err
	}
	var out []ns.DirEntry
	err = as(id, func() error {
		fd, err := d.t.beneath(d.rel, unix.O_RDONLY|unix.O_DIRECTORY)
		if err != nil {
			return err
		}
		dir := os.NewFile(uintptr(fd), d.rel)
		defer dir.Close()
		names, err := dir.Readdirnames(-1)
		if err != nil {
			return err
		}
		slices.Sort(names)
		for _, name := range names {
			if a, err := d.t.stat(path.Join(d.rel, name)); err == nil {
				out = append(out, ns.DirEntry{Name: name, Attr: a})
			}
		}
		return nil
	})
	if err != nil {
		return nil, d.t.failed("readdir", d.rel, err)
	}
	return out, nil
}

type fsFile struct {
	t   *fsTree
	rel string
}

var (
	_ ns.Stored    = (*fsFile)(nil)
	_ ns.Setattrer = (*fsFile)(nil)
	_ ns.Creator   = (*fsDir)(nil)
	_ ns.Mkdirer   = (*fsDir)(nil)
	_ ns.Remover   = (*fsDir)(nil)
	_ ns.Renamer   = (*fsDir)(nil)
	_ ns.WriterAt  = (*file)(nil)
)

// Key: a node of the tree is its path in it (ns.Keyed: a rename makes
// the inode under the new name a node of another path).
func (f *fsFile) Key() string { return f.rel }

// Key is the directory's path in the tree.
func (d *fsDir) Key() string { return d.rel }

// Stored: opening a local file has no side effect (a door may open it
// again by name, as it does for remote files).
func (f *fsFile) Stored() bool { return true }

// Volatile: every open reaches the provider, to be made as its opener.
func (f *fsFile) Volatile() bool { return true }

func (f *fsFile) Attr(ctx context.Context) (ns.Attr, error) { return f.t.attr(ctx, f.rel) }

// openFlags are the open flags an fs portal passes on: the access mode
// and what acts on the file itself.
const openFlags = unix.O_ACCMODE | unix.O_APPEND | unix.O_TRUNC | unix.O_NOATIME | unix.O_SYNC | unix.O_DSYNC

// Open opens the file as the opener, with the opener's access mode: the
// descriptor is the real file. Only regular files are opened (O_NONBLOCK
// at open keeps a FIFO or device from blocking the daemon before the
// type is known).
func (f *fsFile) Open(ctx context.Context, c ns.Caller, flags int) (ns.Handle, error) {
	var fd int
	err := as(opener(c), func() (err error) {
		fd, err = f.t.beneath(f.rel, flags&openFlags|unix.O_NONBLOCK)
		return err
	})
	if err != nil {
		return nil, f.t.failed("open", f.rel, err)
	}
	return regularFile(fd, f.t, f.rel)
}

// regularFile makes the handle of fd, refusing what is not a regular file.
func regularFile(fd int, t *fsTree, rel string) (ns.Handle, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, ns.OpError(syscall.EOPNOTSUPP, "fs portal "+t.root, "open", rel, errors.New("not a regular file"))
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &file{f: os.NewFile(uintptr(fd), rel)}, nil
}

// Setattr truncates, changes the mode, the owner or the times of the file
// as the asker: through the handle it came by (whose open mode then
// decides, as for ftruncate), or by name.
func (f *fsFile) Setattr(ctx context.Context, h ns.Handle, a ns.SetAttr) (ns.Attr, error) {
	id, err := asker(ctx)
	if err != nil {
		return ns.Attr{}, err
	}
	var out ns.Attr
	err = as(id, func() error {
		var fd int
		if fh, ok := h.(*file); ok {
			fd = int(fh.f.Fd())
		} else {
			flags := unix.O_PATH
			if a.Size != nil {
				flags = unix.O_WRONLY | unix.O_NONBLOCK
			}
			var err error
			if fd, err = f.t.beneath(f.rel, flags); err != nil {
				return err
			}
			defer unix.Close(fd)
		}
		if err := setattr(fd, a); err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return err
		}
		out = attrOf(&st)
		return nil
	})
	if err != nil {
		return ns.Attr{}, f.t.failed("setattr", f.rel, err)
	}
	return out, nil
}

// setattr applies a to fd. chmod, chown and utimensat name it through
// /proc/self/fd (an O_PATH descriptor has no other way), which never
// leaves the tree: it is the file already opened beneath the root.
func setattr(fd int, a ns.SetAttr) error {
	if a.Size != nil {
		if err := unix.Ftruncate(fd, *a.Size); err != nil {
			return err
		}
	}
	name := "/proc/self/fd/" + strconv.Itoa(fd)
	if a.Mode != nil {
		if err := unix.Chmod(name, ns.UnixMode(*a.Mode)); err != nil {
			return err
		}
	}
	if a.Uid != nil || a.Gid != nil {
		uid, gid := -1, -1
		if a.Uid != nil {
			uid = int(*a.Uid)
		}
		if a.Gid != nil {
			gid = int(*a.Gid)
		}
		if err := unix.Chown(name, uid, gid); err != nil {
			return err
		}
	}
	if a.Atime != nil || a.Mtime != nil {
		ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Nsec: unix.UTIME_OMIT}}
		if a.Atime != nil {
			ts[0] = unix.NsecToTimespec(a.Atime.UnixNano())
		}
		if a.Mtime != nil {
			ts[1] = unix.NsecToTimespec(a.Mtime.UnixNano())
		}
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, name, ts, 0); err != nil {
			return err
		}
	}
	return nil
}

// inDir runs fn as id with a descriptor of directory d (opened beneath
// the root), in which fn acts on single names: a name has no slash, so
// nothing fn does leaves the tree.
func (d *fsDir) inDir(id identity, op, name string, fn func(dirfd int) error) error {
	err := as(id, func() error {
		dirfd, err := d.t.beneath(d.rel, unix.O_PATH|unix.O_DIRECTORY)
		if err != nil {
			return err
		}
		defer unix.Close(dirfd)
		return fn(dirfd)
	})
	if err != nil {
		return d.t.failed(op, path.Join(d.rel, name), err)
	}
	return nil
}

// inDirAsAsker is inDir as the asker in ctx.
func (d *fsDir) inDirAsAsker(ctx context.Context, op, name string, fn func(dirfd int) error) error {
	id, err := asker(ctx)
	if err != nil {
		return err
	}
	return d.inDir(id, op, name, fn)
}

// Create makes a new file as the opener, with exactly perm (the kernel
// has applied the opener's umask; the daemon's own must not apply again).
func (d *fsDir) Create(ctx context.Context, c ns.Caller, name string, flags int, perm os.FileMode) (ns.Node, ns.Handle, error) {
	rel := path.Join(d.rel, name)
	var fd int
	err := d.inDir(opener(c), "create", name, func(dirfd int) (err error) {
		fd, err = openat2(dirfd, name, flags&(openFlags|unix.O_EXCL)|unix.O_CREAT|unix.O_NONBLOCK, ns.UnixMode(perm))
		if err != nil {
			return err
		}
		if err := unix.Fchmod(fd, ns.UnixMode(perm)); err != nil {
			unix.Close(fd)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	h, err := regularFile(fd, d.t, rel)
	if err != nil {
		return nil, nil, err
	}
	return &fsFile{t: d.t, rel: rel}, h, nil
}

// Mkdir makes a directory as the asker, with exactly perm.
func (d *fsDir) Mkdir(ctx context.Context, name string, perm os.FileMode) (ns.Node, error) {
	err := d.inDirAsAsker(ctx, "mkdir", name, func(dirfd int) error {
		if err := unix.Mkdirat(dirfd, name, ns.UnixMode(perm)); err != nil {
			return err
		}
		return unix.Fchmodat(dirfd, name, ns.UnixMode(perm), 0)
	})
	if err != nil {
		return nil, err
	}
	return &fsDir{t: d.t, rel: path.Join(d.rel, name)}, nil
}

// Remove unlinks a file or (dir) removes an empty directory as the asker.
func (d *fsDir) Remove(ctx context.Context, name string, dir bool) error {
	flags := 0
	if dir {
		flags = unix.AT_REMOVEDIR
	}
	return d.inDirAsAsker(ctx, "remove", name, func(dirfd int) error { return unix.Unlinkat(dirfd, name, flags) })
}

// Rename renames within the tree as the asker; to another portal or
// provider it is EXDEV (mv then copies).
func (d *fsDir) Rename(ctx context.Context, name string, to ns.Dir, toName string) error {
	td, ok := to.(*fsDir)
	if !ok || td.t.root != d.t.root {
		return ns.Errorf(syscall.EXDEV, "fs portal %s: rename out of the tree", d.t.root)
	}
	return d.inDirAsAsker(ctx, "rename", name, func(dirfd int) error {
		todir, err := d.t.beneath(td.rel, unix.O_PATH|unix.O_DIRECTORY)
		if err != nil {
			return err
		}
		defer unix.Close(todir)
		return unix.Renameat(dirfd, name, todir, toName)
	})
}

// file is an open file of an fs portal: the local file itself.
type file struct{ f *os.File }

var (
	_ ns.KernelObject = (*file)(nil)
	_ ns.ReaderAt     = (*file)(nil)
)

func (h *file) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	n, err := h.f.ReadAt(p, off)
	if errors.Is(err, io.EOF) {
		err = nil // a short read is the end of the file
	}
	return n, err
}

// WriteAt writes at off; on a file opened with O_APPEND, at its end
// (pwrite's rule on Linux), as a local write(2) would.
func (h *file) WriteAt(_ context.Context, p []byte, off int64) (int, error) {
	rc, err := h.f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	cerr := rc.Control(func(fd uintptr) {
		for {
			n, err = unix.Pwrite(int(fd), p, off)
			if err != unix.EINTR {
				return
			}
		}
	})
	return n, errors.Join(cerr, err)
}

func (h *file) KernelFile() (*os.File, error) { return h.f, nil }

func (h *file) Close() error { return h.f.Close() }
