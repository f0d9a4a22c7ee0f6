package vif

import (
	"context"
	"os"
	"sort"
	"syscall"
	"time"

	"wirefs/internal/ns"
)

// VIFDir is vif/: one directory per real interface, its root VIF.
func (p *Provider) VIFDir() ns.Dir { return &vifRoot{p: p} }

type vifRoot struct{ p *Provider }

// dirTTL is how long a door may keep a VIF directory's entry and
// attributes: a VIF changes through the mount (mkdir, rmdir, chmod
// answer with what they did), so a second saves a LOOKUP per path
// component of every parameter access. Parameter files stay volatile:
// every read must reach the daemon.
const dirTTL = time.Second

func (r *vifRoot) CacheTTL() time.Duration { return dirTTL }

func (r *vifRoot) Attr(ctx context.Context) (ns.Attr, error) {
	return ns.Attr{Mode: os.ModeDir | 0o555, Mtime: time.Now()}, nil
}

func (r *vifRoot) Lookup(ctx context.Context, name string) (ns.Node, error) {
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	ifc, err := r.p.ifaceLocked(name)
	if err != nil {
		return nil, err
	}
	return &vifDir{p: r.p, v: ifc.root}, nil
}

func (r *vifRoot) ReadDir(ctx context.Context) ([]ns.DirEntry, error) {
	links, err := linkList()
	if err != nil {
		return nil, ns.Errorf(syscall.EIO, "list interfaces: %v", err)
	}
	var out []ns.DirEntry
	for _, l := range links {
		out = append(out, ns.DirEntry{Name: l.Attrs().Name, Attr: ns.Attr{Mode: os.ModeDir | 0o755}})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// vifDir is one VIF.
type vifDir struct {
	p *Provider
	v *VIF
}

var (
	_ ns.Dir       = (*vifDir)(nil)
	_ ns.Mkdirer   = (*vifDir)(nil)
	_ ns.Remover   = (*vifDir)(nil)
	_ ns.Setattrer = (*vifDir)(nil)
)

func (d *vifDir) CacheTTL() time.Duration { return dirTTL }

// alive reports whether v is still in its tree (p.mu held).
func (p *Provider) alive(v *VIF) bool {
	for ; v.parent != nil; v = v.parent {
		if v.parent.children[v.name] != v {
			return false
		}
	}
	return p.ifaces[v.ifc.name] == v.ifc
}

func (p *Provider) gone(v *VIF) error {
	return ns.Errorf(syscall.ENOENT, "vif %s was removed", v.path())
}

func (d *vifDir) attr() ns.Attr {
	v := d.v
	return ns.Attr{Mode: os.ModeDir | v.perm, Uid: v.uid, Gid: v.gid, Mtime: v.mtime}
}

func (d *vifDir) Attr(ctx context.Context) (ns.Attr, error) {
	d.p.mu.Lock()
	defer d.p.mu.Unlock()
	if !d.p.alive(d.v) {
		return ns.Attr{}, d.p.gone(d.v)
	}
	return d.attr(), nil
}

func (d *vifDir) Lookup(ctx context.Context, name string) (ns.Node, error) {
	d.p.mu.Lock()
	defer d.p.mu.Unlock()
	if !d.p.alive(d.v) {
		return nil, d.p.gone(d.v)
	}
	if c, ok := d.v.children[name]; ok {
		return &vifDir{p: d.p, v: c}, nil
	}
	if _, ok := paramFiles[name]; ok {
		return &paramFile{p: d.p, v: d.v, name: name}, nil
	}
	return nil, ns.Errorf(syscall.ENOENT, "no %s in vif %s", name, d.v.path())
}

func (d *vifDir) ReadDir(ctx context.Context) ([]ns.DirEntry, error) {
	d.p.mu.Lock()
	defer d.p.mu.Unlock()
	if !d.p.alive(d.v) {
		return nil, d.p.gone(d.v)
	}
	var out []ns.DirEntry
	for _, n := range d.v.childNames() {
		out = append(out, ns.DirEntry{Name: n, Attr: (&vifDir{v: d.v.children[n]}).attr()})
	}
	for n := range paramFiles {
		out = append(out, ns.DirEntry{Name: n, Attr: (&paramFile{v: d.v, name: n}).attr()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Mkdir makes a child VIF, owned by the caller, who must be able to
// write the parent (its owner, or root, with the default modes).
func (d *vifDir) Mkdir(ctx context.Context, name string, perm os.FileMode) (ns.Node, error) {
	c := d.p.caller(ctx)
	d.p.mu.Lock()
	defer d.p.mu.Unlock()
	if err := d.p.writable(); err != nil {
		return nil, err
	}
	if !d.p.alive(d.v) {
		return nil, d.p.gone(d.v)
	}
	if !may(c, d.v.uid, d.v.gid, d.v.perm, 3) {
		return nil, ns.Errorf(syscall.EACCES, "uid %d may not make VIFs in %s (owner %d, mode %o)", c.Uid, d.v.path(), d.v.uid, d.v.perm)
	}
	v, err := d.p.mkdir(d.v, name, c.Uid, c.Gid, perm.Perm())
	if err != nil {
		return nil, err
	}
	return &vifDir{p: d.p, v: v}, nil
}

// Remove is rmdir of a child VIF; parameter files cannot be removed.
func (d *vifDir) Remove(ctx context.Context, name string, dir bool) error {
	c := d.p.caller(ctx)
	d.p.mu.Lock()
	defer d.p.mu.Unlock()
	if err := d.p.writable(); err != nil {
		return err
	}
	if !d.p.alive(d.v) {
		return d.p.gone(d.v)
	}
	child, ok := d.v.children[name]
	if !ok {
		if _, isParam := paramFiles[name]; isParam {
			return ns.Errorf(syscall.EPERM, "%s/%s is a parameter file", d.v.path(), name)
		}
		return ns.Errorf(syscall.ENOENT, "no VIF %s/%s", d.v.path(), name)
	}
	if !dir {
		return ns.Errorf(syscall.EISDIR, "%s/%s is a VIF: rmdir", d.v.path(), name)
	}
	if !may(c, d.v.uid, d.v.gid, d.v.perm, 3) {
		return ns.Errorf(syscall.EACCES, "uid %d may not remove VIFs from %s", c.Uid, d.v.path())
	}
	return d.p.rmdir(child)
}

// Setattr is chmod (the owner or root) and chown (root) of the VIF.
func (d *vifDir) Setattr(ctx context.Context, h ns.Handle, a ns.SetAttr) (ns.Attr, error) {
	c := d.p.caller(ctx)
	d.p.mu.Lock()
	defer d.p.mu.Unlock()
	if !d.p.alive(d.v) {
		return ns.Attr{}, d.p.gone(d.v)
	}
	if err := d.p.chattr(c, d.v, a, &d.v.perm, &d.v.mtime); err != nil {
		return ns.Attr{}, err
	}
	return d.attr(), nil
}

// chattr applies chmod and chown to v, or chmod to one of its files:
// perm and mtime are the changed node's (p.mu held).
func (p *Provider) chattr(c ns.Caller, v *VIF, a ns.SetAttr, perm *os.FileMode, mtime *time.Time) error {
	if a.Mode != nil {
		if c.Uid != 0 && c.Uid != v.uid {
			return ns.Errorf(syscall.EPERM, "uid %d does not own vif %s", c.Uid, v.path())
		}
		*perm = a.Mode.Perm()
	}
	if a.Uid != nil || a.Gid != nil {
		if c.Uid != 0 {
			if a.Uid != nil && *a.Uid != v.uid || c.Uid != v.uid {
				return ns.Errorf(syscall.EPERM, "only root gives VIFs away (vif %s)", v.path())
			}
		}
		if a.Uid != nil {
			v.uid = *a.Uid
		}
		if a.Gid != nil {
			v.gid = *a.Gid
		}
	}
	*mtime = time.Now()
	return nil
}

// paramFile is one of a VIF's parameter files.
type paramFile struct {
	p    *Provider
	v    *VIF
	name string
}

var (
	_ ns.Opener    = (*paramFile)(nil)
	_ ns.Setattrer = (*paramFile)(nil)
)

// CacheTTL: a door may keep a parameter file's entry and attributes as
// its VIF's (dirTTL). A file exists exactly as long as its VIF, and its
// attributes change only through operations on the file itself (write,
// chmod) or on its VIF's directory (chown), after which doors ask again;
// its content is made at every open (paramHandle is ns.Generated).
func (f *paramFile) CacheTTL() time.Duration { return dirTTL }

func (f *paramFile) attr() ns.Attr {
	st := f.v.files[f.name]
	return ns.Attr{Mode: st.mode, Uid: f.v.uid, Gid: f.v.gid, Mtime: st.mtime}
}

func (f *paramFile) Attr(ctx context.Context) (ns.Attr, error) {
	f.p.mu.Lock()
	defer f.p.mu.Unlock()
	if !f.p.alive(f.v) {
		return ns.Attr{}, f.p.gone(f.v)
	}
	return f.attr(), nil
}

func (f *paramFile) Open(ctx context.Context, c ns.Caller, flags int) (ns.Handle, error) {
	f.p.mu.Lock()
	defer f.p.mu.Unlock()
	if !f.p.alive(f.v) {
		return nil, f.p.gone(f.v)
	}
	acc := flags & syscall.O_ACCMODE
	mode := f.v.files[f.name].mode
	if acc != syscall.O_WRONLY && !may(c, f.v.uid, f.v.gid, mode, 4) {
		return nil, ns.Errorf(syscall.EACCES, "uid %d may not read %s/%s", c.Uid, f.v.path(), f.name)
	}
	h := &paramHandle{f: f}
	if acc != syscall.O_RDONLY {
		if f.name == "stats" || f.name == "procs" {
			return nil, ns.Errorf(syscall.EACCES, "%s/%s is read-only", f.v.path(), f.name)
		}
		if !may(c, f.v.uid, f.v.gid, mode, 2) {
			return nil, ns.Errorf(syscall.EACCES, "uid %d may not change %s/%s (owner %d, mode %o)", c.Uid, f.v.path(), f.name, f.v.uid, mode)
		}
		if err := f.p.writable(); err != nil {
			return nil, err
		}
		h.writable = true
	}
	if acc != syscall.O_WRONLY {
		s, err := f.p.value(f.v, f.name)
		if err != nil {
			return nil, err
		}
		h.content = []byte(s)
	}
	return h, nil
}

// Setattr: truncation (echo 2mbit > rate opens with O_TRUNC) changes
// nothing; chmod as for the VIF (per file); chown is the VIF's.
func (f *paramFile) Setattr(ctx context.Context, h ns.Handle, a ns.SetAttr) (ns.Attr, error) {
	c := f.p.caller(ctx)
	f.p.mu.Lock()
	defer f.p.mu.Unlock()
	if !f.p.alive(f.v) {
		return ns.Attr{}, f.p.gone(f.v)
	}
	if a.Uid != nil || a.Gid != nil {
		return ns.Attr{}, ns.Errorf(syscall.EPERM, "a parameter file belongs to its VIF: chown the VIF (%s)", f.v.path())
	}
	if a.Mode != nil {
		st := f.v.files[f.name]
		if err := f.p.chattr(c, f.v, ns.SetAttr{Mode: a.Mode}, &st.mode, &st.mtime); err != nil {
			return ns.Attr{}, err
		}
	}
	return f.attr(), nil
}

// paramHandle reads what the file showed at open; each write is one
// value, applied at once or refused (EINVAL) with nothing changed.
type paramHandle struct {
	f        *paramFile
	content  []byte
	writable bool
}

func (h *paramHandle) ReadAt(ctx context.Context, b []byte, off int64) (int, error) {
	if off >= int64(len(h.content)) {
		return 0, nil
	}
	return copy(b, h.content[off:]), nil
}

func (h *paramHandle) WriteAt(ctx context.Context, b []byte, off int64) (int, error) {
	if !h.writable {
		return 0, ns.Errorf(syscall.EBADF, "not open for writing")
	}
	f, p := h.f, h.f.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.alive(f.v) {
		return 0, p.gone(f.v)
	}
	q, err := f.v.set(f.name, string(b))
	if err != nil {
		return 0, err
	}
	if err := p.ensureUp(f.v.ifc); err != nil {
		return 0, err
	}
	if err := p.apply(f.v, q); err != nil {
		return 0, err
	}
	f.v.files[f.name].mtime = time.Now()
	return len(b), nil
}

// Generated: the content is made at open, so doors read and write the
// file directly, not through a page cache.
func (h *paramHandle) Generated() bool { return true }

func (h *paramHandle) Close() error { return nil }
