// Package ninep is the 9P2000.L remote-file backend (namespace name "9p"),
// with diod as the reference server, over github.com/hugelgupf/p9.
//
// Paths are absolute on the server. 9P has no single root: a client
// attaches to a named export. The attach name for a path is the longest
// prefix of it that the server accepts, so 9p/host/srv/export/dir/f works
// when the server exports /srv/export. When the server lists its exports
// (diod's "ctl" file system, exported with -e ctl), the longest export
// that is a prefix of the path is attached directly; otherwise prefixes
// are tried from the longest down, and what the server accepted or
// refused is remembered. Directories above every export ("/", "/srv")
// are synthesized: they list the next component of the known exports.
package ninep

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/user"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hugelgupf/p9/linux"
	"github.com/hugelgupf/p9/p9"

	"wirefs/internal/remote"
	"wirefs/internal/remote/addr"
	"wirefs/internal/remote/session"
)

const (
	defaultPort           = "564"
	defaultTimeout        = 30 * time.Second
	defaultConnectTimeout = 15 * time.Second
	// refusalTTL is how long a refused attach name is not tried again.
	refusalTTL = 10 * time.Second
	// maxWalk is the most names one Twalk may carry (MAXWELEM).
	maxWalk = 16
	// statParallel bounds the Tgetattr requests one listing has in flight.
	statParallel = 16
	// Wire values of 9P2000.L flags (Linux's, whatever the host's are).
	dotlTrunc = 0x200 // Tlopen/Tlcreate O_TRUNC
)

var statMask = p9.AttrMask{Mode: true, Size: true, MTime: true, ATime: true, UID: true, GID: true, NLink: true}

// Backend is a session with one 9P2000.L server. It implements
// remote.Backend, remote.Writer and the optional interfaces of links,
// owners, times, statfs and partial writes.
type Backend struct {
	addr string         // host:port
	srv  session.Server // "9p [user@]host[:port]" in messages
	s    *session.Session[*conn]
	user attachUser
	log  *slog.Logger

	mu       sync.Mutex
	accepted map[string]bool      // attach names the server accepted (when it does not list exports)
	refused  map[string]time.Time // attach names refused, until when
}

var (
	_ remote.Dialer    = Dial
	_ remote.Backend   = (*Backend)(nil)
	_ remote.Writer    = (*Backend)(nil)
	_ remote.Chtimer   = (*Backend)(nil)
	_ remote.Chowner   = (*Backend)(nil)
	_ remote.Symlinker = (*Backend)(nil)
	_ remote.Linker    = (*Backend)(nil)
	_ remote.Statfser  = (*Backend)(nil)
	_ remote.Appender  = (*Backend)(nil)
	_ remote.Patcher   = (*Backend)(nil)
)

// Dial connects to server ("[user@]host[:port]", port 564 by default) and
// returns a session that attaches as user: a user name, a numeric uid,
// or by default the current user.
func Dial(ctx context.Context, server string, o remote.Options) (remote.Backend, error) {
	o = o.WithDefaults(defaultConnectTimeout, defaultTimeout)
	srv := session.Server{Proto: "9p", Host: server, ConnectTimeout: o.ConnectTimeout, Timeout: o.Timeout}
	sv, err := addr.Parse(server)
	if err != nil {
		return nil, srv.Error(syscall.EINVAL, "", "", err)
	}
	u, err := lookupAttachUser(sv.User)
	if err != nil {
		return nil, srv.Error(syscall.EINVAL, "", "", err)
	}
	b := &Backend{
		addr:     sv.HostPort(defaultPort),
		srv:      srv,
		user:     u,
		log:      o.Log,
		accepted: map[string]bool{},
		refused:  map[string]time.Time{},
	}
	b.s = session.New(session.Protocol[*conn]{Server: srv, Log: o.Log, Dial: b.dial, Answer: b.answer})
	// Connect now, so that a wrong address or a server that does not
	// speak 9P2000.L is reported by Dial.
	if err := b.s.Connect(ctx); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// lookupAttachUser resolves the user part of a server name: empty is the
// current user, digits are a uid, anything else a user name, looked up
// here for its uid or else left to the server to look up.
func lookupAttachUser(name string) (attachUser, error) {
	switch {
	case name == "":
		u := attachUser{uid: p9.UID(os.Getuid())}
		if cu, err := user.Current(); err == nil {
			u.name = cu.Username
		}
		return u, nil
	case strings.Trim(name, "0123456789") == "":
		uid, err := strconv.ParseUint(name, 10, 32)
		if err != nil || p9.UID(uid) == p9.NoUID {
			return attachUser{}, fmt.Errorf("user %q is not a valid uid", name)
		}
		return attachUser{uid: p9.UID(uid)}, nil
	default:
		u := attachUser{uid: p9.NoUID, name: name}
		if lu, err := user.Lookup(name); err == nil {
			if uid, err := strconv.ParseUint(lu.Uid, 10, 32); err == nil {
				u.uid = p9.UID(uid)
			}
		}
		return u, nil
	}
}

// Close ends the session. Requests in flight fail with EIO.
func (b *Backend) Close() error { return b.s.Close() }

// place is where a path lives on the server: below an attached root, or
// (root nil) above every export.
type place struct {
	root  p9.File
	names []string
}

// locate finds the attach root for p (see the package comment).
func (b *Backend) locate(s *conn, p string) (place, error) {
	exports, err := s.exportList()
	if err != nil {
		return place{}, err
	}
	var candidates []string
	if exports.known {
		for _, e := range exports.paths {
			if covers(e, p) {
				candidates = append(candidates, e)
			}
		}
		// Longest first: a nested export has its own options.
		slices.SortFunc(candidates, func(x, y string) int { return len(y) - len(x) })
	} else {
		if a, ok := longestCover(b.acceptedNames(), p); ok {
			candidates = append(candidates, a)
		}
		for q := p; ; q = path.Dir(q) {
			candidates = append(candidates, q)
			if q == "/" {
				break
			}
		}
	}
	var refusal error
	for _, aname := range candidates {
		if b.isRefused(aname) {
			continue
		}
		root, err := s.attach(aname)
		if err != nil {
			if !isRefusal(err) {
				return place{}, err
			}
			b.remember(aname, false)
			refusal = err
			continue
		}
		b.remember(aname, true)
		return place{root: root, names: below(aname, p)}, nil
	}
	if exports.known && refusal != nil {
		return place{}, refusal // p is exported, but not to us
	}
	return place{}, nil
}

// below returns the names leading from root down to p.
func below(root, p string) []string {
	rest := strings.TrimPrefix(strings.TrimPrefix(p, root), "/")
	if rest == "" {
		return nil
	}
	return strings.Split(rest, "/")
}

func (b *Backend) acceptedNames() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	names := make([]string, 0, len(b.accepted))
	for n := range b.accepted {
		names = append(names, n)
	}
	return names
}

func (b *Backend) isRefused(aname string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	until, ok := b.refused[aname]
	if ok && time.Now().After(until) {
		delete(b.refused, aname)
		return false
	}
	return ok
}

// remember records the server's answer to an attach of aname.
func (b *Backend) remember(aname string, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ok {
		b.accepted[aname] = true
		delete(b.refused, aname)
	} else {
		delete(b.accepted, aname)
		b.refused[aname] = time.Now().Add(refusalTTL)
	}
}

// above answers for a path above every export: the names of its
// synthesized entries, or ENOENT when the server lists its exports and
// none lies below p. When the server does not list them, every such path
// is a directory leading to the exports attached so far.
func (b *Backend) above(s *conn, p string) ([]string, error) {
	exports, err := s.exportList()
	if err != nil {
		return nil, err
	}
	if !exports.known {
		return childrenToward(p, b.acceptedNames()), nil
	}
	names := childrenToward(p, exports.paths)
	if len(names) == 0 && p != "/" {
		return nil, b.srv.Errorf(syscall.ENOENT, "stat", p, "the server does not export it")
	}
	return names, nil
}

var synthesizedMode = os.ModeDir | 0o555

// walk returns a new fid for the file names below from (a clone when names
// is empty), in Twalks of at most maxWalk names.
func walk(from p9.File, names []string) (p9.File, error) {
	f, _, err := walkQID(from, names)
	return f, err
}

// walkQID is walk that also returns the qid of the last name walked (zero
// for a clone).
func walkQID(from p9.File, names []string) (p9.File, p9.QID, error) {
	f := from
	var last p9.QID
	for first := true; first || len(names) > 0; first = false {
		n := min(len(names), maxWalk)
		qids, nf, err := f.Walk(names[:n])
		if f != from {
			f.Close()
		}
		if err != nil {
			return nil, last, err
		}
		if len(qids) < n {
			// A partial walk: a later name is missing, and the new fid
			// was not created (clunking it just returns an error).
			// Below a file, it is missing because that is no directory.
			nf.Close()
			if len(qids) > 0 && qids[len(qids)-1].Type&p9.TypeDir == 0 {
				return nil, last, linux.ENOTDIR
			}
			return nil, last, linux.ENOENT
		}
		if n > 0 {
			last = qids[n-1]
		}
		f, names = nf, names[n:]
	}
	return f, last, nil
}

// withFile runs fn on the file names below root. Operations that leave a
// fid as it is (getattr, setattr) use the root itself when names is empty.
func withFile(root p9.File, names []string, fn func(p9.File) error) error {
	if len(names) == 0 {
		return fn(root)
	}
	f, err := walk(root, names)
	if err != nil {
		return err
	}
	defer f.Close()
	return fn(f)
}

// statFile returns the attributes of f itself: a walk never follows a
// symbolic link, so this is lstat.
func statFile(f p9.File, name string) (remote.Info, error) {
	_, valid, a, err := f.GetAttr(statMask)
	if err != nil {
		return remote.Info{}, err
	}
	info := remote.Info{
		Name:  name,
		Mode:  osMode(a.Mode),
		Size:  int64(a.Size),
		Mtime: time.Unix(int64(a.MTimeSeconds), int64(a.MTimeNanoSeconds)),
	}
	if valid.ATime {
		info.Atime = time.Unix(int64(a.ATimeSeconds), int64(a.ATimeNanoSeconds))
	}
	if valid.NLink {
		info.Nlink = uint32(a.NLink)
	}
	if valid.UID && valid.GID {
		info.Owner = &remote.Owner{Uid: uint32(a.UID), Gid: uint32(a.GID)}
	}
	return info, nil
}

// osMode converts a Linux st_mode to an os.FileMode.
func osMode(m p9.FileMode) os.FileMode {
	mode := os.FileMode(m & 0o777)
	for _, bit := range modeBits {
		if uint32(m)&bit.unix != 0 {
			mode |= bit.os
		}
	}
	switch {
	case m.IsDir():
		mode |= os.ModeDir
	case m.IsSymlink():
		mode |= os.ModeSymlink
	case m.IsNamedPipe():
		mode |= os.ModeNamedPipe
	case m.IsSocket():
		mode |= os.ModeSocket
	case m.IsCharacterDevice():
		mode |= os.ModeDevice | os.ModeCharDevice
	case m.IsBlockDevice():
		mode |= os.ModeDevice
	}
	return mode
}

// unixPerm converts the permission bits of an os.FileMode to Linux's.
func unixPerm(perm os.FileMode) p9.FileMode {
	m := uint32(perm.Perm())
	for _, bit := range modeBits {
		if perm&bit.os != 0 {
			m |= bit.unix
		}
	}
	return p9.FileMode(m)
}

var modeBits = []struct {
	unix uint32
	os   os.FileMode
}{{0o4000, os.ModeSetuid}, {0o2000, os.ModeSetgid}, {0o1000, os.ModeSticky}}

// Stat returns the attributes of p.
func (b *Backend) Stat(ctx context.Context, p string) (remote.Info, error) {
	return call(ctx, b, "stat", p, true, func(s *conn) (remote.Info, error) {
		pl, err := b.locate(s, p)
		if err != nil {
			return remote.Info{}, err
		}
		if pl.root == nil {
			if _, err := b.above(s, p); err != nil {
				return remote.Info{}, err
			}
			return remote.Info{Name: path.Base(p), Mode: synthesizedMode}, nil
		}
		var info remote.Info
		err = withFile(pl.root, pl.names, func(f p9.File) error {
			info, err = statFile(f, path.Base(p))
			return err
		})
		return info, err
	}, nil)
}

// List returns the entries of directory p with their attributes: one
// Treaddir stream, then the Tgetattrs in parallel (9P2000.L's readdir
// gives only names and types).
func (b *Backend) List(ctx context.Context, p string) ([]remote.Info, error) {
	return call(ctx, b, "list", p, true, func(s *conn) ([]remote.Info, error) {
		pl, err := b.locate(s, p)
		if err != nil {
			return nil, err
		}
		if pl.root == nil {
			names, err := b.above(s, p)
			infos := make([]remote.Info, len(names))
			for i, n := range names {
				infos[i] = remote.Info{Name: n, Mode: synthesizedMode}
			}
			return infos, err
		}
		dir, err := walk(pl.root, pl.names)
		if err != nil {
			return nil, err
		}
		defer dir.Close()
		ents, err := readdir(dir, s.payload())
		if err != nil {
			return nil, err
		}
		return statEntries(dir, ents)
	}, nil)
}

// readdir returns the entries of dir but "." and "..". It reads through
// a clone, because a fid that is open cannot be walked from.
func readdir(dir p9.File, count int) ([]p9.Dirent, error) {
	f, err := walk(dir, nil)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	qid, _, err := f.Open(p9.ReadOnly)
	if err != nil {
		return nil, err
	}
	if qid.Type&p9.TypeDir == 0 {
		return nil, linux.ENOTDIR
	}
	var ents []p9.Dirent
	var off uint64
	for {
		batch, err := f.Readdir(off, uint32(count))
		if err != nil {
			return nil, err
		}
		if len(batch) == 0 {
			return ents, nil
		}
		for _, e := range batch {
			if e.Name != "." && e.Name != ".." {
				ents = append(ents, e)
			}
		}
		off = batch[len(batch)-1].Offset
	}
}

// statEntries gets the attributes of the entries of dir, statParallel at
// a time over the one connection. An entry removed meanwhile is left
// out; one the server will not stat keeps the type readdir gave.
func statEntries(dir p9.File, ents []p9.Dirent) ([]remote.Info, error) {
	infos := make([]remote.Info, len(ents))
	keep := make([]bool, len(ents))
	errs := make([]error, len(ents))
	sem := make(chan struct{}, statParallel)
	var wg sync.WaitGroup
	for i, e := range ents {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := withFile(dir, []string{e.Name}, func(f p9.File) error {
				var err error
				infos[i], err = statFile(f, e.Name)
				return err
			})
			errno, refused := serverErrno(err)
			switch {
			case err == nil:
				keep[i] = true
			case refused && errno == syscall.ENOENT:
			case refused:
				infos[i] = remote.Info{Name: e.Name, Mode: direntMode(e.Type), Size: -1}
				keep[i] = true
			default:
				errs[i] = err
			}
		}()
	}
	wg.Wait()
	out := infos[:0]
	for i := range infos {
		if errs[i] != nil {
			return nil, errs[i]
		}
		if keep[i] {
			out = append(out, infos[i])
		}
	}
	return out, nil
}

func direntMode(t p9.QIDType) os.FileMode {
	switch {
	case t&p9.TypeDir != 0:
		return os.ModeDir
	case t&p9.TypeSymlink != 0:
		return os.ModeSymlink
	}
	return 0
}

// ReadRange returns a reader of n bytes of p from off (n < 0: to the end).
// Its reads are bound to ctx, like an HTTP response body to its request.
func (b *Backend) ReadRange(ctx context.Context, p string, off, n int64) (io.ReadCloser, error) {
	return call(ctx, b, "read", p, true, func(s *conn) (io.ReadCloser, error) {
		pl, err := b.locate(s, p)
		if err != nil {
			return nil, err
		}
		if pl.root == nil {
			if _, err := b.above(s, p); err != nil {
				return nil, err
			}
			return nil, linux.EISDIR
		}
		f, err := walk(pl.root, pl.names)
		if err != nil {
			return nil, err
		}
		qid, _, err := f.Open(p9.ReadOnly)
		if err == nil && qid.Type&p9.TypeDir != 0 {
			err = linux.EISDIR
		}
		if err != nil {
			f.Close()
			return nil, err
		}
		return &reader{ctx: ctx, b: b, c: s, f: f, path: p, off: off, left: n}, nil
	}, func(r io.ReadCloser) { r.Close() })
}

// reader reads an open file with Treads of up to the caller's buffer.
type reader struct {
	ctx  context.Context
	b    *Backend
	c    *conn // the connection f belongs to
	f    p9.File
	path string
	off  int64
	left int64 // < 0: to the end
	buf  []byte
	err  error // sticky
}

func (r *reader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if r.left == 0 {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	want := len(p)
	if r.left > 0 && int64(want) > r.left {
		want = int(r.left)
	}
	if cap(r.buf) < want {
		r.buf = make([]byte, want)
	}
	// A private buffer: after a cancel the abandoned Tread still fills it.
	buf, off := r.buf[:want], r.off
	n, err := session.On(r.ctx, r.b.s, r.c, "read", r.path, func() (int, error) { return r.f.ReadAt(buf, off) }, nil)
	if err != nil && err != io.EOF {
		r.err, r.buf = err, nil
		return 0, err
	}
	copy(p, buf[:n])
	r.off += int64(n)
	if r.left > 0 {
		r.left -= int64(n)
	}
	if n == 0 {
		r.err = io.EOF
		return 0, io.EOF
	}
	return n, nil
}

// Close clunks the fid. The data is read already, so a failure (the
// connection is gone, and the fid with it) does not matter.
func (r *reader) Close() error {
	r.f.Close()
	return nil
}

// parent walks to the directory that holds p and returns its fid (to be
// closed) and p's name in it.
func (b *Backend) parent(s *conn, op, p string) (p9.File, string, error) {
	if p == "/" {
		return nil, "", b.srv.Errorf(syscall.EBUSY, op, p, "/ cannot be changed")
	}
	dir := path.Dir(p)
	pl, err := b.locate(s, dir)
	if err != nil {
		return nil, "", err
	}
	if pl.root == nil {
		return nil, "", b.srv.Errorf(syscall.EACCES, op, p, "%s is above every export; only exported directories can be changed", dir)
	}
	f, err := walk(pl.root, pl.names)
	return f, path.Base(p), err
}

// inParent runs fn with the directory that holds p, for operations that
// name p in its parent (mkdir, remove).
func (b *Backend) inParent(ctx context.Context, op, p string, fn func(dir p9.File, name string) error) error {
	_, err := call(ctx, b, op, p, false, func(s *conn) (struct{}, error) {
		dir, name, err := b.parent(s, op, p)
		if err != nil {
			return struct{}{}, err
		}
		defer dir.Close()
		return struct{}{}, fn(dir, name)
	}, nil)
	return err
}

// Mkdir makes directory p with permission perm (exactly: the server's
// umask is undone with a Tsetattr).
func (b *Backend) Mkdir(ctx context.Context, p string, perm os.FileMode) error {
	return b.inParent(ctx, "mkdir", p, func(dir p9.File, name string) error {
		if _, err := dir.Mkdir(name, unixPerm(perm), p9.NoUID, p9.NoGID); err != nil {
			return err
		}
		return withFile(dir, []string{name}, func(f p9.File) error { return chmod(f, perm) })
	})
}

// Remove removes file (or symlink) p.
func (b *Backend) Remove(ctx context.Context, p string) error {
	return b.remove(ctx, "remove", p, false)
}

// Rmdir removes the empty directory p.
func (b *Backend) Rmdir(ctx context.Context, p string) error {
	return b.remove(ctx, "rmdir", p, true)
}

// remove removes p with Tremove, after checking from the walk's qid that
// p is a directory exactly when dir is set. Tremove rather than
// Tunlinkat: diod 1.0 answers Tunlinkat with ENOTSUP.
func (b *Backend) remove(ctx context.Context, op, p string, dir bool) error {
	return b.inParent(ctx, op, p, func(parent p9.File, name string) error {
		f, qid, err := walkQID(parent, []string{name})
		if err != nil {
			return err
		}
		isDir := qid.Type&p9.TypeDir != 0
		switch {
		case isDir && !dir:
			err = linux.EISDIR
		case !isDir && dir:
			err = linux.ENOTDIR
		default:
			// Tremove clunks f, whatever the answer. The library's file
			// has the method but its File interface no longer lists it.
			return f.(interface{ Remove() error }).Remove()
		}
		f.Close()
		return err
	})
}

// Rename renames from to to (replacing to, as rename(2) does), with
// Trename: diod 1.0 lacks Trenameat.
func (b *Backend) Rename(ctx context.Context, from, to string) error {
	_, err := call(ctx, b, "rename", from, false, func(s *conn) (struct{}, error) {
		fromDir, fromName, err := b.parent(s, "rename", from)
		if err != nil {
			return struct{}{}, err
		}
		f, err := walk(fromDir, []string{fromName})
		fromDir.Close()
		if err != nil {
			return struct{}{}, err
		}
		defer f.Close()
		toDir, toName, err := b.parent(s, "rename", to)
		if err != nil {
			return struct{}{}, err
		}
		defer toDir.Close()
		return struct{}{}, f.Rename(toDir, toName)
	}, nil)
	return err
}

// Chmod sets the permission bits of p, setuid, setgid and sticky
// included.
func (b *Backend) Chmod(ctx context.Context, p string, perm os.FileMode) error {
	return b.onFile(ctx, "chmod", p, errAbove, func(f p9.File) error { return chmod(f, perm) })
}

// Chtimes sets the access and modification times of p.
func (b *Backend) Chtimes(ctx context.Context, p string, atime, mtime time.Time) error {
	return b.onFile(ctx, "chtimes", p, errAbove, func(f p9.File) error {
		return f.SetAttr(p9.SetAttrMask{ATime: true, MTime: true, ATimeNotSystemTime: true, MTimeNotSystemTime: true},
			p9.SetAttr{
				ATimeSeconds: uint64(atime.Unix()), ATimeNanoSeconds: uint64(atime.Nanosecond()),
				MTimeSeconds: uint64(mtime.Unix()), MTimeNanoSeconds: uint64(mtime.Nanosecond()),
			})
	})
}

// Chown sets p's numeric owner and group; -1 keeps one.
func (b *Backend) Chown(ctx context.Context, p string, uid, gid int) error {
	return b.onFile(ctx, "chown", p, errAbove, func(f p9.File) error {
		mask := p9.SetAttrMask{UID: uid >= 0, GID: gid >= 0}
		if mask.Empty() {
			return nil // the walk found p: chown(p, -1, -1) has nothing more to do
		}
		return f.SetAttr(mask, p9.SetAttr{UID: p9.UID(uid), GID: p9.GID(gid)})
	})
}

// errAbove is the errno of a change to a directory above every export,
// which only lists the exports below it.
const errAbove = syscall.EACCES

// onFile runs fn on a fid of p (the attach root itself when p is one),
// for operations that leave the fid as it is. Above every export there
// is no fid: the call fails with above.
func (b *Backend) onFile(ctx context.Context, op, p string, above syscall.Errno, fn func(p9.File) error) error {
	_, err := call(ctx, b, op, p, true, func(s *conn) (struct{}, error) {
		pl, err := b.locate(s, p)
		if err != nil {
			return struct{}{}, err
		}
		if pl.root == nil {
			return struct{}{}, b.srv.Errorf(above, op, p, "the directory is above every export")
		}
		return struct{}{}, withFile(pl.root, pl.names, fn)
	}, nil)
	return err
}

// chmod sets f's whole mode, past the library's mask (see fullMode).
func chmod(f p9.File, perm os.FileMode) error {
	mode := unixPerm(perm)
	return f.SetAttr(p9.SetAttrMask{Permissions: true}, p9.SetAttr{Permissions: mode, Size: fullMode(mode)})
}

// Store replaces the contents of p with size bytes from r, creating p with
// permission perm if needed. It returns after the server's fsync.
func (b *Backend) Store(ctx context.Context, p string, r io.Reader, size int64, perm os.FileMode) error {
	type target struct {
		s       *conn
		f       p9.File
		created bool
	}
	t, err := call(ctx, b, "store", p, false, func(s *conn) (target, error) {
		dir, name, err := b.parent(s, "store", p)
		if err != nil {
			return target{}, err
		}
		f, err := walk(dir, []string{name})
		if errno, ok := serverErrno(err); ok && errno == syscall.ENOENT {
			// dir becomes the new file.
			if _, _, _, err := dir.Create(name, p9.WriteOnly|dotlTrunc, unixPerm(perm), p9.NoUID, p9.NoGID); err != nil {
				dir.Close()
				return target{}, err
			}
			return target{s, dir, true}, nil
		}
		dir.Close()
		if err != nil {
			return target{}, err
		}
		if _, _, err := f.Open(p9.WriteOnly | dotlTrunc); err != nil {
			f.Close()
			return target{}, err
		}
		return target{s, f, false}, nil
	}, func(t target) { t.f.Close() })
	if err != nil {
		return err
	}
	if err := b.write(ctx, t.s, t.f, "store", p, r, 0, size); err != nil {
		b.s.Go(func() { t.f.Close() }) // may wait for a stalled server; the error is what matters
		return err
	}
	return b.finish(ctx, t.s, t.f, "store", p, func(f p9.File) error {
		if t.created {
			return chmod(f, perm) // exactly perm, whatever the server's umask
		}
		return nil
	})
}

// finish syncs the open file f, runs then on it (nil: nothing), and
// closes it; f is closed whatever happens.
func (b *Backend) finish(ctx context.Context, s *conn, f p9.File, op, p string, then func(p9.File) error) error {
	_, err := session.On(ctx, b.s, s, op, p, func() (struct{}, error) {
		err := f.FSync()
		if err == nil && then != nil {
			err = then(f)
		}
		if err == nil {
			err = f.Close()
		} else {
			f.Close()
		}
		return struct{}{}, err
	}, nil)
	return err
}

// storeChunk is how much Store reads from r and hands to one WriteAt
// (which the library splits into Twrites of the negotiated size).
const storeChunk = 1 << 20

// write copies the bytes [off, end) from r, which is at off, to the same
// offsets of the open file f.
func (b *Backend) write(ctx context.Context, s *conn, f p9.File, op, p string, r io.Reader, off, end int64) error {
	var buf []byte
	for off < end {
		// A fresh buffer after a cancel is never needed: we return.
		if buf == nil {
			buf = make([]byte, min(end-off, storeChunk))
		}
		chunk := buf[:min(int64(len(buf)), end-off)]
		if n, err := io.ReadFull(r, chunk); err != nil {
			return b.srv.Errorf(syscall.EIO, op, p, "the data ended at %d of [%d, %d): %w", off+int64(n), off, end, err)
		}
		at := off
		if _, err := session.On(ctx, b.s, s, op, p, func() (struct{}, error) {
			return struct{}{}, writeFull(f, chunk, at)
		}, nil); err != nil {
			return err
		}
		off += int64(len(chunk))
	}
	return nil
}

func writeFull(f p9.File, p []byte, off int64) error {
	for len(p) > 0 {
		n, err := f.WriteAt(p, off)
		if err != nil {
			return err
		}
		if n == 0 {
			return linux.EIO
		}
		p, off = p[n:], off+int64(n)
	}
	return nil
}
