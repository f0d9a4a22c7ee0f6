package sftp

import (
	"errors"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/pkg/sftp"
)

// OpenSSH's sftp-server (errno_to_portable) folds errno into the few
// status codes of SFTP v3: ENOENT, ENOTDIR and ELOOP are "no such file";
// EPERM and EACCES "permission denied"; ENAMETOOLONG and EINVAL "bad
// message"; every other errno (EEXIST, ENOTEMPTY, EISDIR, EXDEV, ENOSPC,
// EDQUOT, EROFS...) the bare "failure". After such an answer, and only
// then, so that success costs nothing more, the operations look at the
// files to find the errno a program expects.

// stRdonly is statvfs's ST_RDONLY in f_flag.
const stRdonly = 1

// Name limits, checked before a request is sent: the server refuses a
// longer name with "bad message", which says nothing.
const (
	// defaultNameMax is NAME_MAX of nearly every Unix file system, used
	// until Statfs reports the server's own.
	defaultNameMax = 255
	pathMax        = 4096 // PATH_MAX, with the NUL
)

// checkNames refuses, before anything is sent, paths with a name longer
// than the server's limit (ENAMETOOLONG, as the server's open(2) would).
func (b *backend) checkNames(what, where string, paths []string) error {
	limit := int(b.nameMax.Load())
	if limit == 0 {
		limit = defaultNameMax
	}
	for _, p := range paths {
		if len(p) >= pathMax {
			return b.srv.Errorf(syscall.ENAMETOOLONG, what, where, "the path is longer than %d bytes", pathMax-1)
		}
		for _, name := range strings.Split(p, "/") {
			if len(name) > limit {
				return b.srv.Errorf(syscall.ENAMETOOLONG, what, where, "a name is longer than %d bytes, the server's limit", limit)
			}
		}
	}
	return nil
}

// isFailure reports the catch-all status SSH_FX_FAILURE.
func isFailure(err error) bool {
	var st *sftp.StatusError
	return errors.As(err, &st) && st.FxCode() == sftp.ErrSSHFxFailure
}

// isBadMessage reports SSH_FX_BAD_MESSAGE: EINVAL, or ENAMETOOLONG that
// checkNames did not catch.
func isBadMessage(err error) bool {
	var st *sftp.StatusError
	return errors.As(err, &st) && st.FxCode() == sftp.ErrSSHFxBadMessage
}

// target says what an operation does to its path, which decides what a
// failure there means.
type target int

const (
	changes target = iota // changes an existing p
	creates               // makes p: a failure with p present is EEXIST
	opens                 // opens p as a file: a failure on a directory is EISDIR
)

// explain finds the errno behind OpenSSH's answer err to operation what
// on p. It returns err unchanged (nil for nil) when the look finds
// nothing better; its own requests are only questions, and their
// failures are not reported.
func (b *backend) explain(c *conn, what, p string, t target, err error) error {
	switch {
	case errors.Is(err, os.ErrNotExist):
		if notDir(c, p) {
			return b.srv.Errorf(syscall.ENOTDIR, what, p, "not a directory")
		}
	case isFailure(err):
		fi, lerr := c.sftp.Lstat(p)
		switch {
		case lerr == nil && t == creates:
			return b.srv.Errorf(syscall.EEXIST, what, p, "file exists")
		case lerr == nil && t == opens && fi.IsDir():
			return b.srv.Errorf(syscall.EISDIR, what, p, "is a directory")
		}
		return b.fsFailure(c, what, p, path.Dir(p), 0, err)
	}
	return err
}

// notDir reports whether p is missing because one of its ancestors is
// not a directory: the nearest ancestor that exists is a file. (A link
// to a directory is a directory on the way, so Stat, not Lstat.)
func notDir(c *conn, p string) bool {
	for d := path.Dir(p); ; d = path.Dir(d) {
		fi, err := c.sftp.Stat(d)
		if err == nil {
			return !fi.IsDir()
		}
		if !errors.Is(err, os.ErrNotExist) || d == "/" {
			return false
		}
	}
}

// fsFailure tells a read-only or full file system from another failure
// of operation what on where, from the figures of the file system that
// holds directory dir: EROFS when it is mounted read-only, ENOSPC when it
// has less room than left, the bytes the operation still had to write (a
// packet at least), or no free inodes. Otherwise it returns err.
func (b *backend) fsFailure(c *conn, what, where, dir string, left int64, err error) error {
	st, serr := c.sftp.StatVFS(dir)
	if serr != nil {
		return err
	}
	free := st.Bavail * st.Frsize
	switch {
	case st.Flag&stRdonly != 0:
		return b.srv.Errorf(syscall.EROFS, what, where, "the server's file system is read-only")
	case free < uint64(max(left, packetSize)):
		return b.srv.Errorf(syscall.ENOSPC, what, where, "no space left on the server (%d bytes free)", free)
	case st.Files > 0 && st.Favail == 0:
		return b.srv.Errorf(syscall.ENOSPC, what, where, "no space left on the server (no free inodes)")
	}
	return err
}

// crossDevice reports whether a and b's directories are on different file
// systems of the server (rename and link then fail with EXDEV).
func crossDevice(c *conn, a, b string) bool {
	sa, err := c.sftp.StatVFS(path.Dir(a))
	if err != nil {
		return false
	}
	sb, err := c.sftp.StatVFS(path.Dir(b))
	return err == nil && sa.Fsid != sb.Fsid
}

// nonEmpty reports whether directory p has entries.
func nonEmpty(c *conn, p string) bool {
	entries, err := c.sftp.ReadDir(p)
	return err == nil && len(entries) > 0
}
