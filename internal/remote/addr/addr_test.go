package addr

import (
	"errors"
	"net"
	"strings"
	"testing"
)

// TestParse is the one table of the server syntax. The cases of the five
// parsers it replaced (ftp, http, sftp, 9p, the mounts file) are here;
// "was:" notes a case on which one of them decided otherwise.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Server // when err is ""
		str  string // String(), when not in itself
		err  string // a part of the error
	}{
		// Names, users, ports.
		{in: "host", want: Server{"", "host", ""}},
		{in: "example.org:8080", want: Server{"", "example.org", "8080"}},
		{in: "ftp.example.org", want: Server{"", "ftp.example.org", ""}},
		{in: "me@host", want: Server{"me", "host", ""}},
		{in: "me@host:2121", want: Server{"me", "host", "2121"}},
		{in: "user.name@10.0.0.1:990", want: Server{"user.name", "10.0.0.1", "990"}},
		{in: "1000@10.0.0.1", want: Server{"1000", "10.0.0.1", ""}},
		{in: "127.0.0.1:80", want: Server{"", "127.0.0.1", "80"}},
		{in: "h:1", want: Server{"", "h", "1"}},
		{in: "h:65535", want: Server{"", "h", "65535"}},
		{in: "h:022", want: Server{"", "h", "22"}, str: "h:22"},
		{in: "DOMAIN\\me@host", want: Server{"DOMAIN\\me", "host", ""}}, // IIS FTP logins
		{in: "bücher.example", want: Server{"", "bücher.example", ""}},
		{in: "my_box", want: Server{"", "my_box", ""}}, // an ssh_config alias
		// The last '@' separates, as in OpenSSH.
		{in: "a@b@host:21", want: Server{"a@b", "host", "21"}},
		{in: "me@x@example.org:1", want: Server{"me@x", "example.org", "1"}},
		{in: "a@b@[fe80::1]:99", want: Server{"a@b", "fe80::1", "99"}},
		{in: "@@host", want: Server{"@", "host", ""}}, // OpenSSH takes it too
		// IPv6.
		{in: "[::1]", want: Server{"", "::1", ""}},
		{in: "[::1]:2121", want: Server{"", "::1", "2121"}},
		{in: "me@[::1]", want: Server{"me", "::1", ""}},
		{in: "u@[fe80::1]:80", want: Server{"u", "fe80::1", "80"}},
		{in: "[::ffff:1.2.3.4]:8", want: Server{"", "::ffff:1.2.3.4", "8"}},
		{in: "::1", want: Server{"", "::1", ""}, str: "[::1]"},          // was: an error for http
		{in: "::1:22", want: Server{"", "::1:22", ""}, str: "[::1:22]"}, // one address, as ssh reads it
		{in: "2001:db8::7", want: Server{"", "2001:db8::7", ""}, str: "[2001:db8::7]"},
		{in: "a@[fe80::1%eth0]", want: Server{"a", "fe80::1%eth0", ""}}, // was: an error for http
		{in: "[fe80::1%eth0]:22", want: Server{"", "fe80::1%eth0", "22"}},
		{in: "fe80::1%eth0", want: Server{"", "fe80::1%eth0", ""}, str: "[fe80::1%eth0]"},
		{in: "[fe80::1%25eth0]", want: Server{"", "fe80::1%25eth0", ""}}, // literal: no percent-decoding
		{in: "x:80:80", err: "not an IPv6 address"},
		{in: "a:b:c", err: "a port after an IPv6 address needs brackets"}, // was: host "a:b:c" for ftp, sftp, 9p
		{in: "::1::2", err: "not an IPv6 address"},
		{in: "[::1", err: "'[' without ']'"},
		{in: "[::1]x", err: `"x" after ']'`},
		{in: "[::1]:", err: "empty port"}, // was: no port for sftp
		{in: "[::1]]", err: `"]" after ']'`},
		{in: "[]", err: "empty host name"},
		{in: "[]:22", err: "empty host name"},
		{in: "[host]", err: "brackets hold only IPv6 addresses"},        // was: host "host" for all five
		{in: "[10.0.0.1]:21", err: "brackets hold only IPv6 addresses"}, // was: accepted by all five
		{in: "[fe80::1%]", err: "not an IPv6 address"},
		{in: "[fe80::1%eth/0]", err: "zone"},
		{in: "[fe80::1%a:b]", err: "zone"},
		{in: "10.0.0.1%eth0", err: "'%' (a zone) may only follow an IPv6 address"},
		{in: "host%x", err: "'%' (a zone)"},
		// Empty parts.
		{in: "", err: "empty server name"},
		{in: "@host", err: "empty user name before '@'"}, // was: no user for http and 9p
		{in: "@", err: "empty user name"},
		{in: "me@", err: "empty host name"},
		{in: ":22", err: "empty host name"},
		{in: "me@:22", err: "empty host name"},
		{in: "host:", err: "empty port after ':'"}, // was: no port for sftp
		// Ports.
		{in: "host:0", err: `port "0" is not a number from 1 to 65535`},
		{in: "host:65536", err: "from 1 to 65535"},
		{in: "host:99999", err: "from 1 to 65535"},
		{in: "host:x", err: "from 1 to 65535"},
		{in: "host:http", err: "from 1 to 65535"},
		{in: "host:+22", err: "from 1 to 65535"}, // was: port 22 for ftp, http, sftp, config
		{in: "host:-1", err: "from 1 to 65535"},
		{in: "host:99999999999999999999999", err: "from 1 to 65535"},
		// Characters.
		{in: "h/st", err: `'/' cannot be in a host name`},
		{in: "a/b", err: `'/' cannot be in a host name`},
		{in: "a/b@host", err: "'/' in the user name"},
		{in: "h?x", err: `'?' cannot be in a host name`},
		{in: "h#x", err: `'#' cannot be in a host name`},
		{in: `h\x`, err: `'\\' cannot be in a host name`},
		{in: "h]", err: `']' cannot be in a host name`},
		{in: "h[1]", err: `'[' cannot be in a host name`},
		{in: "bad host", err: "white space ' '"},
		{in: "host\t", err: "white space '\\t'"},
		{in: "host\n", err: "white space"},
		{in: "me @host", err: "white space"},
		{in: "h\u00a0x", err: "white space"},
		{in: "h\x00x", err: "control"},
		{in: "h\x7fx", err: "control"},
		{in: "h\u200bx", err: "invisible"}, // zero width space
		{in: "h\xffx", err: "not valid UTF-8"},
		// Passwords are refused, and never shown.
		{in: "me:secret@host", err: `server "me:***@host": ':' in the user name`}, // was: user "me:secret" for ftp, http, 9p
		{in: "me:secret@host/x", err: `"me:***@host/x"`},
	} {
		got, err := Parse(c.in)
		if c.err != "" {
			var e *Error
			if err == nil || !strings.Contains(err.Error(), c.err) || !errors.As(err, &e) {
				t.Errorf("Parse(%q) = %+v, %v; want an error with %q", c.in, got, err, c.err)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("Parse(%q): the error shows the password: %v", c.in, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
			continue
		}
		str := c.str
		if str == "" {
			str = c.in
		}
		if got.String() != str {
			t.Errorf("Parse(%q).String() = %q, want %q", c.in, got.String(), str)
		}
		if again, err := Parse(got.String()); err != nil || again != got {
			t.Errorf("Parse(%q) = %+v, but Parse(%q) = %+v, %v", c.in, got, got.String(), again, err)
		}
	}
}

func TestHostPort(t *testing.T) {
	for _, c := range []struct {
		in, def, want string
	}{
		{"host", "21", "host:21"},
		{"me@host:2121", "21", "host:2121"},
		{"host", "", "host"},
		{"host:8080", "", "host:8080"},
		{"[::1]", "564", "[::1]:564"},
		{"::1", "564", "[::1]:564"},
		{"u@[fe80::1%eth0]:80", "", "[fe80::1%eth0]:80"},
		{"[::1]", "", "[::1]"},
		{"fe80::1%eth0", "", "[fe80::1%eth0]"},
	} {
		s, err := Parse(c.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.HostPort(c.def); got != c.want {
			t.Errorf("Parse(%q).HostPort(%q) = %q, want %q", c.in, c.def, got, c.want)
		}
	}
}

// FuzzParse: Parse never panics; what it accepts has a host, a valid port
// or none, dials as host:port, and reads back from its String() as itself.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"host", "me@host:2121", "a@b@host:21", "[::1]:22", "::1", "::1:22",
		"a@[fe80::1%eth0]", "fe80::1%eth0", "[host]", "@host", "me@", "host:",
		"host:0", "host:+22", "h:022", "me:pw@h", "[]", "[::1]:", "x:80:80",
		"bad host", "h\x00", "\xff", "[::ffff:1.2.3.4]:8",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := Parse(in)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || s != (Server{}) {
				t.Fatalf("Parse(%q) = %+v, %v", in, s, err)
			}
			return
		}
		if s.Host == "" || strings.ContainsAny(s.User, ":/") {
			t.Fatalf("Parse(%q) = %+v", in, s)
		}
		if s.Port != "" && (s.Port[0] == '0' || len(s.Port) > 5) {
			t.Fatalf("Parse(%q) = %+v: port not canonical", in, s)
		}
		host, port, err := net.SplitHostPort(s.HostPort("1"))
		if err != nil || host != s.Host || (s.Port != "" && port != s.Port) {
			t.Fatalf("Parse(%q) = %+v dials as %q: %q %q %v", in, s, s.HostPort("1"), host, port, err)
		}
		again, err := Parse(s.String())
		if err != nil || again != s {
			t.Fatalf("Parse(%q) = %+v; Parse(%q) = %+v, %v", in, s, s.String(), again, err)
		}
	})
}
