package cache

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"wirefs/internal/ns"
	"wirefs/internal/remote"
)

// localBackend is a remote.Backend and remote.Writer over a local
// directory: the cache's test server. It counts calls and can stall
// transfers or fail stores.
type localBackend struct {
	root string

	mu        sync.Mutex
	calls     map[string]int
	reads     []span        // ReadRange requests
	bytesRead int64         // bytes delivered by ReadRange
	bytesIn   int64         // bytes received by Store, Append and Patch
	stall     chan struct{} // non-nil: ReadRange waits until it is closed (or ctx ends)
	storeErrs []error       // the next Stores, Appends or Patches fail with these, in order
	// appendSizeUnknown: Append does not say the length, as over SFTP.
	appendSizeUnknown bool
	// nlink: Stat reports link counts, as over 9P.
	nlink  bool
	closed bool
}

func newLocalBackend(t *testing.T) *localBackend {
	return &localBackend{root: t.TempDir(), calls: map[string]int{}}
}

func (b *localBackend) count(op string) {
	b.mu.Lock()
	b.calls[op]++
	b.mu.Unlock()
}

func (b *localBackend) n(op string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls[op]
}

// total is the number of requests of every kind.
func (b *localBackend) received(n int64) {
	b.mu.Lock()
	b.bytesIn += n
	b.mu.Unlock()
}

func (b *localBackend) bytesReceived() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.bytesIn
}

// writes counts the write-backs, whichever way they were sent.
func (b *localBackend) writes() int { return b.n("Store") + b.n("Append") + b.n("Patch") }

func (b *localBackend) total() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, c := range b.calls {
		n += c
	}
	return n
}

func (b *localBackend) local(p string) string { return filepath.Join(b.root, filepath.FromSlash(p)) }

// put writes a file behind the cache's back.
func (b *localBackend) put(t *testing.T, p string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(b.local(p)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b.local(p), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func (b *localBackend) get(p string) ([]byte, error) { return os.ReadFile(b.local(p)) }

func localErr(op, p string, err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return ns.Errorf(errno, "%s %s: %v", op, p, err)
	}
	return ns.Errorf(syscall.EIO, "%s %s: %v", op, p, err)
}

func infoOf(fi os.FileInfo) remote.Info {
	size := fi.Size()
	if fi.IsDir() {
		size = 0
	}
	return remote.Info{Name: fi.Name(), Mode: fi.Mode(), Size: size, Mtime: fi.ModTime()}
}

func (b *localBackend) Stat(ctx context.Context, p string) (remote.Info, error) {
	b.count("Stat")
	fi, err := os.Lstat(b.local(p))
	if err != nil {
		return remote.Info{}, localErr("stat", p, err)
	}
	info := infoOf(fi)
	b.mu.Lock()
	if b.nlink {
		info.Nlink = uint32(fi.Sys().(*syscall.Stat_t).Nlink)
	}
	b.mu.Unlock()
	return info, nil
}

func (b *localBackend) List(ctx context.Context, p string) ([]remote.Info, error) {
	b.count("List")
	ents, err := os.ReadDir(b.local(p))
	if err != nil {
		return nil, localErr("list", p, err)
	}
	var out []remote.Info
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			continue
		}
		out = append(out, infoOf(fi))
	}
	return out, nil
}

func (b *localBackend) ReadRange(ctx context.Context, p string, off, n int64) (io.ReadCloser, error) {
	b.count("ReadRange")
	b.mu.Lock()
	b.reads = append(b.reads, span{off, off + n})
	stall := b.stall
	b.mu.Unlock()
	if stall != nil {
		select {
		case <-stall:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f, err := os.Open(b.local(p))
	if err != nil {
		return nil, localErr("read", p, err)
	}
	var r io.Reader = io.NewSectionReader(f, off, 1<<62)
	if n >= 0 {
		r = io.LimitReader(r, n)
	}
	return &countingReader{r: r, f: f, b: b}, nil
}

type countingReader struct {
	r io.Reader
	f *os.File
	b *localBackend
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.b.mu.Lock()
	c.b.bytesRead += int64(n)
	c.b.mu.Unlock()
	return n, err
}

func (c *countingReader) Close() error { return c.f.Close() }

// nextErr is the failure the next write operation reports, if any.
func (b *localBackend) nextErr() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var fail error
	if len(b.storeErrs) > 0 {
		fail, b.storeErrs = b.storeErrs[0], b.storeErrs[1:]
	}
	return fail
}

func (b *localBackend) Store(ctx context.Context, p string, r io.Reader, size int64, perm os.FileMode) error {
	b.count("Store")
	if fail := b.nextErr(); fail != nil {
		return fail
	}
	// Like a real server: the new contents appear at once, complete.
	tmp, err := os.CreateTemp(filepath.Dir(b.local(p)), ".store-*")
	if err != nil {
		return localErr("store", p, err)
	}
	defer os.Remove(tmp.Name())
	n, err := io.Copy(tmp, r)
	b.received(n)
	tmp.Close()
	if err != nil {
		return localErr("store", p, err)
	}
	if n != size {
		return ns.Errorf(syscall.EIO, "store %s: got %d bytes, expected %d", p, n, size)
	}
	if fi, err := os.Stat(b.local(p)); err == nil {
		perm = fi.Mode().Perm()
	}
	os.Chmod(tmp.Name(), perm)
	if err := os.Rename(tmp.Name(), b.local(p)); err != nil {
		return localErr("store", p, err)
	}
	return nil
}

// CreateIfMissing makes p with O_EXCL, as the SFTP and 9P backends do.
func (b *localBackend) CreateIfMissing(ctx context.Context, p string, perm os.FileMode) (bool, error) {
	b.count("Create")
	f, err := os.OpenFile(b.local(p), os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if errors.Is(err, os.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, localErr("create", p, err)
	}
	os.Chmod(f.Name(), perm)
	return true, f.Close()
}

// Append appends like a server's O_APPEND; a failure injected with
// storeErrs happens after half of the bytes reached the file, as when a
// connection drops mid-transfer.
func (b *localBackend) Append(ctx context.Context, p string, r io.Reader, n int64) (int64, error) {
	b.count("Append")
	fail := b.nextErr()
	f, err := os.OpenFile(b.local(p), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return -1, localErr("append", p, err)
	}
	defer f.Close()
	if fail != nil {
		half, _ := io.CopyN(f, r, n/2)
		b.received(half)
		return -1, fail
	}
	if _, err := io.CopyN(f, r, n); err != nil {
		return -1, localErr("append", p, err)
	}
	b.received(n)
	if b.appendSizeUnknown {
		return -1, nil
	}
	fi, err := f.Stat()
	if err != nil {
		return -1, localErr("append", p, err)
	}
	return fi.Size(), nil
}

func (b *localBackend) Patch(ctx context.Context, p string, r io.ReaderAt, ranges []remote.Range, size int64) error {
	b.count("Patch")
	if fail := b.nextErr(); fail != nil {
		return fail
	}
	f, err := os.OpenFile(b.local(p), os.O_WRONLY, 0)
	if err != nil {
		return localErr("patch", p, err)
	}
	defer f.Close()
	for _, rg := range ranges {
		buf := make([]byte, rg.End-rg.Off)
		if _, err := r.ReadAt(buf, rg.Off); err != nil {
			return localErr("patch", p, err)
		}
		if _, err := f.WriteAt(buf, rg.Off); err != nil {
			return localErr("patch", p, err)
		}
		b.received(int64(len(buf)))
	}
	if err := f.Truncate(size); err != nil {
		return localErr("patch", p, err)
	}
	return nil
}

func (b *localBackend) Mkdir(ctx context.Context, p string, perm os.FileMode) error {
	b.count("Mkdir")
	if err := os.Mkdir(b.local(p), perm); err != nil {
		return localErr("mkdir", p, err)
	}
	return nil
}

func (b *localBackend) Remove(ctx context.Context, p string) error {
	b.count("Remove")
	if fi, err := os.Lstat(b.local(p)); err == nil && fi.IsDir() {
		return ns.Errorf(syscall.EISDIR, "remove %s: a directory", p)
	}
	if err := os.Remove(b.local(p)); err != nil {
		return localErr("remove", p, err)
	}
	return nil
}

func (b *localBackend) Rmdir(ctx context.Context, p string) error {
	b.count("Rmdir")
	if err := syscall.Rmdir(b.local(p)); err != nil {
		return localErr("rmdir", p, err)
	}
	return nil
}

func (b *localBackend) Rename(ctx context.Context, from, to string) error {
	b.count("Rename")
	if err := os.Rename(b.local(from), b.local(to)); err != nil {
		return localErr("rename", from, err)
	}
	return nil
}

func (b *localBackend) Chmod(ctx context.Context, p string, perm os.FileMode) error {
	b.count("Chmod")
	if err := os.Chmod(b.local(p), perm); err != nil {
		return localErr("chmod", p, err)
	}
	return nil
}

func (b *localBackend) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	return nil
}

// readOnlyBackend offers only the reading half of a localBackend (an HTTP
// server, say).
type readOnlyBackend struct{ b *localBackend }

func (r readOnlyBackend) Stat(ctx context.Context, p string) (remote.Info, error) {
	return r.b.Stat(ctx, p)
}
func (r readOnlyBackend) List(ctx context.Context, p string) ([]remote.Info, error) {
	return r.b.List(ctx, p)
}
func (r readOnlyBackend) ReadRange(ctx context.Context, p string, off, n int64) (io.ReadCloser, error) {
	return r.b.ReadRange(ctx, p, off, n)
}
func (r readOnlyBackend) Close() error { return r.b.Close() }
