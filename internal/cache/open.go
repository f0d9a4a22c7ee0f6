package cache

import (
	"context"
	"os"
	"syscall"

	"wirefs/internal/ns"
)

// Opening: lazy (no round trip while the attributes are trusted), and the
// handle that fits: the data file itself for a complete clean file read,
// daemon-served otherwise.

// Open validates f unless its attributes are trusted (lazy open: no round
// trip). Opening for writing needs a writable server; O_TRUNC empties the
// file at once.
func (f *file) Open(ctx context.Context, c ns.Caller, flags int) (ns.Handle, error) {
	t := f.t
	write := flags&syscall.O_ACCMODE != syscall.O_RDONLY
	if write && t.w == nil {
		return nil, t.readOnly("open " + f.remotePath() + " for writing")
	}
	if write && flags&syscall.O_TRUNC != 0 {
		if err := f.truncate(ctx, 0); err != nil {
			return nil, err
		}
		return f.newHandle(flags), nil
	}
	f.mu.Lock()
	trusted := f.dirty || (f.info.Size >= 0 && f.freshLocked())
	f.mu.Unlock()
	if !trusted {
		if err := f.validate(ctx); err != nil {
			if ns.Errno(err) == syscall.ENOENT {
				// The name was looked up while the file existed;
				// it is gone now (validate forgot it): the name is
				// stale (ESTALE, as NFS says it), not missing. A
				// caller that looks it up again finds it gone, and
				// an open(O_CREAT) then creates it, as `echo >>
				// app.log` after a rotation on the server means
				// (the Linux VFS retries such an open once).
				return nil, ns.Errorf(syscall.ESTALE, "%s was removed from %s since it was looked up", f.remotePath(), t.key)
			}
			return nil, err
		}
	}
	h := f.newHandle(flags)
	if write && flags&syscall.O_APPEND != 0 {
		f.openAhead()
	}
	return h, nil
}

// newHandle opens a handle with open(2) flags: for writing, daemon-served;
// for reading a complete clean file, the data file itself (a kernel
// object).
func (f *file) newHandle(flags int) ns.Handle {
	write := flags&syscall.O_ACCMODE != syscall.O_RDONLY
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opens++
	gen := f.dataGen + f.writeGen
	h := &handle{f: f, keep: gen == f.openGen}
	f.openGen = gen
	f.settleLocked() // used: to the front of the LRU
	if write {
		return &writeHandle{handle: h, appending: flags&syscall.O_APPEND != 0}
	}
	if !f.dirty && f.completeLocked() {
		if f.id == "" {
			f.id = newID() // an empty file
		}
		kf, err := os.OpenFile(f.dataPath(), os.O_RDONLY|os.O_CREATE, 0o600)
		if err == nil {
			return &kernelHandle{h, kf}
		}
		f.t.c.log.Warn("cache: cannot open a cached file; serving it through the daemon", "path", f.path, "err", err)
	}
	return h
}
