package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"wirefs/internal/config"
)

// optionsFlag is -o OPT[,OPT...], the way mount(8), fstab and sshfs give
// options: OPT is an option of the command spelled with _ for -
// (allow_other, t_read=10s, cache_size=2g), or, for mount, one of the
// generic mount options (see mountFlags). Each item takes effect where it
// stands on the command line, so the last setting of an option wins.
type optionsFlag struct {
	fs *pflag.FlagSet
	// generic handles the options that are not flags of the command;
	// nil: there are none (run, attach).
	generic func(name, value string, hasValue bool) (bool, error)
	set     []string // every item given, for the log
}

func (o *optionsFlag) String() string { return strings.Join(o.set, ",") }
func (o *optionsFlag) Type() string   { return "options" }

func (o *optionsFlag) Set(s string) error {
	for _, item := range strings.Split(s, ",") {
		if err := o.setOne(item); err != nil {
			return &optionError{item: item, err: err}
		}
		if item != "" {
			o.set = append(o.set, item)
		}
	}
	return nil
}

func (o *optionsFlag) setOne(item string) error {
	name, value, hasValue := strings.Cut(item, "=")
	if name == "" && !hasValue {
		return nil // "a,,b", or a trailing comma
	}
	if f := o.fs.Lookup(strings.ReplaceAll(name, "_", "-")); f != nil && f.Name != "options" && f.Name != "help" {
		if !hasValue {
			if f.NoOptDefVal == "" {
				return fmt.Errorf("needs a value (%s=VALUE)", name)
			}
			value = f.NoOptDefVal
		}
		if err := o.fs.Set(f.Name, value); err != nil {
			var bad *pflag.InvalidValueError
			if errors.As(err, &bad) {
				return bad.Unwrap() // the value is in the item already
			}
			return err
		}
		return nil
	}
	if o.generic != nil {
		if ok, err := o.generic(name, value, hasValue); ok || err != nil {
			return err
		}
	}
	return fmt.Errorf("unknown option")
}

// optionError is a bad -o item; a usage error names only the item, not
// the whole -o list.
type optionError struct {
	item string
	err  error
}

func (e *optionError) Error() string { return fmt.Sprintf("-o %s: %v", e.item, e.err) }

// mountFlags are the generic mount options of mount(8) that a wirefs
// mount honours; see the mount command for the rest.
type mountFlags struct {
	readOnly bool // ro: the whole mount is read-only (EROFS)
	noExec   bool // noexec: no program on it may be executed
}

// ignoredOption reports whether name is one of the generic options that
// wirefs has no use for. Most
// are mount(8)'s own (mount.fuse3 drops some of them, mount(8) others
// before a helper sees them; a command line may still pass them); suid
// and dev are added by mount.fuse3 whenever nosuid and nodev are not
// given, but a wirefs mount is always nosuid and nodev, as every FUSE
// mount of fusermount3 is; the atime options concern times the servers
// keep.
func ignoredOption(name string) bool {
	switch name {
	case "defaults", "auto", "noauto", "user", "nouser", "users",
		"owner", "group", "nofail", "_netdev", "comment",
		"async",
		"suid", "nosuid", "dev", "nodev",
		"atime", "noatime", "diratime", "nodiratime", "relatime",
		"norelatime", "strictatime", "nostrictatime", "lazytime", "nolazytime":
		return true
	}
	return false
}

// generic handles the generic mount options of -o.
func (m *mountFlags) generic(name, value string, hasValue bool) (bool, error) {
	switch {
	case strings.HasPrefix(name, "x-") || strings.HasPrefix(name, "X-") || name == "comment":
		return true, nil // userspace options of mount(8) and systemd
	case hasValue:
		return false, nil
	}
	switch name {
	case "ro":
		m.readOnly = true
	case "rw":
		m.readOnly = false
	case "noexec":
		m.noExec = true
	case "exec":
		m.noExec = false
	default:
		return ignoredOption(name), nil
	}
	return true, nil
}

// optionNames lists what -o takes for a command (completion).
func optionNames(fs *pflag.FlagSet, mount bool) []string {
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" || f.Name == "options" {
			return
		}
		n := strings.ReplaceAll(f.Name, "-", "_")
		if f.NoOptDefVal == "" {
			n += "="
		}
		names = append(names, n)
	})
	if mount {
		names = append(names, "ro", "rw", "noexec", "exec", "_netdev", "noauto", "nofail")
	}
	return names
}

// sizeFlag is a byte count flag with an optional k, m or g suffix
// (config.ParseSize), shown the same way.
type sizeFlag int64

func (s *sizeFlag) Type() string { return "size" }

func (s *sizeFlag) Set(v string) error {
	n, err := config.ParseSize(v)
	if err != nil {
		return err
	}
	*s = sizeFlag(n)
	return nil
}

func (s *sizeFlag) String() string {
	n := int64(*s)
	for _, u := range []struct {
		suffix string
		shift  uint
	}{{"g", 30}, {"m", 20}, {"k", 10}} {
		if n != 0 && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d%s", n>>u.shift, u.suffix)
		}
	}
	return fmt.Sprint(n)
}
