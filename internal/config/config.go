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
//
// The arrow ("→" or "->") and the commas are optional.
package config

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"wirefs/internal/remote/addr"
)

// Schemes are the protocols a remote root may name, as namespace roots.
var Schemes = map[string]bool{"http": true, "https": true, "ftp": true, "ftps": true, "sftp": true, "9p": true}

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
// "sftp://alias/home/me". The path is cleaned; it never leaves "/".
func ParseRoot(s string) (Root, error) {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok || !Schemes[scheme] {
		return Root{}, fmt.Errorf("%q: not a remote root (want SCHEME://[USER@]HOST[:PORT]/PATH with SCHEME one of http, https, ftp, ftps, sftp, 9p)", s)
	}
	server, p, _ := strings.Cut(rest, "/")
	if _, err := addr.Parse(server); err != nil {
		return Root{}, fmt.Errorf("%q: %v", s, err)
	}
	return Root{Scheme: scheme, Server: server, Path: path.Clean("/" + p)}, nil
}

// Options are the per-mount settings. Zero fields mean the defaults.
type Options struct {
	TRead             time.Duration // t_read: trust attributes and data this long
	TWrite            time.Duration // t_write: write back this long after close
	AgePercent        int           // age_percent: trust for a percentage of the file's age
	DirTTL            time.Duration // dir_ttl: directory listings
	ReadTimeout       time.Duration // read_timeout: a stalled server fails after this
	ConnectTimeout    time.Duration // connect_timeout
	ReadAhead         int64         // read_ahead: bytes, with an optional k/m/g suffix
	ReadOnly          bool          // ro
	AcceptNewHostKeys bool          // accept_new_host_keys (sftp)
	Set               map[string]bool
}

// Mount is one mount-point line of the file.
type Mount struct {
	Prefix string // clean, without the leading slash
	Root   Root
	Opts   Options
	Line   int
}

// File is a "file URL t_read=... t_write=..." line: consistency bounds for
// one file, or for a subtree when Subtree (the URL ended in "/").
type File struct {
	Root    Root
	Subtree bool
	TRead   *time.Duration
	TWrite  *time.Duration
	Line    int
}

// Table is the whole file: mount points and per-file bounds.
type Table struct {
	Mounts []Mount
	Files  []File
}

// Parse reads the text of a mount file. Errors name the line.
func Parse(text string) (Table, error) {
	var out Table
	for i, line := range strings.Split(text, "\n") {
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
			fl, err := parseFile(f[1:])
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
		root, err := ParseRoot(f[1])
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
func parseFile(words []string) (File, error) {
	root, err := ParseRoot(words[0])
	if err != nil {
		return File{}, err
	}
	opts, err := ParseOptions(words[1:])
	if err != nil {
		return File{}, err
	}
	fl := File{Root: root, Subtree: strings.HasSuffix(words[0], "/")}
	for k := range opts.Set {
		switch k {
		case "t_read":
			fl.TRead = &opts.TRead
		case "t_write":
			fl.TWrite = &opts.TWrite
		default:
			return File{}, fmt.Errorf("option %s is per mount; a file line takes t_read and t_write", k)
		}
	}
	if fl.TRead == nil && fl.TWrite == nil {
		return File{}, fmt.Errorf("a file line needs t_read or t_write")
	}
	return fl, nil
}

// ParseOptions parses "key=value" words (and the flags "ro",
// "accept_new_host_keys").
func ParseOptions(words []string) (Options, error) {
	o := Options{Set: map[string]bool{}}
	for _, w := range words {
		k, v, hasValue := strings.Cut(w, "=")
		var err error
		dur := func(d *time.Duration) {
			if *d, err = time.ParseDuration(v); err == nil && *d < 0 {
				err = fmt.Errorf("negative")
			}
		}
		switch k {
		case "t_read":
			dur(&o.TRead)
		case "t_write":
			dur(&o.TWrite)
		case "dir_ttl":
			dur(&o.DirTTL)
		case "read_timeout":
			dur(&o.ReadTimeout)
		case "connect_timeout":
			dur(&o.ConnectTimeout)
		case "age_percent":
			if o.AgePercent, err = strconv.Atoi(v); err == nil && (o.AgePercent < 0 || o.AgePercent > 100) {
				err = fmt.Errorf("not in 0..100")
			}
		case "read_ahead":
			o.ReadAhead, err = ParseSize(v)
		case "ro":
			o.ReadOnly, hasValue = true, !hasValue
		case "accept_new_host_keys":
			o.AcceptNewHostKeys, hasValue = true, !hasValue
		default:
			return o, fmt.Errorf("unknown option %q (known: t_read, t_write, age_percent, dir_ttl, read_timeout, connect_timeout, read_ahead, ro, accept_new_host_keys)", k)
		}
		if !hasValue {
			return o, fmt.Errorf("option %q needs a value (%s=...)", k, k)
		}
		if err != nil {
			return o, fmt.Errorf("option %s=%q: %v", k, v, err)
		}
		o.Set[k] = true
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

// Load reads file; a missing file is an empty table unless required.
func Load(file string, required bool) (Table, error) {
	data, err := os.ReadFile(file)
	if os.IsNotExist(err) && !required {
		return Table{}, nil
	}
	if err != nil {
		return Table{}, err
	}
	t, err := Parse(string(data))
	if err != nil {
		return Table{}, fmt.Errorf("%s: %v", file, err)
	}
	return t, nil
}
