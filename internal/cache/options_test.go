package cache

import (
	"fmt"
	"testing"
	"time"
)

// TestOptionsSettings: nil is the default, a value given is used as it
// is, 0 included; negative values count as 0.
func TestOptionsSettings(t *testing.T) {
	zero := new(time.Duration(0))
	for _, tc := range []struct {
		name string
		o    Options
		want settings
	}{
		{"defaults", Options{}, settings{TRead: DefaultTRead, DirTTL: DefaultTRead, ReadAhead: DefaultReadAhead}},
		{"t_read=0", Options{TRead: zero}, settings{ReadAhead: DefaultReadAhead}},
		{"t_read=5s", Options{TRead: new(5 * time.Second)}, settings{TRead: 5 * time.Second, DirTTL: 5 * time.Second, ReadAhead: DefaultReadAhead}},
		{"t_read=-1s", Options{TRead: new(-time.Second)}, settings{ReadAhead: DefaultReadAhead}},
		{"dir_ttl=0", Options{DirTTL: zero}, settings{TRead: DefaultTRead, ReadAhead: DefaultReadAhead}},
		{"dir_ttl=1m, t_read=0", Options{TRead: zero, DirTTL: new(time.Minute)}, settings{DirTTL: time.Minute, ReadAhead: DefaultReadAhead}},
		{"t_write=0", Options{TWrite: zero}, settings{TRead: DefaultTRead, DirTTL: DefaultTRead, ReadAhead: DefaultReadAhead}},
		{"t_write=1h", Options{TWrite: new(time.Hour)}, settings{TRead: DefaultTRead, DirTTL: DefaultTRead, TWrite: time.Hour, ReadAhead: DefaultReadAhead}},
		{"read_ahead=0", Options{ReadAhead: new(int64(0))}, settings{TRead: DefaultTRead, DirTTL: DefaultTRead}},
		{"read_ahead=4k", Options{ReadAhead: new(int64(4096))}, settings{TRead: DefaultTRead, DirTTL: DefaultTRead, ReadAhead: 4096}},
		{"age_percent=10", Options{AgePercent: new(10)}, settings{TRead: DefaultTRead, DirTTL: DefaultTRead, ReadAhead: DefaultReadAhead, AgePercent: 10}},
		{"ro", Options{ReadOnly: true}, settings{TRead: DefaultTRead, DirTTL: DefaultTRead, ReadAhead: DefaultReadAhead, ReadOnly: true}},
	} {
		if got := tc.o.settings(); got.TRead != tc.want.TRead || got.TWrite != tc.want.TWrite || got.DirTTL != tc.want.DirTTL ||
			got.ReadAhead != tc.want.ReadAhead || got.AgePercent != tc.want.AgePercent || got.ReadOnly != tc.want.ReadOnly {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestBounds: a per-file line over the mount's bounds, the longest
// matching key winning; a field the line does not give keeps the mount's,
// and 0 given is 0 — t_read=0 validates on every open, t_write=0 writes
// through at close — not "unset".
func TestBounds(t *testing.T) {
	d := func(v time.Duration) *time.Duration { return &v }
	files := map[string]FileOptions{
		"h/live.log":  {TRead: d(0)},
		"h/logs/":     {TWrite: d(10 * time.Second)},
		"h/logs/now/": {TWrite: d(0)},
		"h/logs/a":    {TRead: d(time.Second)},
		"h/both":      {TRead: d(0), TWrite: d(0)},
		"h/unset":     {},
	}
	mount := Options{TRead: d(time.Hour), TWrite: d(time.Minute), Files: files}
	for _, tc := range []struct {
		o             Options
		key           string
		tread, twrite time.Duration
	}{
		{mount, "h/other", time.Hour, time.Minute},                          // no line: the mount's
		{mount, "h/live.log", 0, time.Minute},                               // t_read=0; t_write unset
		{mount, "h/live.log.1", time.Hour, time.Minute},                     // a file key is not a prefix
		{mount, "h/logs/x", time.Hour, 10 * time.Second},                    // a subtree; t_read unset
		{mount, "h/logs/now/x", time.Hour, 0},                               // the longest key: t_write=0
		{mount, "h/logs/a", time.Second, time.Minute},                       // the file's own line wins whole
		{mount, "h/both", 0, 0},                                             // both 0
		{mount, "h/unset", time.Hour, time.Minute},                          // a line that gives nothing
		{Options{Files: files}, "h/other", DefaultTRead, 0},                 // the mount's defaults
		{Options{Files: files}, "h/live.log", 0, 0},                         // 0 over a default
		{Options{Files: files}, "h/logs/x", DefaultTRead, 10 * time.Second}, // over the defaults
		{Options{TRead: d(0), Files: files}, "h/logs/a", time.Second, 0},    // a line over t_read=0
	} {
		if tread, twrite := tc.o.Bounds(tc.key); tread != tc.tread || twrite != tc.twrite {
			t.Errorf("%s under t_read %v: t_read %v, t_write %v; want %v, %v",
				tc.key, tc.o.TRead, tread, twrite, tc.tread, tc.twrite)
		}
	}
}

// TestTReadZeroValidatesEveryOpen: TRead 0, given for the mount or for
// the file, asks the server at every open; unset, it is the default bound
// (30s), which does not.
func TestTReadZeroValidatesEveryOpen(t *testing.T) {
	c, _ := newCache(t, 0)
	b := newLocalBackend(t)
	b.put(t, "/f", []byte("v1"))
	b.put(t, "/g", []byte("v1"))
	perFile := map[string]FileOptions{"/g": {TRead: new(time.Duration(0))}}
	for i, tc := range []struct {
		name  string
		o     Options
		file  string
		every bool
	}{
		{"t_read=0", Options{TRead: new(time.Duration(0))}, "f", true},
		{"t_read unset", Options{}, "f", false},
		{"file line t_read=0", Options{TRead: new(time.Hour), Files: perFile}, "g", true},
		{"file line of another file", Options{TRead: new(time.Hour), Files: perFile}, "f", false},
		{"file line t_read unset", Options{TRead: new(time.Duration(0)), Files: map[string]FileOptions{"/f": {TWrite: new(time.Hour)}}}, "f", true},
	} {
		root := c.Root(fmt.Sprintf("local://%d", i), b, tc.o)
		cat(t, root, tc.file)
		before := b.total()
		for range 3 {
			if got := cat(t, root, tc.file); string(got) != "v1" {
				t.Fatalf("%s: read %q", tc.name, got)
			}
		}
		if calls := b.total() - before; tc.every && calls < 3 || !tc.every && calls != 0 {
			t.Errorf("%s: 3 opens made %d server calls; want at least one each: %v", tc.name, calls, tc.every)
		}
	}
}
