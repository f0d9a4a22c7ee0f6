// Package sftp is the SFTP remote.Backend and remote.Writer: pkg/sftp over
// golang.org/x/crypto/ssh, configured like the ssh command from the
// caller's ~/.ssh (config, keys, known_hosts) and ssh-agent.
//
// Paths are absolute on the server. Stat follows symbolic links, as sshfs
// shows them by default; so does List, so that both agree (a dangling
// link stays os.ModeSymlink).
package sftp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"sync"
	"syscall"
	"time"

	"github.com/pkg/sftp"

	"wirefs/internal/ns"
	"wirefs/internal/remote"
)

const (
	defaultTimeout        = 30 * time.Second
	defaultConnectTimeout = 20 * time.Second
	// maxRequests outstanding per file is what keeps a long fat pipe
	// full: 64 × packetSize in flight.
	maxRequests = 64
	packetSize  = 32768
)

var (
	_ remote.Dialer  = Dial
	_ remote.Backend = (*backend)(nil)
	_ remote.Writer  = (*backend)(nil)
)

// backend is one session: a connection that is replaced when it dies.
type backend struct {
	h              *hostConfig
	o              remote.Options
	log            *slog.Logger
	timeout        time.Duration
	connectTimeout time.Duration

	life context.Context // ends at Close: stops a dial in progress
	end  context.CancelFunc
	wg   sync.WaitGroup // every goroutine the session started

	mu      sync.Mutex
	cur     *conn
	pending *dialCall
	closed  bool
}

// dialCall is one connection attempt that every operation waiting for a
// connection shares.
type dialCall struct {
	done chan struct{}
	c    *conn
	err  error
}

// Dial starts a session with server, "[user@]host[:port]" where host may
// be a Host of o.Home/.ssh/config. It connects at once, so that a wrong
// key, password or host key shows here.
func Dial(ctx context.Context, server string, o remote.Options) (remote.Backend, error) {
	h, err := resolveHost(server, o.Home)
	if err != nil {
		return nil, err
	}
	o = o.WithDefaults(defaultConnectTimeout, defaultTimeout)
	b := &backend{h: h, o: o, log: o.Log, timeout: o.Timeout, connectTimeout: o.ConnectTimeout}
	b.life, b.end = context.WithCancel(context.Background())
	if _, err := b.conn(ctx); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// conn returns the live connection, dialing a new one when there is none
// or it died.
func (b *backend) conn(ctx context.Context) (*conn, error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, ns.Errorf(syscall.EIO, "sftp: %s: session closed", b.h.name())
	}
	if b.cur != nil && b.cur.failed() == nil {
		c := b.cur
		b.mu.Unlock()
		return c, nil
	}
	call := b.pending
	if call == nil {
		call = &dialCall{done: make(chan struct{})}
		b.pending = call
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			c, err := b.dial(b.life)
			b.mu.Lock()
			b.pending = nil
			if err == nil {
				if b.closed {
					c.kill(&ns.Error{Errno: syscall.EIO, Msg: "session closed"})
				}
				b.cur = c
			}
			b.mu.Unlock()
			call.c, call.err = c, err
			close(call.done)
		}()
	}
	b.mu.Unlock()
	select {
	case <-call.done:
		if call.err != nil && b.life.Err() != nil {
			return nil, ns.Errorf(syscall.EIO, "sftp: %s: session closed", b.h.name())
		}
		return call.c, call.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close ends the session and waits for every goroutine it started.
func (b *backend) Close() error {
	b.mu.Lock()
	b.closed = true
	c := b.cur
	b.mu.Unlock()
	b.end()
	if c != nil {
		c.kill(&ns.Error{Errno: syscall.EIO, Msg: "session closed"})
	}
	b.wg.Wait()
	return nil
}

// do runs op on a live connection; see run.
func (b *backend) do(ctx context.Context, what, p string, op func(c *conn) error) error {
	c, err := b.conn(ctx)
	if err != nil {
		return err
	}
	return b.run(ctx, c, what, p, func() error { return op(c) })
}

// run runs op, which sends requests on c. pkg/sftp requests cannot be
// cancelled, so op runs in its own goroutine: the caller returns as soon
// as ctx ends, and c's watchdog closes a connection that stalls, which
// ends op.
func (b *backend) run(ctx context.Context, c *conn, what, p string, op func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if why := c.failed(); why != nil {
		return ns.Errorf(why.Errno, "sftp: %s %s:%s: %s", what, b.h.name(), p, why.Msg)
	}
	done := make(chan error, 1)
	c.begin()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		err := op()
		c.end()
		done <- err
	}()
	select {
	case err := <-done:
		return b.fail(c, what, p, err)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// fail turns what pkg/sftp returned into an ns.Error that says which
// operation on which file failed and why.
func (b *backend) fail(c *conn, what, p string, err error) error {
	if err == nil {
		return nil
	}
	var done *ns.Error
	if errors.As(err, &done) {
		return err
	}
	where := fmt.Sprintf("sftp: %s %s:%s", what, b.h.name(), p)
	if why := c.failed(); why != nil {
		return ns.Errorf(why.Errno, "%s: %s", where, why.Msg)
	}
	var st *sftp.StatusError
	switch {
	case errors.Is(err, os.ErrNotExist):
		return ns.Errorf(syscall.ENOENT, "%s: no such file or directory", where)
	case errors.Is(err, os.ErrPermission):
		return ns.Errorf(syscall.EACCES, "%s: permission denied", where)
	case errors.Is(err, sftp.ErrSSHFxOpUnsupported):
		return ns.Errorf(syscall.ENOTSUP, "%s: the server does not support it", where)
	case errors.As(err, &st) && st.FxCode() == sftp.ErrSSHFxOpUnsupported:
		return ns.Errorf(syscall.ENOTSUP, "%s: the server does not support it", where)
	case errors.As(err, &st) && st.FxCode() != sftp.ErrSSHFxConnectionLost && st.FxCode() != sftp.ErrSSHFxNoConnection:
		return ns.Errorf(syscall.EIO, "%s: %v", where, err)
	}
	// Anything else means the connection is broken: drop it, so that
	// the next operation reconnects.
	c.kill(&ns.Error{Errno: syscall.EIO, Msg: fmt.Sprintf("connection lost (%v)", err)})
	why := c.failed()
	return ns.Errorf(why.Errno, "%s: %s", where, why.Msg)
}

// isFailure reports the catch-all status SSH_FX_FAILURE, which OpenSSH
// sends for every errno without a code of its own (EEXIST, ENOTEMPTY,
// ENOSPC, EISDIR...).
func isFailure(err error) bool {
	var st *sftp.StatusError
	return errors.As(err, &st) && st.FxCode() == sftp.ErrSSHFxFailure
}

func toInfo(fi os.FileInfo) remote.Info {
	return remote.Info{Name: fi.Name(), Mode: fi.Mode(), Size: fi.Size(), Mtime: fi.ModTime()}
}

func (b *backend) Stat(ctx context.Context, p string) (remote.Info, error) {
	var info remote.Info
	err := b.do(ctx, "stat", p, func(c *conn) error {
		fi, err := c.sftp.Stat(p)
		if err == nil {
			info = toInfo(fi)
		}
		return err
	})
	if err != nil {
		// A cancelled call returns while op may still write info.
		return remote.Info{}, err
	}
	return info, nil
}

func (b *backend) List(ctx context.Context, p string) ([]remote.Info, error) {
	var list []remote.Info
	err := b.do(ctx, "list", p, func(c *conn) error {
		entries, err := c.sftp.ReadDir(p)
		// OpenSSH reports ENOTDIR as "no such file".
		if isFailure(err) || errors.Is(err, os.ErrNotExist) {
			if fi, serr := c.sftp.Stat(p); serr == nil && !fi.IsDir() {
				return ns.Errorf(syscall.ENOTDIR, "sftp: list %s:%s: not a directory", b.h.name(), p)
			}
		}
		if err != nil {
			return err
		}
		list = make([]remote.Info, len(entries))
		// Follow symbolic links like Stat does, all at once: the
		// requests are pipelined on the connection.
		var wg sync.WaitGroup
		for i, fi := range entries {
			list[i] = toInfo(fi)
			if fi.Mode()&os.ModeSymlink != 0 {
				wg.Go(func() {
					if target, err := c.sftp.Stat(path.Join(p, fi.Name())); err == nil {
						list[i] = toInfo(target)
						list[i].Name = fi.Name()
					}
				})
			}
		}
		wg.Wait()
		return nil
	})
	if err != nil {
		return nil, err // as in Stat: op may still be running
	}
	return list, nil
}

func (b *backend) Store(ctx context.Context, p string, r io.Reader, size int64, perm os.FileMode) error {
	src := &source{r: r, size: size, ctx: ctx}
	if size >= 0 {
		src.r = io.LimitReader(r, size)
	}
	// The transfer may outlive a cancelled Store: stop it reading r.
	defer src.stop()
	return b.do(ctx, "store", p, func(c *conn) error {
		f, err := c.sftp.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
		created := err == nil
		if isFailure(err) { // it exists: replace its contents
			f, err = c.sftp.OpenFile(p, os.O_WRONLY|os.O_TRUNC)
		}
		if err != nil {
			return err
		}
		if created {
			if err := f.Chmod(perm); err != nil {
				f.Close()
				return err
			}
		}
		n, err := f.ReadFrom(src)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		switch {
		case err == nil && size >= 0 && n < size:
			return ns.Errorf(syscall.EIO, "sftp: store %s:%s: the data ended after %d of %d bytes", b.h.name(), p, n, size)
		case src.failed(err): // not the server's fault: keep the connection
			return ns.Errorf(ns.Errno(err), "sftp: store %s:%s: reading the data: %v", b.h.name(), p, err)
		case isFailure(err):
			return b.noSpace(c, p, size-n, err)
		}
		return err
	})
}

// noSpace tells a full disk from another failure of a write, which
// OpenSSH reports alike: ENOSPC when the server's file system has less
// room than what was left to write.
func (b *backend) noSpace(c *conn, p string, left int64, err error) error {
	left = max(left, packetSize)
	if st, serr := c.sftp.StatVFS(path.Dir(p)); serr == nil && st.Bavail*st.Frsize < uint64(left) {
		return ns.Errorf(syscall.ENOSPC, "sftp: store %s:%s: no space left on the server (%d bytes free)",
			b.h.name(), p, st.Bavail*st.Frsize)
	}
	return err
}

// source is Store's reader. Its Size tells pkg/sftp how many writes it
// may send at once; it ends the transfer when ctx ends, and after stop it
// never touches the caller's reader again.
type source struct {
	r    io.Reader
	size int64 // -1: unknown
	ctx  context.Context

	mu      sync.Mutex
	stopped bool
	err     error // the error of r or ctx that ended the transfer
}

func (s *source) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil && s.stopped {
		s.err = errors.New("store abandoned")
	}
	if s.err == nil {
		s.err = s.ctx.Err()
	}
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		s.err = err
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

// stop waits for a Read in progress and makes later ones fail.
func (s *source) stop() {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
}

func (b *backend) Mkdir(ctx context.Context, p string, perm os.FileMode) error {
	return b.do(ctx, "mkdir", p, func(c *conn) error {
		err := c.sftp.Mkdir(p)
		if isFailure(err) {
			if _, serr := c.sftp.Lstat(p); serr == nil {
				return ns.Errorf(syscall.EEXIST, "sftp: mkdir %s:%s: file exists", b.h.name(), p)
			}
		}
		if err != nil {
			return err
		}
		// SFTP's mkdir takes the server's umask; set what was asked.
		return c.sftp.Chmod(p, perm)
	})
}

func (b *backend) Remove(ctx context.Context, p string) error {
	return b.do(ctx, "remove", p, func(c *conn) error {
		// pkg/sftp's Remove also removes an empty directory, which
		// unlink(2) must not.
		fi, err := c.sftp.Lstat(p)
		if err != nil {
			return err
		}
		if fi.IsDir() {
			return ns.Errorf(syscall.EISDIR, "sftp: remove %s:%s: is a directory", b.h.name(), p)
		}
		return c.sftp.Remove(p)
	})
}

func (b *backend) Rmdir(ctx context.Context, p string) error {
	return b.do(ctx, "rmdir", p, func(c *conn) error {
		err := c.sftp.RemoveDirectory(p)
		if !isFailure(err) && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		// Why did it fail? OpenSSH does not say: a full directory is a
		// "failure", a file "no such file".
		if fi, serr := c.sftp.Lstat(p); serr == nil && !fi.IsDir() {
			return ns.Errorf(syscall.ENOTDIR, "sftp: rmdir %s:%s: not a directory", b.h.name(), p)
		}
		if entries, lerr := c.sftp.ReadDir(p); lerr == nil && len(entries) > 0 {
			return ns.Errorf(syscall.ENOTEMPTY, "sftp: rmdir %s:%s: directory not empty", b.h.name(), p)
		}
		return err
	})
}

// Rename replaces an existing target like rename(2) when the server has
// posix-rename@openssh.com; plain SFTP rename refuses to.
func (b *backend) Rename(ctx context.Context, from, to string) error {
	return b.do(ctx, "rename", from+" to "+to, func(c *conn) error {
		if c.posixRename {
			return c.sftp.PosixRename(from, to)
		}
		return c.sftp.Rename(from, to)
	})
}

func (b *backend) Chmod(ctx context.Context, p string, perm os.FileMode) error {
	return b.do(ctx, "chmod", p, func(c *conn) error { return c.sftp.Chmod(p, perm) })
}

// Chtimes sets p's access and modification times to mtime.
func (b *backend) Chtimes(ctx context.Context, p string, mtime time.Time) error {
	return b.do(ctx, "chtimes", p, func(c *conn) error { return c.sftp.Chtimes(p, mtime, mtime) })
}
