package catch

import (
	"path"
	"strings"
	"testing"
)

func testNames(t testing.TB) *names {
	url := func(p string) (string, bool) {
		scheme, rest, _ := strings.Cut(p, "://")
		if scheme != "http" && scheme != "sftp" {
			return "", false
		}
		return scheme + path.Clean("/"+rest), true
	}
	m, err := newNames("/net", []string{"http", "sftp", "src/proj"}, url)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestNames: the prefix, top-level roots, a nested mount point and URL
// names map to namespace names; everything else stays local.
func TestNames(t *testing.T) {
	m := testNames(t)
	for _, c := range []struct {
		abs, rel string
		in       bool
	}{
		{"/net", "", true},
		{"/net/tcp/h:80", "tcp/h:80", true},
		{"/http/h/x", "http/h/x", true},
		{"/http", "http", true},
		{"/src/proj/a.c", "src/proj/a.c", true},
		{"/src/other", "", false},
		{"/network", "", false},
		{"/usr/include/stdio.h", "", false},
	} {
		rel, in := m.match(c.abs)
		if rel != c.rel || in != c.in {
			t.Errorf("match(%q) = %q, %v; want %q, %v", c.abs, rel, in, c.rel, c.in)
		}
		if c.in && !m.mayReach(c.abs) {
			t.Errorf("mayReach(%q) = false for a namespace name", c.abs)
		}
	}
	for _, p := range []string{"/usr/lib/x", "/tmp", "/srcx"} {
		if m.mayReach(p) {
			t.Errorf("mayReach(%q) = true: the hot path would do more work", p)
		}
	}
	for _, p := range []string{"//net/tcp", "/./net", "/../net"} {
		if !m.mayReach(p) {
			t.Errorf("mayReach(%q) = false: only Clean can tell", p)
		}
	}
	for p, want := range map[string]bool{
		"net/tcp": true, "./net/tcp": true, ".//src/proj": true, "x/../net": true, "../usr": true,
		"a.c": false, "./": false, ".": false, "sub/net": false, "./m1.o": false,
	} {
		if got := m.relMayReach(p); got != want {
			t.Errorf("relMayReach(%q) = %v, want %v", p, got, want)
		}
	}
	if rel, ok := m.urlName("http://h:80/a/../b"); !ok || rel != "http/h:80/b" {
		t.Errorf("urlName = %q, %v", rel, ok)
	}
	for _, p := range []string{"ftp://h/x", "dir/http://h", "http:/h", "a.c"} {
		if _, ok := m.urlName(p); ok {
			t.Errorf("urlName(%q) took a name that is not a URL name", p)
		}
	}
	// local is match's inverse, below the root that shows the name.
	for rel, want := range map[string]string{
		"": "/net", "tcp/h:80": "/net/tcp/h:80", "http": "/http", "http/h/x": "/http/h/x",
		"httpx/y": "/net/httpx/y", "src/proj/a.c": "/src/proj/a.c", "src/other": "/net/src/other",
	} {
		if got := m.local(rel); got != want {
			t.Errorf("local(%q) = %q, want %q", rel, got, want)
		}
		if back, in := m.match(want); !in || back != rel {
			t.Errorf("match(local(%q)) = %q, %v", rel, back, in)
		}
	}
	if _, err := newNames("/http", []string{"http"}, nil); err == nil {
		t.Error("a root shown twice was accepted")
	}
	if _, err := newNames("/", nil, nil); err == nil {
		t.Error("the prefix / was accepted")
	}
}

// FuzzNames: whatever the name, a namespace match needs mayReach (the hot
// path never skips a namespace name), and matched names are clean and
// relative.
func FuzzNames(f *testing.F) {
	for _, s := range []string{"/net/tcp/x", "/http/h/../x", "//src/proj", "/src/proj/../proj/a", "http://h/x", "/", "./net/tcp", "a/../src/proj"} {
		f.Add(s)
	}
	m := testNames(f)
	f.Fuzz(func(t *testing.T, p string) {
		if p == "" {
			return
		}
		if p[0] == '/' {
			rel, in := m.match(path.Clean(p))
			if in && !m.mayReach(p) {
				t.Fatalf("%q is in the namespace (%q) but mayReach says no", p, rel)
			}
			if in && (strings.HasPrefix(rel, "/") || path.Clean("/"+rel) != "/"+rel && rel != "") {
				t.Fatalf("%q maps to unclean %q", p, rel)
			}
			return
		}
		// Joined to a base directory outside the namespace, a relative
		// name in the namespace needs relMayReach too.
		for _, base := range []string{"/", "/usr/lib"} {
			if rel, in := m.match(path.Join(base, p)); in && !m.relMayReach(p) {
				t.Fatalf("%q in %s is in the namespace (%q) but relMayReach says no", p, base, rel)
			}
		}
		if rel, ok := m.urlName(p); ok && strings.HasPrefix(rel, "/") {
			t.Fatalf("url %q maps to %q", p, rel)
		}
	})
}
