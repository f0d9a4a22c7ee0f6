// Package sftp is the SFTP remote.Backend and remote.Writer: pkg/sftp over
// golang.org/x/crypto/ssh, configured like the ssh command from the
// caller's ~/.ssh (config, keys, known_hosts) and ssh-agent.
//
// Paths are absolute on the server. Stat and List do not follow symbolic
// links (lstat): a link is os.ModeSymlink, and Readlink says where it
// points. Errors carry the errno OpenSSH's vague status codes leave out
// (errors.go).
package sftp

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pkg/sftp"

	"wirefs/internal/ns"
	"wirefs/internal/remote"
	"wirefs/internal/remote/session"
)

const (
	defaultTimeout        = 30 * time.Second
	defaultConnectTimeout = 20 * time.Second
	// maxRequests outstanding per file is what keeps a long fat pipe
	// full: up to 64 packets in flight (conn.go, startSFTP).
	maxRequests = 64
	// packetSize is the packet every server takes (the SFTP drafts
	// require 32 KiB and a little); openSSHPacket the largest read
	// OpenSSH's sftp-server answers whole (SFTP_MAX_READ_LENGTH).
	packetSize    = 32768
	openSSHPacket = 256<<10 - 1024
)

var (
	_ remote.Dialer       = Dial
	_ remote.Backend      = (*backend)(nil)
	_ remote.Writer       = (*backend)(nil)
	_ remote.Chtimer      = (*backend)(nil)
	_ remote.Chowner      = (*backend)(nil)
	_ remote.Symlinker    = (*backend)(nil)
	_ remote.Linker       = (*backend)(nil)
	_ remote.Statfser     = (*backend)(nil)
	_ remote.Appender     = (*backend)(nil)
	_ remote.AppendOpener = (*backend)(nil)
	_ remote.Creator      = (*backend)(nil)
	_ remote.Patcher      = (*backend)(nil)
)

// backend is one session: a connection that is replaced when it dies
// (the session core's, internal/remote/session).
type backend struct {
	h   *hostConfig
	o   remote.Options
	log *slog.Logger
	srv session.Server // "sftp user@host" in messages
	s   *session.Session[*conn]

	spares spares // temporaries opened ahead (spare.go)

	// warnedRename: the log said once that this server's rename cannot
	// replace a file.
	warnedRename atomic.Bool
	// nameMax is the longest name the server takes, from its last
	// Statfs answer; 0 until then (defaultNameMax).
	nameMax atomic.Uint32
}

// Dial starts a session with server, "[user@]host[:port]" where host may
// be a Host of o.Home/.ssh/config. It connects at once, so that a wrong
// key, password or host key shows here.
func Dial(ctx context.Context, server string, o remote.Options) (remote.Backend, error) {
	o = o.WithDefaults(defaultConnectTimeout, defaultTimeout)
	h, err := resolveHost(server, o.Home)
	if err != nil {
		return nil, session.Server{Proto: "sftp", Host: server}.Error(ns.Errno(err), "", "", err)
	}
	b := &backend{h: h, o: o, log: o.Log,
		srv: session.Server{Proto: "sftp", Host: h.name(), ConnectTimeout: o.ConnectTimeout, Timeout: o.Timeout}}
	b.s = session.New(session.Protocol[*conn]{Server: b.srv, Log: o.Log, Dial: b.dial, Answer: b.answer})
	if err := b.s.Connect(ctx); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// Close ends the session and waits for every goroutine it started.
func (b *backend) Close() error { return b.s.Close() }

// call runs op on p on the session's connection (session.Call), after
// refusing names the server would refuse (paths; messages name where).
// Reads and attribute changes pass session.Always as retry: they run
// once more on a new connection when an idle one turns out dead.
func call[T any](ctx context.Context, b *backend, what, where string, paths []string, retry session.Retry, op func(c *conn) (T, error), release func(T)) (T, error) {
	if err := b.checkNames(what, where, paths); err != nil {
		var zero T
		return zero, err
	}
	return session.Call(ctx, b.s, what, where, retry, op, release)
}

// do is call for an operation on p with nothing to return.
func (b *backend) do(ctx context.Context, what, p string, retry session.Retry, op func(c *conn) error) error {
	return b.doOn(ctx, what, p, []string{p}, retry, op)
}

// doOn is do for an operation on several paths, which messages name as
// where.
func (b *backend) doOn(ctx context.Context, what, where string, paths []string, retry session.Retry, op func(c *conn) error) error {
	_, err := call(ctx, b, what, where, paths, retry, func(c *conn) (struct{}, error) { return struct{}{}, op(c) }, nil)
	return err
}

// answer is the session's Answer hook: what pkg/sftp's status codes say
// (errors.go finds what OpenSSH's "failure" hides); anything else means
// the connection is broken.
func (b *backend) answer(what, p string, err error) (error, bool) {
	var st *sftp.StatusError
	switch {
	case errors.Is(err, os.ErrNotExist):
		return b.srv.Error(syscall.ENOENT, what, p, syscall.ENOENT), true
	case errors.Is(err, os.ErrPermission):
		return b.srv.Error(syscall.EACCES, what, p, syscall.EACCES), true
	case isBadMessage(err):
		return b.srv.Error(syscall.EINVAL, what, p, syscall.EINVAL), true
	case errors.Is(err, sftp.ErrSSHFxOpUnsupported),
		errors.As(err, &st) && st.FxCode() == sftp.ErrSSHFxOpUnsupported:
		return b.srv.Errorf(syscall.ENOTSUP, what, p, "the server does not support it"), true
	case errors.As(err, &st) && st.FxCode() != sftp.ErrSSHFxConnectionLost && st.FxCode() != sftp.ErrSSHFxNoConnection:
		return b.srv.Error(syscall.EIO, what, p, err), true
	}
	return nil, false
}

// toInfo converts pkg/sftp's attributes (mode with the setuid, setgid
// and sticky bits, times in seconds, numeric owner).
func toInfo(fi os.FileInfo) remote.Info {
	info := remote.Info{Name: fi.Name(), Mode: fi.Mode(), Size: fi.Size(), Mtime: fi.ModTime()}
	if st, ok := fi.Sys().(*sftp.FileStat); ok {
		info.Atime = st.AccessTime()
		info.Owner = &remote.Owner{Uid: st.UID, Gid: st.GID}
	}
	return info
}

// Stat returns the attributes of p itself, a symbolic link included.
func (b *backend) Stat(ctx context.Context, p string) (remote.Info, error) {
	return call(ctx, b, "stat", p, []string{p}, session.Always, func(c *conn) (remote.Info, error) {
		fi, err := c.sftp.Lstat(p)
		if err != nil {
			// No look at the ancestors on ENOENT: a negative lookup
			// is common, and the kernel never looks below a file.
			return remote.Info{}, err
		}
		return toInfo(fi), nil
	}, nil)
}

func (b *backend) List(ctx context.Context, p string) ([]remote.Info, error) {
	return call(ctx, b, "list", p, []string{p}, session.Always, func(c *conn) ([]remote.Info, error) {
		entries, err := c.sftp.ReadDir(p)
		// OpenSSH reports ENOTDIR as "no such file".
		if isFailure(err) || errors.Is(err, os.ErrNotExist) {
			if fi, serr := c.sftp.Stat(p); serr == nil && !fi.IsDir() {
				return nil, b.srv.Errorf(syscall.ENOTDIR, "list", p, "not a directory")
			}
		}
		if err != nil {
			return nil, err
		}
		// OpenSSH lists the attributes of lstat(2), like Stat.
		list := make([]remote.Info, 0, len(entries))
		for _, fi := range entries {
			if !remote.IsSpare(fi.Name()) { // ours, in use for a moment (spare.go)
				list = append(list, toInfo(fi))
			}
		}
		return list, nil
	}, nil)
}

// Store replaces p whole. The bytes go to a temporary name in p's
// directory (remote.TempName), renamed over p once they are all there, so
// that a failed upload never leaves part of the data under p's name; the
// temporary is removed on failure (on a new connection when the old one
// broke). posix-rename@openssh.com replaces p atomically; a server
// without it cannot rename over a file, so p is removed just before
// (logged once). The new file gets p's mode (perm when p is new) and, as
// far as the server lets the login user, p's owner; other hard links to
// p keep the old data (as with rsync).
//
// Written in place as before: a symbolic link at p (a rename would
// replace the link, not the file it names), and p in a directory where
// the login user may not create files.
func (b *backend) Store(ctx context.Context, p string, r io.Reader, size int64, perm os.FileMode) error {
	return b.store(ctx, p, r, size, perm, false)
}

// store is Store, and StoreFresh when fresh (fresh.go).
func (b *backend) store(ctx context.Context, p string, r io.Reader, size int64, perm os.FileMode, fresh bool) error {
	src := newSource(ctx, r, size)
	// The transfer may outlive a cancelled Store: stop it reading r.
	defer src.stop()
	var left atomic.Pointer[string] // a temporary that may be on the server
	err := b.do(ctx, "store", p, nil, func(c *conn) error {
		return b.storeVia(c, p, src, size, perm, fresh, &left)
	})
	if tmp := left.Load(); err != nil && tmp != nil && ctx.Err() == nil {
		b.removeTemp(ctx, *tmp)
	}
	return err
}

// storeVia is store on connection c; left holds the temporary while it
// may exist.
func (b *backend) storeVia(c *conn, p string, src *source, size int64, perm os.FileMode, fresh bool, left *atomic.Pointer[string]) error {
	if size >= 0 && size <= int64(c.packet) {
		sp := b.takeSpare(c, path.Dir(p))
		if fresh && c.posixRename {
			if sp == nil {
				// A temporary of its own, opened now: one round
				// trip more.
				tmp := remote.TempName(p)
				f, err := c.sftp.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
				if err != nil {
					return b.explain(c, "store", p, opens, err)
				}
				sp = &spare{c: c, name: tmp, f: f}
			}
			return b.storeFreshInSpare(c, p, sp, src, size, perm, left)
		}
		if sp != nil {
			return b.storeInSpare(c, p, sp, src, size, perm, left)
		}
	}
	if src.size < 0 {
		// A stream's reads wait for its writer, not for the server
		// (stream.go).
		src.pause = func() (resume func()) { return session.Pause(c) }
	}
	tmp := remote.TempName(p)
	// What is at p and the temporary's creation: one round trip.
	var old os.FileInfo
	var lerr error
	looked := make(chan struct{})
	go func() { old, lerr = c.sftp.Lstat(p); close(looked) }()
	f, err := c.sftp.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	<-looked
	if err == nil {
		left.Store(&tmp)
	}
	switch {
	case lerr == nil && (old.Mode()&os.ModeSymlink != 0 || old.IsDir()), // the open in place says EISDIR
		err != nil && errors.Is(err, os.ErrPermission) && lerr == nil && !old.IsDir():
		if err == nil {
			f.Close()
			b.dropTemp(c, tmp, left)
		}
		return b.storeInPlace(c, p, src, size, perm)
	case err != nil:
		return b.explain(c, "store", p, opens, err)
	}
	// p's mode and owner (perm for a new file) travel beside the data,
	// as requests of their own: a refused chown must not undo the chmod.
	mode := perm
	if lerr == nil {
		mode = old.Mode() & (os.ModePerm | os.ModeSetuid | os.ModeSetgid | os.ModeSticky)
	}
	attrs := make(chan error, 2)
	go func() { attrs <- c.sftp.Chmod(tmp, mode) }()
	st, chown := statOf(old, lerr)
	if chown {
		go func() {
			b.giveOwner(c, p, tmp, st)
			attrs <- nil
		}()
	}
	var attrsErr error
	waitAttrs := sync.OnceFunc(func() {
		attrsErr = <-attrs
		if chown {
			attrsErr = errors.Join(attrsErr, <-attrs)
		}
	})
	// Never returns before the attributes are set: nothing touches tmp after.
	defer waitAttrs()
	err = b.fill(c, "store", p, f, src, size, func() error { waitAttrs(); return attrsErr })
	return b.settle(c, tmp, p, lerr == nil, err, left)
}

// settle ends a store through the temporary tmp after its data (err: how
// they went): renamed over p (which existed or not), or removed.
func (b *backend) settle(c *conn, tmp, p string, existed bool, err error, left *atomic.Pointer[string]) error {
	if err == nil {
		err = b.replace(c, tmp, p, existed)
	}
	if err != nil {
		b.dropTemp(c, tmp, left)
		return err
	}
	left.Store(nil)
	return nil
}

// storeInSpare is storeVia for data that fit in one write, with a
// temporary opened ahead (spare.go): the data, the mode a new file gets
// and the close go out with the Lstat of p, and are answered in one round
// trip. What the Lstat finds is dealt with before the rename: a file's
// own mode and owner (one round trip more, for a file replaced), or a
// directory or link at p (then the data go in place, as storeVia's).
func (b *backend) storeInSpare(c *conn, p string, sp *spare, src *source, size int64, perm os.FileMode, left *atomic.Pointer[string]) error {
	tmp := sp.name
	data, err := b.spareData(c, p, sp, src, size, left)
	if err != nil {
		return err
	}
	again := func() *source { return newSource(src.ctx, bytes.NewReader(data), size) }
	var old os.FileInfo
	var lerr error
	looked := make(chan struct{})
	go func() { old, lerr = c.sftp.Lstat(p); close(looked) }()
	chmodded := make(chan error, 1)
	go func() { chmodded <- c.sftp.Chmod(tmp, perm) }()
	err = b.fillOne(c, "store", p, sp.f, again(), size, func() error {
		<-looked
		return <-chmodded
	})
	if err == nil && lerr == nil {
		if old.Mode()&os.ModeSymlink != 0 || old.IsDir() {
			b.dropTemp(c, tmp, left)
			return b.storeInPlace(c, p, again(), size, perm)
		}
		err = b.keepAttrs(c, p, tmp, old, perm)
	}
	return b.settle(c, tmp, p, lerr == nil, err, left)
}

// spareData reads the data of a store into the spare sp, which left then
// holds; on failure sp is closed and removed.
func (b *backend) spareData(c *conn, p string, sp *spare, src *source, size int64, left *atomic.Pointer[string]) ([]byte, error) {
	left.Store(&sp.name)
	data, err := b.readSmall(c, "store", p, src, size)
	if err != nil {
		sp.f.Close()
		b.dropTemp(c, sp.name, left)
	}
	return data, err
}

// keepAttrs gives tmp, which has permission perm, the mode and owner of
// old, the file at p that it replaces (both requests at once); a refused
// chown leaves the login user as owner.
func (b *backend) keepAttrs(c *conn, p, tmp string, old os.FileInfo, perm os.FileMode) error {
	st, chown := statOf(old, nil)
	chowned := make(chan struct{})
	go func() {
		defer close(chowned)
		if chown {
			b.giveOwner(c, p, tmp, st)
		}
	}()
	defer func() { <-chowned }() // nothing touches tmp after
	if mode := old.Mode() & (os.ModePerm | os.ModeSetuid | os.ModeSetgid | os.ModeSticky); mode != perm {
		return c.sftp.Chmod(tmp, mode)
	}
	return nil
}

// giveOwner gives tmp the owner st of p, the file it replaces, as far as
// the server lets the login user (a refusal leaves the login user).
func (b *backend) giveOwner(c *conn, p, tmp string, st *sftp.FileStat) {
	if err := c.sftp.Chown(tmp, int(st.UID), int(st.GID)); err != nil {
		b.log.Debug("sftp: the replaced file keeps the login user as owner", "path", p, "err", err)
	}
}

// statOf returns the SFTP attributes of fi, when Lstat gave them.
func statOf(fi os.FileInfo, err error) (*sftp.FileStat, bool) {
	if err != nil {
		return nil, false
	}
	st, ok := fi.Sys().(*sftp.FileStat)
	return st, ok
}

// replace renames tmp to p, which exists when existed.
func (b *backend) replace(c *conn, tmp, p string, existed bool) error {
	if c.posixRename {
		return b.explain(c, "store", p, changes, c.sftp.PosixRename(tmp, p))
	}
	if existed {
		if !b.warnedRename.Swap(true) {
			b.log.Warn("sftp: the server has no posix-rename@openssh.com, whose rename cannot replace a file: a store removes the old file just before the new one takes its name",
				"server", b.srv.Host)
		}
		if err := c.sftp.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return b.explain(c, "store", p, changes, err)
		}
	}
	return b.explain(c, "store", p, changes, c.sftp.Rename(tmp, p))
}

// dropTemp removes the temporary tmp after a failure; when the connection
// is broken, Store tries again on a new one.
func (b *backend) dropTemp(c *conn, tmp string, left *atomic.Pointer[string]) {
	if err := c.sftp.Remove(tmp); err == nil || errors.Is(err, os.ErrNotExist) {
		left.Store(nil)
	}
}

// removeTemp removes the temporary tmp that a failed Store left when its
// connection broke.
func (b *backend) removeTemp(ctx context.Context, tmp string) {
	err := b.do(ctx, "store", tmp, session.Always, func(c *conn) error {
		if err := c.sftp.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	})
	if err != nil {
		b.log.Warn("sftp: cannot remove the temporary file of a failed upload", "path", tmp, "err", err)
	}
}

// storeInPlace writes src over p itself: what Store does where a
// temporary cannot be used.
func (b *backend) storeInPlace(c *conn, p string, src *source, size int64, perm os.FileMode) error {
	f, created, err := b.openStore(c, p)
	if err != nil {
		return err
	}
	if created {
		// Exactly perm, special bits included: the server's open
		// applied its umask.
		if err := f.Chmod(perm); err != nil {
			f.Close()
			return err
		}
	}
	return b.fill(c, "store", p, f, src, size, nil)
}

// openStore opens p for writing from its start: a new file, or else the
// existing one, truncated.
func (b *backend) openStore(c *conn, p string) (f *sftp.File, created bool, err error) {
	f, err = c.sftp.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	if err == nil {
		return f, true, nil
	}
	if !isFailure(err) { // not EEXIST
		return nil, false, b.explain(c, "store", p, creates, err)
	}
	f, terr := c.sftp.OpenFile(p, os.O_WRONLY|os.O_TRUNC)
	switch {
	case terr == nil:
		return f, false, nil
	case errors.Is(terr, os.ErrNotExist): // then the first failure was not EEXIST
		return nil, false, b.explain(c, "store", p, creates, err)
	}
	return nil, false, b.explain(c, "store", p, opens, terr)
}

// fill writes size bytes of src (size < 0: all of it) to the open file f
// and closes f; last, if not nil, runs after the data (fillOne: after the
// close was sent) and its error is the store's.
func (b *backend) fill(c *conn, what, p string, f *sftp.File, src *source, size int64, last func() error) error {
	if size >= 0 && size <= int64(c.packet) {
		return b.fillOne(c, what, p, f, src, size, last)
	}
	var n int64
	var err error
	closeStreams := func() error { return nil }
	if (size < 0 || size >= spreadStore) && time.Duration(c.rtt.Load()) >= spreadRTT {
		n, closeStreams, err = b.spreadTo(c, p, f, src, size)
	} else {
		n, err = f.ReadFrom(src)
	}
	if err == nil && last != nil {
		err = last()
	}
	err = cmp.Or(err, f.Close(), closeStreams())
	if err == nil && size >= 0 && n < size {
		return b.srv.Errorf(syscall.EIO, what, p, "the data ended after %d of %d bytes", n, size)
	}
	return b.writeFailure(c, what, p, src, size-n, err)
}

// readSmall reads the size bytes of a store that fits in one write from
// src, or says why it cannot.
func (b *backend) readSmall(c *conn, what, p string, src *source, size int64) ([]byte, error) {
	data := make([]byte, size)
	if n, err := io.ReadFull(src, data); err != nil {
		if src.failed(err) {
			return nil, b.writeFailure(c, what, p, src, size, err)
		}
		return nil, b.srv.Errorf(syscall.EIO, what, p, "the data ended after %d of %d bytes", n, size)
	}
	return data, nil
}

// fillOne is fill for data that fit in one write: the write and the
// close go out together (pkg/sftp's StartWriteAt, a patch) and are
// answered in one round trip, where a write answered before the close
// is sent costs two. The close's success says nothing of the write's,
// whose own answer is the one checked: a store renames the file into
// place only after both.
func (b *backend) fillOne(c *conn, what, p string, f *sftp.File, src *source, size int64, last func() error) error {
	data, err := b.readSmall(c, what, p, src, size)
	if err != nil {
		f.Close()
		return err
	}
	wait := func(context.Context) (int, error) { return 0, nil }
	if size > 0 {
		wait = f.StartWriteAt(data, 0)
	}
	cerr := f.Close()
	var lerr error
	if last != nil {
		lerr = last() // after the close is sent: it may wait for answers
	}
	_, err = wait(src.ctx)
	if err == nil {
		err = errors.Join(lerr, cerr)
	}
	if err != nil {
		return b.writeFailure(c, what, p, src, size, err)
	}
	return nil
}

// writeFailure explains the failure err of a write of src to p, left
// bytes before its end.
func (b *backend) writeFailure(c *conn, what, p string, src *source, left int64, err error) error {
	switch {
	case src.failed(err): // not the server's fault: keep the connection
		return b.srv.Errorf(ns.Errno(err), what, p, "reading the data: %w", err)
	case isFailure(err):
		return b.fsFailure(c, what, p, path.Dir(p), left, err)
	}
	return err
}

// source is the data of Store, Append (Read) and Patch (ReadAt). Its
// Size tells pkg/sftp how many writes it may send at once; it ends the
// transfer when ctx ends, and after stop it never touches the caller's
// reader again, except a stream's (size -1, StoreStream): its reads may
// wait for a program's writes for as long as the program takes, so stop
// does not wait for them, and the stream's owner ends them when the store
// returns.
type source struct {
	r    io.Reader
	ra   io.ReaderAt
	size int64 // -1: unknown (a stream)
	ctx  context.Context
	// pause, if not nil, takes each read of a stream out of the
	// connection's wait (session.Pause): the server's silence while
	// the program writes is no stall.
	pause func() (resume func())

	mu      sync.Mutex
	stopped bool
	err     error // the error of r or ctx that ended the transfer
}

// newSource reads size bytes of r (size < 0: all of it).
func newSource(ctx context.Context, r io.Reader, size int64) *source {
	s := &source{r: r, size: size, ctx: ctx}
	if size >= 0 {
		s.r = io.LimitReader(r, size)
	}
	return s
}

func (s *source) Read(p []byte) (int, error) {
	return s.read(func() (int, error) { return s.r.Read(p) })
}

// ReadAt reads all of p or fails: a short read means the caller's data
// ends before the range it named.
func (s *source) ReadAt(p []byte, off int64) (int, error) {
	return s.read(func() (int, error) {
		n, err := s.ra.ReadAt(p, off)
		switch {
		case n == len(p):
			return n, nil
		case err == nil || err == io.EOF:
			err = io.ErrUnexpectedEOF
		}
		return n, err
	})
}

// read runs one read of the caller's reader, unless the transfer ended.
func (s *source) read(read func() (int, error)) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil && s.stopped {
		s.err = errors.New("transfer abandoned")
	}
	if s.err == nil {
		s.err = s.ctx.Err()
	}
	if s.err != nil {
		return 0, s.err
	}
	if s.size < 0 {
		s.mu.Unlock() // a stream's read may wait: stop does not
		if s.pause != nil {
			defer s.pause()()
		}
	}
	n, err := read()
	if s.size < 0 {
		s.mu.Lock()
	}
	if err != nil && err != io.EOF {
		s.err = cmp.Or(s.err, err)
	}
	return n, err
}

func (s *source) Size() int64 { return s.size }

// failed reports whether err is the source's own failure rather than the
// server's.
func (s *source) failed(err error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err != nil && errors.Is(err, s.err)
}

// stop waits for a read in progress and makes later ones fail.
func (s *source) stop() {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
}

func (b *backend) Mkdir(ctx context.Context, p string, perm os.FileMode) error {
	return b.do(ctx, "mkdir", p, nil, func(c *conn) error {
		if err := c.sftp.Mkdir(p); err != nil {
			return b.explain(c, "mkdir", p, creates, err)
		}
		// SFTP's mkdir takes the server's umask; set what was asked,
		// special bits included.
		return c.sftp.Chmod(p, perm)
	})
}

func (b *backend) Remove(ctx context.Context, p string) error {
	return b.do(ctx, "remove", p, nil, func(c *conn) error {
		// pkg/sftp's Remove also removes an empty directory, which
		// unlink(2) must not.
		fi, err := c.sftp.Lstat(p)
		if err == nil && fi.IsDir() {
			return b.srv.Errorf(syscall.EISDIR, "remove", p, "is a directory")
		}
		if err == nil {
			err = c.sftp.Remove(p)
		}
		return b.explain(c, "remove", p, changes, err)
	})
}

func (b *backend) Rmdir(ctx context.Context, p string) error {
	b.dropSpares(p)
	return b.do(ctx, "rmdir", p, nil, func(c *conn) error {
		err := c.sftp.RemoveDirectory(p)
		if !isFailure(err) && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		// OpenSSH says "failure" for a full directory, "no such file"
		// for a file.
		fi, serr := c.sftp.Lstat(p)
		switch {
		case serr == nil && !fi.IsDir():
			return b.srv.Errorf(syscall.ENOTDIR, "rmdir", p, "not a directory")
		case serr == nil && nonEmpty(c, p):
			return b.srv.Errorf(syscall.ENOTEMPTY, "rmdir", p, "directory not empty")
		}
		return b.explain(c, "rmdir", p, changes, err)
	})
}

// Rename replaces an existing target like rename(2) when the server has
// posix-rename@openssh.com; plain SFTP rename refuses to (EEXIST).
func (b *backend) Rename(ctx context.Context, from, to string) error {
	b.dropSpares(from) // a directory's: their paths would be wrong after
	where := from + " to " + to
	return b.doOn(ctx, "rename", where, []string{from, to}, nil, func(c *conn) error {
		var err error
		if c.posixRename {
			err = c.sftp.PosixRename(from, to)
		} else {
			err = c.sftp.Rename(from, to)
		}
		if err == nil {
			return nil
		}
		return b.renameFailure(c, where, from, to, err)
	})
}

// renameFailure finds why OpenSSH refused to rename from to to, in the
// order rename(2) checks.
func (b *backend) renameFailure(c *conn, where, from, to string, err error) error {
	notFound := errors.Is(err, os.ErrNotExist) // ENOENT or ENOTDIR
	if !notFound && !isFailure(err) {
		return err
	}
	src, serr := c.sftp.Lstat(from)
	dst, derr := c.sftp.Lstat(to)
	switch {
	case serr != nil && notDir(c, from):
		return b.srv.Errorf(syscall.ENOTDIR, "rename", where, "not a directory")
	case serr != nil:
		return err
	case derr == nil && dst.IsDir() && !src.IsDir():
		return b.srv.Errorf(syscall.EISDIR, "rename", where, "is a directory")
	case derr == nil && !dst.IsDir() && src.IsDir(), derr != nil && notDir(c, to):
		return b.srv.Errorf(syscall.ENOTDIR, "rename", where, "not a directory")
	case notFound:
		return err
	case derr == nil && dst.IsDir() && nonEmpty(c, to):
		return b.srv.Errorf(syscall.ENOTEMPTY, "rename", where, "directory not empty")
	case src.IsDir() && strings.HasPrefix(to, from+"/"):
		return b.srv.Errorf(syscall.EINVAL, "rename", where, "a directory cannot move into itself")
	case derr == nil && !c.posixRename:
		return b.srv.Errorf(syscall.EEXIST, "rename", where, "the server has no posix-rename@openssh.com, and its rename does not replace")
	case crossDevice(c, from, to):
		return b.srv.Errorf(syscall.EXDEV, "rename", where, "the names are on different file systems of the server")
	}
	return b.fsFailure(c, "rename", where, path.Dir(to), 0, err)
}
