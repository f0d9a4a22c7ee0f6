// Package addr parses the one server syntax of wirefs, "[user@]host[:port]":
// the server part of ftp/, ftps/, http/, https/, sftp/ and 9p/ names and of
// the remote roots of the mounts file. Each protocol adds its own default
// port and its own rules on top (sftp resolves Host aliases of
// ~/.ssh/config; 9P reads the user as a uid or a user name).
//
// The rules, decided once (docs/wirefs.md, REMOTE FILES, says the same):
//
//   - user: everything before the LAST '@', as OpenSSH reads
//     "ssh a@b@host" (the user is "a@b"); it may not be empty ("@host"), and
//     may not hold ':' (a password does not belong in a name that shows in
//     paths, listings and logs; ~/.netrc and the askpass program give
//     passwords) or '/'.
//   - host: a name (any characters but white space, control characters and
//     / \ @ [ ] ? # % :), an IPv4 address, or an IPv6 address. An IPv6
//     address followed by a port must be in brackets ("[::1]:22", RFC 3986
//     §3.2.2); without brackets every colon belongs to the address, so
//     "::1:22" is the address ::1:22, as ssh reads it. Brackets hold only
//     IPv6 addresses ("[host]" is an error). An IPv6 address may carry a
//     zone ("fe80::1%eth0", "[fe80::1%eth0]:22"), written literally, not
//     percent-encoded; zones are RFC 6874's unreserved characters
//     (letters, digits, - . _ ~).
//   - port: decimal digits, 1 to 65535; "host:" (an empty port) is an
//     error. Leading zeros are dropped ("h:022" is port 22).
//   - the name is valid UTF-8 without white space, control or other
//     invisible characters (unicode.IsPrint).
package addr

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Server is a parsed "[user@]host[:port]".
type Server struct {
	User string // "" when the name has none
	Host string // a name or an address; an IPv6 address without brackets, with its zone
	Port string // decimal, 1 to 65535, no leading zeros; "" when the name has none
}

// Error says why a server name is not "[user@]host[:port]".
type Error struct {
	Server string // the name, with anything after a ':' in the user replaced by "***"
	Reason string
}

func (e *Error) Error() string { return fmt.Sprintf("server %q: %s", e.Server, e.Reason) }

// hostSpecial are the characters a host name cannot hold: path and URL
// delimiters, and the characters of this syntax itself.
const hostSpecial = `/\@[]?#%:`

// Parse parses s, "[user@]host[:port]"; see the package comment for the
// rules. Errors are *Error.
func Parse(s string) (Server, error) {
	fail := func(format string, args ...any) (Server, error) {
		return Server{}, &Error{Server: redact(s), Reason: fmt.Sprintf(format, args...)}
	}
	if s == "" {
		return fail("empty server name")
	}
	if !utf8.ValidString(s) {
		return fail("not valid UTF-8")
	}
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			return fail("white space %q in the name", r)
		case !unicode.IsPrint(r):
			return fail("control or invisible character %q in the name", r)
		}
	}
	var sv Server
	hostport := s
	if at := strings.LastIndexByte(s, '@'); at >= 0 {
		sv.User, hostport = s[:at], s[at+1:]
		switch {
		case sv.User == "":
			return fail("empty user name before '@'")
		case strings.Contains(sv.User, ":"):
			return fail("':' in the user name: a password does not belong in a server name (use ~/.netrc or $WIREFS_ASKPASS)")
		case strings.Contains(sv.User, "/"):
			return fail("'/' in the user name")
		}
	}
	if hostport == "" {
		return fail("empty host name")
	}
	port, hasPort := "", false
	switch {
	case hostport[0] == '[':
		end := strings.IndexByte(hostport, ']')
		if end < 0 {
			return fail("'[' without ']'")
		}
		sv.Host = hostport[1:end]
		rest := hostport[end+1:]
		if sv.Host == "" {
			return fail("empty host name in '[]'")
		}
		if why := checkIPv6(sv.Host); why != "" {
			return fail("brackets hold only IPv6 addresses: %s", why)
		}
		if rest != "" {
			if rest[0] != ':' {
				return fail("%q after ']' (want [IPV6]:PORT)", rest)
			}
			port, hasPort = rest[1:], true
		}
	case strings.Count(hostport, ":") > 1:
		// Unbracketed, every colon is the address's: "::1:22" is one
		// address, as for ssh; a port needs "[::1]:22".
		sv.Host = hostport
		if why := checkIPv6(sv.Host); why != "" {
			return fail("more than one ':' but %s (a port after an IPv6 address needs brackets: [ADDRESS]:PORT)", why)
		}
	default:
		sv.Host, port, hasPort = strings.Cut(hostport, ":")
		if sv.Host == "" {
			return fail("empty host name")
		}
		if i := strings.IndexAny(sv.Host, hostSpecial); i >= 0 {
			if sv.Host[i] == '%' {
				return fail("'%%' (a zone) may only follow an IPv6 address")
			}
			return fail("%q cannot be in a host name", sv.Host[i])
		}
	}
	if hasPort {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || strings.Trim(port, "0123456789") != "" {
			if port == "" {
				return fail("empty port after ':'")
			}
			return fail("port %q is not a number from 1 to 65535", port)
		}
		sv.Port = strconv.Itoa(n)
	}
	return sv, nil
}

// checkIPv6 returns "" when h is an IPv6 address (with an optional zone
// of unreserved characters), else why not.
func checkIPv6(h string) string {
	a, err := netip.ParseAddr(h)
	if err != nil || !a.Is6() {
		return fmt.Sprintf("%q is not an IPv6 address", h)
	}
	if zone := a.Zone(); strings.Trim(zone, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~") != "" {
		return fmt.Sprintf("zone %q may hold only letters, digits and - . _ ~", zone)
	}
	return ""
}

// String is the canonical form, which Parse reads back as s: the host in
// brackets when it is an IPv6 address, the port only when s has one.
func (s Server) String() string {
	hp := s.HostPort("")
	if s.User != "" {
		return s.User + "@" + hp
	}
	return hp
}

// HostPort is the address to dial, "host:port" ("[v6]:port"), with
// defaultPort when s names no port. With neither, it is the host alone,
// bracketed when it is an IPv6 address, as a URL's authority writes it.
func (s Server) HostPort(defaultPort string) string {
	port := s.Port
	if port == "" {
		port = defaultPort
	}
	if port != "" {
		return net.JoinHostPort(s.Host, port)
	}
	if strings.Contains(s.Host, ":") {
		return "[" + s.Host + "]"
	}
	return s.Host
}

// redact hides what follows a ':' in the user part of s, where a
// password would be, so that errors never show one.
func redact(s string) string {
	at := strings.LastIndexByte(s, '@')
	if at < 0 {
		return s
	}
	if c := strings.IndexByte(s[:at], ':'); c >= 0 {
		return s[:c+1] + "***" + s[at:]
	}
	return s
}
