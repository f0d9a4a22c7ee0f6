package ninep

import (
	"context"
	"errors"
	"io"
	"os"
	"path"
	"slices"
	"sync"
	"syscall"

	"github.com/hugelgupf/p9/linux"
	"github.com/hugelgupf/p9/p9"

	"wirefs/internal/remote"
	"wirefs/internal/remote/session"
)

// Wire values of 9P2000.L flags (Linux's, whatever the host's are).
const dotlTrunc = 0x200 // Tlopen/Tlcreate O_TRUNC

// Store replaces the contents of p with size bytes from r. The bytes go
// to a temporary name beside p (remote.TempName), which gets p's mode and
// owner (perm for a new p; the owner where the server lets us) and is
// fsynced before a Trename puts it over p: a failed upload never leaves
// part of the data under p's name, and the temporary is removed on
// failure. Other hard links to p keep the old data, as with rsync. Where
// the temporary cannot be used — a symbolic link at p (the data go
// through it), a directory where the user may write p but not create
// files — p is written in place. It returns once the rename is answered.
//
// Round trips for a small new file, six (in place it was seven): the
// walks to the directory (twice: one fid becomes the temporary) and to p;
// the temporary's creation; the data; the fsync and the mode together;
// its close beside a walk to it; the rename. The fids are clunked
// behind the caller's back.
func (b *Backend) Store(ctx context.Context, p string, r io.Reader, size int64, perm os.FileMode) error {
	type target struct {
		s        *conn
		dir, f   p9.File // f: the temporary, open for writing
		tmp, old string
		mode     os.FileMode
		owner    *p9.Attr // p's, to give the temporary; nil: a new file
	}
	release := func(t target) {
		t.f.Close()
		t.dir.Close()
	}
	t, err := call(ctx, b, "store", p, false, func(s *conn) (target, error) {
		pl, err := b.parentPlace(s, "store", p)
		if err != nil {
			return target{}, err
		}
		name, tmp := path.Base(p), path.Base(remote.TempName(p))
		// What is at p, and the directory for the rename, while the
		// temporary is made (from a walk of its own: Tlcreate turns the
		// fid it is sent on into the file).
		var old p9.Attr
		var oldErr, dirErr error
		var dir p9.File
		var wg sync.WaitGroup
		wg.Go(func() {
			f, err := walk(pl.root, append(slices.Clip(pl.names), name))
			if err != nil {
				oldErr = err
				return
			}
			defer f.Close()
			_, _, old, oldErr = f.GetAttr(p9.AttrMask{Mode: true, UID: true, GID: true})
		})
		wg.Go(func() { dir, dirErr = walk(pl.root, pl.names) })
		f, err := walk(pl.root, pl.names)
		if err == nil {
			if _, _, _, err = f.Create(tmp, p9.WriteOnly|dotlExcl, unixPerm(perm), p9.NoUID, p9.NoGID); err != nil {
				f.Close()
			}
		}
		wg.Wait()
		exists := oldErr == nil
		var refusal error
		switch errno, _ := serverErrno(oldErr); {
		case dirErr != nil:
			refusal = dirErr
		case oldErr != nil && errno != syscall.ENOENT:
			refusal = oldErr
		case exists && old.Mode.IsDir():
			refusal = linux.EISDIR
		case exists && old.Mode.IsSymlink(), err != nil && exists && isPermission(err):
			refusal = errInPlace
		case err != nil:
			refusal = err
		}
		if refusal != nil {
			switch {
			case err == nil && dirErr == nil:
				b.dropTemp(f, dir, tmp)
			case err == nil:
				f.Close() // (no directory to remove it from: the session is broken)
			}
			if dirErr == nil {
				dir.Close()
			}
			return target{}, refusal
		}
		t := target{s: s, dir: dir, f: f, tmp: tmp, old: name, mode: perm}
		if exists {
			t.mode = osMode(old.Mode) & (os.ModePerm | os.ModeSetuid | os.ModeSetgid | os.ModeSticky)
			t.owner = &old
		}
		return t, nil
	}, release)
	if errors.Is(err, errInPlace) {
		return b.storeInPlace(ctx, p, r, size, perm)
	}
	if err != nil {
		return err
	}
	err = b.write(ctx, t.s, t.f, "store", p, r, 0, size)
	if err == nil {
		_, err = session.On(ctx, b.s, t.s, "store", p, func() (struct{}, error) {
			return struct{}{}, b.settle(t.f, t.mode, t.owner, p)
		}, nil)
	}
	if err == nil {
		_, err = session.On(ctx, b.s, t.s, "store", p, func() (struct{}, error) {
			return struct{}{}, b.renameClosed(t.f, t.dir, t.tmp, t.old)
		}, nil)
	}
	if err != nil {
		// The temporary goes before Store returns, unless the caller
		// gave up: then behind its back (a stalled server leaves it,
		// and the log says where; the connection's watchdog bounds it).
		dropped := make(chan struct{})
		if b.s.Go(func() {
			defer close(dropped)
			b.dropTemp(t.f, t.dir, t.tmp)
			t.dir.Close()
		}) {
			select {
			case <-dropped:
			case <-ctx.Done():
			}
		}
		return err
	}
	b.s.Go(func() { release(t) }) // nothing waits for the clunks
	return nil
}

// renameClosed renames dir's file tmp, open as f, to name once f is
// closed: diod 1.0 dies on the rename of a file it has open (an assertion
// on its open path). The close and the walk to tmp go at once; the walked
// fid is closed behind the caller's back.
func (b *Backend) renameClosed(f, dir p9.File, tmp, name string) error {
	closed := make(chan error, 1)
	go func() { closed <- f.Close() }()
	g, err := walk(dir, []string{tmp})
	if cerr := <-closed; err == nil && cerr != nil {
		g.Close()
		err = cerr
	}
	if err != nil {
		return err
	}
	defer b.s.Go(func() { g.Close() })
	return g.Rename(dir, name)
}

// errInPlace says that a store cannot go through a temporary.
var errInPlace = errors.New("the store goes in place")

// isPermission reports a refusal by permission.
func isPermission(err error) bool {
	errno, ok := serverErrno(err)
	return ok && (errno == syscall.EACCES || errno == syscall.EPERM)
}

// settle makes the temporary f durable and gives it mode and, where owner
// is not nil, that owner (a refusal leaves ours): the fsync and the
// attributes go at once.
func (b *Backend) settle(f p9.File, mode os.FileMode, owner *p9.Attr, p string) error {
	synced := make(chan error, 1)
	go func() { synced <- f.FSync() }()
	err := chmod(f, mode)
	if owner != nil {
		if cerr := f.SetAttr(p9.SetAttrMask{UID: true, GID: true}, p9.SetAttr{UID: owner.UID, GID: owner.GID}); cerr != nil {
			b.log.Debug("9p: the replaced file keeps the attach user as owner", "path", p, "err", cerr)
		}
	}
	return errors.Join(<-synced, err)
}

// dropTemp removes the temporary tmp, whose fid f is open, from dir.
func (b *Backend) dropTemp(f, dir p9.File, tmp string) {
	f.Close()
	if g, err := walk(dir, []string{tmp}); err == nil {
		if err := g.(interface{ Remove() error }).Remove(); err != nil {
			b.log.Warn("9p: cannot remove the temporary file of a failed upload", "path", tmp, "err", err)
		}
	}
}

// storeInPlace writes p itself, creating it with permission perm if
// needed: Store where a temporary cannot be used. It returns after the
// server's fsync.
func (b *Backend) storeInPlace(ctx context.Context, p string, r io.Reader, size int64, perm os.FileMode) error {
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
