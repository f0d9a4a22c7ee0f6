package main

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"wirefs/internal/cache"
	"wirefs/internal/config"
	"wirefs/internal/protocols"
)

// TestOptionsPrecedence is the options model end to end, as docs/wirefs.md
// states it: the command line (with its defaults) < a mount line < a
// per-file line; an option a level does not give keeps the level below's,
// and 0 given is a value: t_read=0 validates on every open, t_write=0
// writes back before close returns.
func TestOptionsPrecedence(t *testing.T) {
	reg := protocols.Remote()
	for _, tc := range []struct {
		name          string
		flags         string // the command line
		mounts        string // the mounts file; its mount line, if any, serves key
		key           string // SERVER/PATH of an sftp file
		tread, twrite time.Duration
	}{
		{name: "defaults", key: "h/f", tread: 30 * time.Second, twrite: 0},
		{name: "--t-read 0", flags: "--t-read 0", key: "h/f", tread: 0},
		{name: "--t-write 1m", flags: "--t-write 1m", key: "h/f", tread: 30 * time.Second, twrite: time.Minute},
		{name: "-o t_read=0", flags: "-o t_read=0", key: "h/f", tread: 0},

		{name: "mount t_read unset", flags: "--t-read 1h", mounts: "/m sftp://h/ t_write=5s", key: "h/f", tread: time.Hour, twrite: 5 * time.Second},
		{name: "mount t_read=0", flags: "--t-read 1h", mounts: "/m sftp://h/ t_read=0", key: "h/f", tread: 0},
		{name: "mount t_write unset", flags: "--t-write 1m", mounts: "/m sftp://h/ t_read=1s", key: "h/f", tread: time.Second, twrite: time.Minute},
		{name: "mount t_write=0", flags: "--t-write 1m", mounts: "/m sftp://h/ t_write=0", key: "h/f", tread: 30 * time.Second, twrite: 0},

		{name: "file t_read=0", flags: "--t-read 1h", mounts: "file sftp://h/f t_read=0", key: "h/f", tread: 0},
		{name: "file t_read=0, another file", flags: "--t-read 1h", mounts: "file sftp://h/f t_read=0", key: "h/g", tread: time.Hour},
		{name: "file t_read unset", flags: "--t-read 1h --t-write 1m", mounts: "file sftp://h/f t_write=10s", key: "h/f", tread: time.Hour, twrite: 10 * time.Second},
		{name: "file t_write=0", flags: "--t-write 1h", mounts: "file sftp://h/f t_write=0", key: "h/f", tread: 30 * time.Second, twrite: 0},
		{name: "file t_write unset", flags: "--t-write 1h", mounts: "file sftp://h/f t_read=1s", key: "h/f", tread: time.Second, twrite: time.Hour},
		{name: "file over mount", mounts: "/m sftp://h/ t_read=5s t_write=1h\nfile sftp://h/f t_read=0", key: "h/f", tread: 0, twrite: time.Hour},
		{name: "file t_read unset over mount", mounts: "/m sftp://h/ t_read=5s\nfile sftp://h/f t_write=1s", key: "h/f", tread: 5 * time.Second, twrite: time.Second},
		{name: "subtree", flags: "--t-read 1h", mounts: "file sftp://h/logs/ t_read=0\nfile sftp://h/logs/keep t_read=1m", key: "h/logs/x", tread: 0},
		{name: "longest line", flags: "--t-read 1h", mounts: "file sftp://h/logs/ t_read=0\nfile sftp://h/logs/keep t_read=1m", key: "h/logs/keep", tread: time.Minute},
		{name: "file line of another protocol", flags: "--t-read 1h", mounts: "file ftp://h/f t_read=0", key: "h/f", tread: time.Hour},
		{name: "file line naming the port", flags: "--t-read 1h", mounts: "file sftp://h:22/f t_read=0", key: "h/f", tread: time.Hour},
	} {
		cli := parseNSFlags(t, tc.flags)
		tab, err := config.Parse(tc.mounts, reg)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		o := cli.options()
		if len(tab.Mounts) > 0 {
			o = tab.Mounts[0].Opts.Over(o)
		}
		p, _ := reg.Lookup("sftp")
		co := cacheOptions(p, o, tab.Files)
		if tread, twrite := co.Bounds(tc.key); tread != tc.tread || twrite != tc.twrite {
			t.Errorf("%s: %s has t_read %v, t_write %v; want %v, %v", tc.name, tc.key, tread, twrite, tc.tread, tc.twrite)
		}
	}
}

// TestSessionOptions: the other options reach the cache and the sessions
// as given, unset staying unset (the cache's own defaults apply).
func TestSessionOptions(t *testing.T) {
	reg := protocols.Remote()
	sftp, _ := reg.Lookup("sftp")
	http, _ := reg.Lookup("http")
	https, _ := reg.Lookup("https")

	cli := parseNSFlags(t, "--read-timeout 7s --connect-timeout 9s")
	o := cli.options()
	co, ro := cacheOptions(sftp, o, nil), remoteOptions("/home/me", sftp, o, nil)
	if co.DirTTL != nil || co.ReadAhead != nil || co.AgePercent != nil || co.ReadOnly ||
		ro.Timeout != 7*time.Second || ro.ConnectTimeout != 9*time.Second || ro.TLS || ro.AcceptNewHostKeys || ro.Home != "/home/me" {
		t.Errorf("command line alone: %+v, %+v", co, ro)
	}
	if co := cacheOptions(http, o, nil); !co.ReadOnly {
		t.Error("http is not read-only")
	}
	if ro := remoteOptions("", https, o, nil); !ro.TLS {
		t.Error("https without TLS")
	}

	tab, err := config.Parse("/m sftp://h/ dir_ttl=0 read_ahead=0 age_percent=5 read_timeout=1m ro accept_new_host_keys", reg)
	if err != nil {
		t.Fatal(err)
	}
	o = tab.Mounts[0].Opts.Over(cli.options())
	co, ro = cacheOptions(sftp, o, nil), remoteOptions("", sftp, o, nil)
	if co.DirTTL == nil || *co.DirTTL != 0 || co.ReadAhead == nil || *co.ReadAhead != 0 || config.Value(co.AgePercent) != 5 || !co.ReadOnly ||
		ro.Timeout != time.Minute || ro.ConnectTimeout != 9*time.Second || !ro.AcceptNewHostKeys {
		t.Errorf("mount line: %+v, %+v", co, ro)
	}
	if o := parseNSFlags(t, "--accept-new-host-keys").options(); !remoteOptions("", sftp, o, nil).AcceptNewHostKeys {
		t.Error("--accept-new-host-keys lost")
	}
}

// TestPrefetchOptions: the prefetch bounds come from the flags (their
// defaults, or -o with _), and a mount line wins over them.
func TestPrefetchOptions(t *testing.T) {
	reg := protocols.Remote()
	sftp, _ := reg.Lookup("sftp")
	co := cacheOptions(sftp, parseNSFlags(t, "").options(), nil)
	if *co.PrefetchRequests != cache.DefaultPrefetchRequests || *co.PrefetchDir != cache.DefaultPrefetchDir ||
		*co.PrefetchFile != cache.DefaultPrefetchFile || *co.ReaddirAhead != cache.DefaultReaddirAhead {
		t.Errorf("defaults: %d %d %d %d", *co.PrefetchRequests, *co.PrefetchDir, *co.PrefetchFile, *co.ReaddirAhead)
	}
	cli := parseNSFlags(t, "-o prefetch_requests=8,prefetch_dir=2m --prefetch-file 64k --readdir-ahead 0")
	co = cacheOptions(sftp, cli.options(), nil)
	if *co.PrefetchRequests != 8 || *co.PrefetchDir != 2<<20 || *co.PrefetchFile != 64<<10 || *co.ReaddirAhead != 0 {
		t.Errorf("command line: %d %d %d %d", *co.PrefetchRequests, *co.PrefetchDir, *co.PrefetchFile, *co.ReaddirAhead)
	}
	tab, err := config.Parse("/m sftp://h/ prefetch_requests=0 prefetch_file=1m", reg)
	if err != nil {
		t.Fatal(err)
	}
	co = cacheOptions(sftp, tab.Mounts[0].Opts.Over(cli.options()), nil)
	if *co.PrefetchRequests != 0 || *co.PrefetchDir != 2<<20 || *co.PrefetchFile != 1<<20 {
		t.Errorf("mount line: %d %d %d", *co.PrefetchRequests, *co.PrefetchDir, *co.PrefetchFile)
	}
}

// parseNSFlags parses a command line of namespace flags (and -o).
func parseNSFlags(t *testing.T, line string) nsConfig {
	t.Helper()
	var c nsConfig
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	c.addFlags(fs)
	fs.VarP(&optionsFlag{fs: fs}, "options", "o", "")
	if err := fs.Parse(strings.Fields(line)); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	return c
}

// TestUnknownSchemeListsTheRegistry: the error for an unknown scheme lists
// the registry's protocols, and every protocol is a namespace root.
func TestUnknownSchemeListsTheRegistry(t *testing.T) {
	reg := protocols.Remote()
	_, err := config.Parse("/x gopher://h/", reg)
	if err == nil || !strings.Contains(err.Error(), "SCHEME one of "+strings.Join(reg.Schemes(), ", ")+")") {
		t.Errorf("unknown scheme: %v", err)
	}
	for _, s := range reg.Schemes() {
		if got, ok := urlName(reg)(s + "://me@h/d/f"); !ok || got != s+"/me@h/d/f" {
			t.Errorf("URL name of %s: %q, %v", s, got, ok)
		}
	}
	if _, ok := urlName(reg)("gopher://h/f"); ok {
		t.Error("gopher:// is a URL name")
	}
}

// TestIsCommand: newRoot's commands and their aliases are taken as
// commands (a command added and forgotten in isCommand fails here).
func TestIsCommand(t *testing.T) {
	var names []string
	for _, c := range newRoot(nil).Commands() {
		names = append(names, c.Name())
		names = append(names, c.Aliases...)
	}
	names = append(names, "help")
	for _, n := range names {
		if !isCommand(n) {
			t.Errorf("%s is a command, but isCommand says no", n)
		}
	}
	if isCommand("wirefs") || isCommand("/net") {
		t.Error("a mount source is a command")
	}
}

// TestManualDefaultPorts: the manual's list of default ports is the
// registry's.
func TestManualDefaultPorts(t *testing.T) {
	data, err := os.ReadFile(manual)
	if err != nil {
		t.Fatal(err)
	}
	b := string(data)
	var ports []string
	for _, p := range protocols.Remote().All() {
		if s := strconv.Itoa(p.DefaultPort); !slices.Contains(ports, s) {
			ports = append(ports, s)
		}
	}
	want := "(default " + strings.Join(ports[:len(ports)-1], ", ") + " or " + ports[len(ports)-1] + " by protocol"
	if !strings.Contains(strings.Join(strings.Fields(b), " "), want) {
		t.Errorf("%s does not say %q", manual, want)
	}
	for _, s := range protocols.Remote().Schemes() {
		if !strings.Contains(b, "/net/"+s+"/") {
			t.Errorf("%s does not show the root /net/%s/", manual, s)
		}
	}
}
