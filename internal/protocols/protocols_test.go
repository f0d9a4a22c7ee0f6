package protocols

import (
	"context"
	"slices"
	"strings"
	"testing"

	"wirefs/internal/remote"
)

func TestRemote(t *testing.T) {
	r := Remote()
	want := []string{"http", "https", "ftp", "ftps", "sftp", "9p"}
	if got := r.Schemes(); !slices.Equal(got, want) {
		t.Fatalf("schemes %q, want %q", got, want)
	}
	for _, s := range want {
		p, ok := r.Lookup(s)
		if !ok || p.Scheme != s || p.Dial == nil {
			t.Errorf("Lookup(%q) = %+v, %v", s, p, ok)
		}
		if p.TLS != (s == "https" || s == "ftps") {
			t.Errorf("%s: TLS %v", s, p.TLS)
		}
		if p.Writable == strings.HasPrefix(s, "http") {
			t.Errorf("%s: writable %v", s, p.Writable)
		}
	}
	if r.Has("gopher") || r.Has("") || r.Has("HTTP") {
		t.Error("unknown schemes are registered")
	}
}

// TestImmutable: what a registry hands out are copies.
func TestImmutable(t *testing.T) {
	r := Remote()
	r.Schemes()[0] = "gopher"
	all := r.All()
	all[0].Scheme, all[1].Writable = "gopher", true
	if !r.Has("http") || r.Has("gopher") {
		t.Error("changing Schemes() or All() changed the registry")
	}
	if p, _ := r.Lookup("https"); p.Writable {
		t.Error("changing All() made https writable")
	}
}

func TestNewRefuses(t *testing.T) {
	dial := func(context.Context, string, remote.Options) (remote.Backend, error) { return nil, nil }
	ok := Protocol{Scheme: "x", Doc: "X", DefaultPort: 1, Dial: dial}
	with := func(f func(*Protocol)) Protocol { p := ok; f(&p); return p }
	if _, err := New(ok, with(func(p *Protocol) { p.Scheme = "a+b-c.9" })); err != nil {
		t.Fatalf("good table: %v", err)
	}
	for name, ps := range map[string][]Protocol{
		"twice":        {ok, ok},
		"no scheme":    {with(func(p *Protocol) { p.Scheme = "" })},
		"upper case":   {with(func(p *Protocol) { p.Scheme = "HTTP" })},
		"slash":        {with(func(p *Protocol) { p.Scheme = "a/b" })},
		"leading dash": {with(func(p *Protocol) { p.Scheme = "-a" })},
		"no dialer":    {with(func(p *Protocol) { p.Dial = nil })},
		"no doc":       {with(func(p *Protocol) { p.Doc = "" })},
		"port 0":       {with(func(p *Protocol) { p.DefaultPort = 0 })},
		"port 65536":   {with(func(p *Protocol) { p.DefaultPort = 65536 })},
	} {
		if _, err := New(ps...); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
