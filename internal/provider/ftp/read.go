package ftp

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/textproto"
	"slices"
	"strings"
	"syscall"
	"time"

	"wirefs/internal/remote/session"
)

// Reads: RETR after REST, one data connection per transfer. A sequential
// reader's read-ahead asks for consecutive ranges of one file, and a new
// data connection for each would start TCP's slow start again every few
// MiB (at 50 ms RTT, half the time of a 64 MiB read). So consecutive
// ranges share one transfer, a stream: a ReadRange that starts where the
// ranges already in line on a transfer of the file end (or a window or
// two after: read-ahead asks for its windows from several goroutines)
// waits in line and takes the data connection when the reader before it
// is done; a reader that took its range while more data follow leaves the
// stream parked for times.park, for the next range to take. Ranges that
// do not continue a stream get transfers of their own. (A range that
// waits beyond a gap waits at most until the transfer reaches the gap:
// the price of a reader that jumps ahead just after reading in order.)

// stream is one RETR of a file, read by the readers of consecutive ranges
// in turn.
type stream struct {
	path string
	pc   *pconn
	resp *transfer
	data *bufio.Reader // resp's data: Peek tells the end of the file from more to come
	pos  int64         // the offset in the file of data's next byte

	// Guarded by Backend.mu:
	tail   int64            // where the line of readers without a gap stops; < 0: at the end of the file
	next   map[int64]waiter // readers in line, by the offset they start at
	parked *time.Timer      // while no reader holds it
	dead   bool             // no reader joins any more
}

// waiter is a reader in line on a stream.
type waiter struct {
	in  chan *stream // receives the stream, or nil when it ends first
	end int64        // where its range ends; < 0: at the end of the file
}

// maxGap is how far beyond the line's end a range may wait in line: the
// cache asks for read-ahead windows from several goroutines at once, so
// the one after the next may come first (a window is 8 MiB at most).
const maxGap = 16 << 20

// join puts a reader of [off, end) in line on s and extends s.tail over
// the readers now in line without a gap; b.mu is held.
func (s *stream) join(off, end int64) chan *stream {
	in := make(chan *stream, 1)
	s.next[off] = waiter{in: in, end: end}
	s.extend()
	return in
}

// extend moves s.tail over the readers in line that start there.
func (s *stream) extend() {
	for s.tail >= 0 {
		w, ok := s.next[s.tail]
		if !ok {
			return
		}
		s.tail = w.end
	}
}

// ReadRange returns n bytes (n < 0: all) of p from off: RETR after REST,
// or the transfer of the range before it (see stream). The reader holds a
// transfer connection until it is closed.
func (b *Backend) ReadRange(ctx context.Context, p string, off, n int64) (io.ReadCloser, error) {
	if off < 0 {
		return nil, b.srv.Errorf(syscall.EINVAL, "read", p, "negative offset %d", off)
	}
	tail := int64(-1)
	if n >= 0 {
		tail = off + n
	}
	b.mu.Lock()
	if s := b.parkedAt(p, off); s != nil {
		s.parked, s.tail = nil, tail
		s.extend()
		b.mu.Unlock()
		b.wg.Done() // the parking's
		return b.reader(ctx, s, n), nil
	}
	if s := b.endingAt(p, off); s != nil {
		if s.parked != nil && s.parked.Stop() {
			// Parked before a gap: the range that fills it comes
			// at once (read-ahead asks from several goroutines),
			// or not at all (a reader that jumped).
			s.parked.Reset(b.gapGrace())
		}
		in := s.join(off, tail)
		b.mu.Unlock()
		got, err := b.waitInLine(ctx, s, off, in)
		if err != nil {
			return nil, b.srv.Wrap("read", p, err)
		}
		if got != nil {
			return b.reader(ctx, got, n), nil
		}
		// The stream ended before off: a transfer of its own.
		b.mu.Lock()
	}
	// Ranges after this one may wait for it.
	s := &stream{path: p, pos: off, tail: tail, next: map[int64]waiter{}}
	b.streams[p] = append(b.streams[p], s)
	b.mu.Unlock()
	pc, err := b.use(ctx, true, "read", p, nil, func(pc *pconn) error {
		var err error
		s.resp, err = pc.retr(b.serverPath(p), off)
		return err
	})
	if err != nil {
		b.end(s)
		return nil, err
	}
	s.pc, s.data = pc, bufio.NewReaderSize(s.resp, 64<<10)
	return b.reader(ctx, s, n), nil
}

// reader reads n bytes of s for a caller whose ctx breaks the transfer.
func (b *Backend) reader(ctx context.Context, s *stream, n int64) *rangeReader {
	r := &rangeReader{b: b, s: s, left: n, ctx: ctx}
	r.stop = context.AfterFunc(ctx, s.pc.kill)
	return r
}

// waitInLine waits for s to reach off, where the reader in (joined at off)
// takes it; nil (and no error) when s ends first, or, for a reader beyond
// a gap, when s reaches the gap and no range filled it (handOn).
func (b *Backend) waitInLine(ctx context.Context, s *stream, off int64, in chan *stream) (*stream, error) {
	select {
	case got := <-in:
		return got, nil
	case <-ctx.Done():
		b.mu.Lock()
		b.leaveLine(s, off, in)
		b.mu.Unlock()
		b.drain(in)
		return nil, session.Interrupted(ctx)
	}
}

// leaveLine takes the reader in, at off, out of s's line; b.mu is held.
func (b *Backend) leaveLine(s *stream, off int64, in chan *stream) {
	if s.next[off].in != in {
		return // handed the stream, or told it ended
	}
	delete(s.next, off)
	// The ranges in line after this one would wait for data nobody
	// reads: transfers of their own.
	for o, w := range s.next {
		if o > off {
			w.in <- nil
			delete(s.next, o)
		}
	}
	if !s.dead && (s.tail < 0 || s.tail > off) {
		s.tail = off
	}
}

// drain aborts the stream handed to a reader that left the line meanwhile.
func (b *Backend) drain(in chan *stream) {
	select {
	case got := <-in:
		if got != nil {
			b.abort(got)
		}
	default:
	}
}

// parkedAt returns p's stream parked at off, taken from its parking, or
// nil; b.mu is held.
func (b *Backend) parkedAt(p string, off int64) *stream {
	for _, s := range b.streams[p] {
		// s.pos is the holder's while one holds s: read it only when parked.
		if s.parked != nil && s.pos == off && s.parked.Stop() {
			return s
		}
	}
	return nil
}

// endingAt returns the stream of p whose line of readers ends at off, or
// a little before (maxGap), or nil; b.mu is held. (A stream parked at off
// is parkedAt's.)
func (b *Backend) endingAt(p string, off int64) *stream {
	for _, s := range b.streams[p] {
		// A parked stream's tail is its pos: a range beyond waits
		// for the one that fills the gap to take it (parkedAt), or
		// for the parking to end (shortened to gapGrace).
		if s.tail >= 0 && s.tail <= off && off-s.tail <= maxGap {
			if _, taken := s.next[off]; !taken {
				return s
			}
		}
	}
	return nil
}

// end says that no reader will take s after its holder (nor, when
// nobody holds it, at all): the readers in line make transfers of their
// own.
func (b *Backend) end(s *stream) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.endLocked(s)
}

func (b *Backend) endLocked(s *stream) {
	s.dead = true
	list := b.streams[s.path]
	for i, x := range list {
		if x == s {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(b.streams, s.path)
	} else {
		b.streams[s.path] = list
	}
	for _, w := range s.next {
		w.in <- nil
	}
	s.next = nil
}

// handOn gives s, whose holder took its range and whose data go on, to the
// reader waiting at s.pos, or parks it for the next range for times.park,
// or for gapGrace while readers wait in line beyond a gap at s.pos: the
// range that fills the gap may still come (read-ahead asks from several
// goroutines, and the data of a short range can arrive before the next
// one is asked for); when the parking ends, they get transfers of their
// own (endLocked). Sending them away at once split a 64 MiB read at 50 ms
// into eight transfers, each with TCP's slow start, in one read of three.
// False when s is ended.
func (b *Backend) handOn(s *stream) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.dead || b.closed {
		return false
	}
	if w, ok := s.next[s.pos]; ok {
		delete(s.next, s.pos)
		w.in <- s
		return true
	}
	s.tail = s.pos
	wait := b.times.park
	if len(s.next) > 0 {
		wait = b.gapGrace()
	}
	// Whoever stops the timer, or its function, calls Done.
	b.wg.Add(1)
	s.parked = time.AfterFunc(wait, func() {
		defer b.wg.Done()
		b.mu.Lock()
		if s.parked == nil { // taken meanwhile
			b.mu.Unlock()
			return
		}
		s.parked = nil
		b.endLocked(s)
		b.mu.Unlock()
		b.abort(s)
	})
	return true
}

// gapGrace is how long a stream stays parked before a gap that readers in
// line beyond it wait for: times.gapGrace, or two round trips where those
// are longer (a transfer of their own would cost them more).
func (b *Backend) gapGrace() time.Duration {
	return max(b.times.gapGrace, 2*time.Duration(b.rtt.Load()))
}

// dropStreams ends the streams of p before p changes on the server: no
// later read may take data of the old file.
func (b *Backend) dropStreams(p string) {
	b.mu.Lock()
	var parked []*stream
	for _, s := range slices.Clone(b.streams[p]) {
		if s.parked != nil && s.parked.Stop() {
			s.parked = nil
			parked = append(parked, s)
		} // else held, or its parking is ending it
		b.endLocked(s)
	}
	b.mu.Unlock()
	for _, s := range parked {
		b.wg.Done()
		b.abort(s)
	}
}

// dropParked ends the parked streams (Close).
func (b *Backend) dropParked() {
	b.mu.Lock()
	var parked []*stream
	for _, list := range b.streams {
		for _, s := range list {
			if s.parked != nil && s.parked.Stop() {
				s.parked = nil
				parked = append(parked, s)
			}
		}
	}
	for _, s := range parked {
		b.endLocked(s)
	}
	b.mu.Unlock()
	for _, s := range parked {
		b.wg.Done()
		s.pc.kill()
		b.forget(s.pc)
	}
}

// abort ends s's transfer before the end of its data: it closes the data
// connection (the server then aborts the transfer and replies), waits at
// most abortWait for that reply and checks with a NOOP that nothing else
// is pending; a connection that fails this is discarded, not reused.
func (b *Backend) abort(s *stream) {
	s.pc.ctrl.SetTimeout(abortWait)
	err := s.resp.Close()
	var reply *textproto.Error
	if (err == nil || errors.As(err, &reply)) && s.pc.sc.NoOp() == nil {
		s.pc.ctrl.SetTimeout(b.srv.Timeout)
		s.pc.lastUsed = time.Now()
		b.put(s.pc)
		return
	}
	b.discard(s.pc)
}

// rangeReader reads one range of a stream.
type rangeReader struct {
	b    *Backend
	s    *stream
	left int64 // bytes still wanted; < 0: to the end
	ctx  context.Context
	stop func() bool

	done   bool // the server's data ended and its final reply was read
	err    error
	closed bool
}

func (r *rangeReader) Read(p []byte) (int, error) {
	switch {
	case r.err != nil:
		return 0, r.err
	case r.closed:
		return 0, r.b.srv.Errorf(syscall.EBADF, "read", r.s.path, "reader is closed")
	case r.done || r.left == 0:
		return 0, io.EOF
	}
	if r.left > 0 && int64(len(p)) > r.left {
		p = p[:r.left]
	}
	n, err := r.s.data.Read(p)
	r.s.pos += int64(n)
	if r.left > 0 {
		r.left -= int64(n)
	}
	switch {
	case err == io.EOF:
		// The data ended: the reply says whether it ended because the
		// file did or because the transfer failed.
		r.done = true
		if cerr := r.s.resp.Close(); cerr != nil {
			r.err = r.fail(cerr)
			return n, r.err
		}
		return n, io.EOF
	case err != nil:
		r.err = r.fail(err)
		return n, r.err
	}
	return n, nil
}

// fail turns a transfer error into the caller's error.
func (r *rangeReader) fail(err error) error {
	if !isConnLoss(err) {
		var reply *textproto.Error
		if errors.As(err, &reply) {
			return r.b.srv.Errorf(syscall.EIO, "read", r.s.path, "transfer failed: %d %s", reply.Code, strings.TrimSpace(reply.Msg))
		}
		return err
	}
	r.s.pc.kill()
	return r.b.srv.Failure(r.ctx, "read", r.s.path, err, false)
}

// Close ends the range. When the caller took all of it, the stream goes
// on to the next range (handOn) or, at the end of the file, ends as any
// transfer does: no abort (the cache fetches small files whole). Before
// either, the transfer is aborted.
func (r *rangeReader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	b, s := r.b, r.s
	if !r.stop() || (r.err != nil && isConnLoss(r.err)) {
		b.end(s)
		b.discard(s.pc)
		return nil
	}
	if !r.done && r.err == nil && r.left == 0 {
		if _, err := s.data.Peek(1); err == io.EOF {
			r.done = s.resp.Close() == nil
		} else if err == nil && b.handOn(s) {
			return nil
		}
	}
	b.end(s)
	if !r.done {
		b.abort(s)
		return nil
	}
	s.pc.lastUsed = time.Now()
	b.put(s.pc)
	return nil
}
