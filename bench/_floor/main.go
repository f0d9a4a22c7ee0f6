// Command floor is a do-nothing FUSE file system built like wirefs's FUSE
// door (go-fuse v2, zero entry/attribute timeouts, a fresh inode per
// lookup, direct_io stream handles, 1 MiB requests), used by bench/run.sh
// to measure what the kernel and go-fuse cost on their own: open of any
// name succeeds without touching the network, read returns len(buf) zero
// bytes at once, write accepts everything. Its numbers are the floor under
// the wirefs column. (The leading "_" keeps it out of ./... builds.)
//
// Two switches show what two door changes would save (both off in
// bench/run.sh): FLOOR_REUSE_INODE=1 answers a lookup of a known name with
// the same node, so the kernel's revalidation succeeds and an open costs one
// LOOKUP instead of two; FLOOR_NO_FLUSH=1 answers FLUSH with ENOSYS, so
// the kernel stops sending one on every close(2) (go-fuse answers OK when
// a handle has no Flush method).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

var (
	reuseInode = os.Getenv("FLOOR_REUSE_INODE") == "1"
	noFlush    = os.Getenv("FLOOR_NO_FLUSH") == "1"
)

type dir struct{ fs.Inode }

func (d *dir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	out.Mode = syscall.S_IFREG | 0o666
	out.SetEntryTimeout(0)
	out.SetAttrTimeout(0)
	if reuseInode {
		if old := d.GetChild(name); old != nil {
			return old, 0
		}
	}
	return d.NewInode(ctx, &file{}, fs.StableAttr{Mode: syscall.S_IFREG}), 0
}

type file struct{ fs.Inode }

func (f *file) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	const fl = fuse.FOPEN_DIRECT_IO | fuse.FOPEN_STREAM | fuse.FOPEN_NONSEEKABLE | fuse.FOPEN_PARALLEL_DIRECT_WRITES
	if noFlush {
		return &handleNoFlush{}, fl, 0
	}
	return &handle{}, fl, 0
}

func (f *file) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFREG | 0o666
	return 0
}

type handle struct{}

func (h *handle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	return fuse.ReadResultData(dest), 0
}

func (h *handle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	return uint32(len(data)), 0
}

func (h *handle) Flush(ctx context.Context) syscall.Errno { return 0 }

// handleNoFlush is handle whose Flush tells the kernel not to send any.
type handleNoFlush struct{}

func (h *handleNoFlush) Flush(ctx context.Context) syscall.Errno { return syscall.ENOSYS }

func (h *handleNoFlush) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	return fuse.ReadResultData(dest), 0
}

func (h *handleNoFlush) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	return uint32(len(data)), 0
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: floor MOUNTPOINT")
		os.Exit(2)
	}
	zero := time.Duration(0)
	srv, err := fs.Mount(os.Args[1], &dir{}, &fs.Options{
		EntryTimeout: &zero, AttrTimeout: &zero, NegativeTimeout: &zero,
		MountOptions: fuse.MountOptions{FsName: "wirefs-floor", Name: "wirefs-floor", MaxWrite: 1 << 20, DirectMount: true},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() { <-sigs; srv.Unmount() }()
	srv.Wait()
}
