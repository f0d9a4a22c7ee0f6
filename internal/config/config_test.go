package config

import (
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tab, err := Parse(`
# comment
/csftp → ftp://ftp.example.org/pub, read_timeout=60s
src   sftp://me@build:2222/home/me/src  t_read=5s t_write=0 ro  # trailing
/a/b/ -> http://[::1]:8080/x/../y,age_percent=10,read_ahead=2m
file sftp://me@build/home/me/live.log t_read=0
file sftp://me@build/home/me/logs/ t_write=10s
`)
	if err != nil {
		t.Fatal(err)
	}
	m := tab.Mounts
	if f := tab.Files; len(f) != 2 || f[0].Root.Path != "/home/me/live.log" || f[0].Subtree || f[0].TRead == nil || *f[0].TRead != 0 || f[0].TWrite != nil ||
		!f[1].Subtree || f[1].TWrite == nil || *f[1].TWrite != 10*time.Second {
		t.Errorf("file lines: %+v", f)
	}
	if len(m) != 3 {
		t.Fatalf("got %d mounts", len(m))
	}
	if m[0].Prefix != "csftp" || m[0].Root != (Root{"ftp", "ftp.example.org", "/pub"}) || m[0].Opts.ReadTimeout != time.Minute {
		t.Errorf("line 1: %+v", m[0])
	}
	if m[1].Prefix != "src" || m[1].Root.Server != "me@build:2222" || m[1].Opts.TRead != 5*time.Second || !m[1].Opts.ReadOnly || !m[1].Opts.Set["t_write"] {
		t.Errorf("line 2: %+v", m[1])
	}
	if m[2].Prefix != "a/b" || m[2].Root.Path != "/y" || m[2].Opts.AgePercent != 10 || m[2].Opts.ReadAhead != 2<<20 {
		t.Errorf("line 3: %+v", m[2])
	}
}

func TestParseErrors(t *testing.T) {
	for _, bad := range []string{
		"/x",
		"/ sftp://h/",
		"/x gopher://h/",
		"/x sftp:///p",
		"/x sftp://@h/p",
		"/x sftp://h:0/p",
		"/x sftp://h:99999/p",
		"/x sftp://[::1/p",
		"/x sftp://[::1]x/p",
		"/x sftp://h/p t_read=-1s",
		"/x sftp://h/p t_read",
		"/x sftp://h/p age_percent=101",
		"/x sftp://h/p read_ahead=1x",
		"/x sftp://h/p nosuch=1",
		"/x sftp://h/p ro=1",
		"file sftp://h/p",
		"file sftp://h/p ro",
		"file nope t_read=1s",
	} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%q: no error", bad)
		} else if !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%q: error does not name the line: %v", bad, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add("/csftp → ftp://ftp.example.org/pub, read_timeout=60s\n")
	f.Add("src sftp://me@[fe80::1%eth0]:22/x t_read=1s,ro\n# c\n")
	f.Add("/a 9p://h/srv/export read_ahead=8m")
	f.Fuzz(func(t *testing.T, text string) {
		tab, err := Parse(text)
		if err != nil {
			return
		}
		for _, f := range tab.Files {
			if f.TRead == nil && f.TWrite == nil {
				t.Fatalf("file line without bounds from %q", text)
			}
		}
		for _, m := range tab.Mounts {
			if m.Prefix == "" || strings.HasPrefix(m.Prefix, "/") || !strings.HasPrefix(m.Root.Path, "/") || !Schemes[m.Root.Scheme] {
				t.Fatalf("bad mount %+v from %q", m, text)
			}
			again, err := ParseRoot(m.Root.String())
			if err != nil || again != m.Root {
				t.Fatalf("root %v does not round-trip: %v %v", m.Root, again, err)
			}
		}
	})
}
