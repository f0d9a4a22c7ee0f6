package ns

import (
	"context"
	"os"
	"time"
)

// The interfaces below are for nodes and handles that are stored files
// (remote files behind the cache) rather than network endpoints. A door
// asks for each one with a type assertion and answers EROFS, ENOTSUP or
// EBADF when a node does not opt in.

// Stored is implemented by stored files and directories: opening one has
// no side effect (unlike a network name, whose open connects or binds),
// so a door may open it for its own purposes (O_PATH, stat identity).
type Stored interface {
	Stored() bool
}

// IsStored reports whether n says it is a stored file or directory.
func IsStored(n Node) bool {
	s, ok := n.(Stored)
	return ok && s.Stored()
}

// WriterAt is a seekable file handle's write side.
type WriterAt interface {
	WriteAt(ctx context.Context, p []byte, off int64) (int, error)
}

// Flusher is called at every close(2) of a descriptor of the handle (FUSE
// FLUSH), before close returns: write-back with T_write = 0 happens here,
// so that when `cp` returns the server has the file.
type Flusher interface {
	Flush(ctx context.Context) error
}

// Syncer is fsync: it returns when the server has the data.
type Syncer interface {
	Sync(ctx context.Context) error
}

// SetAttr is a change of attributes; nil fields stay as they are.
type SetAttr struct {
	Size     *int64       // truncate
	Mode     *os.FileMode // permissions and setuid, setgid, sticky
	Atime    *time.Time
	Mtime    *time.Time
	Uid, Gid *uint32 // chown
}

// Setattrer is a node whose attributes can be changed (truncate, chmod,
// chown, utimes). h is the open handle the change came through, or nil.
// A change the node cannot make is EPERM (chown) or ENOTSUP.
type Setattrer interface {
	Setattr(ctx context.Context, h Handle, a SetAttr) (Attr, error)
}

// Creator is a directory in which new files can be created and opened in
// one step (open with O_CREAT of a name that does not exist).
type Creator interface {
	Create(ctx context.Context, c Caller, name string, flags int, perm os.FileMode) (Node, Handle, error)
}

// Mkdirer is a directory in which directories can be made.
type Mkdirer interface {
	Mkdir(ctx context.Context, name string, perm os.FileMode) (Node, error)
}

// Remover is a directory whose entries can be removed: files (unlink)
// or, when dir is true, empty directories (rmdir).
type Remover interface {
	Remove(ctx context.Context, name string, dir bool) error
}

// Renamer is a directory whose entries can be renamed, into itself or into
// another directory of the same provider (others get EXDEV).
type Renamer interface {
	Rename(ctx context.Context, name string, to Dir, toName string) error
}

// Cached is a node that says how long doors may cache its entry and
// attributes: its consistency bound (T_read). Nodes that implement neither
// Cached nor Volatile get the door's default.
type Cached interface {
	CacheTTL() time.Duration
}

// PageCacher is a file handle that tells doors whether the kernel may keep
// the pages it cached during earlier opens: true when the file has not
// changed since (validated on open).
type PageCacher interface {
	KeepPageCache() bool
}

// Unwritable is a KernelObject file handle that tells doors whether its
// file can be written through the namespace at all (false for a file of a
// read-only server). Only such a file may be read with FUSE passthrough:
// while one open of a file is passthrough the kernel makes every open of
// it passthrough or fails it with EIO, so a writer's bytes would bypass
// the provider.
type Unwritable interface {
	Unwritable() bool
}

// Symlinker is a directory in which symbolic links can be made.
type Symlinker interface {
	Symlink(ctx context.Context, target, name string) (Node, error)
}

// Readlinker is a symbolic link (its Attr has os.ModeSymlink).
type Readlinker interface {
	Readlink(ctx context.Context) (string, error)
}

// Linker is a directory in which hard links to existing nodes of the
// same provider can be made (others get EXDEV).
type Linker interface {
	Link(ctx context.Context, target Node, name string) (Node, error)
}

// FSInfo is what statfs(2) shows.
type FSInfo struct {
	Bsize                 uint32
	Blocks, Bfree, Bavail uint64
	Files, Ffree          uint64
	Namelen               uint32
}

// Statfser is a node that knows the figures of the file system it is on.
// Doors answer statfs for other nodes with DefaultFSInfo.
type Statfser interface {
	Statfs(ctx context.Context) (FSInfo, error)
}

// DefaultFSInfo is statfs of nodes with no file system behind them:
// no blocks to report, and the longest name Linux allows.
func DefaultFSInfo() FSInfo { return FSInfo{Bsize: 4096, Namelen: 255} }
