package sftp

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/pkg/sftp"

	"wirefs/internal/remote"
	"wirefs/internal/remote/session"
)

// Attribute changes are SSH_FXP_SETSTAT, which follows a symbolic link:
// OpenSSH's lsetstat@openssh.com, which would not, is not in pkg/sftp.

// Chmod sets p's permission bits, setuid, setgid and sticky included.
func (b *backend) Chmod(ctx context.Context, p string, perm os.FileMode) error {
	return b.setattr(ctx, "chmod", p, func(c *conn) error { return c.sftp.Chmod(p, perm) })
}

// Chtimes sets p's access and modification times, in whole seconds: SFTP
// v3 carries no more.
func (b *backend) Chtimes(ctx context.Context, p string, atime, mtime time.Time) error {
	return b.setattr(ctx, "chtimes", p, func(c *conn) error { return c.sftp.Chtimes(p, atime, mtime) })
}

// Chown sets p's numeric owner and group; -1 keeps one. SFTP sets both
// at once, so the one kept is read first.
func (b *backend) Chown(ctx context.Context, p string, uid, gid int) error {
	return b.setattr(ctx, "chown", p, func(c *conn) error {
		if uid < 0 || gid < 0 {
			fi, err := c.sftp.Stat(p) // of what setstat changes: a link's target
			if err != nil {
				return err
			}
			if uid < 0 && gid < 0 {
				return nil
			}
			st := fi.Sys().(*sftp.FileStat)
			if uid < 0 {
				uid = int(st.UID)
			}
			if gid < 0 {
				gid = int(st.GID)
			}
		}
		return c.sftp.Chown(p, uid, gid)
	})
}

// setattr runs op, a change of p's attributes. OpenSSH answers
// "permission denied" for EPERM and EACCES alike; for a change of
// attributes the refusal is EPERM (not the owner; not root, for chown),
// as chmod(2) and chown(2) report it.
func (b *backend) setattr(ctx context.Context, what, p string, op func(c *conn) error) error {
	return b.do(ctx, what, p, session.Always, func(c *conn) error {
		err := op(c)
		if errors.Is(err, os.ErrPermission) {
			return b.srv.Errorf(syscall.EPERM, what, p, "operation not permitted")
		}
		return b.explain(c, what, p, changes, err)
	})
}

// Statfs reports the figures of the server's file system that holds p
// (statvfs@openssh.com). Its name limit becomes the one checkNames uses.
func (b *backend) Statfs(ctx context.Context, p string) (remote.FSInfo, error) {
	st, err := call(ctx, b, "statfs", p, []string{p}, session.Always, func(c *conn) (*sftp.StatVFS, error) {
		if _, ok := c.sftp.HasExtension("statvfs@openssh.com"); !ok {
			return nil, b.srv.Errorf(syscall.ENOTSUP, "statfs", p, "the server does not report file system figures (no statvfs@openssh.com)")
		}
		return c.sftp.StatVFS(p)
	}, nil)
	if err != nil {
		return remote.FSInfo{}, err
	}
	if st.Namemax > 0 {
		b.nameMax.Store(uint32(min(st.Namemax, pathMax)))
	}
	return remote.FSInfo{
		Bsize:  uint32(st.Frsize), // the unit of statvfs's counts
		Blocks: st.Blocks, Bfree: st.Bfree, Bavail: st.Bavail,
		Files: st.Files, Ffree: st.Ffree,
		Namelen: uint32(st.Namemax),
	}, nil
}
