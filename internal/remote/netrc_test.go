package remote

import "testing"

func TestParseNetrc(t *testing.T) {
	text := `machine a.example login alice password s3cret
machine b.example
  login bob
  password "x"
macdef init
machine evil.example login mallory password no

default login anonymous password guest@
`
	for _, c := range []struct{ host, login, pass string }{
		{"a.example", "alice", "s3cret"},
		{"b.example", "bob", `"x"`},
		{"evil.example", "anonymous", "guest@"}, // inside macdef: not an entry
		{"other", "anonymous", "guest@"},
	} {
		l, p, ok := ParseNetrc(text, c.host)
		if !ok || l != c.login || p != c.pass {
			t.Errorf("%s: got %q %q %v, want %q %q", c.host, l, p, ok, c.login, c.pass)
		}
	}
	if _, _, ok := ParseNetrc("machine a login x", "b"); ok {
		t.Error("no entry and no default must not match")
	}
}

func FuzzParseNetrc(f *testing.F) {
	f.Add("machine h login u password p\ndefault login a password b\n", "h")
	f.Add("macdef x\nmachine h\n\nmachine h login z", "h")
	f.Add("login", "")
	f.Fuzz(func(t *testing.T, text, host string) {
		l, p, ok := ParseNetrc(text, host)
		if !ok && (l != "" || p != "") {
			t.Fatal("credentials without an entry")
		}
	})
}
