package splice

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// pipe is the kernel buffer a splice moves through: both ends
// non-blocking, so a call on it never waits (the transfer empties it
// before it fills it again; a wait is always on the source or the sink).
type pipe struct {
	r, w int
	cap  int
}

func newPipe(size int) (*pipe, error) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		return nil, os.NewSyscallError("pipe2", err)
	}
	p := &pipe{r: fds[0], w: fds[1]}
	got, err := unix.FcntlInt(uintptr(p.w), unix.F_SETPIPE_SZ, size)
	if err != nil {
		// Over the user's limit of pipe pages: the default size.
		got, err = unix.FcntlInt(uintptr(p.w), unix.F_GETPIPE_SZ, 0)
		if err != nil {
			p.close()
			return nil, os.NewSyscallError("fcntl", err)
		}
	}
	p.cap = got
	return p, nil
}

func (p *pipe) close() {
	unix.Close(p.r)
	unix.Close(p.w)
}

// discard empties the pipe (a sink failed with bytes still in it).
func (p *pipe) discard() {
	var buf [16 << 10]byte
	for {
		if n, err := unix.Read(p.r, buf[:]); n <= 0 || err != nil {
			return
		}
	}
}

const spliceFlags = unix.SPLICE_F_MOVE | unix.SPLICE_F_NONBLOCK

// unsupported is an error that says the kernel cannot do this splice
// between these objects (a terminal, an O_APPEND file): the same bytes
// then go through user space.
func unsupported(err error) bool {
	return errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP)
}

// fill moves up to max bytes (at least one) from src into the empty pipe
// p. 0 bytes and no error is the end of src. buf is scratch space for a
// user-space source.
func fill(ctx context.Context, src *End, p *pipe, max int, buf []byte, st *Stats) (int, error) {
	if src.kind != kindUser && !src.noSplice {
		n, err := spliceIn(src, p, max)
		if err == nil || !unsupported(err) {
			return n, err
		}
		src.noSplice = true // and copy it below
	}
	st.userCopy()
	n, err := readSome(ctx, src, buf[:min(max, len(buf))])
	if n > 0 {
		if werr := writeFull(p.w, buf[:n]); werr != nil {
			return 0, werr
		}
	}
	return n, err
}

func spliceIn(src *End, p *pipe, max int) (int, error) {
	var n int
	var serr error
	err := src.rc.Read(func(fd uintptr) bool {
		for {
			if src.kind == kindRegular {
				off := src.off
				var k int64
				k, serr = unix.Splice(int(fd), &off, p.w, nil, max, spliceFlags)
				n = int(k)
			} else {
				var k int64
				k, serr = unix.Splice(int(fd), nil, p.w, nil, max, spliceFlags)
				n = int(k)
			}
			if serr != unix.EINTR {
				return serr != unix.EAGAIN
			}
		}
	})
	if err == nil {
		err = serr
	}
	if n > 0 && src.kind == kindRegular {
		src.off += int64(n)
	}
	if err != nil {
		return 0, os.NewSyscallError("splice", err)
	}
	return n, nil
}

// readSome reads once from a user-space end, or from a kernel end whose
// object cannot splice, through user space.
func readSome(ctx context.Context, src *End, buf []byte) (int, error) {
	if src.kind == kindUser {
		if src.r == nil {
			return 0, errors.New("not readable")
		}
		n, err := src.r.Read(ctx, buf)
		if errors.Is(err, io.EOF) {
			err = nil
		}
		return n, err
	}
	var n int
	var serr error
	err := src.rc.Read(func(fd uintptr) bool {
		for {
			if src.kind == kindRegular {
				n, serr = unix.Pread(int(fd), buf, src.off)
			} else {
				n, serr = unix.Read(int(fd), buf)
			}
			if serr != unix.EINTR {
				return serr != unix.EAGAIN
			}
		}
	})
	if err == nil {
		err = serr
	}
	if n < 0 {
		n = 0
	}
	if src.kind == kindRegular {
		src.off += int64(n)
	}
	return n, err
}

// writeFull writes b to a non-blocking fd that has room for it (the empty
// pipe, sized for a block).
func writeFull(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return os.NewSyscallError("write", err)
		}
		b = b[n:]
	}
	return nil
}

// drain moves exactly n bytes out of the pipe p into dst. buf is scratch
// space for a user-space sink.
func drain(ctx context.Context, p *pipe, dst *End, n int, buf []byte, st *Stats) error {
	for n > 0 {
		if dst.kind != kindUser && !dst.noSplice {
			k, err := spliceOut(p, dst, n)
			if err != nil && unsupported(err) {
				dst.noSplice = true
				continue
			}
			if err != nil {
				return err
			}
			if k == 0 {
				return io.ErrShortWrite
			}
			n -= k
			continue
		}
		st.userCopy()
		k, err := unix.Read(p.r, buf[:min(n, len(buf))])
		if err != nil || k <= 0 {
			return fmt.Errorf("read pipe: %v", err)
		}
		if err := writeAll(ctx, dst, buf[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

func spliceOut(p *pipe, dst *End, n int) (int, error) {
	var k int
	var serr error
	err := dst.rc.Write(func(fd uintptr) bool {
		for {
			var m int64
			m, serr = unix.Splice(p.r, nil, int(fd), nil, n, spliceFlags)
			k = int(m)
			if serr != unix.EINTR {
				return serr != unix.EAGAIN
			}
		}
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return 0, os.NewSyscallError("splice", err)
	}
	return k, nil
}

// writeAll writes b to a user-space end, or through user space to a
// kernel end that cannot take a splice.
func writeAll(ctx context.Context, dst *End, b []byte) error {
	if dst.kind == kindUser {
		if dst.w == nil {
			return errors.New("not writable")
		}
		for len(b) > 0 {
			n, err := dst.w.Write(ctx, b)
			if err != nil {
				return err
			}
			if n == 0 {
				return io.ErrShortWrite
			}
			b = b[n:]
		}
		return nil
	}
	for len(b) > 0 {
		var n int
		var serr error
		err := dst.rc.Write(func(fd uintptr) bool {
			for {
				n, serr = unix.Write(int(fd), b)
				if serr != unix.EINTR {
					return serr != unix.EAGAIN
				}
			}
		})
		if err == nil {
			err = serr
		}
		if err != nil {
			return os.NewSyscallError("write", err)
		}
		b = b[n:]
	}
	return nil
}

// tee duplicates the n bytes in p into the empty pipe q (of the same
// size), leaving p as it was.
func tee(p, q *pipe, n int) error {
	for {
		k, err := unix.Tee(p.r, q.w, n, unix.SPLICE_F_NONBLOCK)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return os.NewSyscallError("tee", err)
		}
		if int(k) != n {
			// tee copies from the start of p every time: a short one
			// cannot be continued.
			return fmt.Errorf("tee: %d of %d bytes", k, n)
		}
		return nil
	}
}
