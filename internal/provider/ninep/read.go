package ninep

import (
	"context"
	"io"

	"github.com/hugelgupf/p9/linux"
	"github.com/hugelgupf/p9/p9"

	"wirefs/internal/remote/session"
)

// ReadRange returns a reader of n bytes of p from off (n < 0: to the end).
// Its reads are bound to ctx, like an HTTP response body to its request.
func (b *Backend) ReadRange(ctx context.Context, p string, off, n int64) (io.ReadCloser, error) {
	return call(ctx, b, "read", p, true, func(s *conn) (io.ReadCloser, error) {
		pl, err := b.locate(s, p)
		if err != nil {
			return nil, err
		}
		if pl.root == nil {
			if _, err := b.above(s, "read", p); err != nil {
				return nil, err
			}
			return nil, linux.EISDIR
		}
		f, err := walk(pl.root, pl.names)
		if err != nil {
			return nil, err
		}
		qid, _, err := f.Open(p9.ReadOnly)
		if err == nil && qid.Type&p9.TypeDir != 0 {
			err = linux.EISDIR
		}
		if err != nil {
			f.Close()
			return nil, err
		}
		return &reader{ctx: ctx, b: b, c: s, f: f, path: p, off: off, left: n}, nil
	}, func(r io.ReadCloser) { r.Close() })
}

// reader reads an open file with Treads of up to the caller's buffer.
type reader struct {
	ctx  context.Context
	b    *Backend
	c    *conn // the connection f belongs to
	f    p9.File
	path string
	off  int64
	left int64 // < 0: to the end
	buf  []byte
	err  error // sticky
}

func (r *reader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if r.left == 0 {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	want := len(p)
	if r.left > 0 && int64(want) > r.left {
		want = int(r.left)
	}
	if cap(r.buf) < want {
		r.buf = make([]byte, want)
	}
	// A private buffer: after a cancel the abandoned Tread still fills it.
	buf, off := r.buf[:want], r.off
	n, err := session.On(r.ctx, r.b.s, r.c, "read", r.path, func() (int, error) { return r.f.ReadAt(buf, off) }, nil)
	if err != nil && err != io.EOF {
		r.err, r.buf = err, nil
		return 0, err
	}
	copy(p, buf[:n])
	r.off += int64(n)
	if r.left > 0 {
		r.left -= int64(n)
	}
	if n == 0 {
		r.err = io.EOF
		return 0, io.EOF
	}
	return n, nil
}

// Close clunks the fid. The data is read already, so a failure (the
// connection is gone, and the fid with it) does not matter.
func (r *reader) Close() error {
	r.f.Close()
	return nil
}
