package ninep

import (
	"context"
	"io"
	"os"
	"syscall"

	"github.com/hugelgupf/p9/linux"
	"github.com/hugelgupf/p9/p9"

	"wirefs/internal/remote/session"
)

// Wire values of 9P2000.L flags (Linux's, whatever the host's are).
const dotlTrunc = 0x200 // Tlopen/Tlcreate O_TRUNC

// Store replaces the contents of p with size bytes from r, creating p with
// permission perm if needed. It returns after the server's fsync.
func (b *Backend) Store(ctx context.Context, p string, r io.Reader, size int64, perm os.FileMode) error {
	type target struct {
		s       *conn
		f       p9.File
		created bool
	}
	t, err := call(ctx, b, "store", p, false, func(s *conn) (target, error) {
		dir, name, err := b.parent(s, "store", p)
		if err != nil {
			return target{}, err
		}
		f, err := walk(dir, []string{name})
		if errno, ok := serverErrno(err); ok && errno == syscall.ENOENT {
			// dir becomes the new file.
			if _, _, _, err := dir.Create(name, p9.WriteOnly|dotlTrunc, unixPerm(perm), p9.NoUID, p9.NoGID); err != nil {
				dir.Close()
				return target{}, err
			}
			return target{s, dir, true}, nil
		}
		dir.Close()
		if err != nil {
			return target{}, err
		}
		if _, _, err := f.Open(p9.WriteOnly | dotlTrunc); err != nil {
			f.Close()
			return target{}, err
		}
		return target{s, f, false}, nil
	}, func(t target) { t.f.Close() })
	if err != nil {
		return err
	}
	if err := b.write(ctx, t.s, t.f, "store", p, r, 0, size); err != nil {
		b.s.Go(func() { t.f.Close() }) // may wait for a stalled server; the error is what matters
		return err
	}
	return b.finish(ctx, t.s, t.f, "store", p, func(f p9.File) error {
		if t.created {
			return chmod(f, perm) // exactly perm, whatever the server's umask
		}
		return nil
	})
}

// finish syncs the open file f, runs then on it (nil: nothing), and
// closes it; f is closed whatever happens.
func (b *Backend) finish(ctx context.Context, s *conn, f p9.File, op, p string, then func(p9.File) error) error {
	_, err := session.On(ctx, b.s, s, op, p, func() (struct{}, error) {
		err := f.FSync()
		if err == nil && then != nil {
			err = then(f)
		}
		if err == nil {
			err = f.Close()
		} else {
			f.Close()
		}
		return struct{}{}, err
	}, nil)
	return err
}

// storeChunk is how much Store reads from r and hands to one WriteAt
// (which the library splits into Twrites of the negotiated size).
const storeChunk = 1 << 20

// write copies the bytes [off, end) from r, which is at off, to the same
// offsets of the open file f.
func (b *Backend) write(ctx context.Context, s *conn, f p9.File, op, p string, r io.Reader, off, end int64) error {
	var buf []byte
	for off < end {
		// A fresh buffer after a cancel is never needed: we return.
		if buf == nil {
			buf = make([]byte, min(end-off, storeChunk))
		}
		chunk := buf[:min(int64(len(buf)), end-off)]
		if n, err := io.ReadFull(r, chunk); err != nil {
			return b.srv.Errorf(syscall.EIO, op, p, "the data ended at %d of [%d, %d): %w", off+int64(n), off, end, err)
		}
		at := off
		if _, err := session.On(ctx, b.s, s, op, p, func() (struct{}, error) {
			return struct{}{}, writeFull(f, chunk, at)
		}, nil); err != nil {
			return err
		}
		off += int64(len(chunk))
	}
	return nil
}

func writeFull(f p9.File, p []byte, off int64) error {
	for len(p) > 0 {
		n, err := f.WriteAt(p, off)
		if err != nil {
			return err
		}
		if n == 0 {
			return linux.EIO
		}
		p, off = p[n:], off+int64(n)
	}
	return nil
}

// open opens the existing file p with flags and returns its fid, to be
// closed, and the session it belongs to.
func (b *Backend) open(ctx context.Context, op, p string, flags p9.OpenFlags) (*conn, p9.File, error) {
	type opened struct {
		s *conn
		f p9.File
	}
	o, err := call(ctx, b, op, p, false, func(s *conn) (opened, error) {
		pl, err := b.locate(s, p)
		if err != nil {
			return opened{}, err
		}
		if pl.root == nil {
			return opened{}, b.srv.Errorf(syscall.EISDIR, op, p, "a directory above every export")
		}
		f, err := walk(pl.root, pl.names)
		if err != nil {
			return opened{}, err
		}
		if _, _, err := f.Open(flags); err != nil {
			f.Close()
			return opened{}, err
		}
		return opened{s, f}, nil
	}, func(o opened) { o.f.Close() })
	return o.s, o.f, err
}
