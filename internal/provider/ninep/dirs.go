package ninep

import (
	"context"
	"os"
	"path"
	"syscall"

	"github.com/hugelgupf/p9/linux"
	"github.com/hugelgupf/p9/p9"
)

// parent walks to the directory that holds p and returns its fid (to be
// closed) and p's name in it.
func (b *Backend) parent(s *conn, op, p string) (p9.File, string, error) {
	pl, err := b.parentPlace(s, op, p)
	if err != nil {
		return nil, "", err
	}
	f, err := walk(pl.root, pl.names)
	return f, path.Base(p), err
}

// parentPlace is where the directory that holds p is, for an operation
// that changes it: an error for / and for directories above every
// export.
func (b *Backend) parentPlace(s *conn, op, p string) (place, error) {
	if p == "/" {
		return place{}, b.srv.Errorf(syscall.EBUSY, op, p, "/ cannot be changed")
	}
	dir := path.Dir(p)
	pl, err := b.locate(s, dir)
	if err != nil {
		return place{}, err
	}
	if pl.root == nil {
		return place{}, b.srv.Errorf(syscall.EACCES, op, p, "%s is above every export; only exported directories can be changed", dir)
	}
	return pl, nil
}

// inParent runs fn with the directory that holds p, for operations that
// name p in its parent (mkdir, remove).
func (b *Backend) inParent(ctx context.Context, op, p string, fn func(dir p9.File, name string) error) error {
	_, err := call(ctx, b, op, p, false, func(s *conn) (struct{}, error) {
		dir, name, err := b.parent(s, op, p)
		if err != nil {
			return struct{}{}, err
		}
		defer dir.Close()
		return struct{}{}, fn(dir, name)
	}, nil)
	return err
}

// Mkdir makes directory p with permission perm (exactly: the server's
// umask is undone with a Tsetattr).
func (b *Backend) Mkdir(ctx context.Context, p string, perm os.FileMode) error {
	return b.inParent(ctx, "mkdir", p, func(dir p9.File, name string) error {
		if _, err := dir.Mkdir(name, unixPerm(perm), p9.NoUID, p9.NoGID); err != nil {
			return err
		}
		return withFile(dir, []string{name}, func(f p9.File) error { return chmod(f, perm) })
	})
}

// Remove removes file (or symlink) p.
func (b *Backend) Remove(ctx context.Context, p string) error {
	return b.remove(ctx, "remove", p, false)
}

// Rmdir removes the empty directory p.
func (b *Backend) Rmdir(ctx context.Context, p string) error {
	return b.remove(ctx, "rmdir", p, true)
}

// remove removes p with Tremove, after checking from the walk's qid that
// p is a directory exactly when dir is set. Tremove rather than
// Tunlinkat: diod 1.0 answers Tunlinkat with ENOTSUP.
func (b *Backend) remove(ctx context.Context, op, p string, dir bool) error {
	return b.inParent(ctx, op, p, func(parent p9.File, name string) error {
		f, qid, err := walkQID(parent, []string{name})
		if err != nil {
			return err
		}
		isDir := qid.Type&p9.TypeDir != 0
		switch {
		case isDir && !dir:
			err = linux.EISDIR
		case !isDir && dir:
			err = linux.ENOTDIR
		default:
			// Tremove clunks f, whatever the answer. The library's file
			// has the method but its File interface no longer lists it.
			return f.(interface{ Remove() error }).Remove()
		}
		f.Close()
		return err
	})
}

// Rename renames from to to (replacing to, as rename(2) does), with
// Trename: diod 1.0 lacks Trenameat.
func (b *Backend) Rename(ctx context.Context, from, to string) error {
	_, err := call(ctx, b, "rename", from, false, func(s *conn) (struct{}, error) {
		fromDir, fromName, err := b.parent(s, "rename", from)
		if err != nil {
			return struct{}{}, err
		}
		f, err := walk(fromDir, []string{fromName})
		fromDir.Close()
		if err != nil {
			return struct{}{}, err
		}
		defer f.Close()
		toDir, toName, err := b.parent(s, "rename", to)
		if err != nil {
			return struct{}{}, err
		}
		defer toDir.Close()
		return struct{}{}, f.Rename(toDir, toName)
	}, nil)
	return err
}
