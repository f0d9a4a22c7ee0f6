package splice

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultBlock is the block of a transfer when Options.Block is 0: the
// seed's schedule counts blocks of this size.
const DefaultBlock = 64 << 10

// Options steer a transfer. The zero value moves as fast as the ends go.
type Options struct {
	Block     int    // bytes per block (the most one step moves); 0: DefaultBlock
	Pacer     *Pacer // rate, schedule, pause; nil: none
	KeepGoing bool   // split: a failing sink is reported and dropped, the others continue
	Stats     *Stats // filled while the transfer runs; nil: none kept
	// Progress is about how long one unpaced sendfile that waits in the
	// kernel may last, so how often Stats move (a progress bar wants
	// about a second); 0: as long as the kernel lets it (1 GiB a call),
	// the cheapest, Stats moving only between calls. A cancellation
	// interrupts the call either way (End.interrupt); each call that
	// waits costs the Go runtime a burst of wake-ups of its monitor
	// thread (sysmon polls at 20 µs for a millisecond after a syscall
	// that blocked): calls of a second cost a 1 GiB transfer on a 1
	// Gbit/s link ~6 ms of CPU more than one call (~50 ms).
	Progress time.Duration
	// SinkFailed is told of every sink a split drops (KeepGoing).
	SinkFailed func(error)
}

func (o Options) block() int {
	if o.Block <= 0 {
		return DefaultBlock
	}
	return min(o.Block, 1<<20) // a pipe holds at most pipe-max-size
}

// Stats is what a running transfer has done; safe to read while it runs.
type Stats struct {
	start   time.Time
	bytes   atomic.Int64
	user    atomic.Bool
	mu      sync.Mutex
	methods []string
}

// NewStats starts the clock of a transfer.
func NewStats() *Stats { return &Stats{start: time.Now()} }

// Bytes is how many bytes the source has given that every live sink has
// taken.
func (s *Stats) Bytes() int64 {
	if s == nil {
		return 0
	}
	return s.bytes.Load()
}

// Elapsed is the time since NewStats.
func (s *Stats) Elapsed() time.Duration { return time.Since(s.start) }

// UserCopy reports whether some bytes went through user space (an end is
// daemon-served, or the kernel refused to splice it).
func (s *Stats) UserCopy() bool { return s != nil && s.user.Load() }

// Methods are the kernel calls used so far: "sendfile", "splice", "tee",
// "copy_file_range", "user-space copy".
func (s *Stats) Methods() []string {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string{}, s.methods...)
}

func (s *Stats) add(n int) {
	if s != nil {
		s.bytes.Add(int64(n))
	}
}

func (s *Stats) userCopy() {
	if s != nil && !s.user.Load() {
		s.user.Store(true)
		s.method("user-space copy")
	}
}

func (s *Stats) method(m string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, have := range s.methods {
		if have == m {
			return
		}
	}
	s.methods = append(s.methods, m)
}

// wakeOn wakes every end's waiting call when ctx ends; call stop when the
// transfer is over.
func wakeOn(ctx context.Context, ends ...*End) (stop func() bool) {
	return context.AfterFunc(ctx, func() {
		for _, e := range ends {
			e.wake()
		}
	})
}

// failure is the error of an end's step: the context's error when it
// ended (the step was woken for it), else which end failed and how.
func failure(ctx context.Context, op string, e *End, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var se *Error
	if errors.As(err, &se) {
		return err
	}
	return &Error{Op: op, End: e.Name, Err: err}
}

// Copy moves everything src gives to dst and returns how many bytes it
// moved: copy_file_range between regular files, sendfile from a regular
// file to a socket, splice through a pipe between other kernel objects,
// and a user-space copy where an end has no fd.
func Copy(ctx context.Context, src, dst *End, o Options) (int64, error) {
	stop := wakeOn(ctx, src, dst)
	defer stop()
	return copyOne(ctx, src, dst, o)
}

func copyOne(ctx context.Context, src, dst *End, o Options) (int64, error) {
	var moved int64
	if src.kind == kindRegular && dst.kind == kindRegular {
		n, err, ok := copyFileRange(ctx, src, dst, o)
		if ok {
			return n, err
		}
		moved += n
	}
	if src.kind == kindRegular && dst.kind == kindStream && dst.closeWrite != nil {
		n, err, ok := sendfile(ctx, src, dst, o)
		if ok {
			return moved + n, err
		}
		moved += n
	}
	n, err := split(ctx, src, []*End{dst}, o)
	return moved + n, err
}

// fastChunk is the most one unpaced sendfile or copy_file_range asks
// for; minFastChunk the least, and the first call's size.
const (
	fastChunk    = 1 << 30
	minFastChunk = 64 << 10
)

// nextFastChunk sizes the next unpaced call after one that moved n bytes
// in d: about per's worth at the rate it went, at most twice n, within
// [minFastChunk, fastChunk]. per is how late a cancellation or a pause is
// seen when nothing interrupts the call (copy_file_range: a 16 MiB call
// took 13 s at 10 Mbit/s, and so did Ctrl-C), or Options.Progress. Twice n at
// most: a call that only filled the socket buffer returns at once, which
// says nothing of the link's rate.
func nextFastChunk(n int, d, per time.Duration) int {
	next := 2 * n
	if d > 0 {
		next = min(next, int(float64(n)*per.Seconds()/d.Seconds()))
	}
	return min(fastChunk, max(minFastChunk, next))
}

// fast runs one of the single-call paths (sendfile, copy_file_range):
// step moves up to max bytes and returns 0 at the end of src. When the
// kernel refuses the very first step, ok is false and the caller takes
// the pipe path. Unpaced, calls last about per (0: each asks fastChunk).
func fast(ctx context.Context, name string, src, dst *End, o Options, per time.Duration,
	step func(max int) (int, error)) (moved int64, err error, ok bool) {
	// Unpaced, one call may move much more than a block: the kernel
	// loops inside it, as a C sendfile loop would, for about per
	// (nextFastChunk).
	block := o.block()
	if o.Pacer == nil {
		block = minFastChunk
		if per == 0 {
			block = fastChunk
		}
	}
	for {
		chunk := o.Pacer.chunk(block)
		start := time.Now()
		n, err := step(chunk)
		if o.Pacer == nil && per > 0 {
			block = nextFastChunk(n, time.Since(start), per)
		}
		if err != nil {
			if moved == 0 && unsupported(err) {
				return 0, nil, false
			}
			// Which end failed: a write error unless the source says so.
			op, e := "write", dst
			if errors.Is(err, unix.EIO) || errors.Is(err, unix.EISDIR) {
				op, e = "read", src
			}
			return moved, failure(ctx, op, e, os.NewSyscallError(name, err)), true
		}
		if n == 0 {
			return moved, nil, true
		}
		if moved == 0 {
			o.Stats.method(name)
		}
		moved += int64(n)
		o.Stats.add(n)
		if err := o.Pacer.wait(ctx, n); err != nil {
			return moved, err, true
		}
	}
}

func sendfile(ctx context.Context, src, dst *End, o Options) (int64, error, bool) {
	inKernel := false
	if o.Pacer == nil {
		if restore, err := dst.waitInKernel(); err == nil {
			inKernel = true
			defer restore()
		}
	}
	if inKernel {
		return fast(ctx, "sendfile", src, dst, o, o.Progress, func(max int) (int, error) {
			var n int
			var serr, werr error
			cerr := src.rc.Control(func(sfd uintptr) {
				werr = dst.rc.Control(func(dfd uintptr) {
					n, serr = dst.inKernel(ctx, func() (int, error) {
						off := src.off
						return unix.Sendfile(int(dfd), int(sfd), &off, max)
					})
				})
			})
			if err := errors.Join(cerr, werr, serr); err != nil {
				return 0, err
			}
			src.off += int64(n)
			return n, nil
		})
	}
	return fast(ctx, "sendfile", src, dst, o, kernelWait, func(max int) (int, error) {
		var n int
		var serr, werr error
		cerr := src.rc.Control(func(sfd uintptr) {
			werr = dst.rc.Write(func(dfd uintptr) bool {
				for {
					off := src.off
					n, serr = unix.Sendfile(int(dfd), int(sfd), &off, max)
					if serr != unix.EINTR {
						break
					}
				}
				return serr != unix.EAGAIN
			})
		})
		if err := errors.Join(cerr, werr, serr); err != nil {
			return 0, err
		}
		src.off += int64(n)
		return n, nil
	})
}

func copyFileRange(ctx context.Context, src, dst *End, o Options) (int64, error, bool) {
	return fast(ctx, "copy_file_range", src, dst, o, kernelWait, func(max int) (int, error) {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		var n int
		var err error
		src.rc.Control(func(sfd uintptr) {
			dst.rc.Control(func(dfd uintptr) {
				for {
					off := src.off
					n, err = unix.CopyFileRange(int(sfd), &off, int(dfd), nil, max, 0)
					if err != unix.EINTR {
						break
					}
				}
			})
		})
		if err != nil {
			n = 0
		}
		src.off += int64(n)
		if errors.Is(err, unix.EXDEV) || errors.Is(err, unix.EBADF) {
			err = unix.EOPNOTSUPP // across file systems, O_APPEND: the pipe path
		}
		return n, err
	})
}

// sink is one destination of a split.
type sink struct {
	end  *End
	pipe *pipe // its copy of the block (nil for the one that drains p0)
	buf  []byte
	err  error
}

// Split moves everything src gives to every sink: one pipe is filled
// from src, tee(2) duplicates it into one pipe per further sink, and
// every sink drains its pipe before the next block is read. A slow sink
// therefore slows the others and none loses data. A failing sink stops
// the transfer, or with o.KeepGoing is reported (o.SinkFailed) and
// dropped; the error returned then joins every sink's failure.
func Split(ctx context.Context, src *End, dsts []*End, o Options) (int64, error) {
	stop := wakeOn(ctx, append([]*End{src}, dsts...)...)
	defer stop()
	if len(dsts) == 1 {
		return copyOne(ctx, src, dsts[0], o)
	}
	return split(ctx, src, dsts, o)
}

func split(ctx context.Context, src *End, dsts []*End, o Options) (int64, error) {
	block := o.block()
	p0, err := newPipe(block)
	if err != nil {
		return 0, err
	}
	defer p0.close()
	sinks := make([]*sink, len(dsts))
	for i, d := range dsts {
		sinks[i] = &sink{end: d}
		if i < len(dsts)-1 {
			if sinks[i].pipe, err = newPipe(p0.cap); err != nil {
				for _, s := range sinks[:i] {
					s.pipe.close()
				}
				return 0, err
			}
			defer sinks[i].pipe.close()
		}
	}
	srcBuf := make([]byte, p0.cap) // a user-space source, or a fallback
	if src.kind != kindUser {
		o.Stats.method("splice")
	}
	if len(dsts) > 1 {
		o.Stats.method("tee")
	}
	var moved int64
	var failed []error
	var ownP0 *sink // the sink that drains p0 itself (no tee)
	for _, s := range sinks {
		if s.pipe == nil {
			ownP0 = s
		}
	}
	for {
		chunk := min(o.Pacer.chunk(block), p0.cap)
		n, err := fill(ctx, src, p0, chunk, srcBuf, o.Stats)
		if err != nil {
			return moved, errors.Join(append(failed, failure(ctx, "read", src, err))...)
		}
		if n == 0 {
			return moved, errors.Join(failed...)
		}
		var live []*sink
		for _, s := range sinks {
			if s.err == nil {
				live = append(live, s)
			}
		}
		// p0 goes to the last live sink; a live sink that had its own
		// pipe takes p0 over when the p0 sink has failed.
		if ownP0.err != nil {
			last := live[len(live)-1]
			last.pipe, ownP0 = nil, last
		}
		for _, s := range live {
			if s.pipe != nil {
				if err := tee(p0, s.pipe, n); err != nil {
					return moved, err
				}
			}
		}
		drainAll(ctx, p0, live, n, o.Stats)
		for _, s := range live {
			if s.err == nil {
				continue
			}
			if !o.KeepGoing || ctx.Err() != nil {
				return moved, s.err
			}
			failed = append(failed, s.err)
			if o.SinkFailed != nil {
				o.SinkFailed(s.err)
			}
		}
		if len(failed) == len(sinks) {
			return moved, errors.Join(failed...)
		}
		if ownP0.err != nil {
			p0.discard()
		}
		moved += int64(n)
		o.Stats.add(n)
		if err := o.Pacer.wait(ctx, n); err != nil {
			return moved, err
		}
	}
}

// drainAll empties each live sink's pipe (p0 for the one without) into
// it, all at once; failures are left in the sinks.
func drainAll(ctx context.Context, p0 *pipe, live []*sink, n int, st *Stats) {
	one := func(s *sink) {
		p := s.pipe
		if p == nil {
			p = p0
		}
		if s.buf == nil {
			s.buf = make([]byte, p0.cap) // a user-space sink, or a fallback
		}
		if err := drain(ctx, p, s.end, n, s.buf, st); err != nil {
			s.err = failure(ctx, "write", s.end, err)
			if s.pipe != nil {
				s.pipe.discard()
			}
		}
	}
	if len(live) == 1 {
		one(live[0])
		return
	}
	var wg sync.WaitGroup
	for _, s := range live {
		wg.Go(func() { one(s) })
	}
	wg.Wait()
}

// Merge moves what every source gives into dst, in the order it arrives,
// one whole block at a time: a block read from one source is written
// completely before a block of another. It ends when every source has
// ended, or at the first failure.
func Merge(ctx context.Context, srcs []*End, dst *End, o Options) (int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := wakeOn(ctx, append([]*End{dst}, srcs...)...)
	defer stop()
	block := o.block()
	o.Stats.method("splice")
	var mu sync.Mutex
	var moved atomic.Int64
	errs := make([]error, len(srcs))
	var wg sync.WaitGroup
	for i, src := range srcs {
		wg.Go(func() {
			p, err := newPipe(block)
			if err != nil {
				errs[i] = err
				cancel()
				return
			}
			defer p.close()
			inBuf, outBuf := make([]byte, p.cap), make([]byte, p.cap)
			for {
				n, err := fill(ctx, src, p, min(o.Pacer.chunk(block), p.cap), inBuf, o.Stats)
				if err != nil {
					errs[i] = failure(ctx, "read", src, err)
					cancel()
					return
				}
				if n == 0 {
					return
				}
				mu.Lock()
				err = drain(ctx, p, dst, n, outBuf, o.Stats)
				mu.Unlock()
				if err != nil {
					errs[i] = failure(ctx, "write", dst, err)
					cancel()
					return
				}
				moved.Add(int64(n))
				o.Stats.add(n)
				if err := o.Pacer.wait(ctx, n); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return moved.Load(), firstCause(errs...)
}

// firstCause is the first error that is not a cancellation (the others
// were cancelled because of it), else the first error.
func firstCause(errs ...error) error {
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Relay moves a to b and b to a at once. When one direction reaches the
// end of its source, its sink is half-closed (shutdown SHUT_WR) and the
// other direction goes on; the relay ends when both have ended, or at the
// first failure, which stops both. It returns the bytes moved each way.
func Relay(ctx context.Context, a, b *End, o Options) (ab, ba int64, err error) {
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := wakeOn(ctx, a, b)
	defer stop()
	var errAB, errBA error
	var wg sync.WaitGroup
	one := func(src, dst *End, n *int64, e *error) {
		*n, *e = copyOne(ctx, src, dst, o)
		if *e == nil {
			if err := dst.CloseWrite(); err != nil && !errors.Is(err, unix.ENOTCONN) {
				*e = failure(ctx, "shutdown", dst, err)
			}
		}
		if *e != nil {
			cancel()
		}
	}
	wg.Go(func() { one(a, b, &ab, &errAB) })
	wg.Go(func() { one(b, a, &ba, &errBA) })
	wg.Wait()
	if parent.Err() != nil {
		return ab, ba, parent.Err()
	}
	return ab, ba, firstCause(errAB, errBA)
}

// String names the error's end for logs.
func (s *sink) String() string { return fmt.Sprintf("sink %s", s.end.Name) }
