package ninep

import (
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/hugelgupf/p9/p9"
)

// refusalTTL is how long a refused attach name is not tried again.
const refusalTTL = 10 * time.Second

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
			// A name the server accepted before is not refused now
			// because one attach failed: walking on to its parents
			// made every file below it ENOENT for refusalTTL.
			if !isRefusal(err) || b.wasAccepted(aname) {
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

func (b *Backend) wasAccepted(aname string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.accepted[aname]
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
func (b *Backend) above(s *conn, op, p string) ([]string, error) {
	exports, err := s.exportList()
	if err != nil {
		return nil, err
	}
	if !exports.known {
		return childrenToward(p, b.acceptedNames()), nil
	}
	names := childrenToward(p, exports.paths)
	if len(names) == 0 && p != "/" {
		return nil, b.srv.Errorf(syscall.ENOENT, op, p, "the server does not export it")
	}
	return names, nil
}

var synthesizedMode = os.ModeDir | 0o555
