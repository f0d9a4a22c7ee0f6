package sftp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExpandTokens(t *testing.T) {
	tok := tokens{home: "/h", user: "u", remoteUser: "r", host: "example", port: "22"}
	for in, want := range map[string]string{
		"~/.ssh/id":           "/h/.ssh/id",
		"~":                   "/h",
		"%d/keys/%r@%h:%p-%u": "/h/keys/r@example:22-u",
		"100%%":               "100%",
		"%x%":                 "%x%",
		"/abs/~/x":            "/abs/~/x",
	} {
		if got := tok.expand(in); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestResolveHost(t *testing.T) {
	home := t.TempDir()
	os.MkdirAll(home+"/.ssh", 0o700)
	os.WriteFile(home+"/.ssh/config", []byte(`Host *.lan !bad.lan
	User lanuser
	IdentityFile ~/.ssh/lan_%h
Host box
	HostName 10.0.0.9
	Port 2200
	UserKnownHostsFile ~/.ssh/kh1 %d/kh2
	StrictHostKeyChecking Accept-New
Host *
	User fallback
`), 0o600)
	h, err := resolveHost("box", home)
	if err != nil {
		t.Fatal(err)
	}
	if h.addr() != "10.0.0.9:2200" || h.user != "fallback" || h.name() != "fallback@box" || h.strict != "accept-new" ||
		strings.Join(h.knownHosts, " ") != home+"/.ssh/known_hosts "+home+"/.ssh/kh1 "+home+"/kh2" {
		t.Fatalf("box: %+v", h)
	}
	if h.explicit || filepath.Base(h.identityFiles[0]) != "id_ed25519" {
		t.Fatalf("default identity files: %q", h.identityFiles)
	}
	h, _ = resolveHost("other@pc.lan:99", home)
	if h.addr() != "pc.lan:99" || h.user != "other" || !h.explicit || h.identityFiles[0] != home+"/.ssh/lan_pc.lan" {
		t.Fatalf("pc.lan: %+v", h)
	}
	if h, _ = resolveHost("bad.lan", home); h.user != "fallback" {
		t.Fatalf("negated pattern matched: %+v", h)
	}
}

func FuzzExpandTokens(f *testing.F) {
	for _, s := range []string{"~/.ssh/id_%h", "%%%", "%d%u%r%h%p", "~", "~user/x"} {
		f.Add(s)
	}
	tok := tokens{home: "/home/me", user: "u", remoteUser: "r", host: "h", port: "22"}
	f.Fuzz(func(t *testing.T, s string) {
		got := tok.expand(s)
		if !strings.Contains(s, "%") && !strings.HasPrefix(s, "~") && got != s {
			t.Fatalf("expand(%q) = %q changed a plain name", s, got)
		}
		if strings.HasPrefix(s, "~/") && !strings.HasPrefix(got, "/home/me") {
			t.Fatalf("expand(%q) = %q", s, got)
		}
	})
}
