package ninep

import (
	"context"
	"path"
	"syscall"

	"github.com/hugelgupf/p9/p9"

	"wirefs/internal/remote"
)

// Symlink creates p, a symbolic link to target (Tsymlink).
func (b *Backend) Symlink(ctx context.Context, target, p string) error {
	return b.inParent(ctx, "symlink", p, func(dir p9.File, name string) error {
		_, err := dir.Symlink(target, name, p9.NoUID, p9.NoGID)
		return err
	})
}

// Readlink returns the contents of symbolic link p (Treadlink).
func (b *Backend) Readlink(ctx context.Context, p string) (string, error) {
	var target string
	err := b.onFile(ctx, "readlink", p, syscall.EINVAL, func(f p9.File) error {
		var err error
		target, err = f.Readlink()
		return err
	})
	return target, err
}

// Link makes p a hard link to existing (Tlink). Both names must be below
// one export: the server sees each export as its own file system.
func (b *Backend) Link(ctx context.Context, existing, p string) error {
	_, err := call(ctx, b, "link", p, false, func(s *conn) (struct{}, error) {
		from, err := b.locate(s, existing)
		if err != nil {
			return struct{}{}, err
		}
		dir, name, err := b.parent(s, "link", p)
		if err != nil {
			return struct{}{}, err
		}
		defer dir.Close()
		if from.root == nil {
			return struct{}{}, b.srv.Errorf(syscall.EPERM, "link", existing+" to "+p, "a directory cannot have hard links")
		}
		to, err := b.locate(s, path.Dir(p))
		if err != nil {
			return struct{}{}, err
		}
		if to.root != from.root {
			return struct{}{}, b.srv.Errorf(syscall.EXDEV, "link", existing+" to "+p, "the names are in different exports")
		}
		return struct{}{}, withFile(from.root, from.names, func(f p9.File) error { return dir.Link(f, name) })
	}, nil)
	return err
}

// Statfs reports the figures of the file system holding p (Tstatfs).
// Above every export there is none: ENOTSUP, so the cache reports its
// defaults.
func (b *Backend) Statfs(ctx context.Context, p string) (remote.FSInfo, error) {
	var fi remote.FSInfo
	err := b.onFile(ctx, "statfs", p, syscall.ENOTSUP, func(f p9.File) error {
		st, err := f.StatFS()
		fi = remote.FSInfo{
			Bsize:  st.BlockSize,
			Blocks: st.Blocks, Bfree: st.BlocksFree, Bavail: st.BlocksAvailable,
			Files: st.Files, Ffree: st.FilesFree,
			Namelen: st.NameLength,
		}
		return err
	})
	return fi, err
}
