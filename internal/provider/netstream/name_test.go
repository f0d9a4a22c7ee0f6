package netstream

import (
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"wirefs/internal/ns"
)

func TestParseNameValid(t *testing.T) {
	srv := func(host string, port int, explicit bool) Name {
		return Name{Role: Server, Local: Endpoint{host, port}, Explicit: explicit}
	}
	cli := func(lhost string, lport int, rhost string, rport int) Name {
		return Name{Role: Client, Local: Endpoint{lhost, lport}, Remote: Endpoint{rhost, rport}}
	}
	tests := []struct {
		proto, in string
		want      Name
		canon     string // String(); "" means the same as in
	}{
		// port[!]: server on any address
		{"tcp", "80", srv("", 80, false), ""},
		{"tcp", "1", srv("", 1, false), ""},
		{"tcp", "65535", srv("", 65535, false), ""},
		{"tcp", "8080!", srv("", 8080, true), ""},
		{"udp", "53", srv("", 53, false), ""},
		{"udp", "5353!", srv("", 5353, true), ""},
		{"tcp", "0080", srv("", 80, false), "80"},
		{"tcp", "http", srv("", 80, false), "80"},
		{"tcp", "http!", srv("", 80, true), "80!"},
		{"tcp", "HTTP", srv("", 80, false), "80"},
		{"udp", "domain", srv("", 53, false), "53"},
		// addr:port: client
		{"tcp", "127.0.0.1:80", cli("", 0, "127.0.0.1", 80), ""},
		{"tcp", "localhost:80", cli("", 0, "localhost", 80), ""},
		{"tcp", "example.com:https", cli("", 0, "example.com", 443), "example.com:443"},
		{"tcp", "my-host_1.example.:22", cli("", 0, "my-host_1.example.", 22), ""},
		{"tcp", "[::1]:80", cli("", 0, "::1", 80), ""},
		{"tcp", "[0:0:0:0:0:0:0:1]:80", cli("", 0, "::1", 80), "[::1]:80"},
		{"tcp", "[fe80::1%eth0]:80", cli("", 0, "fe80::1%eth0", 80), ""},
		{"tcp", "[::ffff:127.0.0.1]:80", cli("", 0, "::ffff:127.0.0.1", 80), ""},
		{"tcp", "[2001:DB8::1]:443", cli("", 0, "2001:db8::1", 443), "[2001:db8::1]:443"},
		{"udp", "127.0.0.1:53", cli("", 0, "127.0.0.1", 53), ""},
		{"udp", "[::1]:domain", cli("", 0, "::1", 53), "[::1]:53"},
		// addr:port::[!]: server on one address
		{"tcp", "127.0.0.1:80::", srv("127.0.0.1", 80, false), ""},
		{"tcp", "127.0.0.1:80::!", srv("127.0.0.1", 80, true), ""},
		{"tcp", "[::1]:8080::", srv("::1", 8080, false), ""},
		{"tcp", "[::1]:8080::!", srv("::1", 8080, true), ""},
		{"tcp", "[fe80::1%eth0]:80::", srv("fe80::1%eth0", 80, false), ""},
		{"tcp", "localhost:http::", srv("localhost", 80, false), "localhost:80::"},
		{"udp", "0.0.0.0:53::!", srv("0.0.0.0", 53, true), ""},
		// lport:addr:port: client from a fixed local port
		{"tcp", "2000:127.0.0.1:80", cli("", 2000, "127.0.0.1", 80), ""},
		{"tcp", "2000:[::1]:80", cli("", 2000, "::1", 80), ""},
		{"tcp", "2000:host:http", cli("", 2000, "host", 80), "2000:host:80"},
		{"udp", "5000:127.0.0.1:53", cli("", 5000, "127.0.0.1", 53), ""},
		// laddr:lport:addr:port: client from a fixed local address and port
		{"tcp", "127.0.0.1:2000:127.0.0.1:80", cli("127.0.0.1", 2000, "127.0.0.1", 80), ""},
		{"tcp", "[::1]:2000:[::1]:80", cli("::1", 2000, "::1", 80), ""},
		{"tcp", "[fe80::1%eth0]:2000:[fe80::2%eth0]:80", cli("fe80::1%eth0", 2000, "fe80::2%eth0", 80), ""},
		{"tcp", "me:2000:you:http", cli("me", 2000, "you", 80), "me:2000:you:80"},
		// Symbolic hosts that look numeric are still symbolic.
		{"tcp", "1234:80", cli("", 0, "1234", 80), ""},
		{"tcp", "01.2.3.4:80", cli("", 0, "01.2.3.4", 80), ""},
	}
	for _, tt := range tests {
		t.Run(tt.proto+"/"+tt.in, func(t *testing.T) {
			got, err := ParseName(tt.proto, tt.in)
			if err != nil {
				t.Fatalf("ParseName(%q, %q): %v", tt.proto, tt.in, err)
			}
			if got != tt.want {
				t.Fatalf("ParseName(%q, %q) = %+v, want %+v", tt.proto, tt.in, got, tt.want)
			}
			canon := tt.canon
			if canon == "" {
				canon = tt.in
			}
			if s := got.String(); s != canon {
				t.Errorf("String() = %q, want %q", s, canon)
			}
			again, err := ParseName(tt.proto, got.String())
			if err != nil || again != got {
				t.Errorf("ParseName(String()) = %+v, %v; want %+v", again, err, got)
			}
			plus := otherSpelling(tt.in)
			if strings.Contains(plus, ":") {
				t.Fatalf("otherSpelling(%q) = %q: the test's helper is wrong", tt.in, plus)
			}
			if alt, err := ParseName(tt.proto, plus); err != nil || alt != got {
				t.Errorf("colon-free ParseName(%q, %q) = %+v, %v; want %+v", tt.proto, plus, alt, err, got)
			}
		})
	}
}

// TestParseNameColonFree: the '+' spelling of the forms of Table 3, as a
// user writes them (socat GOPEN:/net/tcp/127.0.0.1+8000), mean what their
// ':' spelling means.
func TestParseNameColonFree(t *testing.T) {
	tests := []struct{ proto, plus, colon string }{
		{"tcp", "127.0.0.1+8000", "127.0.0.1:8000"},
		{"udp", "localhost+domain", "localhost:domain"},
		{"tcp", "[++1]+80", "[::1]:80"},
		{"tcp", "[2001+db8++5]+https", "[2001:db8::5]:https"},
		{"tcp", "[fe80++1%eth0]+22", "[fe80::1%eth0]:22"},
		{"tcp", "[fe80++1%eth+0]+22", "[fe80::1%eth+0]:22"}, // '+' in a zone stays
		{"tcp", "[++ffff+127.0.0.1]+80", "[::ffff:127.0.0.1]:80"},
		{"tcp", "127.0.0.1+8000++", "127.0.0.1:8000::"},
		{"udp", "[++1]+5353++!", "[::1]:5353::!"},
		{"tcp", "2000+127.0.0.1+80", "2000:127.0.0.1:80"},
		{"tcp", "[++1]+2000+[++1]+80", "[::1]:2000:[::1]:80"},
		{"udp", "me+5000+you+53", "me:5000:you:53"},
	}
	for _, tt := range tests {
		want, err := ParseName(tt.proto, tt.colon)
		if err != nil {
			t.Fatalf("ParseName(%q, %q): %v", tt.proto, tt.colon, err)
		}
		if got, err := ParseName(tt.proto, tt.plus); err != nil || got != want {
			t.Errorf("ParseName(%q, %q) = %+v, %v; want %+v (as %q)", tt.proto, tt.plus, got, err, want, tt.colon)
		}
	}
}

func TestParseNameInvalid(t *testing.T) {
	tests := []struct{ proto, in string }{
		{"tcp", ""},
		{"tcp", "!"},
		{"tcp", "80!!"},
		{"tcp", ":"},
		{"tcp", "::"},
		{"tcp", ":::"},
		{"tcp", ":80"},
		{"tcp", "host:"},
		{"tcp", "host:80:"},
		{"tcp", "a:b:c:d:e"},
		{"tcp", "1.2.3.4:1:1.2.3.4:80:9"},
		{"tcp", "h:1:h:2::"},
		// "!" on a client
		{"tcp", "127.0.0.1:80!"},
		{"tcp", "2000:127.0.0.1:80!"},
		{"tcp", "127.0.0.1:2000:127.0.0.1:80!"},
		{"udp", "[::1]:53!"},
		// unbracketed IPv6
		{"tcp", "::1:80"},
		{"tcp", "fe80::1:80"},
		{"tcp", "::1"},
		// ports
		{"tcp", "0"},
		{"tcp", "00"},
		{"tcp", "0!"},
		{"tcp", "65536"},
		{"tcp", "99999999999999999999"},
		{"tcp", "-1"},
		{"tcp", "+80"},
		{"tcp", "8o"},
		{"tcp", "0x50"},
		{"tcp", "80 "},
		{"tcp", " 80"},
		{"tcp", "1.5"},
		{"tcp", "host:0"},
		{"tcp", "host:65536"},
		{"tcp", "0:host:80"},
		{"tcp", "h:0:host:80"},
		{"tcp", "host:80x"},
		{"tcp", "host:0:"},
		// unknown service
		{"tcp", "nosuchservice-wirefs"},
		{"tcp", "host:nosuchservice-wirefs"},
		{"tcp", "ht%tp"},
		{"tcp", "http/tcp"},
		// bad brackets
		{"tcp", "[::1:80"},
		{"tcp", "::1]:80"},
		{"tcp", "[[::1]]:80"},
		{"tcp", "[::1]]:80"},
		{"tcp", "[]:80"},
		{"tcp", "[127.0.0.1]:80"},
		{"tcp", "[::ffff:1.2.3.4%eth0]:80"},
		{"tcp", "[host]:80"},
		{"tcp", "[::1]x:80"},
		{"tcp", "x[::1]:80"},
		{"tcp", "[::1%]:80"},
		{"tcp", "80[::1]"},
		// bad host names
		{"tcp", ".host:80"},
		{"tcp", "-host:80"},
		{"tcp", "a..b:80"},
		{"tcp", "ho st:80"},
		{"tcp", "höst:80"},
		{"tcp", "1.2.3.4%eth0:80"},
		{"tcp", strings.Repeat("a", 254) + ":80"},
		{"tcp", "host/x:80"},
		// colon-free spelling
		{"tcp", "+"},
		{"tcp", "+80"},
		{"tcp", "host+"},
		{"tcp", "a+b+c+d+e"},
		{"tcp", "++1+80"},   // IPv6 without brackets
		{"tcp", "[++1+80"},  // unbalanced
		{"tcp", "[::1]+80"}, // mixed: ':' inside, '+' outside
		{"tcp", "[++1]:80"}, // mixed: '+' inside, ':' outside
		{"tcp", "127.0.0.1+80::"},
		{"tcp", "127.0.0.1:80++"},
		{"tcp", "2000+127.0.0.1:80"},
		{"tcp", "host+80!"},         // '!' on a client
		{"tcp", "[fe80::1%a:b]:80"}, // a zone with ':' (no Linux interface has one)
		{"tcp", "[fe80++1%a:b]+80"},
	}
	for _, tt := range tests {
		t.Run(tt.proto+"/"+tt.in, func(t *testing.T) {
			n, err := ParseName(tt.proto, tt.in)
			if err == nil {
				t.Fatalf("ParseName(%q, %q) = %+v, want EINVAL", tt.proto, tt.in, n)
			}
			if e := ns.Errno(err); e != syscall.EINVAL {
				t.Errorf("ParseName(%q, %q): errno %v (%v), want EINVAL", tt.proto, tt.in, e, err)
			}
			var nerr *ns.Error
			if !errors.As(err, &nerr) || !strings.Contains(nerr.Msg, tt.proto+"/") {
				t.Errorf("error %q does not name the file", err)
			}
			if n != (Name{}) {
				t.Errorf("failed parse returned non-zero Name %+v", n)
			}
		})
	}
}

func TestParseNameLongHostLimit(t *testing.T) {
	h := strings.Repeat("a", 253)
	n, err := ParseName("tcp", h+":80")
	if err != nil || n.Remote.Host != h {
		t.Fatalf("253-byte host: %+v, %v", n, err)
	}
}

func TestNameStringExplicitClient(t *testing.T) {
	// String spells every role; a server with a host keeps its "::".
	n := Name{Role: Server, Local: Endpoint{"::1", 9}, Explicit: true}
	if s := n.String(); s != "[::1]:9::!" {
		t.Fatalf("String() = %q", s)
	}
}

func TestParseHeader(t *testing.T) {
	good := []struct {
		in     string
		addr   string
		length int
	}{
		{"127.0.0.1 80 5", "127.0.0.1:80", 5},
		{"127.0.0.1 80 0", "127.0.0.1:80", 0},
		{"::1 53 65535", "[::1]:53", 65535},
		{"[::1] 53 1", "[::1]:53", 1},
		{"fe80::1%eth0 9 3", "[fe80::1%eth0]:9", 3},
		{"  10.0.0.1\t65535   12 ", "10.0.0.1:65535", 12},
		{"::ffff:127.0.0.1 7 1", "[::ffff:127.0.0.1]:7", 1},
		{"127.0.0.1 080 007", "127.0.0.1:80", 7},
	}
	for _, tt := range good {
		a, n, err := ParseHeader(tt.in)
		if err != nil {
			t.Errorf("ParseHeader(%q): %v", tt.in, err)
			continue
		}
		if a != netip.MustParseAddrPort(tt.addr) || n != tt.length {
			t.Errorf("ParseHeader(%q) = %v, %d; want %v, %d", tt.in, a, n, tt.addr, tt.length)
		}
	}
	bad := []string{
		"",
		"127.0.0.1",
		"127.0.0.1 80",
		"127.0.0.1 80 5 6",
		"localhost 80 5",
		"127.0.0.1 0 5",
		"127.0.0.1 65536 5",
		"127.0.0.1 -1 5",
		"127.0.0.1 80 -1",
		"127.0.0.1 80 65536",
		"127.0.0.1 80 x",
		"127.0.0.1 http 5",
		"1.2.3.4.5 80 5",
		"[127.0.0.1 80 5]",
		"[::1 80 5",
		"::1] 80 5",
		"[[::1]] 80 5",
		"[127.0.0.1] 80 5 x",
	}
	for _, in := range bad {
		if a, n, err := ParseHeader(in); err == nil {
			t.Errorf("ParseHeader(%q) = %v, %d; want EINVAL", in, a, n)
		} else if ns.Errno(err) != syscall.EINVAL {
			t.Errorf("ParseHeader(%q): errno %v, want EINVAL", in, ns.Errno(err))
		}
	}
}

// TestParseHeaderEchoesPeerHost: the header a server's read produces (with
// peerHost, IPv6 without brackets) must parse back to the same peer, so a
// program can echo headers back. A zone is an interface name, and Linux
// interface names may end in ']' (dev_valid_name only forbids '/', ':' and
// white space).
func TestParseHeaderEchoesPeerHost(t *testing.T) {
	for _, s := range []string{"127.0.0.1", "::1", "fe80::1%eth0", "fe80::1%br]", "fe80::1%[x]"} {
		a := netip.MustParseAddr(s)
		ap := netip.AddrPortFrom(a, 4242)
		hdr := peerHost(a) + " 4242 3"
		got, n, err := ParseHeader(hdr)
		if err != nil || got != ap || n != 3 {
			t.Errorf("ParseHeader(%q) = %v, %d, %v; want %v, 3", hdr, got, n, err, ap)
		}
	}
}

func FuzzParseName(f *testing.F) {
	for _, s := range []string{
		"80", "80!", "http", "127.0.0.1:80", "127.0.0.1:80::", "127.0.0.1:80::!",
		"2000:127.0.0.1:80", "127.0.0.1:2000:127.0.0.1:80", "[::1]:80",
		"[fe80::1%eth0]:80", "[fe80::1%eth0]:80::!", "[::ffff:1.2.3.4]:80",
		"host.example:https", "", "!", "::", "[::1", "::1:80", "0", "65536",
		"a:b:c:d:e", "[[::1]]:80", "[fe80::1%a:b]:80",
		"127.0.0.1+80", "[++1]+80", "127.0.0.1+80++!", "2000+[++1]+80",
		"[fe80++1%eth+0]+80", "[::1]+80", "host+80::",
	} {
		f.Add("tcp", s)
	}
	f.Add("udp", "domain")
	f.Add("udp", "[::1]:53::!")
	f.Fuzz(func(t *testing.T, proto, s string) {
		if proto != "udp" {
			proto = "tcp"
		}
		n, err := ParseName(proto, s)
		if err != nil {
			if ns.Errno(err) != syscall.EINVAL {
				t.Fatalf("ParseName(%q, %q): errno %v, want EINVAL", proto, s, ns.Errno(err))
			}
			return
		}
		if n.Role == Client && n.Explicit {
			t.Fatalf("ParseName(%q, %q) accepted '!' on a client: %+v", proto, s, n)
		}
		if n.Local.Port < 0 || n.Local.Port > 65535 || n.Remote.Port < 0 || n.Remote.Port > 65535 {
			t.Fatalf("ParseName(%q, %q): port out of range: %+v", proto, s, n)
		}
		if n.Role == Server && n.Local.Port == 0 || n.Role == Client && n.Remote.Port == 0 {
			t.Fatalf("ParseName(%q, %q): port 0 accepted: %+v", proto, s, n)
		}
		for _, h := range []string{n.Local.Host, n.Remote.Host} {
			if a, err := netip.ParseAddr(h); err == nil && a.String() != h {
				t.Fatalf("ParseName(%q, %q): numeric host %q not canonical", proto, s, h)
			}
		}
		canon := n.String()
		again, err := ParseName(proto, canon)
		if err != nil {
			t.Fatalf("ParseName(%q, %q) = %+v, but its String() %q does not parse: %v", proto, s, n, canon, err)
		}
		if again != n {
			t.Fatalf("ParseName(%q, %q) = %+v; String() %q reparses to %+v", proto, s, n, canon, again)
		}
		if again.String() != canon {
			t.Fatalf("String() not stable: %q then %q", canon, again.String())
		}
		// Both spellings of every name mean the same.
		other := otherSpelling(s)
		alt, err := ParseName(proto, other)
		if err != nil || alt != n {
			t.Fatalf("ParseName(%q, %q) = %+v, but its other spelling %q gives %+v, %v", proto, s, n, other, alt, err)
		}
	})
}

// otherSpelling turns a name's ':' into '+' or its '+' into ':', except
// in a zone (from '%' to ']'), whichever separator the name uses.
func otherSpelling(s string) string {
	from, to := byte(':'), byte('+')
	if !strings.Contains(s, ":") {
		from, to = to, from
	}
	b := []byte(s)
	inZone := false
	for i, c := range b {
		switch {
		case c == '%':
			inZone = true
		case c == ']':
			inZone = false
		case c == from && !inZone:
			b[i] = to
		}
	}
	return string(b)
}

func FuzzParseHeader(f *testing.F) {
	for _, s := range []string{
		"127.0.0.1 80 5", "::1 53 0", "[::1] 53 1", "fe80::1%eth0 9 65535",
		"  10.0.0.1\t1   12 ", "127.0.0.1 0 5", "127.0.0.1 80 65536", "", "a b c",
		"::ffff:127.0.0.1 7 1", "127.0.0.1 80 5 6",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		a, n, err := ParseHeader(line)
		if err != nil {
			if ns.Errno(err) != syscall.EINVAL {
				t.Fatalf("ParseHeader(%q): errno %v, want EINVAL", line, ns.Errno(err))
			}
			return
		}
		if !a.IsValid() || a.Port() == 0 || n < 0 || n > maxDatagram {
			t.Fatalf("ParseHeader(%q) = %v, %d: out of range", line, a, n)
		}
		// The spelling the server's reads use (peerHost: IPv6 without
		// brackets) must come back as the same destination.
		hdr := a.Addr().String() + " " + strconv.Itoa(int(a.Port())) + " " + strconv.Itoa(n)
		a2, n2, err := ParseHeader(hdr)
		if err != nil || a2 != a || n2 != n {
			t.Fatalf("ParseHeader(%q) = %v, %d; reformatted %q gives %v, %d, %v", line, a, n, hdr, a2, n2, err)
		}
		// So must the bracketed spelling, which ParseHeader also accepts
		// ("[v6] PORT LENGTH").
		if a.Addr().Is6() {
			hdr = "[" + a.Addr().String() + "] " + strconv.Itoa(int(a.Port())) + " " + strconv.Itoa(n)
			a2, n2, err = ParseHeader(hdr)
			if err != nil || a2 != a || n2 != n {
				t.Fatalf("ParseHeader(%q) = %v, %d; bracketed %q gives %v, %d, %v", line, a, n, hdr, a2, n2, err)
			}
		}
	})
}
