package http

import (
	"html"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"wirefs/internal/remote"
)

// Modes of listed entries: the HTTP backend is read-only.
const (
	fileMode = 0o444
	dirMode  = os.ModeDir | 0o555
)

// listingDates are the date formats of autoindex listings: nginx
// ("23-Nov-2026 09:15"), Apache 2.4 ("2026-11-23 09:15"), older Apache
// and lighttpd ("2026-Nov-23 09:15:02"), with and without seconds.
var listingDates = []string{
	"02-Jan-2006 15:04",
	"02-Jan-2006 15:04:05",
	"2006-01-02 15:04",
	"2006-01-02 15:04:05",
	"2006-Jan-02 15:04",
	"2006-Jan-02 15:04:05",
}

// ParseListing returns the children of the directory whose autoindex-style
// HTML page is page; dir is the page's URL path (decoded, ending in "/").
//
// It reads nginx autoindex, Apache mod_autoindex (<pre> and <table>
// forms), python http.server and similar pages the same way: every link
// to a direct child of dir names an entry (a trailing "/" makes it a
// directory); the text after the link up to the end of its line or table
// row may give a date and, right after it, a size. Only a plain byte count
// is an exact size; "1.2K", "-" or no size at all give Size -1, so that the
// cache asks the server (HEAD) when it needs the exact size. Dates carry
// no zone in these pages and are taken as UTC (nginx's default).
// Directories have Size 0.
func ParseListing(page []byte, dir string) []remote.Info {
	s := string(page)
	lower := asciiLower(s)
	var out []remote.Info
	seen := map[string]int{}
	for i := 0; ; {
		tag := indexTag(lower, "a", i)
		if tag < 0 {
			break
		}
		tagEnd := strings.IndexByte(s[tag:], '>')
		if tagEnd < 0 {
			break
		}
		tagEnd += tag + 1
		i = tagEnd
		href, ok := attr(s[tag:tagEnd], lower[tag:tagEnd], "href")
		if !ok {
			continue
		}
		name, isDir, ok := childName(html.UnescapeString(href), dir)
		if !ok {
			continue
		}
		end := rowEnd(lower, tagEnd)
		columns := tagEnd // after the link text
		if k := strings.Index(lower[tagEnd:end], "</a"); k >= 0 {
			columns += k
		}
		info := remote.Info{Name: name, Mode: fileMode, Size: -1}
		info.Mtime, info.Size = dateAndSize(s[columns:end])
		if isDir {
			info.Mode, info.Size = dirMode, 0
		}
		if k, dup := seen[name]; dup {
			// A listing with IconsAreLinks links each name twice; the
			// second link is the one followed by the columns.
			if out[k].Mtime.IsZero() && !info.Mtime.IsZero() {
				out[k] = info
			}
			continue
		}
		seen[name] = len(out)
		out = append(out, info)
	}
	return out
}

// asciiLower lowers ASCII letters only, so that offsets in the result are
// offsets in s (strings.ToLower may change the length of UTF-8 text).
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// indexTag returns the offset in lower of the next start tag <name ...>
// at or after from, or -1.
func indexTag(lower, name string, from int) int {
	for from < len(lower) {
		k := strings.Index(lower[from:], "<"+name)
		if k < 0 {
			return -1
		}
		k += from
		end := k + 1 + len(name)
		if end < len(lower) && strings.IndexByte(" \t\r\n/>", lower[end]) >= 0 {
			return k
		}
		from = end
	}
	return -1
}

// attr returns the value of attribute name in the start tag tag (lower is
// the same tag in lower case).
func attr(tag, lower, name string) (string, bool) {
	for i := 0; ; {
		k := strings.Index(lower[i:], name)
		if k < 0 {
			return "", false
		}
		k += i
		i = k + len(name)
		if before := lower[k-1]; strings.IndexByte(" \t\r\n", before) < 0 {
			continue // part of another attribute name or value
		}
		j := i
		for j < len(tag) && strings.IndexByte(" \t\r\n", tag[j]) >= 0 {
			j++
		}
		if j >= len(tag) || tag[j] != '=' {
			continue
		}
		j++
		for j < len(tag) && strings.IndexByte(" \t\r\n", tag[j]) >= 0 {
			j++
		}
		if j >= len(tag) {
			return "", false
		}
		if q := tag[j]; q == '"' || q == '\'' {
			end := strings.IndexByte(tag[j+1:], q)
			if end < 0 {
				return "", false
			}
			return tag[j+1 : j+1+end], true
		}
		end := j
		for end < len(tag) && strings.IndexByte(" \t\r\n>", tag[end]) < 0 {
			end++
		}
		return tag[j:end], true
	}
}

// childName returns the entry that link href names when it points to a
// direct child of dir, and whether it is a directory (trailing "/").
// Parent links, sort links ("?C=N;O=D"), fragments and links to other
// servers or directories are not children.
func childName(href, dir string) (name string, isDir, ok bool) {
	if href == "" || strings.ContainsAny(href, "?#") || strings.HasPrefix(href, "//") || hasScheme(href) {
		return "", false, false
	}
	segs := strings.Split(href, "/")
	if segs[0] == "" { // absolute: must continue dir
		want := strings.Split(strings.TrimSuffix(dir, "/"), "/")
		if len(segs) < len(want)+1 {
			return "", false, false
		}
		for k, w := range want {
			if seg, err := url.PathUnescape(segs[k]); err != nil || seg != w {
				return "", false, false
			}
		}
		segs = segs[len(want):]
	}
	for len(segs) > 1 && segs[0] == "." {
		segs = segs[1:]
	}
	switch {
	case len(segs) == 2 && segs[1] == "":
		isDir = true
	case len(segs) != 1:
		return "", false, false
	}
	name, err := url.PathUnescape(segs[0])
	if err != nil || name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return "", false, false
	}
	return name, isDir, true
}

// hasScheme reports whether href starts with a URL scheme of a link that
// is not a file (http:, mailto:, ...). A relative name with a colon, such
// as "a:b.txt", is not one: schemes are letters only here.
func hasScheme(href string) bool {
	colon := strings.IndexByte(href, ':')
	if colon <= 0 {
		return false
	}
	switch asciiLower(href[:colon]) {
	case "http", "https", "ftp", "ftps", "mailto", "javascript", "data", "file", "sftp":
		return true
	}
	return false
}

// rowEnd returns where the columns that follow a link at from end: at the
// end of the line or table row, or at the next link. It looks no further
// than that, so that parsing stays linear in the size of the page.
func rowEnd(lower string, from int) int {
	for i := from; i < len(lower); i++ {
		switch {
		case lower[i] == '\n':
			return i
		case lower[i] == '<' && (strings.HasPrefix(lower[i:], "<a") || strings.HasPrefix(lower[i:], "</tr")):
			return i
		}
	}
	return len(lower)
}

// dateAndSize finds the first date in the text of the columns after a link
// and the size that follows it.
func dateAndSize(columns string) (time.Time, int64) {
	f := strings.Fields(strings.ReplaceAll(html.UnescapeString(stripTags(columns)), "\u00a0", " "))
	for k := 0; k+1 < len(f); k++ {
		for _, layout := range listingDates {
			t, err := time.Parse(layout, f[k]+" "+f[k+1])
			if err != nil {
				continue
			}
			size := int64(-1)
			if k+2 < len(f) && isDigits(f[k+2]) {
				if n, err := strconv.ParseInt(f[k+2], 10, 64); err == nil {
					size = n
				}
			}
			return t, size
		}
	}
	return time.Time{}, -1
}

func stripTags(s string) string {
	var b strings.Builder
	for {
		open := strings.IndexByte(s, '<')
		if open < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:open])
		b.WriteByte(' ')
		end := strings.IndexByte(s[open:], '>')
		if end < 0 {
			return b.String()
		}
		s = s[open+end+1:]
	}
}

func isDigits(s string) bool {
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// contentRange is a Content-Range header: bytes start to end (inclusive)
// of total (-1: "*", not said). A 416's "bytes */total" has start and end
// -1.
type contentRange struct{ start, end, total int64 }

// parseContentRange parses "bytes START-END/TOTAL", "bytes START-END/*"
// and "bytes */TOTAL" (RFC 9110 §14.4).
func parseContentRange(h string) (contentRange, bool) {
	rest, ok := strings.CutPrefix(h, "bytes ")
	if !ok {
		return contentRange{}, false
	}
	span, total, ok := strings.Cut(rest, "/")
	if !ok {
		return contentRange{}, false
	}
	cr := contentRange{start: -1, end: -1, total: -1}
	if total != "*" {
		if cr.total, ok = nonNegative(total); !ok {
			return contentRange{}, false
		}
	}
	if span == "*" {
		return cr, cr.total >= 0
	}
	first, last, ok := strings.Cut(span, "-")
	if !ok {
		return contentRange{}, false
	}
	var ok1, ok2 bool
	cr.start, ok1 = nonNegative(first)
	cr.end, ok2 = nonNegative(last)
	if !ok1 || !ok2 || cr.end < cr.start || cr.total >= 0 && cr.end >= cr.total {
		return contentRange{}, false
	}
	return cr, true
}

// nonNegative parses a decimal number of bytes: digits only.
func nonNegative(s string) (int64, bool) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}
