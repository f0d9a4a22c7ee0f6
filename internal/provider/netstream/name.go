package netstream

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"syscall"

	"wirefs/internal/ns"
)

// Role says whether a name asks for a client (connect) or a server (bind).
type Role int

const (
	Client Role = iota
	Server
)

// Endpoint is one side of a channel. Host is "" for "any address", a
// numeric address (IPv6 without brackets, with an optional %zone) or a
// symbolic name the daemon resolves. Port 0 means "any port".
type Endpoint struct {
	Host string
	Port int
}

// Name is a parsed file name of seed 000, Table 3:
//
//	port[!]                 server on any address
//	addr:port               client
//	addr:port::[!]          server on one address
//	lport:addr:port         client from a fixed local port
//	laddr:lport:addr:port   client from a fixed local address and port
//
// IPv6 addresses go in brackets ([::1]:80, [fe80::1%eth0]:80); ports are
// decimal or service names from /etc/services.
//
// Every name has a second, colon-free spelling with '+' for each ':',
// inside the brackets of an IPv6 address too (127.0.0.1+80 for
// 127.0.0.1:80, [++1]+80 for [::1]:80, 127.0.0.1+80++! for
// 127.0.0.1:80::!), for the programs and formats that split on ':'
// (socat's addresses, URLs, PATH-like lists). '+' is never part of a host
// or service name, so the spellings cannot be confused; a name uses one
// separator throughout, and a zone (an interface name) is never rewritten.
type Name struct {
	Role     Role
	Local    Endpoint // server: where to bind; client: optional source
	Remote   Endpoint // client only
	Explicit bool     // "!": explicit client addressing (servers only)
}

// colonFree is the separator of the colon-free spelling of names.
const colonFree = '+'

// ParseName parses a file name under tcp/ (proto "tcp") or udp/ ("udp"),
// in either spelling. Errors are EINVAL with a message that says what is
// wrong.
func ParseName(proto, s string) (Name, error) {
	bad := func(format string, args ...any) (Name, error) {
		return Name{}, ns.Errorf(syscall.EINVAL, "%s/%s: "+format, append([]any{proto, s}, args...)...)
	}
	body, explicit := strings.CutSuffix(s, "!")
	sep := byte(':')
	if !strings.Contains(body, ":") {
		sep = colonFree
	}
	parts, err := splitName(body, sep)
	if err != nil {
		return bad("%v", err)
	}
	var n Name
	n.Explicit = explicit
	switch {
	case len(parts) == 1:
		n.Role = Server
		n.Local.Port, err = parsePort(proto, parts[0])
	case len(parts) == 4 && parts[2] == "" && parts[3] == "":
		n.Role = Server
		if n.Local.Host, err = parseHost(parts[0], sep); err == nil {
			n.Local.Port, err = parsePort(proto, parts[1])
		}
	case len(parts) >= 2 && len(parts) <= 4:
		n.Role = Client
		if len(parts) == 4 {
			if n.Local.Host, err = parseHost(parts[0], sep); err != nil {
				break
			}
		}
		if len(parts) >= 3 {
			if n.Local.Port, err = parsePort(proto, parts[len(parts)-3]); err != nil {
				break
			}
		}
		if n.Remote.Host, err = parseHost(parts[len(parts)-2], sep); err == nil {
			n.Remote.Port, err = parsePort(proto, parts[len(parts)-1])
		}
	default:
		return bad("want port, addr:port, addr:port::, lport:addr:port or laddr:lport:addr:port (or the same with '+' for ':')")
	}
	if err != nil {
		return bad("%v", err)
	}
	if n.Explicit && n.Role != Server {
		return bad(`"!" (explicit addressing) is only for servers`)
	}
	return n, nil
}

// splitName splits on sep outside of brackets, so "[::1]:80" is two parts.
// A colon-spelled name with '+' outside brackets mixes the two spellings.
func splitName(s string, sep byte) ([]string, error) {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			if depth > 0 {
				return nil, fmt.Errorf("nested '['")
			}
			depth++
		case ']':
			if depth == 0 {
				return nil, fmt.Errorf("unbalanced ']'")
			}
			depth--
		case sep:
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		case colonFree:
			if depth == 0 {
				return nil, fmt.Errorf("mixes ':' and '+': spell the name with one of them")
			}
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("unbalanced '['")
	}
	return append(parts, s[start:]), nil
}

func parsePort(proto, s string) (int, error) {
	if s == "" {
		return 0, fmt.Errorf("empty port")
	}
	if s[0] >= '0' && s[0] <= '9' {
		p, err := strconv.ParseUint(s, 10, 16)
		if err != nil || p == 0 {
			return 0, fmt.Errorf("port %q is not a number from 1 to 65535", s)
		}
		return int(p), nil
	}
	if !validLabelChars(s) {
		return 0, fmt.Errorf("port %q is not a number or service name", s)
	}
	p, err := net.LookupPort(proto, s)
	if err != nil || p == 0 {
		return 0, fmt.Errorf("unknown %s service %q (see /etc/services)", proto, s)
	}
	return p, nil
}

// parseHost parses a host of a name whose separator is sep: in the
// colon-free spelling, a bracketed IPv6 address has sep for ':' (but its
// zone is an interface name, kept as it is).
func parseHost(s string, sep byte) (string, error) {
	if s == "" {
		return "", fmt.Errorf("empty host")
	}
	if inner, ok := strings.CutPrefix(s, "["); ok {
		inner, ok = strings.CutSuffix(inner, "]")
		addr, zone, hasZone := strings.Cut(inner, "%")
		if sep != ':' {
			addr = strings.ReplaceAll(addr, string(sep), ":")
		}
		if hasZone {
			addr += "%" + zone
		}
		a, err := netip.ParseAddr(addr)
		// A zone is a Linux interface name, which cannot hold ':'; one
		// that did would have no colon-free spelling.
		if !ok || err != nil || !a.Is6() || a.Is4In6() && a.Zone() != "" || strings.Contains(zone, ":") {
			return "", fmt.Errorf("%q is not a bracketed IPv6 address", s)
		}
		return a.String(), nil
	}
	if a, err := netip.ParseAddr(s); err == nil {
		if a.Is6() {
			return "", fmt.Errorf("IPv6 address %q must be in brackets", s)
		}
		return a.String(), nil
	}
	if len(s) > 253 || !validLabelChars(s) || strings.Contains(s, "..") || s[0] == '.' || s[0] == '-' {
		return "", fmt.Errorf("%q is not a host name or address", s)
	}
	return s, nil
}

func validLabelChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return false
		}
	}
	return true
}

// formatHost writes a host the way a name spells it.
func formatHost(h string) string {
	if strings.Contains(h, ":") {
		return "[" + h + "]"
	}
	return h
}

// String returns the canonical spelling of n (numeric ports).
func (n Name) String() string {
	var s string
	switch {
	case n.Role == Server && n.Local.Host == "":
		s = strconv.Itoa(n.Local.Port)
	case n.Role == Server:
		s = formatHost(n.Local.Host) + ":" + strconv.Itoa(n.Local.Port) + "::"
	case n.Local.Host != "":
		s = formatHost(n.Local.Host) + ":" + strconv.Itoa(n.Local.Port) + ":" + formatHost(n.Remote.Host) + ":" + strconv.Itoa(n.Remote.Port)
	case n.Local.Port != 0:
		s = strconv.Itoa(n.Local.Port) + ":" + formatHost(n.Remote.Host) + ":" + strconv.Itoa(n.Remote.Port)
	default:
		s = formatHost(n.Remote.Host) + ":" + strconv.Itoa(n.Remote.Port)
	}
	if n.Explicit {
		s += "!"
	}
	return s
}
