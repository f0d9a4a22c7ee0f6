package catch

import (
	"fmt"
	"path"
	"sort"
	"strings"
)

// names maps the file names a target uses to namespace names. A namespace
// name can be reached three ways:
//
//   - below the prefix: /net/tcp/host:80 is tcp/host:80;
//   - below a root shown at the top level (Ufo's second scheme, and the
//     user's mount points): /http/host/x is http/host/x, /src/a.c is
//     src/a.c when "src" is a configured mount point;
//   - as a URL name, a relative name "SCHEME://SERVER/PATH" (which the
//     kernel would take as a directory "SCHEME:" in the working
//     directory): sftp://me@h/d is sftp/me@h/d.
//
// Deciding that a name is local must stay cheap, because every trapped
// call on a local file pays for it: an absolute name is local unless its
// first component is one of firsts (or it has ".."), a relative one
// unless its first component is, or it has "://" before any '/'.
type names struct {
	roots  []nsRoot        // longest local name first
	firsts map[string]bool // first components of every root's local name
	// url maps a URL name to a namespace name; nil: no URL names.
	url func(name string) (string, bool)
}

// nsRoot shows namespace name rel ("" for the root) at the local
// absolute name local.
type nsRoot struct{ local, rel string }

// newNames shows the namespace at prefix and each of roots (namespace
// names) at "/"+root.
func newNames(prefix string, roots []string, url func(string) (string, bool)) (*names, error) {
	prefix = path.Clean(prefix)
	if !path.IsAbs(prefix) || prefix == "/" {
		return nil, fmt.Errorf("prefix %q must be an absolute path other than /", prefix)
	}
	m := &names{firsts: map[string]bool{}, url: url}
	seen := map[string]bool{}
	add := func(local, rel string) error {
		if seen[local] {
			return fmt.Errorf("%s is shown twice (the prefix and a root, or two roots)", local)
		}
		seen[local] = true
		m.roots = append(m.roots, nsRoot{local: local, rel: rel})
		first, _, _ := strings.Cut(local[1:], "/")
		m.firsts[first] = true
		return nil
	}
	if err := add(prefix, ""); err != nil {
		return nil, err
	}
	for _, r := range roots {
		r = strings.Trim(path.Clean("/"+r), "/")
		if r == "" {
			return nil, fmt.Errorf("a root cannot be /")
		}
		if err := add("/"+r, r); err != nil {
			return nil, err
		}
	}
	sort.SliceStable(m.roots, func(i, j int) bool { return len(m.roots[i].local) > len(m.roots[j].local) })
	return m, nil
}

// mayReach reports whether the absolute name p can be a namespace name:
// the cheap test every trapped call on a local file makes.
func (m *names) mayReach(p string) bool {
	rest := strings.TrimLeft(p, "/")
	first, _, _ := strings.Cut(rest, "/")
	switch first {
	case "", ".", "..":
		return true // only path.Clean can tell
	}
	// A ".." further on can lead anywhere ("/tmp/../net").
	return m.firsts[first] || strings.Contains(rest, "..")
}

// relMayReach reports whether the relative name p, once joined to its base
// directory, can be a namespace name: with no ".." it can only if its
// first component other than "." is one of a root's (the base directory
// is then an ancestor of the root). It allocates nothing: compilers and
// make call it for every relative name.
func (m *names) relMayReach(p string) bool {
	if strings.Contains(p, "..") {
		return true // only path.Clean can tell
	}
	for {
		first, rest, _ := strings.Cut(p, "/")
		if first != "" && first != "." {
			return m.firsts[first]
		}
		if rest == "" {
			return false // the base directory itself
		}
		p = rest
	}
}

// mayBeURL reports whether p may be a URL name: "://" before any '/'.
func (m *names) mayBeURL(p string) bool {
	if m.url == nil {
		return false
	}
	i := strings.Index(p, "://")
	return i > 0 && strings.IndexByte(p[:i], '/') < 0
}

// urlName returns the namespace name of a URL name, if p is one.
func (m *names) urlName(p string) (string, bool) {
	if !m.mayBeURL(p) {
		return "", false
	}
	return m.url(p)
}

// match returns the namespace name of the clean absolute name abs.
func (m *names) match(abs string) (string, bool) {
	for _, r := range m.roots {
		if abs == r.local {
			return r.rel, true
		}
		if rest, ok := strings.CutPrefix(abs, r.local+"/"); ok {
			if r.rel == "" {
				return rest, true
			}
			return r.rel + "/" + rest, true
		}
	}
	return "", false
}

// local returns the absolute local name of the namespace name rel: below
// the root that shows it (a mount point "src" at /src), else below the
// prefix.
func (m *names) local(rel string) string {
	prefix := ""
	for _, r := range m.roots {
		switch {
		case r.rel == "":
			prefix = r.local
		case rel == r.rel:
			return r.local
		case strings.HasPrefix(rel, r.rel+"/"):
			return r.local + rel[len(r.rel):]
		}
	}
	if rel == "" {
		return prefix
	}
	return prefix + "/" + rel
}
