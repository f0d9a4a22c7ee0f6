package catch

import (
	"slices"
	"syscall"
)

// kind says how a trapped call on a namespace path is answered.
type kind int

const (
	kOpen     kind = iota // open, openat, openat2, creat: served, fd injected
	kStat                 // stat, lstat, newfstatat: done on the private door, struct copied back
	kStatx                // statx
	kStatfs               // statfs
	kAccess               // access, faccessat, faccessat2
	kReadlink             // readlink, readlinkat
	kExec                 // execve, execveat: EACCES (nothing in the namespace is executable)
	kChdir                // chdir, chroot: ENOTSUP (a cwd cannot be set from outside)
	kMutate               // mkdir, mknod, unlink, rmdir, symlink: EROFS
	kTwo                  // rename*, link*: EXDEV across the boundary, EROFS inside
	kSetattr              // truncate, chmod, chown, utime*: done on the private door
	kXattr                // *xattr*: ENOTSUP, as on the mounted door
	kGetcwd               // getcwd: takes no name; answered when the working directory is on the private door
	kPace                 // connect, listen with Options.Pace: the socket is paced, then the call runs (pace.go)
)

// call describes a trapped system call: which arguments hold its path and
// directory descriptor (dirfd < 0: AT_FDCWD); path2/dirfd2 are the second
// name of rename and link (kTwo only). An empty or NULL path (AT_EMPTY_PATH,
// utimensat(fd, NULL)) names a descriptor, never a namespace path.
// getcwd (kGetcwd) has no path argument (path -1).
type call struct {
	name          string
	kind          kind
	dirfd, path   int
	dirfd2, path2 int
}

// x86-64 numbers of calls the syscall package does not name.
const (
	sysOpenat2       = 437
	sysFaccessat2    = 439
	sysFchmodat2     = 452
	sysStatx         = 332
	sysExecveat      = 322
	sysRenameat2     = 316
	sysSetxattrat    = 463
	sysGetxattrat    = 464
	sysListxattrat   = 465
	sysRemovexattrat = 466
)

// calls is the trapped set. It is deliberate:
//
//   - served: open, openat, openat2, creat (the namespace's open: an
//     injected socket or an fd on the private FUSE door); stat, lstat,
//     newfstatat, statx, statfs, access, faccessat, faccessat2, readlink,
//     readlinkat (done on the private door, results written back);
//     truncate, chmod, fchmodat, fchmodat2, chown, lchown, fchownat, utime,
//     utimes, futimesat, utimensat (done on the private door, which
//     accepts and ignores them, as the mounted door does);
//   - getcwd, so that a program whose working directory is in the
//     namespace (after chdir) sees the namespace name, not the private
//     door's;
//   - refused with a clear errno: execve, execveat (EACCES); chdir, chroot
//     (ENOTSUP: a supervisor cannot set another process's directory);
//     mkdir(at), mknod(at), unlink(at), rmdir, symlink(at) (EROFS);
//     rename, renameat, renameat2, link, linkat (EXDEV when one name is in
//     the namespace, so mv copies; EROFS when both are); the xattr calls
//     including the *xattrat calls of Linux 6.13 (ENOTSUP, as FUSE
//     reports for a door without xattrs);
//   - not trapped (a namespace path gets the kernel's ENOENT):
//     inotify_add_watch, fanotify_mark, name_to_handle_at, mount and the
//     new mount API, pivot_root, swapon, acct, uselib, quotactl, bind and
//     connect on unix socket paths (connect and listen are trapped only
//     to pace sockets: paced, pace.go). Calls on descriptors (read, getdents,
//     fstat, fchdir, mmap...) are never trapped: the descriptor is real.
var calls = map[int]call{
	syscall.SYS_OPEN:         {name: "open", kind: kOpen, dirfd: -1, path: 0},
	syscall.SYS_OPENAT:       {name: "openat", kind: kOpen, dirfd: 0, path: 1},
	sysOpenat2:               {name: "openat2", kind: kOpen, dirfd: 0, path: 1},
	syscall.SYS_CREAT:        {name: "creat", kind: kOpen, dirfd: -1, path: 0},
	syscall.SYS_STAT:         {name: "stat", kind: kStat, dirfd: -1, path: 0},
	syscall.SYS_LSTAT:        {name: "lstat", kind: kStat, dirfd: -1, path: 0},
	syscall.SYS_NEWFSTATAT:   {name: "newfstatat", kind: kStat, dirfd: 0, path: 1},
	sysStatx:                 {name: "statx", kind: kStatx, dirfd: 0, path: 1},
	syscall.SYS_STATFS:       {name: "statfs", kind: kStatfs, dirfd: -1, path: 0},
	syscall.SYS_ACCESS:       {name: "access", kind: kAccess, dirfd: -1, path: 0},
	syscall.SYS_FACCESSAT:    {name: "faccessat", kind: kAccess, dirfd: 0, path: 1},
	sysFaccessat2:            {name: "faccessat2", kind: kAccess, dirfd: 0, path: 1},
	syscall.SYS_READLINK:     {name: "readlink", kind: kReadlink, dirfd: -1, path: 0},
	syscall.SYS_READLINKAT:   {name: "readlinkat", kind: kReadlink, dirfd: 0, path: 1},
	syscall.SYS_EXECVE:       {name: "execve", kind: kExec, dirfd: -1, path: 0},
	sysExecveat:              {name: "execveat", kind: kExec, dirfd: 0, path: 1},
	syscall.SYS_CHDIR:        {name: "chdir", kind: kChdir, dirfd: -1, path: 0},
	syscall.SYS_CHROOT:       {name: "chroot", kind: kChdir, dirfd: -1, path: 0},
	syscall.SYS_MKDIR:        {name: "mkdir", kind: kMutate, dirfd: -1, path: 0},
	syscall.SYS_MKDIRAT:      {name: "mkdirat", kind: kMutate, dirfd: 0, path: 1},
	syscall.SYS_MKNOD:        {name: "mknod", kind: kMutate, dirfd: -1, path: 0},
	syscall.SYS_MKNODAT:      {name: "mknodat", kind: kMutate, dirfd: 0, path: 1},
	syscall.SYS_UNLINK:       {name: "unlink", kind: kMutate, dirfd: -1, path: 0},
	syscall.SYS_UNLINKAT:     {name: "unlinkat", kind: kMutate, dirfd: 0, path: 1},
	syscall.SYS_RMDIR:        {name: "rmdir", kind: kMutate, dirfd: -1, path: 0},
	syscall.SYS_SYMLINK:      {name: "symlink", kind: kMutate, dirfd: -1, path: 1},
	syscall.SYS_SYMLINKAT:    {name: "symlinkat", kind: kMutate, dirfd: 1, path: 2},
	syscall.SYS_RENAME:       {name: "rename", kind: kTwo, dirfd: -1, path: 0, dirfd2: -1, path2: 1},
	syscall.SYS_RENAMEAT:     {name: "renameat", kind: kTwo, dirfd: 0, path: 1, dirfd2: 2, path2: 3},
	sysRenameat2:             {name: "renameat2", kind: kTwo, dirfd: 0, path: 1, dirfd2: 2, path2: 3},
	syscall.SYS_LINK:         {name: "link", kind: kTwo, dirfd: -1, path: 0, dirfd2: -1, path2: 1},
	syscall.SYS_LINKAT:       {name: "linkat", kind: kTwo, dirfd: 0, path: 1, dirfd2: 2, path2: 3},
	syscall.SYS_TRUNCATE:     {name: "truncate", kind: kSetattr, dirfd: -1, path: 0},
	syscall.SYS_CHMOD:        {name: "chmod", kind: kSetattr, dirfd: -1, path: 0},
	syscall.SYS_FCHMODAT:     {name: "fchmodat", kind: kSetattr, dirfd: 0, path: 1},
	sysFchmodat2:             {name: "fchmodat2", kind: kSetattr, dirfd: 0, path: 1},
	syscall.SYS_CHOWN:        {name: "chown", kind: kSetattr, dirfd: -1, path: 0},
	syscall.SYS_LCHOWN:       {name: "lchown", kind: kSetattr, dirfd: -1, path: 0},
	syscall.SYS_FCHOWNAT:     {name: "fchownat", kind: kSetattr, dirfd: 0, path: 1},
	syscall.SYS_UTIME:        {name: "utime", kind: kSetattr, dirfd: -1, path: 0},
	syscall.SYS_UTIMES:       {name: "utimes", kind: kSetattr, dirfd: -1, path: 0},
	syscall.SYS_FUTIMESAT:    {name: "futimesat", kind: kSetattr, dirfd: 0, path: 1},
	syscall.SYS_UTIMENSAT:    {name: "utimensat", kind: kSetattr, dirfd: 0, path: 1},
	syscall.SYS_SETXATTR:     {name: "setxattr", kind: kXattr, dirfd: -1, path: 0},
	syscall.SYS_LSETXATTR:    {name: "lsetxattr", kind: kXattr, dirfd: -1, path: 0},
	syscall.SYS_GETXATTR:     {name: "getxattr", kind: kXattr, dirfd: -1, path: 0},
	syscall.SYS_LGETXATTR:    {name: "lgetxattr", kind: kXattr, dirfd: -1, path: 0},
	syscall.SYS_LISTXATTR:    {name: "listxattr", kind: kXattr, dirfd: -1, path: 0},
	syscall.SYS_LLISTXATTR:   {name: "llistxattr", kind: kXattr, dirfd: -1, path: 0},
	syscall.SYS_REMOVEXATTR:  {name: "removexattr", kind: kXattr, dirfd: -1, path: 0},
	syscall.SYS_LREMOVEXATTR: {name: "lremovexattr", kind: kXattr, dirfd: -1, path: 0},
	sysSetxattrat:            {name: "setxattrat", kind: kXattr, dirfd: 0, path: 1},
	sysGetxattrat:            {name: "getxattrat", kind: kXattr, dirfd: 0, path: 1},
	sysListxattrat:           {name: "listxattrat", kind: kXattr, dirfd: 0, path: 1},
	sysRemovexattrat:         {name: "removexattrat", kind: kXattr, dirfd: 0, path: 1},
	syscall.SYS_GETCWD:       {name: "getcwd", kind: kGetcwd, dirfd: -1, path: -1},
}

// trapSet says which calls a filter traps.
type trapSet int

const (
	trapNamespace trapSet = 1 << iota // calls: the namespace's names
	trapPaced                         // paced: connect and listen, to pace sockets
	trapFast                          // not a set: calls from the fast path's trampoline run untouched (fastpath.go)
)

// trappedNumbers lists the numbers of the calls in set, sorted.
func trappedNumbers(set trapSet) []int {
	var out []int
	if set&trapNamespace != 0 {
		for nr := range calls {
			out = append(out, nr)
		}
	}
	if set&trapPaced != 0 {
		for nr := range paced {
			out = append(out, nr)
		}
	}
	slices.Sort(out)
	return out
}

// trappedCall describes trapped call nr.
func trappedCall(nr int) (call, bool) {
	if c, ok := calls[nr]; ok {
		return c, true
	}
	c, ok := paced[nr]
	return c, ok
}
