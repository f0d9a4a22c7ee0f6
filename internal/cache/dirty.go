package cache

import (
	"context"
	"os"
	"path"
	"syscall"
	"time"

	"wirefs/internal/ns"
	"wirefs/internal/remote"
)

// Local changes: a written, truncated or created file becomes dirty, and
// its data file is then the file until a write-back (writeback.go) gives
// the server the changes.

// makeDirty marks f dirty, durably: from then on the data file is the
// file, and it survives a crash until written back. The data file must
// hold the file first: all of it (to < 0), or what a truncation to length
// to keeps — except for appends (to == forAppends), which change nothing
// below the end: the data file then needs only the length, and what it
// lacks below it stays the server's, fetched when read or when a change
// needs it (completeDirty). A first `echo >> big.log` through the mount
// downloaded big.log before.
func (f *file) makeDirty(ctx context.Context, to int64) error {
	for {
		f.mu.Lock()
		dirty, trusted := f.dirty, f.info.Size >= 0 && f.freshLocked()
		f.mu.Unlock()
		if dirty {
			return nil
		}
		keep := int64(0)
		if to != 0 {
			if !trusted {
				if err := f.validate(ctx); err != nil {
					return err
				}
			}
			size, err := f.length(ctx)
			if err != nil {
				return err
			}
			keep = size
			if to > 0 {
				keep = min(size, to)
			}
			if to != forAppends {
				if err := f.need(ctx, 0, keep, nil); err != nil {
					return err
				}
			}
		}
		f.io.Lock()
		f.mu.Lock()
		done, err := f.dirty, error(nil)
		_, missing := f.present.gap(0, keep)
		if !done && (!missing || to == forAppends) && (to >= 0 || f.lengthLocked() == keep) {
			length := keep
			if to >= 0 {
				length = to
			}
			err, done = f.markDirtyLocked(length, to == forAppends), true
		}
		f.mu.Unlock()
		f.io.Unlock()
		if done {
			return err
		}
	}
}

// forAppends is makeDirty's length for O_APPEND writes.
const forAppends = -2

// markDirtyLocked (io held exclusively) makes the data file, of length
// size, the file's contents; partial: only its present ranges are, the
// rest below size is the server's (makeDirty forAppends).
func (f *file) markDirtyLocked(size int64, partial bool) error {
	b, err := f.acquireLocked()
	if err != nil {
		return err
	}
	defer f.releaseLocked(b)
	if err := b.f.Truncate(size); err != nil {
		return diskError("sizing a data file", err)
	}
	if !partial {
		f.dataGen++ // fetches still running belong to the old contents
		f.present = ranges{}.add(0, size)
	}
	f.dirty, f.size, f.mtime = true, size, f.info.Mtime
	// The changes apply to the server's version, whose length is
	// known once it was stored or validated.
	f.base, f.low, f.changed, f.retried = f.version.Size, size, nil, false
	if f.version.Size >= 0 && size < f.version.Size {
		f.low = size
	}
	if err := f.recordDirtyLocked(); err != nil {
		f.dirty = false
		return err
	}
	f.t.setDirty(f, true)
	f.settleLocked()
	return nil
}

// truncate sets f's length to size, keeping what comes before.
func (f *file) truncate(ctx context.Context, size int64) error {
	for {
		if err := f.makeDirty(ctx, size); err != nil {
			return err
		}
		if err := f.completeDirty(ctx); err != nil {
			return err
		}
		f.io.Lock()
		f.mu.Lock()
		if !f.dirty { // written back meanwhile: again
			f.mu.Unlock()
			f.io.Unlock()
			continue
		}
		b, err := f.acquireLocked()
		if err == nil {
			if terr := b.f.Truncate(size); terr != nil {
				err = diskError("truncating a data file", terr)
			}
			f.releaseLocked(b)
		}
		if err == nil {
			f.giveUpStreamLocked("a truncation")
			f.dataGen++
			f.writeGen++
			f.appendsOnly = false
			f.present = ranges{}.add(0, size)
			f.noteChangeLocked(min(size, f.size), -1)
			f.size, f.mtime = size, time.Now()
		}
		f.mu.Unlock()
		f.io.Unlock()
		return err
	}
}

// create makes f a new, empty file with permissions perm that exists in
// the cache (dirty) until written back. truncating: the open(2) that
// creates it asked for O_TRUNC, so its write-back replaces a file another
// client made of that name meanwhile, as that open would have emptied it;
// otherwise the new file is made only if missing while it is only
// appended to (appendCreating).
//
// created is false, and nothing changes, when f exists already: another
// create made it, or a lookup found it, since the caller's lookup.
func (f *file) create(perm os.FileMode, truncating bool) (info remote.Info, created bool, err error) {
	f.io.Lock()
	defer f.io.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.info.Size >= 0 && !f.removed {
		return f.info, false, nil
	}
	if err := f.makeNewLocked(perm, !truncating); err != nil {
		return remote.Info{}, false, err
	}
	return f.info, true, nil
}

// makeNewLocked (io held exclusively) makes f a new, empty file with
// permissions perm, dirty until written back; appendsOnly: its changes
// may go as appends to a file of its name made meanwhile (file.appendsOnly),
// until a write elsewhere or a truncation.
func (f *file) makeNewLocked(perm os.FileMode, appendsOnly bool) error {
	f.dropDataLocked()
	now := time.Now()
	f.removed = false
	f.info = remote.Info{Name: path.Base(f.path), Mode: perm, Size: 0, Mtime: now}
	f.version = remote.Info{Size: -1}
	f.checked, f.epoch = now, f.t.c.epoch.Load()
	if err := f.markDirtyLocked(0, false); err != nil {
		return err
	}
	f.mtime = now
	f.writeGen++
	f.appendsOnly = appendsOnly
	f.fresh = true
	return nil
}

// appendToVanished makes f, whose data an O_APPEND write needed and the
// server no longer has (removed or renamed away since we looked: a log
// rotated there), a new file for the write to start, as the write-back
// of appends to a vanished file does (appendToNew) and as sshfs would
// after the rotation. It keeps f's mode.
func (f *file) appendToVanished() error {
	f.io.Lock()
	defer f.io.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dirty {
		return nil // made new, or written, meanwhile
	}
	f.t.c.log.Info("cache: the file is gone from the server; the appended bytes start a new file of its name",
		"server", f.t.key, "path", f.path)
	return f.makeNewLocked(f.info.Mode.Perm()|f.info.Mode&specialBits, true)
}

// writeAt writes p at off, or at the end of the file when appending
// (O_APPEND: the end as the cache knows it, which the kernel's idea of the
// length may lag behind when another client appended).
func (f *file) writeAt(ctx context.Context, p []byte, off int64, appending bool) (int, error) {
	if appending {
		f.appendMu.Lock()
		defer f.appendMu.Unlock()
	}
	for {
		to := int64(-1)
		if appending {
			to = forAppends
		}
		if err := f.makeDirty(ctx, to); appending && ns.Errno(err) == syscall.ENOENT {
			if err := f.appendToVanished(); err != nil {
				return 0, err
			}
			continue
		} else if err != nil {
			return 0, err
		}
		if !appending {
			if err := f.completeDirty(ctx); err != nil {
				return 0, err
			}
		}
		// io is held shared until the bytes and the new length are
		// recorded: a write-back takes it exclusively to take its
		// snapshot and to settle, so it never sees a write half done
		// (a store of the old length marked as the current version
		// lost the appended bytes, and the next write filled them
		// with zeros).
		f.io.RLock()
		f.mu.Lock()
		if !f.dirty { // written back meanwhile
			f.mu.Unlock()
			f.io.RUnlock()
			continue
		}
		if appending {
			off = f.size
		} else {
			f.appendsOnly = false
			f.overwrites = true
		}
		b, err := f.acquireLocked()
		var st *stream
		if err == nil {
			st = f.writingLocked(off, off+int64(len(p)), appending)
		}
		f.mu.Unlock()
		n := 0
		if err == nil {
			n, err = b.f.WriteAt(p, off)
			if err != nil {
				err = diskError("writing", err)
			}
		}
		f.mu.Lock()
		if b != nil {
			f.releaseLocked(b)
		}
		f.writeGen++
		f.mtime = time.Now()
		if n > 0 {
			// A write past the end leaves a hole of zeros, and the
			// local copy of a dirty file is the whole truth: the hole
			// is present too (an assembler seeks ahead and writes
			// sections out of order; reading the hole must not ask
			// the server, which does not have the file yet).
			f.present = f.present.add(min(off, f.size), off+int64(n))
			f.noteChangeLocked(min(off, f.size), off+int64(n))
			f.size = max(f.size, off+int64(n))
		}
		if st != nil {
			f.writtenLocked(st, n == len(p))
		}
		if n > 0 && !appending {
			f.streamAheadLocked()
		}
		f.mu.Unlock()
		f.io.RUnlock()
		return n, err
	}
}

// partialLocked reports whether f is dirty without all of the server's
// bytes that its changes left as they were (below the lowest change):
// appends made it dirty (makeDirty forAppends). It returns how far those
// bytes go.
func (f *file) partialLocked() (int64, bool) {
	if !f.dirty || f.base <= 0 {
		return 0, false
	}
	kept := min(f.low, f.size)
	_, missing := f.present.gap(0, kept)
	return kept, missing
}

// completeDirty fetches what a dirty file that appends made so lacks of
// the server's bytes it keeps: a write below the end, a truncation or a
// whole-file store needs them. The server's file still has them (appends
// add at its end), unless another client cut or replaced it, which the
// fetch finds (EIO).
func (f *file) completeDirty(ctx context.Context) error {
	f.mu.Lock()
	kept, partial := f.partialLocked()
	f.mu.Unlock()
	if !partial {
		return nil
	}
	return f.need(ctx, 0, kept, nil)
}
