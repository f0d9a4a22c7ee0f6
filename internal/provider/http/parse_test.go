package http

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"wirefs/internal/remote"
)

// row renders an Info as "name mode size mtime" for compact expectations.
func row(i remote.Info) string {
	mtime := "-"
	if !i.Mtime.IsZero() {
		mtime = i.Mtime.UTC().Format("2006-01-02T15:04:05")
	}
	return fmt.Sprintf("%s %v %d %s", i.Name, i.Mode, i.Size, mtime)
}

func rows(infos []remote.Info) string {
	var b strings.Builder
	for _, i := range infos {
		b.WriteString(row(i) + "\n")
	}
	return b.String()
}

func TestParseListingPages(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"nginx.html", `sub dir dr-xr-xr-x 0 2026-11-23T10:22:00
100%.txt -r--r--r-- 2 2026-11-23T10:22:00
a b.txt -r--r--r-- 3 2026-11-23T10:22:00
aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.txt -r--r--r-- 0 2026-11-23T10:22:00
big.bin -r--r--r-- 5000000000 2025-02-01T07:05:00
héllo&<x>.txt -r--r--r-- 2 2026-11-23T10:22:00
q?#"x.txt -r--r--r-- 2 2026-11-23T10:22:00
`},
		// Apache gives exact sizes below 1K only; "3.4M" is not exact.
		{"apache-pre.html", `docs dr-xr-xr-x 0 2026-11-20T14:02:00
release-1.0.tar.gz -r--r--r-- -1 2026-11-21T09:15:00
README -r--r--r-- 123 2026-11-22T18:30:00
notes v2.txt -r--r--r-- -1 2026-11-22T18:31:00
`},
		{"apache-table.html", `docs dr-xr-xr-x 0 2026-11-20T14:02:00
release-1.0.tar.gz -r--r--r-- -1 2026-11-21T09:15:00
README -r--r--r-- 123 2026-11-22T18:30:00
café.txt -r--r--r-- -1 2026-11-22T18:31:00
`},
		{"python.html", `100%.txt -r--r--r-- -1 -
a b.txt -r--r--r-- -1 -
link -r--r--r-- -1 -
héllo&<x>.txt -r--r--r-- -1 -
sub dir dr-xr-xr-x 0 -
`},
	} {
		t.Run(tc.file, func(t *testing.T) {
			page, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if got := rows(ParseListing(page, "/pub/")); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestParseListingLinks(t *testing.T) {
	for _, tc := range []struct{ page, want string }{
		{`<a href="../">..</a><a href="./">.</a><a href="?C=N;O=D">Name</a><a href="#top">top</a>`, ""},
		{`<a href="x?download">x</a><a href="/elsewhere/y">y</a><a href="sub/z">z</a>`, ""},
		{`<a href="https://other.example/pub/a">a</a><a href="//other.example/pub/b">b</a><a href="mailto:me@x">me</a>`, ""},
		{`<a href="a%2Fb">slash inside a name is not a child</a><a href="%00">nul</a><a href="%zz">bad escape</a>`, ""},
		// Attribute forms: upper case, single quotes, no quotes, other
		// attributes first, entities in the value.
		{`<A HREF="one">1</A><a class="f" href='two'>2</a><a href=three>3</a><a title="x" href="f&amp;g">4</a>`,
			"one -r--r--r-- -1 -\ntwo -r--r--r-- -1 -\nthree -r--r--r-- -1 -\nf&g -r--r--r-- -1 -\n"},
		{`<a href="./dot">d</a><a href="/pub/abs/">abs</a><a href="a:b.txt">colon</a><abbr href="no">tag</abbr>`,
			"dot -r--r--r-- -1 -\nabs dr-xr-xr-x 0 -\na:b.txt -r--r--r-- -1 -\n"},
		// A date without a size, and a size without a date, say nothing.
		{"<a href=\"f\">f</a> 01-Feb-2025 07:05\n<a href=\"g\">g</a> 42\n",
			"f -r--r--r-- -1 2025-02-01T07:05:00\ng -r--r--r-- -1 -\n"},
		// lighttpd's dates have seconds.
		{`<tr><td class="n"><a href="l">l</a></td><td class="m">2026-Nov-23 10:22:02</td><td class="s">7&nbsp;</td></tr>`,
			"l -r--r--r-- 7 2026-11-23T10:22:02\n"},
		{`<a href="dup">dup</a><a href="dup">dup</a>`, "dup -r--r--r-- -1 -\n"},
		{`<a href="unterminated`, ""},
		{`<a href="x">never closed`, "x -r--r--r-- -1 -\n"},
	} {
		if got := rows(ParseListing([]byte(tc.page), "/pub/")); got != tc.want {
			t.Errorf("%s\ngot\n%s\nwant\n%s", tc.page, got, tc.want)
		}
	}
}

// FuzzParseListing checks that any page parses without panicking into
// entries that are valid names of direct children, each once.
func FuzzParseListing(f *testing.F) {
	for _, file := range []string{"nginx.html", "apache-pre.html", "apache-table.html", "python.html"} {
		page, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(page, "/pub/")
	}
	f.Add([]byte(`<a href="/a/b/">b</a> 2026-11-23 10:22 12`), "/a/")
	f.Fuzz(func(t *testing.T, page []byte, dir string) {
		seen := map[string]bool{}
		for _, i := range ParseListing(page, dir) {
			if i.Name == "" || i.Name == "." || i.Name == ".." || strings.ContainsAny(i.Name, "/\x00") {
				t.Fatalf("bad name %q", i.Name)
			}
			if seen[i.Name] {
				t.Fatalf("%q listed twice", i.Name)
			}
			seen[i.Name] = true
			if i.Size < -1 || i.Mode.IsDir() && i.Size != 0 {
				t.Fatalf("%s: bad size", row(i))
			}
			if i.Mode != fileMode && i.Mode != dirMode {
				t.Fatalf("%s: bad mode", row(i))
			}
			if !i.Mtime.IsZero() && i.Mtime.Location() != time.UTC {
				t.Fatalf("%s: mtime not in UTC", row(i))
			}
		}
	})
}

// BenchmarkParseListing parses an nginx listing of 4000 files, the size of
// the benchmark tree's directories.
func BenchmarkParseListing(b *testing.B) {
	var page strings.Builder
	page.WriteString("<html>\n<head><title>Index of /src/</title></head>\n<body>\n<h1>Index of /src/</h1><hr><pre><a href=\"../\">../</a>\n")
	for i := 0; i < 4000; i++ {
		name := fmt.Sprintf("file-%04d.c", i)
		fmt.Fprintf(&page, "<a href=\"%s\">%s</a>%s23-Nov-2026 10:22 %19d\n", name, name, strings.Repeat(" ", 51-len(name)), i*37)
	}
	page.WriteString("</pre><hr></body>\n</html>\n")
	data := []byte(page.String())
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if n := len(ParseListing(data, "/src/")); n != 4000 {
			b.Fatalf("%d entries", n)
		}
	}
}

func TestParseContentRange(t *testing.T) {
	for h, want := range map[string]string{
		"bytes 0-0/13":                   "0 0 13",
		"bytes 100-199/5000":             "100 199 5000",
		"bytes 0-0/*":                    "0 0 -1",
		"bytes */0":                      "-1 -1 0",
		"bytes */42":                     "-1 -1 42",
		"bytes 5-4/10":                   "bad",
		"bytes 0-10/10":                  "bad",
		"bytes */*":                      "bad",
		"bytes -1-2/3":                   "bad",
		"bytes +1-2/3":                   "bad",
		"bits 0-0/1":                     "bad",
		"bytes 0-0":                      "bad",
		"bytes 0/1":                      "bad",
		"":                               "bad",
		"bytes 0-0/99999999999999999999": "bad",
	} {
		got := "bad"
		if cr, ok := parseContentRange(h); ok {
			got = fmt.Sprintf("%d %d %d", cr.start, cr.end, cr.total)
		}
		if got != want {
			t.Errorf("parseContentRange(%q) = %s, want %s", h, got, want)
		}
	}
}

func FuzzParseContentRange(f *testing.F) {
	for _, h := range []string{"bytes 0-0/13", "bytes 0-0/*", "bytes */0", "bytes 5-4/10", "bytes 1-2"} {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, h string) {
		cr, ok := parseContentRange(h)
		if !ok {
			return
		}
		if cr.total < -1 || cr.start < -1 || cr.end < cr.start || (cr.start == -1) != (cr.end == -1) ||
			cr.start == -1 && cr.total < 0 || cr.total >= 0 && cr.end >= cr.total {
			t.Fatalf("parseContentRange(%q) = %+v", h, cr)
		}
	})
}
