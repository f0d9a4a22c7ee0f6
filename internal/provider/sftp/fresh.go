package sftp

import (
	"context"
	"errors"
	"io"
	"os"
	"sync/atomic"

	"wirefs/internal/remote"
)

var _ remote.FreshStorer = (*backend)(nil)

// StoreFresh is Store for a file nobody had (remote.FreshStorer): made
// through this client and never stored. With a temporary opened ahead
// (spare.go) and posix-rename@openssh.com, a small one costs one round
// trip, where Store's costs two: its bytes, its mode, the temporary's
// close and the rename over its name are sent one after another without
// waiting (pkg-sftp-startrequests.patch), and the server carries them out
// in that order (storeFreshInSpare).
func (b *backend) StoreFresh(ctx context.Context, p string, r io.Reader, size int64, perm os.FileMode) error {
	return b.store(ctx, p, r, size, perm, true)
}

// storeFreshInSpare is storeInSpare for a fresh file. The rename goes
// before the server has answered for the bytes, and Store's promise still
// holds: the requests reach the server in order, so whatever part of them
// arrives (a connection cut, a daemon killed after sending some) ends at
// the temporary, and the name is given only after every byte was written
// there. A server that fails the write (a full disk) still renames: the
// partial file under p is then removed before the error is returned. p
// had no file as far as the cache knew; one that another client made
// meanwhile is replaced as Store would (keeping its mode and owner is
// Store's, not this), and is gone after such a failure.
func (b *backend) storeFreshInSpare(c *conn, p string, sp *spare, src *source, size int64, perm os.FileMode, left *atomic.Pointer[string]) error {
	tmp := sp.name
	data, err := b.spareData(c, p, sp, src, size, left)
	if err != nil {
		return err
	}
	wrote := func(context.Context) (int, error) { return 0, nil }
	if size > 0 {
		wrote = sp.f.StartWriteAt(data, 0)
	}
	chmodded := sp.f.StartChmod(perm)
	closed := sp.f.StartClose()
	renamed := c.sftp.StartPosixRename(tmp, p)
	_, werr := wrote(src.ctx)
	werr = errors.Join(werr, closed(src.ctx))
	merr := chmodded(src.ctx)
	rerr := renamed(src.ctx)
	switch {
	case rerr != nil:
		b.dropTemp(c, tmp, left)
		if werr != nil {
			return b.writeFailure(c, "store", p, src, size, werr)
		}
		return b.explain(c, "store", p, changes, rerr)
	case werr != nil:
		left.Store(nil)
		if err := c.sftp.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			b.log.Warn("sftp: cannot remove the partial file of a failed upload", "path", p, "err", err)
		}
		return b.writeFailure(c, "store", p, src, size, werr)
	}
	left.Store(nil)
	if merr != nil {
		return b.explain(c, "store", p, changes, merr)
	}
	return nil
}
