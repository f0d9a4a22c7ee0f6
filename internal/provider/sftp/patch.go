package sftp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sync"
	"syscall"

	"github.com/pkg/sftp"

	"wirefs/internal/ns"
	"wirefs/internal/remote"
	"wirefs/internal/remote/session"
)

// Append writes n bytes of r at the end of the existing file p: OpenAppend,
// then the file's Append and Close.
func (b *backend) Append(ctx context.Context, p string, r io.Reader, n int64) (int64, error) {
	f, err := b.OpenAppend(ctx, p)
	if err != nil {
		return -1, err
	}
	defer f.Close()
	return f.Append(ctx, r, n)
}

// CreateIfMissing makes p with O_CREAT|O_EXCL and sets perm on the file
// it made; OpenSSH answers an existing p with a bare "failure" (SFTP v3
// has no EEXIST), which explain tells from other failures by looking.
// Retried like a read: a second attempt finds the file the first made.
func (b *backend) CreateIfMissing(ctx context.Context, p string, perm os.FileMode) (created bool, err error) {
	return call(ctx, b, "create", p, []string{p}, session.Always, func(c *conn) (bool, error) {
		f, err := c.sftp.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
		if err != nil {
			err = b.explain(c, "create", p, creates, err)
			if ns.Errno(err) == syscall.EEXIST {
				return false, nil
			}
			return false, err
		}
		chmod := make(chan error, 1)
		go func() { chmod <- c.sftp.Chmod(p, perm) }()
		cerr := f.Close()
		return true, b.explain(c, "create", p, changes, errors.Join(<-chmod, cerr))
	}, nil)
}

// OpenAppend opens the existing file p with SSH_FXF_APPEND: OpenSSH opens
// it O_APPEND, and each write lands at the end as the server sees it,
// whatever offset the write names (the tests check this on the real
// server), in the order the writes arrive. Opening changes nothing, so
// it is retried on a new connection like a read.
func (b *backend) OpenAppend(ctx context.Context, p string) (remote.AppendFile, error) {
	return call(ctx, b, "append", p, []string{p}, session.Always, func(c *conn) (remote.AppendFile, error) {
		f, err := c.sftp.OpenFile(p, os.O_WRONLY|os.O_APPEND)
		if err != nil {
			return nil, b.explain(c, "append", p, opens, err)
		}
		return &appendFile{b: b, c: c, f: f, p: p}, nil
	}, remote.AppendFile.Close)
}

// appendFile is a file OpenAppend opened on connection c.
type appendFile struct {
	b *backend
	c *conn
	f *sftp.File
	p string
}

// Append sends the writes; pkg/sftp keeps their order: one goroutine
// sends a ReadFrom's writes, in sequence, while up to maxRequests are in
// flight. It returns when the server has acknowledged every write, as
// sshfs does at close, and does not ask the size (-1: unknown): appends
// are the open/append/close cycles of logs, where every round trip
// counts.
func (a *appendFile) Append(ctx context.Context, r io.Reader, n int64) (int64, error) {
	if a.c.Err() != nil {
		// The connection ended since the open (the server restarted,
		// or stalled): the file is gone with it; open it again on
		// the next one.
		return a.b.Append(ctx, a.p, r, n)
	}
	if n <= int64(a.c.packet) {
		return a.appendOne(ctx, r, n)
	}
	src := newSource(ctx, r, n)
	defer src.stop() // the transfer may outlive a cancelled Append
	_, err := session.On(ctx, a.b.s, a.c, "append", a.p, func() (struct{}, error) {
		written, err := a.f.ReadFrom(src)
		if err == nil && written < n {
			return struct{}{}, a.b.srv.Errorf(syscall.EIO, "append", a.p, "the data ended after %d of %d bytes", written, n)
		}
		return struct{}{}, a.b.writeFailure(a.c, "append", a.p, src, n-written, err)
	}, nil)
	return -1, err
}

// appendOne sends n bytes, no more than one packet, as one write: the
// record of an open/append/close cycle. ReadFrom would take a buffer of a
// whole packet (255 KiB) for it, whose allocation, clearing and garbage
// were a fifth of the daemon's CPU per cycle. The bytes are read here,
// before the call, so an abandoned write never touches r.
func (a *appendFile) appendOne(ctx context.Context, r io.Reader, n int64) (int64, error) {
	data := make([]byte, n)
	if got, err := io.ReadFull(r, data); err != nil {
		return -1, a.b.srv.Errorf(syscall.EIO, "append", a.p, "reading the data: %d of %d bytes: %v", got, n, err)
	}
	_, err := session.On(ctx, a.b.s, a.c, "append", a.p, func() (struct{}, error) {
		_, err := a.f.Write(data)
		if isFailure(err) {
			err = a.b.fsFailure(a.c, "append", a.p, path.Dir(a.p), n, err)
		}
		return struct{}{}, err
	}, nil)
	return -1, err
}

var _ remote.AppendStarter = (*appendFile)(nil)

// StartAppend sends data as one write (pkg/sftp's StartWriteAt, a patch
// of ours: third_party/README.md): OpenSSH appends the writes to a file
// opened with SSH_FXF_APPEND in the order they arrive, and they arrive in
// the order they were sent on the one connection. The watchdog counts the
// answer's wait like a call's.
func (a *appendFile) StartAppend(data []byte) func(ctx context.Context) error {
	if why := a.c.Err(); why != nil {
		// The connection ended since the open; the caller sends the
		// bytes again on the next one.
		return func(context.Context) error { return a.b.s.Wrap("append", a.p, why) }
	}
	if len(data) > a.StartMax() {
		err := a.b.srv.Errorf(syscall.EINVAL, "append", a.p, "%d bytes do not fit in one packet of %d", len(data), a.StartMax())
		return func(context.Context) error { return err }
	}
	end := session.Begin(a.c)
	wait := a.f.StartWriteAt(data, 0)
	return func(ctx context.Context) error {
		_, err := wait(ctx)
		end()
		if err != nil && ctx.Err() != nil {
			return a.b.s.Wrap("append", a.p, session.Interrupted(ctx))
		}
		if isFailure(err) {
			err = a.b.fsFailure(a.c, "append", a.p, path.Dir(a.p), int64(len(data)), err)
		}
		return a.b.s.Judge(a.c, "append", a.p, err)
	}
}

// StartMax is one packet: StartWriteAt sends no more.
func (a *appendFile) StartMax() int { return a.c.packet }

// Close closes the file behind the caller's back: nothing waits for it.
func (a *appendFile) Close() {
	a.b.s.Go(func() {
		if err := a.f.Close(); err != nil {
			a.b.log.Debug("sftp: closing an appended file failed", "path", a.p, "err", err)
		}
	})
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
