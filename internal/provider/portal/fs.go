package portal

import (
	"context"
	"errors"
	"io"
	"os"
	"path"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"wirefs/internal/ns"
)

// FS returns the directory of an fs portal: the local tree at root, where
// every lookup, listing and open is made with the asker's credentials
// (as) and resolved with openat2(RESOLVE_BENEATH), so that a program
// confined to the namespace reaches exactly that tree and exactly what
// its user could read there directly. Opened files are the real files
// (kernel objects); fs portals are read-only.
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

func openat2(dir int, rel string, flags int) (int, error) {
	for {
		fd, err := unix.Openat2(dir, rel, &unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC),
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS})
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
	m := os.FileMode(st.Mode & 0o777)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= os.ModeDir
	case unix.S_IFREG:
	default:
		m |= os.ModeIrregular
	}
	if st.Mode&unix.S_ISUID != 0 {
		m |= os.ModeSetuid
	}
	if st.Mode&unix.S_ISGID != 0 {
		m |= os.ModeSetgid
	}
	if st.Mode&unix.S_ISVTX != 0 {
		m |= os.ModeSticky
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

// Volatile: every open reaches the provider, to be made as its opener.
func (f *fsFile) Volatile() bool { return true }

func (f *fsFile) Attr(ctx context.Context) (ns.Attr, error) { return f.t.attr(ctx, f.rel) }

// Open opens the file as the opener: the descriptor is the real file.
// Only regular files are opened, and only for reading (O_NONBLOCK at
// open keeps a FIFO or device from blocking the daemon before the type
// is known).
func (f *fsFile) Open(ctx context.Context, c ns.Caller, flags int) (ns.Handle, error) {
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY {
		return nil, ns.OpError(syscall.EROFS, "fs portal "+f.t.root, "open", f.rel, errors.New("fs portals are read-only"))
	}
	var fd int
	err := as(opener(c), func() (err error) {
		fd, err = f.t.beneath(f.rel, unix.O_RDONLY|unix.O_NONBLOCK|flags&unix.O_NOATIME)
		return err
	})
	if err != nil {
		return nil, f.t.failed("open", f.rel, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, ns.OpError(syscall.EOPNOTSUPP, "fs portal "+f.t.root, "open", f.rel, errors.New("not a regular file"))
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &file{f: os.NewFile(uintptr(fd), f.rel)}, nil
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

func (h *file) KernelFile() (*os.File, error) { return h.f, nil }

func (h *file) Close() error { return h.f.Close() }
