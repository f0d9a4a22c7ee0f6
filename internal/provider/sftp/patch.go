package sftp

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"

	"github.com/pkg/sftp"

	"wirefs/internal/remote"
)

// Append writes n bytes of r at the end of the existing file p, opened
// with SSH_FXF_APPEND: OpenSSH opens it O_APPEND, and each write lands at
// the end as the server sees it, whatever offset the write names (the
// tests check this on the real server), in the order the writes arrive.
// pkg/sftp keeps that order: one goroutine sends a ReadFrom's writes, in
// sequence, while up to maxRequests are in flight.
//
// It returns when the server has acknowledged every write, as sshfs
// does at close: round trips are open and the writes; the handle is
// closed behind the reply (a failed close is logged), and the size is
// not asked (-1: unknown). Appends are the open/append/close cycles of
// logs, where every round trip counts.
func (b *backend) Append(ctx context.Context, p string, r io.Reader, n int64) (int64, error) {
	src := newSource(ctx, r, n)
	defer src.stop() // the transfer may outlive a cancelled Append
	_, err := call(ctx, b, "append", p, []string{p}, nil, func(c *conn) (struct{}, error) {
		f, err := c.sftp.OpenFile(p, os.O_WRONLY|os.O_APPEND)
		if err != nil {
			return struct{}{}, b.explain(c, "append", p, opens, err)
		}
		written, err := f.ReadFrom(src)
		b.s.Go(func() {
			if cerr := f.Close(); cerr != nil && err == nil {
				b.log.Debug("sftp: closing an appended file failed", "path", p, "err", cerr)
			}
		})
		if err == nil && written < n {
			return struct{}{}, b.srv.Errorf(syscall.EIO, "append", p, "the data ended after %d of %d bytes", written, n)
		}
		return struct{}{}, b.writeFailure(c, "append", p, src, n-written, err)
	}, nil)
	return -1, err
}

// Patch writes the ranges of r at their offsets of the existing file p,
// opened without truncation, and sets its length to size (see
// writeRanges). Like Store, it returns when the server has closed the
// file.
//
// Round trips: open, the writes and the truncation (one per maxRequests
// packets), close.
func (b *backend) Patch(ctx context.Context, p string, r io.ReaderAt, ranges []remote.Range, size int64) error {
	total, err := rangesWithin(ranges, size)
	if err != nil {
		return b.srv.Errorf(syscall.EINVAL, "patch", p, "%v", err)
	}
	src := &source{ra: r, size: total, ctx: ctx}
	defer src.stop()
	return b.do(ctx, "patch", p, nil, func(c *conn) error {
		f, err := c.sftp.OpenFile(p, os.O_WRONLY)
		if err != nil {
			return b.explain(c, "patch", p, opens, err)
		}
		err = writeRanges(f, src, ranges, size)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return b.writeFailure(c, "patch", p, src, total, err)
	})
}

// writeRanges writes the ranges of src to f at their offsets, a packet per
// write with at most maxRequests in flight, and sets f's length to size
// alongside them: every range ends at or before size, so the file comes
// out the same whichever the server does first, and the truncation costs
// no round trip of its own. src is read in this goroutine only.
func writeRanges(f *sftp.File, src io.ReaderAt, ranges []remote.Range, size int64) error {
	var wg sync.WaitGroup
	var failure firstError
	slots := make(chan struct{}, maxRequests)
	wg.Go(func() { failure.set(f.Truncate(size)) })
	for _, rg := range ranges {
		for off := rg.Off; off < rg.End && failure.get() == nil; off += packetSize {
			buf := make([]byte, min(packetSize, rg.End-off))
			if _, err := src.ReadAt(buf, off); err != nil {
				failure.set(err)
				break
			}
			slots <- struct{}{}
			wg.Go(func() {
				defer func() { <-slots }()
				_, err := f.WriteAt(buf, off)
				failure.set(err)
			})
		}
	}
	wg.Wait()
	return failure.get()
}

// firstError keeps the first error of concurrent requests.
type firstError struct {
	mu  sync.Mutex
	err error
}

func (e *firstError) set(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err == nil {
		e.err = err
	}
}

func (e *firstError) get() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

// rangesWithin checks that ranges lie within [0, size), as writeRanges
// needs, and returns how many bytes they hold.
func rangesWithin(ranges []remote.Range, size int64) (int64, error) {
	var total int64
	for _, r := range ranges {
		if r.Off < 0 || r.End < r.Off || r.End > size {
			return 0, fmt.Errorf("the range [%d, %d) is not within the file's %d bytes", r.Off, r.End, size)
		}
		total += r.End - r.Off
	}
	return total, nil
}
