package sftp

import (
	"context"
	"errors"
	"os"
	"syscall"

	"wirefs/internal/remote/session"
)

// Symlink makes p a symbolic link whose contents are target, verbatim.
// The draft puts SSH_FXP_SYMLINK's link path first; OpenSSH reads the
// target first, and so does pkg/sftp send it (the tests check the link
// the real server makes).
func (b *backend) Symlink(ctx context.Context, target, p string) error {
	return b.do(ctx, "symlink", p, nil, func(c *conn) error {
		return b.explain(c, "symlink", p, creates, c.sftp.Symlink(target, p))
	})
}

// Readlink returns the contents of symbolic link p.
func (b *backend) Readlink(ctx context.Context, p string) (string, error) {
	return call(ctx, b, "readlink", p, []string{p}, session.Always, func(c *conn) (string, error) {
		target, err := c.sftp.ReadLink(p)
		if isBadMessage(err) { // readlink(2)'s EINVAL
			return "", b.srv.Errorf(syscall.EINVAL, "readlink", p, "not a symbolic link")
		}
		return target, err
	}, nil)
}

// Link makes p a hard link to existing (hardlink@openssh.com).
func (b *backend) Link(ctx context.Context, existing, p string) error {
	where := existing + " to " + p
	return b.doOn(ctx, "link", where, []string{existing, p}, nil, func(c *conn) error {
		if _, ok := c.sftp.HasExtension("hardlink@openssh.com"); !ok {
			return b.srv.Errorf(syscall.ENOTSUP, "link", where, "the server has no hard links (no hardlink@openssh.com)")
		}
		err := c.sftp.Link(existing, p)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, os.ErrPermission):
			// link(2) refuses a directory with EPERM.
			if fi, serr := c.sftp.Lstat(existing); serr == nil && fi.IsDir() {
				return b.srv.Errorf(syscall.EPERM, "link", where, "a directory cannot have hard links")
			}
		case errors.Is(err, os.ErrNotExist) && notDir(c, existing):
			return b.srv.Errorf(syscall.ENOTDIR, "link", where, "not a directory")
		case isFailure(err) && !exists(c, p) && crossDevice(c, existing, p):
			return b.srv.Errorf(syscall.EXDEV, "link", where, "the names are on different file systems of the server")
		}
		return b.explain(c, "link", p, creates, err)
	})
}

// exists reports whether p is there, as a question: false when the
// server does not answer.
func exists(c *conn, p string) bool {
	_, err := c.sftp.Lstat(p)
	return err == nil
}
