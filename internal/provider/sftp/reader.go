package sftp

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/pkg/sftp"
)

// The reader fetches in chunks that start small, so that small files cost
// little memory, and double up to a full window of concurrent requests.
const (
	firstChunk = 64 << 10
	lastChunk  = maxRequests * packetSize
)

func (b *backend) ReadRange(ctx context.Context, p string, off, n int64) (io.ReadCloser, error) {
	var r *reader
	err := b.do(ctx, "read", p, func(c *conn) error {
		f, err := c.sftp.Open(p)
		if err != nil {
			return err
		}
		r = &reader{b: b, c: c, f: f, p: p, ctx: ctx, off: off, left: n, chunk: firstChunk}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// reader reads one open file with ReadAt, whose large reads pkg/sftp
// splits into concurrent requests. The file is bound to the connection
// it was opened on: when that dies, the reader fails and the next
// ReadRange reconnects.
type reader struct {
	b   *backend
	c   *conn
	f   *sftp.File
	p   string
	ctx context.Context

	off   int64 // of the next fetch
	left  int64 // bytes still wanted; < 0 up to the end
	chunk int
	buf   []byte // fetched and not yet returned
	err   error  // sticky: io.EOF or why the reader failed

	// fetching is held while a fetch runs. A fetch abandoned because
	// ctx ended still owns its buffer, and Close waits for it before
	// closing the file (a fetch that starts after that finds the file
	// closed).
	fetching sync.Mutex
}

func (r *reader) Read(p []byte) (int, error) {
	if len(r.buf) == 0 && r.err == nil {
		r.fetch()
	}
	if len(r.buf) == 0 {
		return 0, r.err
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// fetch fills buf with the next chunk, or sets err.
func (r *reader) fetch() {
	size := int64(r.chunk)
	if r.left >= 0 {
		size = min(size, r.left)
	}
	if size == 0 {
		r.err = io.EOF
		return
	}
	buf := make([]byte, size)
	var n int
	var eof bool
	err := r.b.run(r.ctx, r.c, "read", r.p, func() error {
		r.fetching.Lock()
		defer r.fetching.Unlock()
		var err error
		n, err = r.f.ReadAt(buf, r.off)
		if eof = errors.Is(err, io.EOF); eof {
			return nil
		}
		return err
	})
	if err != nil {
		// n and buf may still change under the abandoned fetch.
		r.err = err
		return
	}
	if n == 0 {
		r.err = io.EOF
		return
	}
	r.buf, r.off = buf[:n], r.off+int64(n)
	switch {
	case eof: // the file ends here: no need to ask again
		r.left = 0
	case r.left >= 0:
		r.left -= int64(n)
	}
	r.chunk = min(2*r.chunk, lastChunk)
}

// Close abandons the rest of the transfer. It does not wait for the
// server: the file handle is closed in the background.
func (r *reader) Close() error {
	if r.err == errClosed {
		return nil
	}
	r.err, r.buf = errClosed, nil
	r.b.wg.Add(1)
	go func() {
		defer r.b.wg.Done()
		r.fetching.Lock()
		defer r.fetching.Unlock()
		r.c.begin()
		r.f.Close()
		r.c.end()
	}()
	return nil
}

var errClosed = errors.New("sftp: read after Close")
