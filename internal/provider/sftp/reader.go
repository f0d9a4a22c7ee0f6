package sftp

import (
	"context"
	"errors"
	"io"
	"sync"
	"syscall"

	"github.com/pkg/sftp"

	"wirefs/internal/remote/session"
)

// The reader fetches in chunks that start small when the length is not
// known, so that small files cost little memory, and double up to a full
// window of concurrent requests (at most lastChunk: with OpenSSH's 255
// KiB packets, 32 in flight fill 160 MiB/s at 50 ms).
const (
	firstChunk = 64 << 10
	lastChunk  = 8 << 20
)

func (b *backend) ReadRange(ctx context.Context, p string, off, n int64) (io.ReadCloser, error) {
	return call(ctx, b, "read", p, []string{p}, session.Always, func(c *conn) (io.ReadCloser, error) {
		f, err := c.readClient(n).Open(p)
		if err != nil {
			return nil, err
		}
		r := &reader{b: b, c: c, f: f, p: p, ctx: ctx, off: off, left: n, chunk: firstChunk,
			last: min(lastChunk, maxRequests*c.packet)}
		if n > 0 {
			// The caller says how much it wants: no need to probe.
			r.chunk = int(min(n, int64(r.last)))
		}
		return r, nil
	}, func(r io.ReadCloser) { r.Close() }) // opened for a caller who gave up
}

// reader reads one open file with ReadAt, whose large reads pkg/sftp
// splits into concurrent requests. While the caller consumes one chunk,
// the next is already being fetched, so that the pipe to the server does
// not drain between chunks. The file is bound to the connection it was
// opened on: when that dies, the reader fails and the next ReadRange
// reconnects.
type reader struct {
	b   *backend
	c   *conn
	f   *sftp.File
	p   string
	ctx context.Context

	off   int64 // of the next chunk to ask for
	left  int64 // bytes not yet asked for; < 0 up to the end
	chunk int
	last  int    // the largest chunk
	next  *chunk // asked for and not yet returned; nil when none
	buf   []byte // fetched and not yet returned
	err   error  // sticky: io.EOF or why the reader failed
	done  bool   // closed

	// inflight counts the chunks being fetched. One abandoned because
	// ctx ended still owns its buffer, and Close waits for all of them
	// before closing the file.
	inflight sync.WaitGroup
}

// chunk is one ReadAt in flight.
type chunk struct {
	done chan struct{}
	buf  []byte
	n    int
	eof  bool // the file ends within it
	err  error
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

// fetch waits for the next chunk into buf, or sets err, and asks for the
// one after it.
func (r *reader) fetch() {
	if r.next == nil && !r.ask() {
		r.err = io.EOF
		return
	}
	ch := r.next
	select {
	case <-ch.done:
	case <-r.ctx.Done():
		r.err = r.b.srv.Wrap("read", r.p, session.Interrupted(r.ctx))
		return
	}
	r.next = nil
	if ch.err != nil {
		r.err = r.b.s.Judge(r.c, "read", r.p, ch.err)
		return
	}
	if ch.n == 0 {
		r.err = io.EOF
		return
	}
	r.buf = ch.buf[:ch.n]
	if ch.eof { // the file ends here: no need to ask again
		r.left = 0
		return
	}
	r.ask()
}

// ask starts fetching the next chunk; false when nothing is left to ask.
func (r *reader) ask() bool {
	size := int64(r.chunk)
	if r.left >= 0 {
		size = min(size, r.left)
	}
	if size == 0 {
		return false
	}
	if why := r.c.Err(); why != nil {
		r.next = &chunk{done: make(chan struct{}), err: r.b.srv.Wrap("read", r.p, why)}
		close(r.next.done)
		return true
	}
	ch := &chunk{done: make(chan struct{}), buf: make([]byte, size)}
	r.next = ch
	off := r.off
	dog := r.c.Watchdog()
	dog.Begin()
	r.inflight.Add(1)
	started := r.b.s.Go(func() {
		defer r.inflight.Done()
		n, err := r.f.ReadAt(ch.buf, off)
		dog.End()
		if ch.eof = errors.Is(err, io.EOF); ch.eof {
			err = nil
		}
		ch.n, ch.err = n, err
		close(ch.done)
	})
	if !started { // the session is closed
		dog.End()
		r.inflight.Done()
		ch.err = r.b.srv.Wrap("read", r.p, session.ErrClosed)
		close(ch.done)
	}
	r.off += size
	if r.left > 0 {
		r.left -= size
	}
	r.chunk = min(2*r.chunk, r.last)
	return true
}

// Close abandons the rest of the transfer. It does not wait for the
// server: the file handle is closed in the background, once the chunks
// in flight have arrived.
func (r *reader) Close() error {
	if r.done {
		return nil
	}
	r.done, r.buf, r.next = true, nil, nil
	r.err = r.b.srv.Errorf(syscall.EIO, "read", r.p, "read after Close")
	// Once the session is closed, the handle went with the connection.
	r.b.s.Go(func() {
		r.inflight.Wait()
		dog := r.c.Watchdog()
		dog.Begin()
		r.f.Close()
		dog.End()
	})
	return nil
}
