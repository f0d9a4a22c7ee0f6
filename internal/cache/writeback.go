package cache

import (
	"context"
	"io"
	"os"
	"path"
	"syscall"
	"time"

	"wirefs/internal/ns"
	"wirefs/internal/remote"
)

// Write-back: a dirty file's changes go to the server at close (T_write =
// 0), T_write after the last close, at fsync, and at exit. What is sent
// depends on what changed since the server's version (the base):
//
//   - only bytes past the base's end (appends): those bytes, with the
//     server's own append (remote.Appender), so that appenders on
//     other clients, or other daemons, are never overwritten;
//   - bytes within the file, or a truncation: the changed ranges and the
//     new length (remote.Patcher);
//   - a file the server does not have yet, one recovered after a crash
//     (its base is not recorded), or a backend that cannot send the
//     change alone (FTP has appends, no patches): the whole file
//     (Writer.Store).
//
// Sending whole files made an open/append/close cycle cost the file's
// size; now it costs the record.

// specialBits are the mode bits beyond the permissions that a file keeps
// on the server (chmod 4755, 1777).
const specialBits = os.ModeSetuid | os.ModeSetgid | os.ModeSticky

// snapshot is what one write-back sends.
type snapshot struct {
	gen     uint64
	size    int64
	path    string
	mtime   time.Time
	base    int64  // the server's length the changes apply to; -1: send the whole file
	low     int64  // the lowest offset changed (written or cut) since the base
	changed ranges // the bytes written since the base
	// retried: an earlier attempt of these changes failed, perhaps
	// after the server appended part of them: write them in place,
	// which can be repeated, rather than append them again.
	retried bool
	// diverged: the server's file is not the base (file.diverged), so
	// only appends can be sent.
	diverged bool
	// appendsOnly: a new file that only O_APPEND writes made (file.appendsOnly).
	appendsOnly bool
	// fresh: no store of the file has succeeded (file.fresh).
	fresh bool
	// overwrites: plain writes made the changes (file.overwrites).
	overwrites bool
}

// appendOnly reports whether s only adds bytes at the end of the base.
func (s snapshot) appendOnly() bool {
	return s.base >= 0 && s.low >= s.base && s.size > s.base && !s.retried && !s.rewritesEmpty()
}

// rewritesEmpty reports whether s writes, with plain writes, a file that
// the server has empty: it is stored whole, replacing the empty file at
// once under a temporary name, as the open that emptied it meant. The
// shell's `cmd > file` is one: its open truncates, and its close of the
// descriptor it moved to standard output stores the empty file before
// cmd writes. Sent as an append instead, the bytes would reach the name
// piece by piece, and a failed upload would leave part of them there.
// O_APPEND writes still go as appends (other clients' records
// between them are kept).
func (s snapshot) rewritesEmpty() bool {
	return s.base == 0 && s.overwrites && !s.retried
}

// route is the way a write-back sends its changes.
type route int

const (
	appendRoute route = iota // the bytes past the base, appended (remote.Appender)
	createRoute              // a new file of appends: made if missing, appended to (appendCreating)
	storeRoute               // the whole file (Writer.Store)
	patchRoute               // the changed ranges and the length (remote.Patcher)
)

// route says how the changes of snapshot s go to t's server.
func (t *tree) route(s snapshot) route {
	_, ap := t.w.(remote.Appender)
	_, pa := t.w.(remote.Patcher)
	_, cr := t.w.(remote.Creator)
	switch {
	case s.appendOnly() && ap:
		return appendRoute
	case s.base < 0 && s.appendsOnly && ap && cr:
		return createRoute
	case s.base < 0 || !pa || s.rewritesEmpty():
		return storeRoute
	}
	return patchRoute
}

// writeBack sends f's changes to the server if it is dirty, waiting for a
// write-back already running. A failure is logged and retried later with
// backoff (or, refused for good, at the next write or fsync); the data
// stay dirty on disk until a write-back succeeds.
func (f *file) writeBack(ctx context.Context) error {
	t := f.t
	// The changes made so far are ours to see stored; later ones are
	// the next closer's. Waiting until the file was clean instead made
	// a close wait as long as other processes kept appending (with four
	// appenders, two starved in close while two took turns).
	f.mu.Lock()
	want := f.writeGen
	f.mu.Unlock()
	for {
		// The snapshot and the settling below hold io exclusively, so
		// that no write is between its bytes and its length (writeAt).
		f.io.Lock()
		f.mu.Lock()
		// (A file recovered after a crash is dirty at generation 0.)
		if !f.dirty || f.removed || (want > 0 && f.storedGen >= want) {
			f.mu.Unlock()
			f.io.Unlock()
			return nil
		}
		var pipe *appendPipe
		if ch := f.storing; ch != nil {
			if next := f.changesLocked(); !f.joinableLocked(next) {
				f.mu.Unlock()
				f.io.Unlock()
				if next.appendOnly() {
					f.openAhead() // for the next write-back, ours or a later closer's
				}
				select {
				case <-ch:
					continue
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			pipe = f.pipe // ours goes out behind the ones in flight (appendpipe.go)
			pipe.users++
		}
		prev, ch := f.storing, make(chan struct{})
		f.storing = ch
		// Sends go out in the order of the snapshots.
		prevSent, sent := f.sent, make(chan struct{})
		f.sent = sent
		s := f.takeSnapshotLocked()
		if s.diverged || t.route(s) != storeRoute {
			f.giveUpStreamLocked("the changes go to the server another way")
		}
		p, mode, mtime := s.path, f.info.Mode, s.mtime
		b, err := f.acquireLocked()
		f.mu.Unlock()
		f.io.Unlock()
		serverSize := s.size
		var wait func(context.Context) (int64, error)
		if prevSent != nil {
			<-prevSent
		}
		if err == nil && pipe != nil {
			wait = f.startAppend(pipe, b, s)
		} else if err == nil {
			wait, pipe = f.start(ctx, b, s, mode)
		}
		close(sent)
		if wait != nil {
			serverSize, err = wait(ctx)
		}
		if prev != nil {
			<-prev // the pipe's write-backs settle in order
		}
		f.io.Lock()
		f.mu.Lock()
		if pipe != nil {
			err = f.leavePipeLocked(pipe, err)
		}
		if b != nil {
			f.releaseLocked(b)
		}
		if f.storing == ch {
			f.storing = nil
		}
		close(ch)
		var info remote.Info
		var setTimes *[2]time.Time
		unknown := false // the server's file is not our copy, and what it is is not known
		if err != nil {
			f.restoreSnapshotLocked(s)
			f.keepDirtyLocked()
		} else {
			f.storedGen = max(f.storedGen, s.gen)
		}
		if err == nil {
			f.fresh = false // the server has a file of its name now
		}
		if err == nil && serverSize >= 0 && serverSize != s.size {
			// Someone else appended too, or the file was made anew
			// from our appends (send): our copy is not the server's
			// file.
			t.c.log.Debug("cache: the server's file is not our copy", "server", t.key, "path", p)
			f.diverged = true
		}
		if err == nil && s.gen == f.writeGen && !f.removed {
			setTimes, f.wantTimes = f.wantTimes, nil
			f.dirty, f.retry = false, 0
			// The server's mtime is unknown without another round
			// trip; the size identifies the version until the next
			// validation fills in the rest.
			f.version = remote.Info{Size: s.size}
			f.info = remote.Info{Name: path.Base(p), Mode: mode, Size: s.size, Mtime: mtime,
				Atime: f.info.Atime, Owner: f.info.Owner}
			if serverSize >= 0 {
				f.checked, f.epoch = time.Now(), t.c.epoch.Load()
			}
			// An append whose server length is unknown (serverSize
			// < 0) says nothing of what else the server's file got:
			// trust stays as the last validation left it, so the
			// file is asked again T_read after that, however often
			// it is appended to (a log truncated or replaced on the
			// server showed our copy for as long as we appended).
			if f.diverged {
				// Forget the copy; the next open validates.
				f.dropDataLocked()
				f.version = remote.Info{Size: serverSize}
				f.info.Size, f.checked = max(serverSize, 0), time.Time{}
				f.diverged = false
				unknown = serverSize < 0
			}
			info = f.info
			if s.base < 0 {
				defer t.dirChanged(path.Dir(p)) // perhaps a new entry there
			}
			if f.unrecorded {
				f.recordLaterLocked()
			} else if serr := f.saveRecordLocked(); serr != nil {
				t.c.log.Warn("cache: cannot save a record", "err", serr)
			}
			t.setDirty(f, false)
			f.settleLocked()
		}
		// Written meanwhile on top of a file that another writer
		// appended to (diverged): the new base stays our old end, so
		// our later appends still go as appends. Storing the whole
		// file instead replaced the others' appends with our older
		// copy (TestAppendsFromSeveralDaemons lost records).
		if err != nil {
			f.failure, f.refused = err, refusedForGood(err)
		} else {
			f.failure, f.refused = nil, false
		}
		f.mu.Unlock()
		f.io.Unlock()
		switch {
		case err != nil && refusedForGood(err):
			t.c.log.Error("cache: the server refuses the changes; they stay in the cache (see .wirefs/writeback) until the file is written or synced again, or removed",
				"server", t.key, "path", p, "err", err)
			return err
		case err != nil:
			delay := f.scheduleRetry()
			t.c.log.Warn("cache: write-back failed; the changes stay in the cache and are retried",
				"server", t.key, "path", p, "retry_in", delay, "err", err)
			return err
		}
		if setTimes != nil {
			if err := f.chtimes(ctx, setTimes[0], setTimes[1]); err != nil {
				t.c.log.Warn("cache: stored, but could not set the modification time", "server", t.key, "path", p, "err", err)
			}
		}
		if info.Name != "" {
			if unknown {
				// Not our guess in the listing either: the next
				// lookup asks the server.
				t.listingStale(path.Dir(p))
			} else {
				t.noteEntry(p, &info)
			}
			t.c.evict()
		}
		return nil
	}
}

// stillTheBase checks, before changes that failed once are sent again as
// changes (appended bytes, patched ranges), that the server's file is
// still the one they apply to: its length is the base's, ours (the
// failed attempt landed) or in between (part of an append landed). A file removed or replaced on the server
// meanwhile would otherwise get our bytes written into someone else's
// data; the changes stay in the cache instead (ESTALE, refused for good:
// see .wirefs/writeback).
func (f *file) stillTheBase(ctx context.Context, s snapshot) error {
	info, err := f.t.b.Stat(ctx, s.path)
	switch {
	case ns.Errno(err) == syscall.ENOENT:
		return ns.Errorf(syscall.ESTALE, "%s is gone from %s since it was changed here; the changes stay in the cache", s.path, f.t.key)
	case err != nil:
		return err
	case info.Size < min(s.base, s.size) || info.Size > max(s.base, s.size):
		return ns.Errorf(syscall.ESTALE, "%s on %s was replaced meanwhile (%d bytes, not the %d the changes apply to); the changes stay in the cache",
			s.path, f.t.key, info.Size, s.base)
	}
	return nil
}

// refusedForGood reports whether a failed store would fail the same way
// if retried unchanged: the server refuses the name, the permission, or
// the space. Retrying those forever only fills the log.
func refusedForGood(err error) bool {
	switch ns.Errno(err) {
	case syscall.ENAMETOOLONG, syscall.EACCES, syscall.EPERM, syscall.EROFS,
		syscall.EDQUOT, syscall.ENOSPC, syscall.EFBIG, syscall.EINVAL, syscall.ESTALE:
		return true
	}
	return false
}

func (f *file) scheduleRetry() time.Duration {
	f.mu.Lock()
	f.retry = min(max(2*f.retry, firstRetry), maxRetry)
	delay := f.retry
	f.mu.Unlock()
	f.schedule(delay)
	return delay
}

// schedule writes f back after delay (a later call moves the time: the
// delayed write-backs of several closes coalesce).
func (f *file) schedule(delay time.Duration) {
	if f.t.closing.Load() {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.removed {
		return
	}
	if f.timer == nil {
		f.timer = time.AfterFunc(delay, f.timerFired)
	} else {
		f.timer.Reset(delay)
	}
}

func (f *file) timerFired() {
	t := f.t
	if !t.enter() {
		return
	}
	defer t.wg.Done()
	f.mu.Lock()
	f.timer = nil
	f.mu.Unlock()
	f.writeBack(t.ctx) // a failure schedules the next attempt
}

func (f *file) stopTimer() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.timer != nil {
		f.timer.Stop()
		f.timer = nil
	}
}

// quiesce stops f's write-backs before it is removed and reports whether
// it has changes the server may not have (then it may not exist there).
func (f *file) quiesce() bool {
	f.stopTimer()
	f.mu.Lock()
	f.giveUpStreamLocked("removed")
	f.mu.Unlock()
	for {
		f.mu.Lock()
		ch, dirty := f.storing, f.dirty
		f.mu.Unlock()
		if ch == nil {
			return dirty
		}
		<-ch
	}
}

// takeSnapshotLocked (io held exclusively) takes what a write-back sends
// and starts a new base at its end: writes made while it runs are the
// next write-back's.
func (f *file) takeSnapshotLocked() snapshot {
	s := f.changesLocked()
	f.base, f.low, f.changed, f.retried, f.overwrites = f.size, f.size, nil, false, false
	f.streamTried = false
	return s
}

// changesLocked is what a write-back started now would send.
func (f *file) changesLocked() snapshot {
	s := snapshot{gen: f.writeGen, size: f.size, path: f.path, mtime: f.mtime,
		base: f.base, low: f.low, changed: f.changed, retried: f.retried, diverged: f.diverged,
		appendsOnly: f.appendsOnly, fresh: f.fresh, overwrites: f.overwrites}
	_, appends := f.t.w.(remote.Appender)
	_, patches := f.t.w.(remote.Patcher)
	if !appends && !patches {
		s.base = -1
	}
	return s
}

// restoreSnapshotLocked puts back what a failed write-back did not send.
// Several failed write-backs of a pipe go back as one, from the earliest
// base.
func (f *file) restoreSnapshotLocked(s snapshot) {
	f.base, f.retried = min(f.base, s.base), true
	f.low = min(f.low, s.low)
	f.overwrites = f.overwrites || s.overwrites
	for _, r := range s.changed {
		f.changed = f.changed.add(r.off, r.end)
	}
}

// noteChangeLocked records that [off, end) was written, or (end < 0) that
// the file was cut to length off.
func (f *file) noteChangeLocked(off, end int64) {
	f.low = min(f.low, off)
	if end > off {
		f.changed = f.changed.add(off, end)
	}
}

// send sends the changes of snapshot s from data file b and returns the
// server's length afterwards (s.size unless another writer appended; -1
// when an append does not tell).
//
// af is the server's file opened ahead for an append (nil: none).
func (f *file) send(ctx context.Context, b *blob, s snapshot, mode os.FileMode, af remote.AppendFile) (int64, error) {
	t := f.t
	ap, _ := t.w.(remote.Appender)
	pa, _ := t.w.(remote.Patcher)
	if s.diverged && !s.appendOnly() {
		// Offsets of our copy mean nothing in the server's file, and
		// storing our copy would undo what made them differ.
		return 0, ns.Errorf(syscall.ESTALE, "%s changed on %s while it was changed here; the changes stay in the cache", s.path, t.key)
	}
	if s.retried && s.base >= 0 && (ap != nil || pa != nil) {
		if err := f.stillTheBase(ctx, s); err != nil {
			return 0, err
		}
	}
	switch t.route(s) {
	case appendRoute:
		data := io.NewSectionReader(b.f, s.base, s.size-s.base)
		var n int64
		var err error
		if af != nil {
			n, err = af.Append(ctx, data, s.size-s.base)
			af.Close()
		} else {
			n, err = ap.Append(ctx, s.path, data, s.size-s.base)
		}
		if ns.Errno(err) == syscall.ENOENT && !s.retried {
			return f.appendToNew(ctx, b, s, mode)
		}
		return n, err
	case createRoute:
		return f.appendCreating(ctx, b, s, 0, mode)
	case storeRoute:
		// The whole file goes: what appends left uncached below the
		// base comes from the server first (makeDirty forAppends).
		if err := f.completeDirty(ctx); err != nil {
			return 0, err
		}
		data, perm := io.NewSectionReader(b.f, 0, s.size), mode.Perm()|mode&specialBits
		if st := f.takeStream(s, perm); st != nil {
			err := st.finish(ctx, f)
			if err == nil || refusedForGood(err) || ctx.Err() != nil {
				return s.size, err
			}
			t.c.log.Debug("cache: the store begun while the file was written failed; storing it again", "server", t.key, "path", s.path, "err", err)
		}
		if fs, ok := t.w.(remote.FreshStorer); ok && s.fresh {
			return s.size, fs.StoreFresh(ctx, s.path, data, s.size, perm)
		}
		return s.size, t.w.Store(ctx, s.path, data, s.size, perm)
	default:
		rs := make([]remote.Range, 0, len(s.changed))
		for _, r := range s.changed {
			if r.off < s.size {
				rs = append(rs, remote.Range{Off: r.off, End: min(r.end, s.size)})
			}
		}
		return s.size, pa.Patch(ctx, s.path, b.f, rs, s.size)
	}
}

// appendToNew stores the bytes appended in s as a new file: the server's
// file is gone since we last looked, removed or renamed away (log
// rotation: mv app.log app.log.1), and an append does not create it. The
// appender's records start a new file of that name, as they would through
// sshfs, whose open(O_APPEND|O_CREAT) after the rotation makes one; they
// stayed in the cache, refused for good, before (and bash's `echo >>`
// does not check close). Where the server can make a file without
// replacing one (remote.Creator), they are appended to whatever file has
// the name by then (appendCreating): several clients rotating onto one
// new log each keep their records. Otherwise the store replaces a file of
// that name made on the server between the failed append and this store
// (a narrow race; Store's temporary name keeps a failed upload from
// leaving a truncated file). Our older copy is not the server's file any
// more: the returned length differs from s.size, and the write-back
// forgets it.
func (f *file) appendToNew(ctx context.Context, b *blob, s snapshot, mode os.FileMode) (int64, error) {
	n := s.size - s.base
	f.t.c.log.Info("cache: the file is gone from the server; the appended bytes start a new file of its name",
		"server", f.t.key, "path", s.path, "bytes", n)
	if _, ok := f.t.w.(remote.Creator); ok {
		return f.appendCreating(ctx, b, s, s.base, mode)
	}
	return n, f.t.w.Store(ctx, s.path, io.NewSectionReader(b.f, s.base, n), n, mode.Perm()|mode&specialBits)
}

// appendCreating appends the bytes [from, s.size) of data file b to the
// server's file of s's name, made empty first (permission from mode) if
// it is missing. Each step is one atomic act of the server, so clients
// that each found no file and made one (a mount and `wirefs run`s
// starting one log; other machines) append to one file, whichever made
// it, as their open(O_WRONLY|O_APPEND|O_CREAT) would on a local file
// system: storing the new file whole replaced the file another had
// made, with its records. A file that was there already is not our copy:
// the write-back then forgets the copy (diverged), and the next open asks
// the server. It returns what Append returns, or (the file made here,
// its length unknown) the bytes sent.
//
// A retry after a failure that came once the server had written the
// bytes sends them again: a record twice, rather than other clients'
// records replaced.
func (f *file) appendCreating(ctx context.Context, b *blob, s snapshot, from int64, mode os.FileMode) (int64, error) {
	created, err := f.t.w.(remote.Creator).CreateIfMissing(ctx, s.path, mode.Perm()|mode&specialBits)
	if err != nil {
		return 0, err
	}
	n, size := s.size-from, int64(-1)
	if n > 0 {
		size, err = f.t.w.(remote.Appender).Append(ctx, s.path, io.NewSectionReader(b.f, from, n), n)
		if err != nil {
			return 0, err
		}
	}
	switch {
	case !created:
		f.mu.Lock()
		f.diverged = true
		f.mu.Unlock()
	case size < 0:
		size = n
	}
	return size, nil
}
