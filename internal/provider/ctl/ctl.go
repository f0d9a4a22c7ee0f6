// Package ctl is the daemon's own directory, .wirefs/: files that show its
// state and control it. stats is read by tests and people checking for
// leaks; writing anything to drop-caches drops every cache (as SIGHUP);
// writeback lists the changes the servers do not have yet, and why.
package ctl

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"syscall"
	"time"

	"wirefs/internal/ns"
)

// Dir returns the .wirefs/ directory. live counts open endpoints; drop
// drops every cache and writeback writes the write-back status (nil: the
// daemon has no cache).
func Dir(live func() int, drop func(), writeback func(io.Writer) error) ns.Dir {
	return &dir{live: live, drop: drop, writeback: writeback, since: time.Now()}
}

type dir struct {
	live      func() int
	drop      func()
	writeback func(io.Writer) error
	since     time.Time
}

func (d *dir) Attr(context.Context) (ns.Attr, error) {
	return ns.Attr{Mode: os.ModeDir | 0o555, Mtime: d.since, Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}, nil
}

func (d *dir) Lookup(ctx context.Context, name string) (ns.Node, error) {
	switch {
	case name == "stats":
		return &stats{d: d}, nil
	case name == "drop-caches" && d.drop != nil:
		return &dropCaches{d: d}, nil
	case name == "writeback" && d.writeback != nil:
		return &writeback{d: d}, nil
	}
	return nil, ns.Errorf(syscall.ENOENT, ".wirefs/%s: no such control file", name)
}

func (d *dir) ReadDir(ctx context.Context) ([]ns.DirEntry, error) {
	a, _ := (&stats{d: d}).Attr(ctx)
	ents := []ns.DirEntry{{Name: "stats", Attr: a}}
	if d.drop != nil {
		a, _ := (&dropCaches{d: d}).Attr(ctx)
		ents = append(ents, ns.DirEntry{Name: "drop-caches", Attr: a})
	}
	if d.writeback != nil {
		a, _ := (&writeback{d: d}).Attr(ctx)
		ents = append(ents, ns.DirEntry{Name: "writeback", Attr: a})
	}
	return ents, nil
}

// dropCaches is write-only: each write drops every cache.
type dropCaches struct{ d *dir }

func (c *dropCaches) Volatile() bool { return true }

func (c *dropCaches) Attr(context.Context) (ns.Attr, error) {
	return ns.Attr{Mode: 0o200, Mtime: c.d.since, Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}, nil
}

func (c *dropCaches) Open(ctx context.Context, cl ns.Caller, flags int) (ns.Handle, error) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR) == 0 {
		return nil, ns.Errorf(syscall.EACCES, ".wirefs/drop-caches is write-only: echo 1 > .wirefs/drop-caches")
	}
	return &dropCaches{d: c.d}, nil // a handle of its own, as every open
}

func (c *dropCaches) Write(ctx context.Context, p []byte) (int, error) {
	c.d.drop()
	return len(p), nil
}

func (c *dropCaches) Close() error { return nil }

// stats reads as "key value" lines: pid, goroutines, fds, live endpoints.
type stats struct{ d *dir }

func (s *stats) Volatile() bool { return true }

func (s *stats) Attr(context.Context) (ns.Attr, error) {
	return ns.Attr{Mode: 0o444, Mtime: time.Now(), Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}, nil
}

func (s *stats) Open(ctx context.Context, c ns.Caller, flags int) (ns.Handle, error) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR) != 0 {
		return nil, ns.Errorf(syscall.EROFS, ".wirefs/stats is read-only")
	}
	fds, _ := os.ReadDir("/proc/self/fd")
	text := fmt.Sprintf("pid %d\ngoroutines %d\nfds %d\nlive %d\n",
		os.Getpid(), runtime.NumGoroutine(), len(fds), s.d.live())
	return content(text), nil
}

// writeback reads as the cache's write-back status, made at open.
type writeback struct{ d *dir }

func (w *writeback) Volatile() bool { return true }

func (w *writeback) Attr(context.Context) (ns.Attr, error) {
	return ns.Attr{Mode: 0o444, Mtime: time.Now(), Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}, nil
}

func (w *writeback) Open(ctx context.Context, c ns.Caller, flags int) (ns.Handle, error) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR) != 0 {
		return nil, ns.Errorf(syscall.EROFS, ".wirefs/writeback is read-only")
	}
	var b bytes.Buffer
	if err := w.d.writeback(&b); err != nil {
		return nil, err
	}
	return content(b.Bytes()), nil
}

type content []byte

func (c content) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	if off >= int64(len(c)) {
		return 0, nil
	}
	return copy(p, c[off:]), nil
}

func (c content) Close() error { return nil }
