// Package remote is the contract between the remote-file protocols
// (internal/provider/{http,ftp,sftp,ninep}) and the cache that turns any of
// them into namespace nodes (internal/cache). A protocol implements Backend
// (and Writer when the server can be written); it knows nothing about the
// namespace, FUSE, seccomp or caching. The cache knows nothing about
// protocols.
package remote

import (
	"context"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"os"
	"syscall"
	"time"
)

// Info describes one remote file as the server reports it.
type Info struct {
	Name  string      // base name in List; the base of the path in Stat
	Mode  os.FileMode // permission bits | os.ModeDir (| os.ModeSymlink for a link not followed)
	Size  int64       // bytes; -1 when the server does not say (an HTML listing without sizes)
	Mtime time.Time   // zero when the server does not say
	ETag  string      // a validator when the server gives one (HTTP ETag); "" otherwise
	// Mode also carries os.ModeSetuid, os.ModeSetgid and os.ModeSticky
	// as the server reports them.
	Atime time.Time // zero when the server does not say
	// Owner is the file's owner and group on the server; nil when the
	// protocol does not say (FTP, HTTP): files then show as the
	// daemon's user.
	Owner *Owner
	Nlink uint32 // hard links; 0 when the server does not say
}

// Owner is a numeric owner and group as the server knows them.
type Owner struct{ Uid, Gid uint32 }

// Backend is one session with one server (protocol, user, host, port),
// shared by every file on it and safe for concurrent use.
//
// Paths are clean, slash-separated and start with "/"; "/" is what follows
// the host in a namespace name. Each protocol says what they mean: absolute
// for SFTP and 9P, from the login directory for FTP, the URL path for HTTP.
//
// Errors carry the errno a program should see, as ns.Errorf(errno, "why"):
// ENOENT missing, EACCES refused, ENOSPC server full, EROFS read-only
// protocol, ENOTSUP an operation the server lacks, ETIMEDOUT a stalled or
// dead server (after Options.Timeout), EIO anything else. The message says
// what happened in a sentence a user understands and never holds secrets.
type Backend interface {
	// Stat returns the attributes of p.
	Stat(ctx context.Context, p string) (Info, error)
	// List returns the entries of directory p (without "." and ".."),
	// with attributes as complete as one listing request gives.
	List(ctx context.Context, p string) ([]Info, error)
	// ReadRange returns a reader of n bytes of file p from offset off
	// (n < 0: to the end). The reader may return fewer bytes only at the
	// end of the file. Protocols without ranges skip to off themselves.
	// Closing the reader early abandons the rest of the transfer.
	ReadRange(ctx context.Context, p string, off, n int64) (io.ReadCloser, error)
	// Close ends the session and every connection it holds.
	Close() error
}

// Writer is implemented by backends whose servers can be written.
type Writer interface {
	// Store replaces the contents of file p with size bytes read from r,
	// creating p if needed (permission perm when created; an existing
	// p's mode is kept). When Store returns nil, the server has the
	// data; when it fails, p is as it was: the data go to a temporary
	// name (TempName) renamed over p, wherever the server allows.
	Store(ctx context.Context, p string, r io.Reader, size int64, perm os.FileMode) error
	Mkdir(ctx context.Context, p string, perm os.FileMode) error
	Remove(ctx context.Context, p string) error // a file (or symlink)
	Rmdir(ctx context.Context, p string) error  // an empty directory
	Rename(ctx context.Context, from, to string) error
	// Chmod changes permission bits; ENOTSUP where the server cannot.
	Chmod(ctx context.Context, p string, perm os.FileMode) error
}

// FreshStorer is implemented by Writers that store a file nobody had
// (made through this client and never stored: the cache knows no version
// of it on the server) in fewer round trips than Store, under its own
// name, where the protocol lets them keep Store's promise that a failed
// store leaves no part of the data there (ftp's fresh.go says how and
// where it cannot). Otherwise StoreFresh is Store.
type FreshStorer interface {
	StoreFresh(ctx context.Context, p string, r io.Reader, size int64, perm os.FileMode) error
}

// StreamStorer is implemented by Writers that can store a file while a
// program is still writing it: StoreStream is Store for data whose length
// is known only when r ends (io.EOF), read as they come, so that the
// upload runs beside the writing rather than after it (the cache's
// stream.go). r may wait for the writer between reads, for as long as the
// writer takes: that wait is not the server's. Store's promise holds: the
// data take p's name only after r ended without error, and an error from
// r fails the store and leaves nothing under the name.
type StreamStorer interface {
	StoreStream(ctx context.Context, p string, r io.Reader, perm os.FileMode) error
}

// Chtimer is implemented by writable backends whose servers can set a
// file's times (touch, cp -p, tar); others keep the server's. Both times
// are given; they apply to directories too.
type Chtimer interface {
	Chtimes(ctx context.Context, p string, atime, mtime time.Time) error
}

// Chowner is implemented by backends whose servers can change a file's
// owner and group (SFTP setstat, 9P setattr); -1 leaves one as it is. The
// server decides who may: its refusal is EPERM.
type Chowner interface {
	Chown(ctx context.Context, p string, uid, gid int) error
}

// Symlinker is implemented by backends with symbolic links (SFTP, 9P):
// List and Stat report a link as os.ModeSymlink, not followed.
type Symlinker interface {
	// Symlink creates p, a symbolic link whose contents are target
	// (taken verbatim, not resolved). EEXIST when p exists.
	Symlink(ctx context.Context, target, p string) error
	Readlink(ctx context.Context, p string) (string, error)
}

// Linker is implemented by backends with hard links
// (hardlink@openssh.com, 9P2000.L link). EEXIST when p exists.
type Linker interface {
	Link(ctx context.Context, existing, p string) error
}

// FSInfo is what statfs(2) reports of the file system that holds a path.
type FSInfo struct {
	Bsize                 uint32 // the block size the counts are in
	Blocks, Bfree, Bavail uint64
	Files, Ffree          uint64
	Namelen               uint32 // the longest file name; 0 when unknown
}

// Statfser is implemented by backends whose servers report file system
// figures (statvfs@openssh.com, 9P statfs).
type Statfser interface {
	Statfs(ctx context.Context, p string) (FSInfo, error)
}

// Appender is implemented by writable backends whose servers append,
// so that a write-back of appended bytes sends those bytes only.
type Appender interface {
	// Append writes the n bytes read from r at the end of the existing
	// file p as the server sees it when they arrive (the server's
	// O_APPEND: SSH_FXF_APPEND, 9P Tlopen O_APPEND, FTP APPE), so
	// that appenders on several clients never overwrite each other.
	// It returns p's size afterwards as the server reports it, or -1
	// when it cannot tell.
	Append(ctx context.Context, p string, r io.Reader, n int64) (int64, error)
}

// Creator is implemented by Appenders that can make a file without
// touching one that exists, so that the first appends to a file nobody
// had (a log that several clients start at once) create it or append to
// it, whichever is true when they arrive, and never replace another
// client's file.
type Creator interface {
	// CreateIfMissing makes p an empty file with permission perm unless
	// p exists; an existing file is left as it is. created says which.
	CreateIfMissing(ctx context.Context, p string, perm os.FileMode) (created bool, err error)
}

// StatLister is implemented by backends whose Stat lists the parent
// directory and picks the entry (FTP, without MLST everywhere): the cache
// then validates a file by listing its directory itself, which validates
// every cached sibling at once, instead of one listing per file.
type StatLister interface {
	StatListsParent()
}

// AppendOpener is implemented by Appenders whose append first opens the
// file, a round trip of its own (SFTP, 9P). The cache opens ahead, once
// a program has opened the file with O_APPEND or while another
// write-back of the file runs, so that a write-back waits for its data
// only. The file is never opened before a program opened it: the file
// the data reach is the one the program's open named, as with Append.
type AppendOpener interface {
	// OpenAppend opens the existing file p for appending, as Append
	// does before it writes.
	OpenAppend(ctx context.Context, p string) (AppendFile, error)
}

// AppendFile is a file OpenAppend opened.
type AppendFile interface {
	// Append is Appender.Append on this file; it may be called once.
	Append(ctx context.Context, r io.Reader, n int64) (int64, error)
	// Close releases the file without waiting for the server; a
	// failure is logged.
	Close()
}

// AppendStarter is an AppendFile whose appends may overlap: StartAppend
// sends data and returns, and wait returns the server's answer. Appends
// started one after another (each StartAppend returned before the next)
// land in that order, so several write-backs of one file go out while
// the first is still on its way, as several writers' writes do through
// sshfs. If one fails, those started after it may have landed before its
// bytes would have: the caller sends them all again in place. Close
// releases the file once every wait returned.
type AppendStarter interface {
	AppendFile
	// StartAppend sends data, at most StartMax bytes; wait must be
	// called once.
	StartAppend(data []byte) (wait func(ctx context.Context) error)
	// StartMax is the most bytes one StartAppend sends.
	StartMax() int
}

// Patcher is implemented by writable backends that can change part of an
// existing file, so that a write-back sends what changed, not the file.
type Patcher interface {
	// Patch writes the ranges of r at the same offsets of the existing
	// file p, then sets p's length to size.
	Patch(ctx context.Context, p string, r io.ReaderAt, ranges []Range, size int64) error
}

// Range is the bytes [Off, End) of a file.
type Range struct{ Off, End int64 }

// Options are the settings of one session. Zero values mean defaults.
type Options struct {
	Log            *slog.Logger
	ConnectTimeout time.Duration // bound on establishing a connection
	// Timeout bounds how long any single request may make no progress;
	// after it the operation fails with ETIMEDOUT and the connection is
	// dropped so that the next operation reconnects.
	Timeout time.Duration
	Home    string // the user's home: ~/.ssh/config, ~/.ssh/known_hosts, ~/.netrc
	// TLS selects the secure variant: https, or explicit FTPS (AUTH TLS).
	TLS     bool
	RootCAs *x509.CertPool // trust roots for TLS; nil = the system's
	// AcceptNewHostKeys lets SFTP add an unknown host's key to
	// known_hosts (never a changed key), like StrictHostKeyChecking=accept-new.
	AcceptNewHostKeys bool
	// Connections bounds the connections of one session where the
	// protocol needs one per transfer (FTP's control connections, the
	// ftp_connections mount option); 0: the protocol's default.
	Connections int
	// Askpass asks the user for a secret (a password) when nothing else
	// works, or returns an error; nil means never ask.
	Askpass func(prompt string) (string, error)
}

// WithDefaults returns o with the zero settings filled in: Log with a
// logger that discards, ConnectTimeout with connect and Timeout with
// timeout when they are not positive. Each protocol passes its own
// defaults, since what is patient enough differs between them.
func (o Options) WithDefaults(connect, timeout time.Duration) Options {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = connect
	}
	if o.Timeout <= 0 {
		o.Timeout = timeout
	}
	return o
}

// Dialer starts a session with a server named as in the namespace:
// "[user@]host[:port]" (host may be a bracketed IPv6 address, or for
// SFTP an alias from ~/.ssh/config).
type Dialer func(ctx context.Context, server string, o Options) (Backend, error)

// ConnErrno is the errno of a failed connection: the socket's own when it
// has one a program understands (ECONNREFUSED: cat prints "Connection
// refused"), else EIO.
func ConnErrno(err error) syscall.Errno {
	for _, e := range []syscall.Errno{syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.EHOSTUNREACH,
		syscall.ENETUNREACH, syscall.EADDRNOTAVAIL, syscall.ETIMEDOUT} {
		if errors.Is(err, e) {
			return e
		}
	}
	return syscall.EIO
}

// backgroundKey marks a context whose requests nobody waits for yet.
type backgroundKey struct{}

// Background returns ctx marked as background work: a prefetch the cache
// makes before any program asks for it. A protocol that queues requests
// (FTP's few connections) lets foreground requests go first and never
// gives background ones its last free slot.
func Background(ctx context.Context) context.Context {
	return context.WithValue(ctx, backgroundKey{}, true)
}

// IsBackground reports whether ctx was marked by Background.
func IsBackground(ctx context.Context) bool {
	v, _ := ctx.Value(backgroundKey{}).(bool)
	return v
}
