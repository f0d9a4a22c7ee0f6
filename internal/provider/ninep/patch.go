package ninep

import (
	"context"
	"io"
	"os"
	"syscall"

	"github.com/hugelgupf/p9/p9"

	"wirefs/internal/remote"
)

// Tlopen/Tlcreate's O_APPEND and O_EXCL (Linux's values, whatever the
// host's).
const (
	dotlAppend = 0x400
	dotlExcl   = 0x80
)

// CreateIfMissing makes p with Tlcreate O_EXCL, then sets exactly perm on
// the file it made (the server's umask applied at creation); an existing
// p is the server's EEXIST, and left alone.
func (b *Backend) CreateIfMissing(ctx context.Context, p string, perm os.FileMode) (created bool, err error) {
	err = b.inParent(ctx, "create", p, func(dir p9.File, name string) error {
		// dir becomes the new file.
		_, _, _, err := dir.Create(name, p9.WriteOnly|dotlExcl, unixPerm(perm), p9.NoUID, p9.NoGID)
		if errno, ok := serverErrno(err); ok && errno == syscall.EEXIST {
			return nil
		}
		if err != nil {
			return err
		}
		created = true
		return chmod(dir, perm)
	})
	return created, err
}

// Append writes n bytes of r at the end of the existing file p: OpenAppend,
// then the file's Append and Close.
func (b *Backend) Append(ctx context.Context, p string, r io.Reader, n int64) (int64, error) {
	f, err := b.OpenAppend(ctx, p)
	if err != nil {
		return -1, err
	}
	defer f.Close()
	return f.Append(ctx, r, n)
}

// OpenAppend walks to the existing file p and opens it with O_APPEND: the
// server (diod) opens it O_APPEND and writes with pwrite(2), which on
// Linux appends whatever offset it names, so each Twrite lands at the end
// as the server sees it.
func (b *Backend) OpenAppend(ctx context.Context, p string) (remote.AppendFile, error) {
	s, f, err := b.open(ctx, "append", p, p9.WriteOnly|dotlAppend)
	if err != nil {
		return nil, err
	}
	return &appendFile{b: b, s: s, f: f, p: p}, nil
}

// appendFile is a file OpenAppend opened on connection s.
type appendFile struct {
	b *Backend
	s *conn
	f p9.File
	p string
}

// Append returns when the server has written the data (Rwrite), as a
// write(2) there would, without an fsync or a Tgetattr (size -1:
// unknown): appends are the open/append/close cycles of logs, where
// every round trip counts.
func (a *appendFile) Append(ctx context.Context, r io.Reader, n int64) (int64, error) {
	if a.s.Err() != nil {
		// The connection ended since the open: the fid is gone with
		// it; open the file again on the next one.
		return a.b.Append(ctx, a.p, r, n)
	}
	// The offsets are ignored by the server; counting from 0 keeps
	// write's bookkeeping.
	return -1, a.b.write(ctx, a.s, a.f, "append", a.p, r, 0, n)
}

// Close clunks the fid behind the caller's back.
func (a *appendFile) Close() { a.b.s.Go(func() { a.f.Close() }) }

// Patch writes the ranges of r at their offsets of the existing file p
// and sets its length to size, then syncs, as Store does.
func (b *Backend) Patch(ctx context.Context, p string, r io.ReaderAt, ranges []remote.Range, size int64) error {
	for _, rg := range ranges {
		if rg.Off < 0 || rg.End < rg.Off || rg.End > size {
			return b.srv.Errorf(syscall.EINVAL, "patch", p, "the range [%d, %d) is not within the file's %d bytes", rg.Off, rg.End, size)
		}
	}
	s, f, err := b.open(ctx, "patch", p, p9.WriteOnly)
	if err != nil {
		return err
	}
	for _, rg := range ranges {
		src := io.NewSectionReader(r, rg.Off, rg.End-rg.Off)
		if err := b.write(ctx, s, f, "patch", p, src, rg.Off, rg.End); err != nil {
			b.s.Go(func() { f.Close() })
			return err
		}
	}
	return b.finish(ctx, s, f, "patch", p, func(f p9.File) error {
		return f.SetAttr(p9.SetAttrMask{Size: true}, p9.SetAttr{Size: uint64(size)})
	})
}
