package ftp

import (
	"os"
	"strconv"
	"strings"
	"time"

	ftplib "github.com/jlaffaye/ftp"

	"wirefs/internal/remote"
)

// jlaffaye/ftp parses listings (MLSD facts, Unix ls, DOS) into entries
// with name, type, size and time, but drops the permission bits. They
// matter here (an executable built on the server must stay executable,
// chmod must show), so the raw listing is captured as it streams by and
// each entry's line is read again for its mode alone.

// lineFacts is what one raw listing line says beyond jlaffaye's entry.
type lineFacts struct {
	mode    os.FileMode // permission bits and type; valid when hasMode
	hasMode bool
	self    bool // MLSD's "type=cdir"/"type=pdir": the directory itself or its parent
}

// parseLine reads the mode of an "ls -l" line ("drwxr-xr-x ...") or the
// facts of an MLSD line ("type=file;unix.mode=0644; name").
func parseLine(line string) lineFacts {
	if facts, _, ok := strings.Cut(line, " "); ok && strings.Contains(facts, "=") && strings.HasSuffix(facts, ";") {
		return parseFacts(facts)
	}
	if len(line) < 10 {
		return lineFacts{}
	}
	mode, ok := parseLsMode(line[:10])
	return lineFacts{mode: mode, hasMode: ok}
}

// parseFacts reads RFC 3659 facts ("type=dir;unix.mode=0755;").
func parseFacts(facts string) lineFacts {
	var f lineFacts
	var typ os.FileMode
	for _, fact := range strings.Split(facts, ";") {
		k, v, ok := strings.Cut(fact, "=")
		if !ok {
			continue
		}
		switch strings.ToLower(k) {
		case "type":
			switch strings.ToLower(v) {
			case "cdir", "pdir":
				f.self = true
				typ = os.ModeDir
			case "dir":
				typ = os.ModeDir
			case "os.unix=symlink", "os.unix=slink":
				typ = os.ModeSymlink
			}
		case "unix.mode":
			if m, err := strconv.ParseUint(v, 8, 32); err == nil && m <= 0o7777 {
				f.mode = os.FileMode(m & 0o777)
				if m&0o4000 != 0 {
					f.mode |= os.ModeSetuid
				}
				if m&0o2000 != 0 {
					f.mode |= os.ModeSetgid
				}
				if m&0o1000 != 0 {
					f.mode |= os.ModeSticky
				}
				f.hasMode = true
			}
		}
	}
	f.mode |= typ
	return f
}

// parseLsMode reads the ten-character mode column of "ls -l".
func parseLsMode(s string) (os.FileMode, bool) {
	if len(s) != 10 {
		return 0, false
	}
	var m os.FileMode
	switch s[0] {
	case '-':
	case 'd':
		m = os.ModeDir
	case 'l':
		m = os.ModeSymlink
	case 'p':
		m = os.ModeNamedPipe
	case 's':
		m = os.ModeSocket
	case 'c':
		m = os.ModeDevice | os.ModeCharDevice
	case 'b':
		m = os.ModeDevice
	default:
		return 0, false
	}
	// Three triplets rwx; the third letter of each may also carry
	// setuid/setgid/sticky (s/S, s/S, t/T: lower case = also executable).
	special := [3]os.FileMode{os.ModeSetuid, os.ModeSetgid, os.ModeSticky}
	specialLetter := [3]byte{'s', 's', 't'}
	for i := 0; i < 3; i++ {
		r, w, x := s[1+3*i], s[2+3*i], s[3+3*i]
		shift := uint(6 - 3*i)
		switch r {
		case 'r':
			m |= 4 << shift
		case '-':
		default:
			return 0, false
		}
		switch w {
		case 'w':
			m |= 2 << shift
		case '-':
		default:
			return 0, false
		}
		switch x {
		case 'x':
			m |= 1 << shift
		case '-':
		case specialLetter[i]:
			m |= 1<<shift | special[i]
		case specialLetter[i] - 'a' + 'A':
			m |= special[i]
		default:
			return 0, false
		}
	}
	return m, true
}

// entryInfos turns jlaffaye's entries into Infos with the modes of the
// raw lines they came from. jlaffaye parses the lines in order and skips
// the ones it cannot read ("total 12"), so each entry is the next line
// that ends with its name and has a mode. self reports whether the listing named the
// directory itself ("." or MLSD's cdir), which only real directories do.
func entryInfos(raw string, entries []*ftplib.Entry) (infos []remote.Info, self bool) {
	lines := strings.Split(raw, "\n")
	next := 0
	for _, e := range entries {
		if e.Name == "" || strings.Contains(e.Name, "/") {
			continue // no file's name: a line misread ("0 " parses with none)
		}
		facts := lineFacts{}
		for i := next; i < len(lines); i++ {
			line := strings.TrimSuffix(lines[i], "\r")
			if !lineNames(line, e) {
				continue
			}
			// Only lines with a mode count: a stray line ("total 8",
			// a banner) that happens to end with the name must not
			// take the entry's place.
			if f := parseLine(line); f.hasMode || f.self {
				facts = f
				next = i + 1
				break
			}
		}
		if facts.self || e.Name == "." || e.Name == ".." {
			self = self || facts.self || e.Name == "."
			continue
		}
		infos = append(infos, entryInfo(e, facts))
	}
	return infos, self
}

// lineNames reports whether a raw listing line is the one entry e was
// parsed from: ls lines end in the name (or "name -> target"), MLSD lines
// in "; name".
func lineNames(line string, e *ftplib.Entry) bool {
	if e.Type == ftplib.EntryTypeLink && e.Target != "" && strings.HasSuffix(line, " "+e.Name+" -> "+e.Target) {
		return true
	}
	return strings.HasSuffix(line, " "+e.Name)
}

// entryInfo is the Info of one entry; the mode is the line's when it gave
// one, else the usual defaults of its type.
func entryInfo(e *ftplib.Entry, facts lineFacts) remote.Info {
	info := remote.Info{Name: e.Name, Size: int64(e.Size), Mtime: e.Time}
	switch e.Type {
	case ftplib.EntryTypeFolder:
		info.Mode = os.ModeDir | 0o755
	case ftplib.EntryTypeLink:
		info.Mode = os.ModeSymlink | 0o777
	default:
		info.Mode = 0o644
	}
	if facts.hasMode {
		// The type is jlaffaye's; the line adds what it knows more
		// precisely (devices, pipes) only for non-directories.
		info.Mode = info.Mode.Type() | facts.mode.Perm() | facts.mode&(os.ModeSetuid|os.ModeSetgid|os.ModeSticky)
		if e.Type == ftplib.EntryTypeFile {
			info.Mode |= facts.mode.Type() &^ (os.ModeDir | os.ModeSymlink)
		}
	}
	return info
}

// statEntries reads the entries of a STAT reply's listing (msg, its
// lines between the first and the last), dated as of now; lines that are
// no listing line (the reply's own text) are left out.
func statEntries(msg string, now time.Time) (infos []remote.Info, self bool) {
	var es []*ftplib.Entry
	for _, line := range strings.Split(msg, "\n") {
		if e, err := ftplib.ParseListLine(strings.TrimRight(line, "\r"), now, time.UTC); err == nil {
			es = append(es, e)
		}
	}
	return entryInfos(msg, es)
}
