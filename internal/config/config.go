// Package config reads the user's mount points: a file that maps local
// prefixes of the namespace to remote roots, with per-mount options, as in
// Ufo's mount table. The implicit roots (http/, sftp/, ...) are default
// entries of the same table and need no line.
//
// The file is line based; '#' starts a comment:
//
//	# prefix   remote root                     options (comma or space separated)
//	/csftp  →  ftp://ftp.example.org/pub,      read_timeout=60s
//	src        sftp://me@build/home/me/src     t_read=5s t_write=0
//	# per-file bounds: a file, or a subtree when the URL ends in "/"
//	file       sftp://me@build/home/me/live.log t_read=0
//	# portals (portal.go): open runs a provider
//	portal sorted exec sort
//
// The arrow ("→" or "->") and the commas are optional.
package config

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"wirefs/internal/remote/addr"
)

// Schemes are the protocols a remote root may name, in the order an error
// lists them; the command's protocol registry (protocols.Remote) is the
// one set wirefs uses.
type Schemes interface {
	Has(scheme string) bool
	Schemes() []string
}

// Root is a remote root: protocol, server ("[user@]host[:port]") and the
// server path ("/..."), as parsed from "sftp://me@host:22/home/me".
type Root struct {
	Scheme string
	Server string
	Path   string
}

// String is the URL form.
func (r Root) String() string { return r.Scheme + "://" + r.Server + r.Path }

// ParseRoot parses a URL name such as "http://host/x", "ftp://me@h/pub" or
// "sftp://alias/home/me" whose scheme is one of schemes. The path is
// cleaned; it never leaves "/".
func ParseRoot(s string, schemes Schemes) (Root, error) {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok || !schemes.Has(scheme) {
		return Root{}, fmt.Errorf("%q: not a remote root (want SCHEME://[USER@]HOST[:PORT]/PATH with SCHEME one of %s)",
			s, strings.Join(schemes.Schemes(), ", "))
	}
	server, p, _ := strings.Cut(rest, "/")
	if _, err := addr.Parse(server); err != nil {
		return Root{}, fmt.Errorf("%q: %v", s, err)
	}
	return Root{Scheme: scheme, Server: server, Path: path.Clean("/" + p)}, nil
}

// Options are the settings of remote files at one level of the options
// model: the command line, a mount line, a per-file line. Every field is
// optional: nil means "not given at this level", and the level below
// applies (see Over); a value given is used as it is, zero included, so
// t_read=0 is "validate on every open", not "unset". Each field names its
// mount option and says what its zero value means.
type Options struct {
	// TRead, t_read: attributes, listings and data are trusted this long
	// after they were validated with the server; 0: validate on every open.
	TRead *time.Duration
	// TWrite, t_write: dirty data is written back this long after the
	// last close; 0: before close(2) returns.
	TWrite *time.Duration
	// AgePercent, age_percent (0-100): trust a file at most this percentage
	// of its age (now - mtime), as in Alex; 0: off.
	AgePercent *int
	// DirTTL, dir_ttl: directory listings are trusted this long; 0: not at
	// all. Unset at every level: TRead.
	DirTTL *time.Duration
	// ReadTimeout, read_timeout: a server that makes no progress this long
	// fails the call with ETIMEDOUT; 0: the protocol's own default.
	ReadTimeout *time.Duration
	// ConnectTimeout, connect_timeout: connecting and logging in; 0: the
	// protocol's own default.
	ConnectTimeout *time.Duration
	// ReadAhead, read_ahead: bytes fetched beyond a read that misses the
	// cache; 0: none.
	ReadAhead *int64
	// PrefetchRequests, prefetch_requests: background requests (files
	// fetched, directories listed ahead) in flight per server; 0: no
	// prefetch.
	PrefetchRequests *int
	// PrefetchDir, prefetch_dir: bytes of one directory's files fetched
	// ahead once a program that listed it reads one; 0: none.
	PrefetchDir *int64
	// PrefetchFile, prefetch_file: the largest file fetched ahead; 0: none.
	PrefetchFile *int64
	// ReaddirAhead, readdir_ahead: subdirectories listed ahead when a
	// program lists a directory; 0: none.
	ReaddirAhead *int
	// FTPConnections, ftp_connections: FTP control connections per
	// server (each carries one transfer), 1-256.
	FTPConnections *int
	// ReadOnly, ro: refuse every change with EROFS.
	ReadOnly *bool
	// AcceptNewHostKeys, accept_new_host_keys: SFTP adds unknown host keys
	// to known_hosts.
	AcceptNewHostKeys *bool
}

// Over is the one merge rule of options: the fields o gives, and base's
// where o gives none. The levels, lowest first: the command line (whose
// flags always give their defaults), a mount line (or none, for the
// protocol roots), a per-file line (t_read and t_write only; the cache
// applies it, cache.FileOptions):
//
//	effective := fileLine.Over(mountLine.Over(commandLine))
func (o Options) Over(base Options) Options {
	return Options{
		TRead:             or(o.TRead, base.TRead),
		TWrite:            or(o.TWrite, base.TWrite),
		AgePercent:        or(o.AgePercent, base.AgePercent),
		DirTTL:            or(o.DirTTL, base.DirTTL),
		ReadTimeout:       or(o.ReadTimeout, base.ReadTimeout),
		ConnectTimeout:    or(o.ConnectTimeout, base.ConnectTimeout),
		ReadAhead:         or(o.ReadAhead, base.ReadAhead),
		PrefetchRequests:  or(o.PrefetchRequests, base.PrefetchRequests),
		PrefetchDir:       or(o.PrefetchDir, base.PrefetchDir),
		PrefetchFile:      or(o.PrefetchFile, base.PrefetchFile),
		ReaddirAhead:      or(o.ReaddirAhead, base.ReaddirAhead),
		FTPConnections:    or(o.FTPConnections, base.FTPConnections),
		ReadOnly:          or(o.ReadOnly, base.ReadOnly),
		AcceptNewHostKeys: or(o.AcceptNewHostKeys, base.AcceptNewHostKeys),
	}
}

func or[T any](p, base *T) *T {
	if p != nil {
		return p
	}
	return base
}

// Empty reports whether o gives no option.
func (o Options) Empty() bool { return o == Options{} }

// Value is *p, or the zero value when p is nil.
func Value[T any](p *T) T {
	var v T
	if p != nil {
		v = *p
	}
	return v
}

// Mount is one mount-point line of the file.
type Mount struct {
	Prefix string // clean, without the leading slash
	Root   Root
	Opts   Options
	Line   int
}

// File is a "file URL t_read=... t_write=..." line: consistency bounds for
// one file, or for a subtree when Subtree (the URL ended in "/"). Opts
// gives TRead and/or TWrite, nothing else.
type File struct {
	Root    Root
	Subtree bool
	Opts    Options
	Line    int
}

// Table is the whole file: mount points, per-file bounds and portals.
type Table struct {
	Mounts  []Mount
	Files   []File
	Portals []Portal
}

// Parse reads the text of a mount file, whose remote roots name schemes.
// Errors name the line.
func Parse(text string, schemes Schemes) (Table, error) {
	var out Table
	for i, line := range strings.Split(text, "\n") {
		if isPortalLine(line) {
			// Before cutting comments: a portal's words may quote '#'.
			p, err := parsePortal(line)
			if err != nil {
				return Table{}, fmt.Errorf("line %d: %v", i+1, err)
			}
			p.Line = i + 1
			out.Portals = append(out.Portals, p)
			continue
		}
		if c := strings.IndexByte(line, '#'); c >= 0 {
			line = line[:c]
		}
		var f []string
		for _, w := range strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' || r == ',' || r == '\r' }) {
			if w != "→" && w != "->" {
				f = append(f, w)
			}
		}
		if len(f) == 0 {
			continue
		}
		if len(f) < 2 {
			return Table{}, fmt.Errorf("line %d: want PREFIX REMOTE-ROOT [OPTIONS] or file URL OPTIONS", i+1)
		}
		if f[0] == "file" {
			fl, err := parseFile(f[1:], schemes)
			if err != nil {
				return Table{}, fmt.Errorf("line %d: %v", i+1, err)
			}
			fl.Line = i + 1
			out.Files = append(out.Files, fl)
			continue
		}
		prefix := strings.Trim(path.Clean("/"+f[0]), "/")
		if prefix == "" {
			return Table{}, fmt.Errorf("line %d: the prefix cannot be the root", i+1)
		}
		root, err := ParseRoot(f[1], schemes)
		if err != nil {
			return Table{}, fmt.Errorf("line %d: %v", i+1, err)
		}
		opts, err := ParseOptions(f[2:])
		if err != nil {
			return Table{}, fmt.Errorf("line %d: %v", i+1, err)
		}
		out.Mounts = append(out.Mounts, Mount{Prefix: prefix, Root: root, Opts: opts, Line: i + 1})
	}
	return out, nil
}

// parseFile parses the words after "file": a URL and bounds.
func parseFile(words []string, schemes Schemes) (File, error) {
	root, err := ParseRoot(words[0], schemes)
	if err != nil {
		return File{}, err
	}
	opts, err := ParseOptions(words[1:])
	if err != nil {
		return File{}, err
	}
	bounds := Options{TRead: opts.TRead, TWrite: opts.TWrite}
	if opts != bounds {
		for _, w := range words[1:] {
			if k, _, _ := strings.Cut(w, "="); k != "t_read" && k != "t_write" {
				return File{}, fmt.Errorf("option %s is per mount; a file line takes t_read and t_write", k)
			}
		}
	}
	if bounds.Empty() {
		return File{}, fmt.Errorf("a file line needs t_read or t_write")
	}
	return File{Root: root, Subtree: strings.HasSuffix(words[0], "/"), Opts: bounds}, nil
}

// option is one option of a mounts-file line: its name, and how its value
// (a flag has none) sets o.
type option struct {
	name string
	flag bool
	set  func(o *Options, v string) error
}

// options are the options a mounts-file line takes, in the order an error
// lists them.
func options() []option {
	return []option{
		{name: "t_read", set: func(o *Options, v string) (err error) { o.TRead, err = duration(v); return err }},
		{name: "t_write", set: func(o *Options, v string) (err error) { o.TWrite, err = duration(v); return err }},
		{name: "age_percent", set: func(o *Options, v string) error {
			n, err := strconv.Atoi(v)
			if err == nil && (n < 0 || n > 100) {
				err = fmt.Errorf("not in 0..100")
			}
			o.AgePercent = &n
			return err
		}},
		{name: "dir_ttl", set: func(o *Options, v string) (err error) { o.DirTTL, err = duration(v); return err }},
		{name: "read_timeout", set: func(o *Options, v string) (err error) { o.ReadTimeout, err = duration(v); return err }},
		{name: "connect_timeout", set: func(o *Options, v string) (err error) { o.ConnectTimeout, err = duration(v); return err }},
		{name: "read_ahead", set: func(o *Options, v string) error {
			n, err := ParseSize(v)
			o.ReadAhead = &n
			return err
		}},
		{name: "prefetch_requests", set: func(o *Options, v string) (err error) { o.PrefetchRequests, err = count(v); return err }},
		{name: "prefetch_dir", set: func(o *Options, v string) error {
			n, err := ParseSize(v)
			o.PrefetchDir = &n
			return err
		}},
		{name: "prefetch_file", set: func(o *Options, v string) error {
			n, err := ParseSize(v)
			o.PrefetchFile = &n
			return err
		}},
		{name: "readdir_ahead", set: func(o *Options, v string) (err error) { o.ReaddirAhead, err = count(v); return err }},
		{name: "ftp_connections", set: func(o *Options, v string) error {
			n, err := strconv.Atoi(v)
			if err == nil && (n < 1 || n > MaxFTPConnections) {
				err = fmt.Errorf("not in 1..%d", MaxFTPConnections)
			}
			o.FTPConnections = &n
			return err
		}},
		{name: "ro", flag: true, set: func(o *Options, _ string) error { o.ReadOnly = new(true); return nil }},
		{name: "accept_new_host_keys", flag: true, set: func(o *Options, _ string) error { o.AcceptNewHostKeys = new(true); return nil }},
	}
}

// MaxFTPConnections bounds ftp_connections and --ftp-connections.
const MaxFTPConnections = 256

// duration parses a duration that is not negative.
func duration(v string) (*time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err == nil && d < 0 {
		err = fmt.Errorf("negative")
	}
	return &d, err
}

// count parses a number of requests or directories: 0 to 4096.
func count(v string) (*int, error) {
	n, err := strconv.Atoi(v)
	if err == nil && (n < 0 || n > 4096) {
		err = fmt.Errorf("not in 0..4096")
	}
	return &n, err
}

// ParseOptions parses "key=value" words (and the flags "ro",
// "accept_new_host_keys"). The options not named stay unset.
func ParseOptions(words []string) (Options, error) {
	var o Options
	known := options()
	for _, w := range words {
		k, v, hasValue := strings.Cut(w, "=")
		i := slices.IndexFunc(known, func(op option) bool { return op.name == k })
		if i < 0 {
			names := make([]string, len(known))
			for j, op := range known {
				names[j] = op.name
			}
			return o, fmt.Errorf("unknown option %q (known: %s)", k, strings.Join(names, ", "))
		}
		if hasValue == known[i].flag {
			if known[i].flag {
				return o, fmt.Errorf("option %q takes no value", k)
			}
			return o, fmt.Errorf("option %q needs a value (%s=...)", k, k)
		}
		if err := known[i].set(&o, v); err != nil {
			return o, fmt.Errorf("option %s=%q: %v", k, v, err)
		}
	}
	return o, nil
}

// ParseSize parses a byte count with an optional k, m or g suffix.
func ParseSize(s string) (int64, error) {
	mult := int64(1)
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'k', 'K':
			mult = 1 << 10
		case 'm', 'M':
			mult = 1 << 20
		case 'g', 'G':
			mult = 1 << 30
		}
		if mult != 1 {
			s = s[:n-1]
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 || v > (1<<40)/mult {
		return 0, fmt.Errorf("not a size")
	}
	return v * mult, nil
}

// DefaultFile is $XDG_CONFIG_HOME/wirefs/mounts (~/.config/wirefs/mounts).
func DefaultFile(home string) string {
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "wirefs", "mounts")
	}
	return filepath.Join(home, ".config", "wirefs", "mounts")
}

// Load reads file, whose remote roots name schemes; a missing file is an
// empty table unless required.
func Load(file string, required bool, schemes Schemes) (Table, error) {
	data, err := os.ReadFile(file)
	if os.IsNotExist(err) && !required {
		return Table{}, nil
	}
	if err != nil {
		return Table{}, err
	}
	t, err := Parse(string(data), schemes)
	if err != nil {
		return Table{}, fmt.Errorf("%s: %v", file, err)
	}
	return t, nil
}
