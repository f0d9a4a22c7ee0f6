package ninep

import (
	"io"
	"path"
	"sort"
	"strings"
	"syscall"

	"github.com/hugelgupf/p9/p9"
)

// exportList is what the server says it exports. diod lists its exports
// in the file "exports" of its synthetic "ctl" file system, when "ctl" is
// itself exported (diod -e ctl, or { path="ctl" } in diod.conf); other
// servers, and diod without it, do not say, and known is false.
type exportList struct {
	known bool
	paths []string // absolute, clean
}

// parseExports reads the text of diod's ctl "exports" file: one export
// per line, the path first, then options, users and hosts ("-" for none).
// Entries that are not absolute paths ("ctl" itself) are left out.
func parseExports(text string) []string {
	var paths []string
	seen := map[string]bool{}
	for line := range strings.Lines(text) {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "/") {
			continue
		}
		p := path.Clean(f[0])
		if !seen[p] {
			seen[p] = true
			paths = append(paths, p)
		}
	}
	return paths
}

// maxExportsFile bounds what we read of the ctl "exports" file.
const maxExportsFile = 1 << 20

// exportList returns the server's export list, read once per connection.
// Refusals (no "ctl" export) leave the list unknown; connection errors
// are returned.
func (s *conn) exportList() (*exportList, error) {
	s.mu.Lock()
	l := s.exports
	s.mu.Unlock()
	if l != nil {
		return l, nil
	}
	text, err := s.readCtlExports()
	l = &exportList{}
	switch {
	case err == nil:
		l.known, l.paths = true, parseExports(text)
	case !isRefusal(err):
		return nil, err
	}
	s.mu.Lock()
	s.exports = l
	s.mu.Unlock()
	return l, nil
}

func isRefusal(err error) bool {
	errno, ok := serverErrno(err)
	return ok && (errno == syscall.EPERM || errno == syscall.EACCES || errno == syscall.ENOENT || errno == syscall.ENOTDIR)
}

func (s *conn) readCtlExports() (string, error) {
	root, err := s.attach("ctl")
	if err != nil {
		return "", err
	}
	f, err := walk(root, []string{"exports"})
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, _, err := f.Open(p9.ReadOnly); err != nil {
		return "", err
	}
	// ctl files are generated on open and report size 0: read to EOF.
	var sb strings.Builder
	buf := make([]byte, s.payload())
	for sb.Len() < maxExportsFile {
		n, err := f.ReadAt(buf, int64(sb.Len()))
		sb.Write(buf[:n])
		if err == io.EOF || (err == nil && n == 0) {
			break
		}
		if err != nil {
			return "", err
		}
	}
	return sb.String(), nil
}

// covers reports whether p is root or below it.
func covers(root, p string) bool {
	return root == p || root == "/" || strings.HasPrefix(p, root+"/")
}

// longestCover returns the longest of names that covers p.
func longestCover(names []string, p string) (string, bool) {
	best, ok := "", false
	for _, n := range names {
		if covers(n, p) && (!ok || len(n) > len(best)) {
			best, ok = n, true
		}
	}
	return best, ok
}

// childrenToward returns the names of the entries of directory dir that
// lead to the given roots below it, sorted: the listing of a directory
// that exists only because exports lie beneath it.
func childrenToward(dir string, roots []string) []string {
	seen := map[string]bool{}
	var names []string
	for _, r := range roots {
		if r == dir || !covers(dir, r) {
			continue
		}
		rest := strings.TrimPrefix(strings.TrimPrefix(r, dir), "/")
		name, _, _ := strings.Cut(rest, "/")
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}
