// Package protocols is the one table of the remote-file protocols of
// wirefs: for each, its scheme (the namespace root "sftp/" and the URL
// scheme "sftp://" of the mounts file and of URL names), what the manual
// calls it, its default port, its dialer and whether its servers can be
// written. The command builds the table once (Remote) and passes it to
// whoever needs it: the namespace (a root per protocol), the mounts-file
// parser (which schemes a remote root may name, and the list an error
// gives), the catcher's URL names. A Registry cannot change once built.
//
// The providers do not register themselves (no init side effects, no
// mutable global): this package imports them, and a new protocol is one
// row of Remote.
package protocols

import (
	"fmt"
	"slices"
	"strings"

	"wirefs/internal/provider/ftp"
	"wirefs/internal/provider/http"
	"wirefs/internal/provider/ninep"
	"wirefs/internal/provider/sftp"
	"wirefs/internal/remote"
)

// Protocol is one row of the table.
type Protocol struct {
	// Scheme names the protocol in the namespace ("sftp/me@host/...") and
	// in URLs ("sftp://me@host/..."): lower-case letters, digits, '+',
	// '-' and '.', starting with a letter or digit.
	Scheme string
	// Doc is what docs/wirefs.md calls it: "SFTP", "9P2000.L".
	Doc string
	// DefaultPort is the port of a server name without one (for SFTP,
	// ~/.ssh/config's Port comes first). The dialers apply their own; this
	// is the documented value, kept equal to the manual by a test.
	DefaultPort int
	// Dial starts a session; TLS is passed to it in remote.Options (https,
	// ftps are the secure variants of one dialer).
	Dial remote.Dialer
	TLS  bool
	// Writable: the servers can be written. False (HTTP) makes every
	// change EROFS, whatever the mount's options.
	Writable bool
}

// Registry is an immutable table of protocols, in the order given to New
// (the order of listings, help texts and error messages).
type Registry struct {
	list []Protocol
}

// New builds a registry of ps. Schemes must be valid and distinct, ports
// 1-65535, dialers and documentation names present.
func New(ps ...Protocol) (*Registry, error) {
	seen := map[string]bool{}
	for _, p := range ps {
		switch {
		case !validScheme(p.Scheme):
			return nil, fmt.Errorf("protocols: %q is not a scheme", p.Scheme)
		case seen[p.Scheme]:
			return nil, fmt.Errorf("protocols: %s is registered twice", p.Scheme)
		case p.Dial == nil:
			return nil, fmt.Errorf("protocols: %s has no dialer", p.Scheme)
		case p.Doc == "":
			return nil, fmt.Errorf("protocols: %s has no documentation name", p.Scheme)
		case p.DefaultPort < 1 || p.DefaultPort > 65535:
			return nil, fmt.Errorf("protocols: %s: default port %d", p.Scheme, p.DefaultPort)
		}
		seen[p.Scheme] = true
	}
	return &Registry{list: slices.Clone(ps)}, nil
}

// validScheme: RFC 3986's scheme characters, lower case (the namespace
// names are case-sensitive; a digit may come first, as in "9p").
func validScheme(s string) bool {
	if s == "" || strings.ContainsAny(s[:1], "+-.") {
		return false
	}
	for _, r := range s {
		if !('a' <= r && r <= 'z' || '0' <= r && r <= '9' || strings.ContainsRune("+-.", r)) {
			return false
		}
	}
	return true
}

// Remote is the table of wirefs's remote-file protocols.
func Remote() *Registry {
	r, err := New(
		Protocol{Scheme: "http", Doc: "HTTP", DefaultPort: http.DefaultPort, Dial: http.Dial},
		Protocol{Scheme: "https", Doc: "HTTPS", DefaultPort: http.DefaultTLSPort, Dial: http.Dial, TLS: true},
		Protocol{Scheme: "ftp", Doc: "FTP", DefaultPort: ftp.DefaultPort, Dial: ftp.Dial, Writable: true},
		Protocol{Scheme: "ftps", Doc: "FTPS", DefaultPort: ftp.DefaultPort, Dial: ftp.Dial, TLS: true, Writable: true},
		Protocol{Scheme: "sftp", Doc: "SFTP", DefaultPort: sftp.DefaultPort, Dial: sftp.Dial, Writable: true},
		Protocol{Scheme: "9p", Doc: "9P2000.L", DefaultPort: ninep.DefaultPort, Dial: ninep.Dial, Writable: true},
	)
	if err != nil {
		panic(err) // the table above is wrong; TestRemote says so first
	}
	return r
}

// Lookup returns the protocol of scheme.
func (r *Registry) Lookup(scheme string) (Protocol, bool) {
	for _, p := range r.list {
		if p.Scheme == scheme {
			return p, true
		}
	}
	return Protocol{}, false
}

// Has reports whether scheme is registered.
func (r *Registry) Has(scheme string) bool {
	_, ok := r.Lookup(scheme)
	return ok
}

// All returns the protocols in order (a copy).
func (r *Registry) All() []Protocol { return slices.Clone(r.list) }

// Schemes returns the schemes in order (a copy).
func (r *Registry) Schemes() []string {
	out := make([]string, len(r.list))
	for i, p := range r.list {
		out[i] = p.Scheme
	}
	return out
}
