package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// schemeList is a Schemes for tests: the names of protocols.Remote,
// without linking the providers into this package's tests.
type schemeList []string

func (l schemeList) Has(s string) bool { return slices.Contains(l, s) }
func (l schemeList) Schemes() []string { return slices.Clone(l) }

func testSchemes() schemeList { return schemeList{"http", "https", "ftp", "ftps", "sftp", "9p"} }

func TestParse(t *testing.T) {
	tab, err := Parse(`
# comment
/csftp → ftp://ftp.example.org/pub, read_timeout=60s
src   sftp://me@build:2222/home/me/src  t_read=5s t_write=0 ro  # trailing
/a/b/ -> http://[::1]:8080/x/../y,age_percent=10,read_ahead=2m
plain sftp://h/
file sftp://me@build/home/me/live.log t_read=0
file sftp://me@build/home/me/logs/ t_write=10s
`, testSchemes())
	if err != nil {
		t.Fatal(err)
	}
	m := tab.Mounts
	if f := tab.Files; len(f) != 2 || f[0].Root.Path != "/home/me/live.log" || f[0].Subtree ||
		f[0].Opts != (Options{TRead: f[0].Opts.TRead}) || Value(f[0].Opts.TRead) != 0 || f[0].Opts.TRead == nil ||
		!f[1].Subtree || f[1].Opts != (Options{TWrite: f[1].Opts.TWrite}) || Value(f[1].Opts.TWrite) != 10*time.Second {
		t.Errorf("file lines: %+v", f)
	}
	if len(m) != 4 {
		t.Fatalf("got %d mounts", len(m))
	}
	if m[0].Prefix != "csftp" || m[0].Root != (Root{"ftp", "ftp.example.org", "/pub"}) || Value(m[0].Opts.ReadTimeout) != time.Minute {
		t.Errorf("line 1: %+v", m[0])
	}
	if o := m[1].Opts; m[1].Prefix != "src" || m[1].Root.Server != "me@build:2222" || Value(o.TRead) != 5*time.Second ||
		!Value(o.ReadOnly) || o.TWrite == nil || *o.TWrite != 0 || o.DirTTL != nil || o.AcceptNewHostKeys != nil {
		t.Errorf("line 2: %+v", m[1])
	}
	if m[2].Prefix != "a/b" || m[2].Root.Path != "/y" || Value(m[2].Opts.AgePercent) != 10 || Value(m[2].Opts.ReadAhead) != 2<<20 {
		t.Errorf("line 3: %+v", m[2])
	}
	if !m[3].Opts.Empty() {
		t.Errorf("line 4 gives no options, yet %+v", m[3].Opts)
	}
}

// TestParseOptions: every option, and 0 is a value given, not "unset".
func TestParseOptions(t *testing.T) {
	for _, tc := range []struct {
		words string
		want  Options
	}{
		{"", Options{}},
		{"t_read=0", Options{TRead: new(time.Duration(0))}},
		{"t_read=5s", Options{TRead: new(5 * time.Second)}},
		{"t_write=0", Options{TWrite: new(time.Duration(0))}},
		{"t_write=1h", Options{TWrite: new(time.Hour)}},
		{"age_percent=0", Options{AgePercent: new(0)}},
		{"age_percent=100", Options{AgePercent: new(100)}},
		{"dir_ttl=0", Options{DirTTL: new(time.Duration(0))}},
		{"read_timeout=1m", Options{ReadTimeout: new(time.Minute)}},
		{"connect_timeout=0", Options{ConnectTimeout: new(time.Duration(0))}},
		{"read_ahead=0", Options{ReadAhead: new(int64(0))}},
		{"read_ahead=8k", Options{ReadAhead: new(int64(8 << 10))}},
		{"prefetch_requests=0", Options{PrefetchRequests: new(0)}},
		{"prefetch_requests=8", Options{PrefetchRequests: new(8)}},
		{"prefetch_dir=16m", Options{PrefetchDir: new(int64(16 << 20))}},
		{"prefetch_file=0", Options{PrefetchFile: new(int64(0))}},
		{"readdir_ahead=10", Options{ReaddirAhead: new(10)}},
		{"ftp_connections=32", Options{FTPConnections: new(32)}},
		{"ro", Options{ReadOnly: new(true)}},
		{"accept_new_host_keys", Options{AcceptNewHostKeys: new(true)}},
		{"t_read=1s t_read=0", Options{TRead: new(time.Duration(0))}}, // the last wins
	} {
		got, err := ParseOptions(strings.Fields(tc.words))
		if err != nil {
			t.Errorf("%q: %v", tc.words, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: got %s, want %s", tc.words, show(got), show(tc.want))
		}
	}
}

// show prints the options that are set, with their values.
func show(o Options) string {
	var b strings.Builder
	v := reflect.ValueOf(o)
	for i := range v.NumField() {
		if f := v.Field(i); !f.IsNil() {
			fmt.Fprintf(&b, "%s=%v ", v.Type().Field(i).Name, f.Elem())
		}
	}
	return "{" + strings.TrimSpace(b.String()) + "}"
}

// TestOver is the merge rule, level by level: command line < mount line <
// file line; a level that does not give an option keeps the level below's,
// and 0 given is 0 (t_read=0: validate on every open; t_write=0: before
// close returns), never "unset".
func TestOver(t *testing.T) {
	cli := func(tread, twrite time.Duration) Options {
		return Options{TRead: &tread, TWrite: &twrite, ReadTimeout: new(30 * time.Second),
			ConnectTimeout: new(30 * time.Second), AcceptNewHostKeys: new(false)}
	}
	parse := func(words string) Options {
		o, err := ParseOptions(strings.Fields(words))
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	for _, tc := range []struct {
		name             string
		cli              Options
		mount, file      string
		tread, twrite    time.Duration
		dirTTL           *time.Duration
		ro, acceptNewKey bool
	}{
		{name: "command line alone", cli: cli(30*time.Second, 0), tread: 30 * time.Second},
		{name: "--t-read 0", cli: cli(0, 0), tread: 0},
		{name: "mount t_read unset", cli: cli(time.Hour, 0), mount: "t_write=5s", tread: time.Hour, twrite: 5 * time.Second},
		{name: "mount t_read=0", cli: cli(time.Hour, 0), mount: "t_read=0", tread: 0},
		{name: "mount t_read=5s", cli: cli(time.Hour, 0), mount: "t_read=5s", tread: 5 * time.Second},
		{name: "mount t_write unset", cli: cli(time.Hour, time.Minute), mount: "t_read=1s", tread: time.Second, twrite: time.Minute},
		{name: "mount t_write=0", cli: cli(time.Hour, time.Minute), mount: "t_write=0", tread: time.Hour, twrite: 0},
		{name: "file t_read unset", cli: cli(time.Hour, 0), mount: "t_read=5s", file: "t_write=1m", tread: 5 * time.Second, twrite: time.Minute},
		{name: "file t_read=0", cli: cli(time.Hour, 0), mount: "t_read=5s", file: "t_read=0", tread: 0},
		{name: "file t_read=0, no mount line", cli: cli(time.Hour, 0), file: "t_read=0", tread: 0},
		{name: "file t_write unset", cli: cli(time.Hour, 0), mount: "t_write=1h", file: "t_read=1s", tread: time.Second, twrite: time.Hour},
		{name: "file t_write=0", cli: cli(time.Hour, 0), mount: "t_write=1h", file: "t_write=0", tread: time.Hour, twrite: 0},
		{name: "dir_ttl=0", cli: cli(time.Hour, 0), mount: "dir_ttl=0", tread: time.Hour, dirTTL: new(time.Duration(0))},
		{name: "ro", cli: cli(time.Hour, 0), mount: "ro", tread: time.Hour, ro: true},
		{name: "accept_new_host_keys", cli: cli(time.Hour, 0), mount: "accept_new_host_keys", tread: time.Hour, acceptNewKey: true},
		{name: "--accept-new-host-keys", cli: Options{AcceptNewHostKeys: new(true)}.Over(cli(time.Hour, 0)), tread: time.Hour, acceptNewKey: true},
	} {
		got := parse(tc.file).Over(parse(tc.mount).Over(tc.cli))
		if got.TRead == nil || *got.TRead != tc.tread || got.TWrite == nil || *got.TWrite != tc.twrite ||
			!reflect.DeepEqual(got.DirTTL, tc.dirTTL) || Value(got.ReadOnly) != tc.ro || Value(got.AcceptNewHostKeys) != tc.acceptNewKey ||
			Value(got.ReadTimeout) != 30*time.Second {
			t.Errorf("%s: got %s; want t_read %v, t_write %v, dir_ttl %v, ro %v, accept_new_host_keys %v",
				tc.name, show(got), tc.tread, tc.twrite, tc.dirTTL, tc.ro, tc.acceptNewKey)
		}
	}
}

// TestOverEveryField: Over takes every field given over the base, and the
// base's where none is given (a field added to Options and forgotten in
// Over fails here).
func TestOverEveryField(t *testing.T) {
	var top, base Options
	v, b := reflect.ValueOf(&top).Elem(), reflect.ValueOf(&base).Elem()
	for i := range v.NumField() {
		v.Field(i).Set(reflect.New(v.Field(i).Type().Elem()))
		b.Field(i).Set(reflect.New(b.Field(i).Type().Elem()))
	}
	if got := top.Over(base); got != top {
		t.Errorf("top.Over(base) = %+v, want top %+v", got, top)
	}
	if got := (Options{}).Over(base); got != base {
		t.Errorf("Options{}.Over(base) = %+v, want base %+v", got, base)
	}
	if top.Empty() || !(Options{}).Empty() {
		t.Error("Empty")
	}
}

func TestParseErrors(t *testing.T) {
	for _, bad := range []string{
		"/x",
		"/ sftp://h/",
		"/x gopher://h/",
		"/x sftp:///p",
		"/x sftp://@h/p",
		"/x sftp://h:0/p",
		"/x sftp://h:99999/p",
		"/x sftp://[::1/p",
		"/x sftp://[::1]x/p",
		"/x sftp://h/p t_read=-1s",
		"/x sftp://h/p t_read",
		"/x sftp://h/p t_read=",
		"/x sftp://h/p age_percent=101",
		"/x sftp://h/p age_percent=-1",
		"/x sftp://h/p read_ahead=1x",
		"/x sftp://h/p prefetch_requests=-1",
		"/x sftp://h/p prefetch_requests=5000",
		"/x sftp://h/p prefetch_dir=lots",
		"/x sftp://h/p ftp_connections=0",
		"/x sftp://h/p ftp_connections=257",
		"/x sftp://h/p readdir_ahead=x",
		"/x sftp://h/p nosuch=1",
		"/x sftp://h/p ro=1",
		"/x sftp://h/p accept_new_host_keys=yes",
		"file sftp://h/p",
		"file sftp://h/p ro",
		"file sftp://h/p t_read=1s ro",
		"file sftp://h/p t_read=1s dir_ttl=1s",
		"file nope t_read=1s",
	} {
		if _, err := Parse(bad, testSchemes()); err == nil {
			t.Errorf("%q: no error", bad)
		} else if !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%q: error does not name the line: %v", bad, err)
		}
	}
}

// TestErrorsListWhatIsKnown: an unknown scheme or option is answered with
// the list of known ones, from the tables themselves.
func TestErrorsListWhatIsKnown(t *testing.T) {
	_, err := Parse("/x gopher://h/", schemeList{"a", "b+c"})
	if err == nil || !strings.Contains(err.Error(), "SCHEME one of a, b+c)") {
		t.Errorf("unknown scheme: %v", err)
	}
	_, err = Parse("/x a://h/ nosuch=1", schemeList{"a"})
	want := "(known: t_read, t_write, age_percent, dir_ttl, read_timeout, connect_timeout, read_ahead, prefetch_requests, prefetch_dir, prefetch_file, readdir_ahead, ftp_connections, ro, accept_new_host_keys)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("unknown option: %v", err)
	}
	_, err = Parse("file a://h/p t_read=1s ro", schemeList{"a"})
	if err == nil || !strings.Contains(err.Error(), "option ro is per mount") {
		t.Errorf("mount option on a file line: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add("/csftp → ftp://ftp.example.org/pub, read_timeout=60s\n")
	f.Add("src sftp://me@[fe80::1%eth0]:22/x t_read=1s,ro\n# c\n")
	f.Add("/a 9p://h/srv/export read_ahead=8m")
	f.Add("/a sftp://h/x prefetch_requests=4 prefetch_dir=1m prefetch_file=64k readdir_ahead=0")
	f.Add("file sftp://h/p/ t_read=0 t_write=0")
	schemes := testSchemes()
	f.Fuzz(func(t *testing.T, text string) {
		tab, err := Parse(text, schemes)
		if err != nil {
			return
		}
		for _, f := range tab.Files {
			if f.Opts.Empty() || f.Opts != (Options{TRead: f.Opts.TRead, TWrite: f.Opts.TWrite}) {
				t.Fatalf("file line with %+v from %q", f.Opts, text)
			}
		}
		for _, m := range tab.Mounts {
			if m.Prefix == "" || strings.HasPrefix(m.Prefix, "/") || !strings.HasPrefix(m.Root.Path, "/") || !schemes.Has(m.Root.Scheme) {
				t.Fatalf("bad mount %+v from %q", m, text)
			}
			again, err := ParseRoot(m.Root.String(), schemes)
			if err != nil || again != m.Root {
				t.Fatalf("root %v does not round-trip: %v %v", m.Root, again, err)
			}
		}
	})
}
