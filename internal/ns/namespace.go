package ns

import (
	"context"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Namespace is a mount table: prefixes (like "tcp" or "sftp/me@host") mapped
// to provider directories. A path resolves to the node of the longest
// matching prefix, walked down by the rest of the path; names between the
// root and the mount points are synthesized directories. This is the
// Sprite/Ufo prefix table; implicit roots such as "tcp/" are just entries.
type Namespace struct {
	mounts map[string]Node // clean prefix without leading slash -> provider root
	since  time.Time
}

// New returns an empty namespace.
func New() *Namespace {
	return &Namespace{mounts: map[string]Node{}, since: time.Now()}
}

// Mount attaches node at prefix: a provider's directory, or a single file
// (a portal such as "db" → tcp/db.internal:5432). A later Mount at the
// same prefix replaces the earlier one.
func (n *Namespace) Mount(prefix string, node Node) {
	n.mounts[clean(prefix)] = node
}

// MountLazy attaches at prefix the node that build returns, called once,
// the first time a path through prefix is resolved: a provider whose start
// costs (a cache directory to recover, VIF state to clean up) is then paid
// for only by what uses it, not by a short command that never does. Its
// error is every resolution's error.
func (n *Namespace) MountLazy(prefix string, build func() (Node, error)) {
	n.mounts[clean(prefix)] = &lazyMount{build: build}
}

// lazyMount is a node of MountLazy, made on first use.
type lazyMount struct {
	once  sync.Once
	build func() (Node, error)
	node  Node
	err   error
}

// Attr is the made node's (Lookup hands out the made node, never a
// lazyMount; Attr makes it a Node for the mount table).
func (l *lazyMount) Attr(ctx context.Context) (Attr, error) {
	n, err := l.get()
	if err != nil {
		return Attr{}, err
	}
	return n.Attr(ctx)
}

func (l *lazyMount) get() (Node, error) {
	l.once.Do(func() { l.node, l.err = l.build() })
	return l.node, l.err
}

// Root returns the namespace's root directory.
func (n *Namespace) Root() Dir { return &tableDir{ns: n, prefix: ""} }

// Resolve walks p (slash-separated, relative to the root) to a node.
func (n *Namespace) Resolve(ctx context.Context, p string) (Node, error) {
	var node Node = n.Root()
	for rest := clean(p); rest != ""; {
		var name string
		name, rest, _ = strings.Cut(rest, "/")
		d, ok := node.(Dir)
		if !ok {
			return nil, Errorf(syscall.ENOTDIR, "%s: not a directory", p)
		}
		var err error
		if node, err = d.Lookup(ctx, name); err != nil {
			return nil, err
		}
	}
	return node, nil
}

// clean is p cleaned (path.Clean), without leading or trailing slashes;
// p itself, with no copy, when it is clean already (the door's names
// nearly always are).
func clean(p string) string {
	if isClean(p) {
		return p
	}
	return strings.Trim(path.Clean("/"+p), "/")
}

// isClean says whether p is a clean relative name: no empty, "." or ".."
// element, no leading or trailing slash ("" is clean).
func isClean(p string) bool {
	for rest := p; rest != ""; {
		var elem string
		var more bool
		elem, rest, more = strings.Cut(rest, "/")
		if elem == "" || elem == "." || elem == ".." || more && rest == "" {
			return false
		}
	}
	return true
}

// tableDir is a directory synthesized from the mount table: the root, or an
// intermediate name such as "sftp" when only "sftp/me@host" is mounted. When
// a provider is mounted at or above this path too (a mount inside a mount),
// under is the provider's directory here and names not in the table fall
// through to it: the longer prefix wins.
type tableDir struct {
	ns     *Namespace
	prefix string
	under  Dir
}

func (d *tableDir) Attr(ctx context.Context) (Attr, error) {
	if d.under != nil {
		return d.under.Attr(ctx)
	}
	return Attr{Mode: os.ModeDir | 0o555, Mtime: d.ns.since, Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}, nil
}

func (d *tableDir) join(name string) string {
	if d.prefix == "" {
		return name
	}
	return d.prefix + "/" + name
}

// hasBelow reports whether any mount lies strictly below p.
func (d *tableDir) hasBelow(p string) bool {
	for m := range d.ns.mounts {
		if strings.HasPrefix(m, p+"/") {
			return true
		}
	}
	return false
}

func (d *tableDir) Lookup(ctx context.Context, name string) (Node, error) {
	full := d.join(name)
	var here Node
	if m, ok := d.ns.mounts[full]; ok {
		if l, lazy := m.(*lazyMount); lazy {
			var err error
			if m, err = l.get(); err != nil {
				return nil, err
			}
		}
		here = m
	} else if d.under != nil {
		n, err := d.under.Lookup(ctx, name)
		if err != nil && !d.hasBelow(full) {
			return nil, err
		}
		here = n
	}
	if d.hasBelow(full) {
		under, _ := here.(Dir)
		return &tableDir{ns: d.ns, prefix: full, under: under}, nil
	}
	if here == nil {
		return nil, Errorf(syscall.ENOENT, "%s: no such name in the mount table", full)
	}
	return here, nil
}

func (d *tableDir) ReadDir(ctx context.Context) ([]DirEntry, error) {
	seen := map[string]bool{}
	var out []DirEntry
	// Names from the table first: a mount shadows the provider's entry of
	// the same name, as Lookup does.
	for p := range d.ns.mounts {
		rest, ok := strings.CutPrefix(p, d.prefix)
		if d.prefix != "" && (!ok || !strings.HasPrefix(rest, "/")) {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(rest, "/"), "/")
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		node, err := d.Lookup(ctx, name)
		if err != nil {
			continue
		}
		a, err := node.Attr(ctx)
		if err != nil {
			continue
		}
		out = append(out, DirEntry{Name: name, Attr: a})
	}
	if d.under != nil {
		ents, err := d.under.ReadDir(ctx)
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			if !seen[e.Name] {
				out = append(out, e)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
