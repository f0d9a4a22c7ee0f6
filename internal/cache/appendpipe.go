package cache

import (
	"context"
	"os"

	"wirefs/internal/remote"
)

// Overlapping append write-backs. One write-back of a file at a time made
// closers of a file that several processes append to queue: each waited
// for the write-back in flight, then for its own, a round trip apart,
// where through sshfs each writer's write goes out at once. When the
// server's file is open for appending on a file that lets appends overlap
// (remote.AppendStarter: SFTP), a closer whose changes are appends sends
// them on that file at once, while the write-backs before it are on their
// way (a pipe), and they land in the order they were sent.
//
// Order is all: each write-back takes its snapshot (its bytes, from the
// end of the one before), sends once the one before it has sent
// (file.sent), and settles only after the one before it settled.
// If one fails, the bytes of the ones after it may have landed before its
// own would have: they all fail with it, their changes go back as one
// (the earliest base), and the retry writes them in place (the retried
// snapshot), which puts the server's file in our order whatever landed.

// appendPipe is the server's file that the write-backs in flight append
// through.
type appendPipe struct {
	af    remote.AppendStarter
	users int   // write-backs in flight on it (f.mu)
	err   error // the first failure: the ones after it fail too (f.mu)
}

// joinableLocked reports whether a write-back of changes s may go through
// f's pipe now (f.mu held).
func (f *file) joinableLocked(s snapshot) bool {
	p := f.pipe
	return p != nil && p.err == nil && s.appendOnly() && s.size-s.base <= int64(p.af.StartMax())
}

// startAppend sends the bytes of snapshot s (data file b) through pipe p,
// which the caller counts as a user, in its turn to send. wait returns the
// server's answer; the server's length is unknown (-1).
func (f *file) startAppend(p *appendPipe, b *blob, s snapshot) func(context.Context) (int64, error) {
	data := make([]byte, s.size-s.base)
	if _, err := b.f.ReadAt(data, s.base); err != nil {
		err = diskError("reading", err)
		return func(context.Context) (int64, error) { return 0, err }
	}
	wait := p.af.StartAppend(data)
	return func(ctx context.Context) (int64, error) { return -1, wait(ctx) }
}

// start begins the write-back of snapshot s in its turn to send: an append goes
// through the file opened ahead, or opened now, and starts a pipe when
// that file lets appends overlap, so that later closers' appends go out
// behind it at once (their startAppend). wait does the rest; p is the
// pipe started, if any.
func (f *file) start(ctx context.Context, b *blob, s snapshot, mode os.FileMode) (wait func(context.Context) (int64, error), p *appendPipe) {
	var af remote.AppendFile
	if _, ok := f.t.w.(remote.Appender); ok && s.appendOnly() {
		af = f.takeAhead(ctx, s.path)
		if ao, ok := f.t.w.(remote.AppendOpener); ok && af == nil {
			// Opened in our turn, so that the closers behind us can
			// join (a failure shows again in send's Append).
			af, _ = ao.OpenAppend(ctx, s.path)
		}
	}
	if st, ok := af.(remote.AppendStarter); ok && s.size-s.base <= int64(st.StartMax()) {
		p = &appendPipe{af: st, users: 1}
		f.mu.Lock()
		f.pipe = p
		f.mu.Unlock()
		return f.startAppend(p, b, s), p
	}
	return func(ctx context.Context) (int64, error) { return f.send(ctx, b, s, mode, af) }, nil
}

// leavePipeLocked ends a write-back's use of pipe p with err: the first
// failure fails the ones after it (a later one's err is p's), and the
// last user closes the file.
func (f *file) leavePipeLocked(p *appendPipe, err error) error {
	switch {
	case err != nil && p.err == nil:
		p.err = err
	case err == nil && p.err != nil:
		err = p.err
	}
	if p.err != nil && f.pipe == p {
		f.pipe = nil // no more joiners: the retry goes in place
	}
	p.users--
	if p.users == 0 {
		if f.pipe == p {
			f.pipe = nil
		}
		p.af.Close()
	}
	return err
}
