package fuse

import "sync"

// The kernel keeps one I/O mode per inode: while a file is open with
// passthrough, every other open of it must be passthrough too, and one
// that is not fails with EIO; while it is open through the page cache, a
// passthrough open fails (fs/fuse/iomode.c: "using incorrect open mode is
// a server mistake, which results in user visible failure of open() with
// EIO"). go-fuse gives every open of an inode that has a backing file the
// same backing, if its handle implements fs.FilePassthroughFder. So:
// passthrough only for files nobody writes through the mount
// (ns.Unwritable), only while no page-cached open exists, and then for
// every open of the inode until the last passthrough one is released.
type ioModes struct {
	mu    sync.Mutex
	inode map[uint64]*ioCount
}

type ioCount struct{ passthrough, cached, appenders int }

// ioMode is how one handle was opened.
type ioMode int

const (
	ioCached      ioMode = iota // through the page cache
	ioPassthrough               // the kernel reads the local copy
	ioDirect                    // FOPEN_DIRECT_IO: outside the kernel's rule, not counted
	ioAppend                    // an O_APPEND writer, direct I/O, counted as such
)

// choose picks the mode of a new handle on ino and counts it.
// canPassthrough says the handle could be read with passthrough; direct,
// that it is opened with direct I/O (an appender on a file nobody reads
// with passthrough: passthrough is only for files nobody writes).
//
// A reader that opens while appenders write is read with direct I/O too:
// an appended record can land while the kernel reads the last page, whose
// short answer it then fills with zeros up to a length the append has
// already raised — a record of NULs in the page cache.
func (m *ioModes) choose(ino uint64, canPassthrough, appender bool) ioMode {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.inode == nil {
		m.inode = map[uint64]*ioCount{}
	}
	c := m.inode[ino]
	if c == nil {
		c = &ioCount{}
		m.inode[ino] = c
	}
	if appender {
		c.appenders++
		return ioAppend
	}
	if c.appenders > 0 && c.passthrough == 0 {
		return ioDirect
	}
	if c.passthrough > 0 || canPassthrough && c.cached == 0 {
		c.passthrough++
		return ioPassthrough
	}
	c.cached++
	return ioCached
}

// release uncounts a handle of mode on ino, at RELEASE, which the kernel
// sends after it has let go: a count may lag behind the kernel's, which
// errs towards the page cache, never into EIO.
func (m *ioModes) release(ino uint64, mode ioMode) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.inode[ino]
	if c == nil {
		return
	}
	switch mode {
	case ioPassthrough:
		c.passthrough--
	case ioCached:
		c.cached--
	case ioAppend:
		c.appenders--
	}
	if c.passthrough <= 0 && c.cached <= 0 && c.appenders <= 0 {
		delete(m.inode, ino)
	}
}

// cached reports whether ino has handles open through the page cache.
func (m *ioModes) cached(ino uint64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.inode[ino]
	return c != nil && c.cached > 0
}
