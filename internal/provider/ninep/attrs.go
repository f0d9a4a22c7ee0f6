package ninep

import (
	"context"
	"os"
	"syscall"
	"time"

	"github.com/hugelgupf/p9/p9"
)

// Chmod sets the permission bits of p, setuid, setgid and sticky
// included.
func (b *Backend) Chmod(ctx context.Context, p string, perm os.FileMode) error {
	return b.onFile(ctx, "chmod", p, errAbove, func(f p9.File) error { return chmod(f, perm) })
}

// Chtimes sets the access and modification times of p.
func (b *Backend) Chtimes(ctx context.Context, p string, atime, mtime time.Time) error {
	return b.onFile(ctx, "chtimes", p, errAbove, func(f p9.File) error {
		return f.SetAttr(p9.SetAttrMask{ATime: true, MTime: true, ATimeNotSystemTime: true, MTimeNotSystemTime: true},
			p9.SetAttr{
				ATimeSeconds: uint64(atime.Unix()), ATimeNanoSeconds: uint64(atime.Nanosecond()),
				MTimeSeconds: uint64(mtime.Unix()), MTimeNanoSeconds: uint64(mtime.Nanosecond()),
			})
	})
}

// Chown sets p's numeric owner and group; -1 keeps one.
func (b *Backend) Chown(ctx context.Context, p string, uid, gid int) error {
	return b.onFile(ctx, "chown", p, errAbove, func(f p9.File) error {
		mask := p9.SetAttrMask{UID: uid >= 0, GID: gid >= 0}
		if mask.Empty() {
			return nil // the walk found p: chown(p, -1, -1) has nothing more to do
		}
		return f.SetAttr(mask, p9.SetAttr{UID: p9.UID(uid), GID: p9.GID(gid)})
	})
}

// errAbove is the errno of a change to a directory above every export,
// which only lists the exports below it.
const errAbove = syscall.EACCES

// onFile runs fn on a fid of p (the attach root itself when p is one),
// for operations that leave the fid as it is. Above every export there
// is no fid: the call fails with above.
func (b *Backend) onFile(ctx context.Context, op, p string, above syscall.Errno, fn func(p9.File) error) error {
	_, err := call(ctx, b, op, p, true, func(s *conn) (struct{}, error) {
		pl, err := b.locate(s, p)
		if err != nil {
			return struct{}{}, err
		}
		if pl.root == nil {
			return struct{}{}, b.srv.Errorf(above, op, p, "the directory is above every export")
		}
		return struct{}{}, withFile(pl.root, pl.names, fn)
	}, nil)
	return err
}

// chmod sets f's whole mode, past the library's mask (see fullMode).
func chmod(f p9.File, perm os.FileMode) error {
	mode := unixPerm(perm)
	return f.SetAttr(p9.SetAttrMask{Permissions: true}, p9.SetAttr{Permissions: mode, Size: fullMode(mode)})
}

// unixPerm converts the permission bits of an os.FileMode to Linux's.
func unixPerm(perm os.FileMode) p9.FileMode {
	m := uint32(perm.Perm())
	for _, bit := range modeBits {
		if perm&bit.os != 0 {
			m |= bit.unix
		}
	}
	return p9.FileMode(m)
}

var modeBits = []struct {
	unix uint32
	os   os.FileMode
}{{0o4000, os.ModeSetuid}, {0o2000, os.ModeSetgid}, {0o1000, os.ModeSticky}}
