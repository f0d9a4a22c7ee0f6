// Package dns is the dns/ directory: reading dns/NAME gives NAME's
// addresses, one per line, from the daemon's resolver cache.
package dns

import (
	"context"
	"net/netip"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"

	"wirefs/internal/ns"
	"wirefs/internal/resolve"
)

// Dir returns the dns/ directory backed by r.
func Dir(r *resolve.Resolver) ns.Dir { return &dir{r: r, since: time.Now()} }

type dir struct {
	r     *resolve.Resolver
	since time.Time
}

func (d *dir) Attr(context.Context) (ns.Attr, error) {
	return ns.Attr{Mode: os.ModeDir | 0o555, Mtime: d.since, Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}, nil
}

// Lookup resolves: a name that does not resolve does not exist (ENOENT).
func (d *dir) Lookup(ctx context.Context, name string) (ns.Node, error) {
	if !validName(name) {
		return nil, ns.Errorf(syscall.EINVAL, "dns/%s: not a host name", name)
	}
	addrs, err := d.r.Resolve(ctx, name)
	if err != nil {
		if e := ns.Errno(err); e != syscall.EIO {
			return nil, ns.Errorf(e, "dns/%s: %v", name, err)
		}
		return nil, err
	}
	return &file{content: format(addrs), mtime: time.Now()}, nil
}

// ReadDir lists the names whose answers are cached.
func (d *dir) ReadDir(context.Context) ([]ns.DirEntry, error) {
	var out []ns.DirEntry
	for name, addrs := range d.r.Cached() {
		out = append(out, ns.DirEntry{Name: name, Attr: (&file{content: format(addrs)}).attr()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func format(addrs []netip.Addr) []byte {
	var b strings.Builder
	for _, a := range addrs {
		b.WriteString(a.String())
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

func validName(s string) bool {
	if s == "" || len(s) > 253 || s[0] == '.' || s[0] == '-' || strings.Contains(s, "..") {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == ':' || c == '%') {
			return false
		}
	}
	return true
}

// file is one resolved name; its content is fixed when looked up.
type file struct {
	content []byte
	mtime   time.Time
}

func (f *file) Volatile() bool { return true }

func (f *file) attr() ns.Attr {
	return ns.Attr{Mode: 0o444, Size: int64(len(f.content)), Mtime: f.mtime, Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}
}

func (f *file) Attr(context.Context) (ns.Attr, error) { return f.attr(), nil }

func (f *file) Open(ctx context.Context, c ns.Caller, flags int) (ns.Handle, error) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR) != 0 {
		return nil, ns.Errorf(syscall.EROFS, "dns/ is read-only")
	}
	return f, nil
}

func (f *file) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	if off >= int64(len(f.content)) {
		return 0, nil
	}
	return copy(p, f.content[off:]), nil
}

func (f *file) Close() error { return nil }
