package catch

import (
	"context"
	"os"
	"reflect"
	"strconv"
	"sync"
	"syscall"

	"wirefs/internal/ns"
	"wirefs/internal/procfd"
)

// The private FUSE door serves a namespace of its own:
//
//	n/…     the user's namespace (stat, directories, O_PATH opens)
//	p/ID    a handle the catcher has already opened on behalf of a
//	        target; the supervisor opens p/ID once to get an fd on the
//	        FUSE door for it, then injects that fd
//
// Opening the handle through ns first (with the target as Caller) and only
// then on FUSE means the provider sees the right process, and it is opened
// exactly once: a simple server binds once, a concurrent server accepts
// once.
const (
	nsDir      = "n"
	pendingDir = "p"
)

// served tracks handles given to targets as fds on the private door, so that
// Caller.Holds can answer for them: seed 000's concurrent server lets only
// processes holding the server file open its name again.
type served struct {
	mnt string // mount point of the private door

	mu      sync.Mutex
	next    uint64
	pending map[string]*pendingNode
	inos    map[ns.Handle]uint64 // handle -> inode of its fd on the door
}

func newServed(mnt string) *served {
	return &served{mnt: mnt, pending: map[string]*pendingNode{}, inos: map[ns.Handle]uint64{}}
}

// add makes h openable once at p/ID and returns ID. reopen opens the name
// again for later opens of the same inode (/proc/self/fd/N, /dev/stdin).
func (s *served) add(h ns.Handle, node ns.Node, reopen func(ctx context.Context, c ns.Caller, flags int) (ns.Handle, error)) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	id := strconv.FormatUint(s.next, 10)
	s.pending[id] = &pendingNode{s: s, id: id, h: h, node: node, reopen: reopen}
	return id
}

// drop forgets a pending handle that was never opened, closing it.
func (s *served) drop(id string) {
	s.mu.Lock()
	p := s.pending[id]
	delete(s.pending, id)
	s.mu.Unlock()
	if p != nil {
		p.mu.Lock()
		h := p.h
		p.h = nil
		p.mu.Unlock()
		if h != nil {
			h.Close()
		}
	}
}

// bind records that h is held through an fd whose inode on the door is ino.
func (s *served) bind(h ns.Handle, ino uint64) {
	if !reflect.TypeOf(h).Comparable() {
		return
	}
	s.mu.Lock()
	s.inos[h] = ino
	s.mu.Unlock()
}

func (s *served) released(h ns.Handle) {
	if !reflect.TypeOf(h).Comparable() {
		return
	}
	s.mu.Lock()
	delete(s.inos, h)
	s.mu.Unlock()
}

// holds reports whether thread tid's process has an fd on the door's inode
// of h (procfd, as the mounted door does).
func (s *served) holds(tid uint32, h ns.Handle) bool {
	if h == nil || !reflect.TypeOf(h).Comparable() {
		return false
	}
	s.mu.Lock()
	ino, ok := s.inos[h]
	s.mu.Unlock()
	if !ok {
		return false
	}
	_, found := procfd.Find(tid, s.mnt+"/"+pendingDir+"/", ino, "")
	return found
}

// pendingDirNode is p/.
type pendingDirNode struct{ s *served }

func (d *pendingDirNode) Attr(context.Context) (ns.Attr, error) {
	return ns.Attr{Mode: os.ModeDir | 0o500, Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}, nil
}

func (d *pendingDirNode) Lookup(ctx context.Context, name string) (ns.Node, error) {
	d.s.mu.Lock()
	p := d.s.pending[name]
	d.s.mu.Unlock()
	if p == nil {
		return nil, ns.Errorf(syscall.ENOENT, "no pending handle %s", name)
	}
	return p, nil
}

func (d *pendingDirNode) ReadDir(context.Context) ([]ns.DirEntry, error) { return nil, nil }

// pendingNode is p/ID: its first open returns the handle opened for the
// target; later opens of the same inode open the name again.
type pendingNode struct {
	s      *served
	id     string
	node   ns.Node
	reopen func(ctx context.Context, c ns.Caller, flags int) (ns.Handle, error)

	mu sync.Mutex
	h  ns.Handle // until the first open
}

func (p *pendingNode) Volatile() bool { return true }

func (p *pendingNode) Attr(ctx context.Context) (ns.Attr, error) { return p.node.Attr(ctx) }

func (p *pendingNode) Open(ctx context.Context, c ns.Caller, flags int) (ns.Handle, error) {
	p.mu.Lock()
	h := p.h
	p.h = nil
	p.mu.Unlock()
	if h == nil {
		// A second open of the inode: the name is opened afresh, as on
		// the mounted door, by the process the FUSE request names.
		c.Holds = func(h ns.Handle) bool { return p.s.holds(c.Pid, h) }
		var err error
		if h, err = p.reopen(ctx, c, flags); err != nil {
			return nil, err
		}
	} else {
		p.s.mu.Lock()
		delete(p.s.pending, p.id)
		p.s.mu.Unlock()
	}
	return wrap(p.s, h), nil
}

// wrap returns h as the FUSE door should see it (stream or file) with a
// Close that forgets it in s.
func wrap(s *served, h ns.Handle) ns.Handle {
	b := base{s: s, h: h}
	if _, ok := h.(ns.ReaderAt); ok {
		return &fileHandle{b}
	}
	return &streamHandle{b}
}

type base struct {
	s *served
	h ns.Handle
}

func (b *base) Close() error {
	b.s.released(b.h)
	return b.h.Close()
}

func (b *base) Write(ctx context.Context, p []byte) (int, error) {
	w, ok := b.h.(ns.Writer)
	if !ok {
		return 0, ns.Errorf(syscall.EBADF, "not open for writing")
	}
	return w.Write(ctx, p)
}

type streamHandle struct{ base }

func (s *streamHandle) Read(ctx context.Context, p []byte) (int, error) {
	r, ok := s.h.(ns.Reader)
	if !ok {
		return 0, ns.Errorf(syscall.EBADF, "not open for reading")
	}
	return r.Read(ctx, p)
}

type fileHandle struct{ base }

func (f *fileHandle) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	return f.h.(ns.ReaderAt).ReadAt(ctx, p, off)
}

// privateRoot is the root of the private door's namespace.
func privateRoot(user *ns.Namespace, s *served) *ns.Namespace {
	n := ns.New()
	n.Mount(nsDir, user.Root())
	n.Mount(pendingDir, &pendingDirNode{s: s})
	return n
}
