package cache

import (
	"context"
	"path"
	"syscall"
	"time"

	"wirefs/internal/ns"
	"wirefs/internal/remote"
)

// Validation (Ufo §5.3): a file's attributes are trusted within T_read of
// the server's answer; after that the next open or stat asks again
// (concurrent callers share one Stat), and cached data of another version
// are dropped.

func (f *file) freshLocked() bool {
	return f.t.fresh(f.checked, f.epoch, f.t.trust(f.path, f.info, f.checked))
}

// sameVersion reports whether a and b describe the same contents, by
// every validator both know. Nothing in common means we cannot tell, and
// then the data must be fetched again.
func sameVersion(a, b remote.Info) bool {
	comparable := false
	if a.ETag != "" && b.ETag != "" {
		if a.ETag != b.ETag {
			return false
		}
		comparable = true
	}
	if a.Size >= 0 && b.Size >= 0 {
		if a.Size != b.Size {
			return false
		}
		comparable = true
	}
	if !a.Mtime.IsZero() && !b.Mtime.IsZero() {
		if !sameTime(a.Mtime, b.Mtime) {
			return false
		}
		comparable = true
	}
	return comparable
}

// sameTime compares mtimes at the coarser precision of the two: listings
// often give minutes (FTP LIST, HTML indexes) or seconds where Stat gives
// more, and that is no change.
func sameTime(a, b time.Time) bool {
	for _, p := range []time.Duration{time.Minute, time.Second} {
		if a.Truncate(p).Equal(a) || b.Truncate(p).Equal(b) {
			return a.Truncate(p).Equal(b.Truncate(p))
		}
	}
	return a.Equal(b)
}

// merge fills what next does not say from prev, a report of the same
// version.
func merge(prev, next remote.Info) remote.Info {
	if next.Size < 0 {
		next.Size = prev.Size
	}
	if next.Mtime.IsZero() {
		next.Mtime = prev.Mtime
	}
	if next.ETag == "" {
		next.ETag = prev.ETag
	}
	return next
}

// observe records attributes the server reported at at in epoch; cached
// data of another version are dropped. Local changes win until written
// back.
func (f *file) observe(info remote.Info, at time.Time, epoch int64) {
	f.io.Lock()
	defer f.io.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dirty || f.removed || (epoch == f.epoch && at.Before(f.checked)) {
		return
	}
	info.Name = path.Base(f.path)
	if sameVersion(f.version, info) {
		f.version = merge(f.version, info)
		info = merge(f.info, info)
	} else {
		if len(f.present) > 0 || len(f.fetches) > 0 {
			f.t.c.log.Debug("cache: file changed on the server", "server", f.t.key, "path", f.path)
		}
		f.dropDataLocked()
		f.version = info
	}
	f.info, f.checked, f.epoch = info, at, epoch
}

// validate asks the server for f's attributes (concurrent callers share
// one Stat).
func (f *file) validate(ctx context.Context) error {
	t := f.t
	f.mu.Lock()
	if f.dirty {
		f.mu.Unlock()
		return nil
	}
	c := f.validating
	if c == nil {
		c = &call{done: make(chan struct{})}
		f.validating = c
		p := f.path
		if !t.spawn(func() { f.stat(c, p) }) {
			f.validating = nil
			f.mu.Unlock()
			return ns.Errorf(syscall.EIO, "%s is closed", t.key)
		}
	}
	f.mu.Unlock()
	return c.wait(ctx)
}

func (f *file) stat(c *call, p string) {
	t := f.t
	epoch, at := t.c.epoch.Load(), time.Now()
	info, err := t.statOf(t.ctx, p, at)
	switch {
	case err == nil && info.Mode.IsDir():
		err = ns.Errorf(syscall.EISDIR, "%s on %s is now a directory", p, t.key)
	case err == nil:
		f.observe(info, at, epoch)
		t.noteEntry(p, &info)
	case ns.Errno(err) == syscall.ENOENT:
		t.vanished(p, at)
	}
	f.mu.Lock()
	f.validating = nil
	c.err = err
	close(c.done)
	f.mu.Unlock()
}

// statKey marks the context of a listing made to answer a stat
// (statOf): the gate lingers after it as after a stat (askLinger).
type statKey struct{}

func withForStat(ctx context.Context) context.Context {
	return context.WithValue(ctx, statKey{}, true)
}

func forStat(ctx context.Context) bool {
	v, _ := ctx.Value(statKey{}).(bool)
	return v
}

// statOf asks the server for p's attributes, as of at or later: from a
// listing of its directory where the backend's Stat would list it anyway
// (remote.StatLister), which refreshes every cached sibling too (a cold
// `grep -r` after T_read asked 85 times for one directory's listing).
func (t *tree) statOf(ctx context.Context, p string, at time.Time) (remote.Info, error) {
	if _, lists := t.b.(remote.StatLister); !lists || p == "/" {
		defer t.gate.ask(askLinger)()
		return t.b.Stat(ctx, p)
	}
	names, err := t.dirAt(path.Dir(p)).listSince(withForStat(ctx), at)
	if err != nil {
		return remote.Info{}, err
	}
	info, ok := names[path.Base(p)]
	if !ok {
		return remote.Info{}, ns.Errorf(syscall.ENOENT, "%s is not on %s", p, t.key)
	}
	return info, nil
}

// localAttr returns f's attributes and whether they need no round trip.
func (f *file) localAttr() (ns.Attr, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.removed {
		a := attrOf(f.info)
		a.Removed = true
		if f.dirty { // still open (discard)
			a.Size, a.Mtime = f.size, f.mtime
		}
		return a, true // gone from the server: nothing to ask
	}
	if f.dirty {
		a := attrOf(f.info)
		a.Size, a.Mtime = f.size, f.mtime
		return a, true
	}
	return attrOf(f.info), f.info.Size >= 0 && f.freshLocked()
}

// Attr returns the attributes of the last validation, validating first
// when they are older than the read bound.
func (f *file) Attr(ctx context.Context) (ns.Attr, error) {
	if a, ok := f.localAttr(); ok {
		return a, nil
	}
	if err := f.validate(ctx); err != nil {
		return ns.Attr{}, err
	}
	a, _ := f.localAttr()
	return a, nil
}

// CacheTTL is the remaining trust: doors never cache longer than T_read.
func (f *file) CacheTTL() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dirty {
		tread, _ := f.t.bounds(f.path)
		return tread
	}
	return f.t.remaining(f.checked, f.epoch, f.t.trust(f.path, f.info, f.checked))
}

// newerThan reports whether f knows more than an answer about it from the
// server asked at at: it is open, has local changes or a write-back
// running, or was created or validated since.
func (f *file) newerThan(at time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.opens > 0 || f.dirty || f.storing != nil || f.checked.After(at)
}
