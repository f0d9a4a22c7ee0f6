// Package ns is the wirefs namespace: a longest-prefix mount table that
// resolves a path to a provider node, and the small interfaces a provider
// node opts into. Nothing here knows about FUSE, seccomp or any protocol.
package ns

import (
	"context"
	"os"
	"sync"
	"time"
)

// Caller identifies the process on whose behalf an operation runs. Doors fill
// it from what the kernel tells them (FUSE request header, seccomp
// notification). Pid is the thread id the kernel reported; providers that
// care about processes (the concurrent-server rule) resolve it themselves.
type Caller struct {
	Pid uint32
	Uid uint32
	Gid uint32

	// Holds reports whether the calling process has an open descriptor
	// of h, a handle returned earlier through the same door. Seed 000's
	// concurrent server needs it: only processes holding the server file
	// may open its name again. nil means the door cannot tell (false).
	Holds func(h Handle) bool

	// ReleaseLag bounds how long after close(2) has returned the door
	// may still be releasing the handle (FUSE sends RELEASE after close
	// returns). A provider that refuses an open because a handle is
	// still open waits this long for its release first.
	ReleaseLag time.Duration
}

// Keyed is a node whose identity is a key, such as its path in a local
// tree. A door that reuses the inode a name already has must not reuse it
// for a node with another key: after a rename, the inode under the new
// name still holds the node of the old one.
type Keyed interface {
	Key() string
}

// SameKey reports whether a and b are the same as far as keys tell: both
// without a key, or both with the same one.
func SameKey(a, b Node) bool {
	ka, aok := a.(Keyed)
	kb, bok := b.(Keyed)
	return aok == bok && (!aok || ka.Key() == kb.Key())
}

// NobodyID is the uid and gid of a caller a door cannot identify: the
// overflow id, nobody's rights, never root's.
const NobodyID = 65534

// HoldsHandle is c.Holds(h), false when the door cannot tell.
func (c Caller) HoldsHandle(h Handle) bool { return c.Holds != nil && c.Holds(h) }

// Attr is what stat shows for a node.
type Attr struct {
	// Mode is the permission bits, os.ModeSetuid, os.ModeSetgid and
	// os.ModeSticky, plus os.ModeDir or os.ModeSymlink for those.
	Mode  os.FileMode
	Size  int64
	Mtime time.Time
	Atime time.Time // zero: Mtime
	Uid   uint32
	Gid   uint32
	Nlink uint32 // 0: the door's default (1 for files, 2 for directories)
	// Removed says the node was removed while still open: it has no
	// name left (nlink 0 for fstat).
	Removed bool
}

// Node is anything the namespace can name.
type Node interface {
	Attr(ctx context.Context) (Attr, error)
}

// DirEntry is one row of a directory listing. Listings carry attributes so
// that `ls -l` costs one round trip, not one per entry.
type DirEntry struct {
	Name string
	Attr Attr
}

// Dir is a node with children.
type Dir interface {
	Node
	Lookup(ctx context.Context, name string) (Node, error)
	ReadDir(ctx context.Context) ([]DirEntry, error)
}

// Volatile is implemented by nodes whose names must be looked up afresh on
// every use (network endpoints: each open is a new connection). Doors must
// not cache their entries or attributes.
type Volatile interface {
	Volatile() bool
}

// Generated is a file handle whose content is made when it is opened (a
// control or status file) by a node that need not be Volatile: its size is
// not known beforehand, and every ReadAt of the handle reads the content
// made at its open. Doors read and write it directly, as they do every
// handle of a Volatile node, or give that content to a page cache of
// this open's alone (the FUSE door, for an open that is its file's only
// one).
type Generated interface {
	Generated() bool
}

// Opener is a node that can be opened. flags are the open(2) flags.
type Opener interface {
	Open(ctx context.Context, c Caller, flags int) (Handle, error)
}

// Handle is an open file. Every handle is one of two kinds, and the choice is
// the one line a provider writes when it returns from Open:
//
//   - a real kernel object (ns.Socket(conn), later a cached local file): it
//     implements KernelObject and doors may give the fd straight to the
//     program, so the data path costs nothing;
//   - served by the daemon: it implements Reader/Writer (streams) or
//     ReaderAt/WriterAt (files) and every byte makes a round trip.
//
// Kernel objects implement Reader and Writer as well, so that a door that
// cannot hand over fds (FUSE, for sockets) still serves them.
type Handle interface {
	Close() error
}

// Reader is a stream handle's read side. It blocks until data, EOF or
// cancellation of ctx (then it returns an error that maps to EINTR).
type Reader interface {
	Read(ctx context.Context, p []byte) (int, error)
}

// Writer is a stream handle's write side; it writes all of p or fails.
type Writer interface {
	Write(ctx context.Context, p []byte) (int, error)
}

// ReaderAt is a seekable file handle's read side.
type ReaderAt interface {
	ReadAt(ctx context.Context, p []byte, off int64) (int, error)
}

// KernelObject is a handle that is a real kernel object with exactly the
// semantics a program expects from its name.
type KernelObject interface {
	// KernelFile returns the object; the caller must not close it.
	KernelFile() (*os.File, error)
}

type callerKey struct{}

// WithCaller returns ctx carrying who asks, for the calls whose
// signatures name no caller (Lookup, ReadDir, Attr): a node whose answer
// depends on the asker (an fs portal looks names up as the opener) finds
// it with CallerOf. caller runs at most once, when a node first asks, so
// a door whose caller costs a /proc read pays only for such nodes.
func WithCaller(ctx context.Context, caller func() Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, sync.OnceValue(caller))
}

// CallerOf is the caller ctx carries (WithCaller); false when the door
// did not say.
func CallerOf(ctx context.Context) (Caller, bool) {
	f, ok := ctx.Value(callerKey{}).(func() Caller)
	if !ok {
		return Caller{}, false
	}
	return f(), true
}
