package fuse

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"syscall"

	"wirefs/internal/ns"
)

// A generated file (an ns.Generated handle of a node that is not
// volatile: a VIF's stats and parameters) has content made at each open,
// whose length is known only then. Read with direct I/O, Python's
// open(...).read() costs five requests: OPEN, GETATTR (fstat: the kernel
// drops its cached atime after every direct read, fuse_invalidate_atime),
// the IOCTL of isatty, and two READs (the content, then end of file).
//
// So an open that is the only one of its inode gets its content put in
// the kernel's page cache while OPEN is answered (FUSE_NOTIFY_STORE) and
// kept there (FOPEN_KEEP_CACHE): the kernel serves the reads and the end
// of file itself, and a read from the page cache leaves the atime alone.
// Python's read is then OPEN and IOCTL (the kernel sends every ioctl and
// never remembers ENOTTY, fs/fuse/ioctl.c).
//
// The page cache belongs to the inode, not to the open file: two opens
// sharing it would read each other's content. An open while another
// handle of the inode is open (until its RELEASE arrives), and every
// open for writing, stays direct I/O and leaves the cache alone.
//
// The kernel reads the page cache up to its i_size, which only attribute
// replies set (a store only grows it, and a short READ only shrinks it).
// So every attribute reply for the node shows the cached length (shown),
// and an open whose content has another length first drops the kernel's
// attributes and pages (FUSE_NOTIFY_INVAL_INODE, which also makes it
// discard attribute replies already under way): the reads that follow
// ask for the size again, and fill the page from this open's handle if
// the cached one went. A LOOKUP or GETATTR answered before the change is
// thus ignored; a SETATTR's answer is not checked by the kernel, so a
// chmod racing a reader's open whose content changed length can leave
// the old size for the attribute timeout (a second for VIF files).

// maxCachedGenerated bounds the content put in the page cache at open;
// longer content is read with direct I/O.
const maxCachedGenerated = 64 << 10

// shownSize is the length of the generated content the kernel caches for
// a node, once it holds any.
type shownSize struct{ plus1 atomic.Int64 } // length + 1; 0: none yet

func (s *shownSize) get() (int64, bool) {
	v := s.plus1.Load()
	return v - 1, v > 0
}

func (s *shownSize) set(n int64) { s.plus1.Store(n + 1) }

// cacheGenerated puts the content of h, a generated file's handle that is
// the only one open on n, in n's page cache, and reports whether it did:
// only for reading, and only for content of at most maxCachedGenerated
// bytes.
func (n *node) cacheGenerated(ctx context.Context, h ns.Handle, flags uint32) bool {
	r, ok := h.(ns.ReaderAt)
	if !ok || flags&syscall.O_ACCMODE != syscall.O_RDONLY || flags&syscall.O_TRUNC != 0 {
		return false
	}
	content, ok := readAll(ctx, r, maxCachedGenerated)
	if !ok {
		return false
	}
	size := int64(len(content))
	if shown, ok := n.shown.get(); !ok || shown != size {
		n.shown.set(size)
		if n.NotifyContent(0, 0) != 0 {
			return false
		}
	}
	return n.WriteCache(0, content) == 0
}

// readAll reads r's content from offset 0 if it has at most max bytes.
func readAll(ctx context.Context, r ns.ReaderAt, max int) ([]byte, bool) {
	buf := make([]byte, 512)
	size := 0
	for {
		if size == len(buf) {
			if size > max {
				return nil, false
			}
			buf = append(buf, make([]byte, size)...)
		}
		k, err := r.ReadAt(ctx, buf[size:], int64(size))
		size += k
		if errors.Is(err, io.EOF) || err == nil && k == 0 {
			return buf[:size], size <= max
		}
		if err != nil {
			return nil, false
		}
	}
}
