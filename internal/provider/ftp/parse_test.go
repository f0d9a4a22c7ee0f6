package ftp

import (
	"errors"
	"fmt"
	"io"
	"net/textproto"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	ftplib "github.com/jlaffaye/ftp"

	"wirefs/internal/remote"
)

// lsMode formats m as the mode column of "ls -l" (the inverse of
// parseLsMode, for the round trip).
func lsMode(m os.FileMode) string {
	b := []byte("----------")
	switch {
	case m&os.ModeDir != 0:
		b[0] = 'd'
	case m&os.ModeSymlink != 0:
		b[0] = 'l'
	case m&os.ModeNamedPipe != 0:
		b[0] = 'p'
	case m&os.ModeSocket != 0:
		b[0] = 's'
	case m&os.ModeCharDevice != 0:
		b[0] = 'c'
	case m&os.ModeDevice != 0:
		b[0] = 'b'
	}
	for i, c := range "rwxrwxrwx" {
		if m&(1<<uint(8-i)) != 0 {
			b[1+i] = byte(c)
		}
	}
	for i, sp := range []struct {
		bit    os.FileMode
		letter byte
	}{{os.ModeSetuid, 's'}, {os.ModeSetgid, 's'}, {os.ModeSticky, 't'}} {
		if m&sp.bit != 0 {
			if b[3+3*i] == 'x' {
				b[3+3*i] = sp.letter
			} else {
				b[3+3*i] = sp.letter - 'a' + 'A'
			}
		}
	}
	return string(b)
}

func TestParseLsMode(t *testing.T) {
	for s, want := range map[string]os.FileMode{
		"-rw-r--r--": 0o644,
		"drwxr-x---": os.ModeDir | 0o750,
		"lrwxrwxrwx": os.ModeSymlink | 0o777,
		"-rwsr-xr-x": os.ModeSetuid | 0o755,
		"drwxrwxrwt": os.ModeDir | os.ModeSticky | 0o777,
		"-rw-r-Sr--": os.ModeSetgid | 0o644,
		"crw-rw----": os.ModeDevice | os.ModeCharDevice | 0o660,
	} {
		if got, ok := parseLsMode(s); !ok || got != want {
			t.Errorf("parseLsMode(%q) = %v, %v; want %v", s, got, ok, want)
		}
	}
	for _, s := range []string{"", "total 12", "-rw-r--r-", "xrw-r--r--", "-rwxrwxrwq", "-rwtr--r--"} {
		if _, ok := parseLsMode(s); ok {
			t.Errorf("parseLsMode(%q) accepted", s)
		}
	}
}

func FuzzParseLsMode(f *testing.F) {
	f.Add("-rw-r--r--")
	f.Add("drwsr-S--T")
	f.Add("lrwxrwxrwx")
	f.Fuzz(func(t *testing.T, s string) {
		m, ok := parseLsMode(s)
		if !ok {
			return
		}
		if back := lsMode(m); back != s {
			t.Fatalf("parseLsMode(%q) = %v, formats back as %q", s, m, back)
		}
	})
}

func TestParseLine(t *testing.T) {
	for line, want := range map[string]lineFacts{
		"drwxr-xr-x    2 1001     0            4096 Nov 23 10:25 sub":    {mode: os.ModeDir | 0o755, hasMode: true},
		"type=file;size=6;modify=20240101000000;UNIX.mode=0640; a b.txt": {mode: 0o640, hasMode: true},
		"type=cdir;modify=20240101000000;unix.mode=0755; /pub":           {mode: os.ModeDir | 0o755, hasMode: true, self: true},
		"type=pdir;modify=20240101000000; ..":                            {mode: os.ModeDir, self: true},
		"type=file;unix.mode=4755; suid":                                 {mode: os.ModeSetuid | 0o755, hasMode: true},
		"type=file;unix.mode=99; bad":                                    {},
		"total 8":                                                        {},
		"01-02-06  03:04PM       <DIR>          dos":                     {},
	} {
		if got := parseLine(line); got != want {
			t.Errorf("parseLine(%q) = %+v, want %+v", line, got, want)
		}
	}
}

func TestEntryInfos(t *testing.T) {
	now := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	raw := "total 12\r\n" +
		"drwxr-xr-x    2 0 0 4096 Nov 23 10:25 .\r\n" +
		"drwxr-xr-x    3 0 0 4096 Nov 23 10:25 ..\r\n" +
		"-rwxr-x---    1 0 0    6 Nov 23 10:25 run me\r\n" +
		"lrwxrwxrwx    1 0 0    5 Nov 23 10:25 link -> run me\r\n" +
		"drwx------    2 0 0 4096 Nov 23 10:25 private\r\n"
	entries := []*ftplib.Entry{
		{Name: ".", Type: ftplib.EntryTypeFolder},
		{Name: "..", Type: ftplib.EntryTypeFolder},
		{Name: "run me", Type: ftplib.EntryTypeFile, Size: 6, Time: now},
		{Name: "link", Target: "run me", Type: ftplib.EntryTypeLink, Size: 5, Time: now},
		{Name: "private", Type: ftplib.EntryTypeFolder, Size: 4096, Time: now},
	}
	infos, self := entryInfos(raw, entries)
	want := []remote.Info{
		{Name: "run me", Mode: 0o750, Size: 6, Mtime: now},
		{Name: "link", Mode: os.ModeSymlink | 0o777, Size: 5, Mtime: now},
		{Name: "private", Mode: os.ModeDir | 0o700, Size: 4096, Mtime: now},
	}
	if !self || len(infos) != len(want) {
		t.Fatalf("entryInfos = %+v, self %v", infos, self)
	}
	for i := range want {
		if infos[i] != want[i] {
			t.Errorf("entry %d = %+v, want %+v", i, infos[i], want[i])
		}
	}
	// A line jlaffaye could not parse has no entry: the next one still
	// gets its own line's mode; an entry without a line gets a default.
	infos, self = entryInfos("garbage line x\n-rwx------ 1 0 0 1 Jan 1 2020 x\n", []*ftplib.Entry{
		{Name: "x", Type: ftplib.EntryTypeFile}, {Name: "y", Type: ftplib.EntryTypeFile},
	})
	if self || infos[0].Mode != 0o700 || infos[1].Mode != 0o644 {
		t.Errorf("entryInfos with an unparsed line = %+v, self %v", infos, self)
	}
}

func FuzzEntryInfos(f *testing.F) {
	f.Add("drwxr-xr-x 2 0 0 4096 Nov 23 10:25 .\n-rw-r--r-- 1 0 0 6 Nov 23 10:25 a\n")
	f.Add("type=cdir;unix.mode=0755; /\ntype=file;size=1;unix.mode=0600; a b\n")
	f.Add("lrwxrwxrwx 1 0 0 1 Nov 23 10:25 l -> t\r\n")
	f.Fuzz(func(t *testing.T, raw string) {
		// Entries as jlaffaye would parse them from the same text.
		var entries []*ftplib.Entry
		for _, line := range strings.Split(raw, "\n") {
			line = strings.TrimSuffix(line, "\r")
			if i := strings.LastIndexByte(line, ' '); i >= 0 && i+1 < len(line) {
				entries = append(entries, &ftplib.Entry{Name: line[i+1:]})
			}
		}
		infos, _ := entryInfos(raw, entries)
		if len(infos) > len(entries) {
			t.Fatalf("%d infos from %d entries", len(infos), len(entries))
		}
		for _, i := range infos {
			if i.Mode.IsDir() || i.Mode&os.ModeSymlink != 0 {
				t.Fatalf("a file entry became %v", i.Mode)
			}
		}
	})
}

// FuzzStatEntries: any STAT reply gives entries without a panic, at
// most one per line, none named "." or "..", with a name.
func FuzzStatEntries(f *testing.F) {
	f.Add("Status follows:\r\ndrwxr-xr-x    2 0        0            4096 Nov 26 18:00 .\r\ndrwxr-xr-x    3 0        0            4096 Nov 26 18:00 ..\r\n-rw-r--r--    1 0        0               6 Nov 26 17:00 a.txt\r\n-rw-r--r--    1 0        0               6 Mar 04  2019 two words\r\nlrwxrwxrwx    1 0        0               1 Nov 26 18:00 l -> t\r\nEnd of status")
	f.Add("Status follows:\r\nEnd of status")
	f.Add("11-26-26  06:00PM       <DIR>          sub\r\n11-26-26  06:00PM                 6 a.txt")
	f.Fuzz(func(t *testing.T, msg string) {
		infos, _ := statEntries(msg, time.Date(2026, 11, 26, 18, 30, 0, 0, time.UTC))
		if n := strings.Count(msg, "\n") + 1; len(infos) > n {
			t.Fatalf("%d entries from %d lines", len(infos), n)
		}
		for _, i := range infos {
			if i.Name == "." || i.Name == ".." || i.Name == "" {
				t.Fatalf("an entry named %q", i.Name)
			}
		}
	})
}

// TestStatEntries: vsftpd's STAT -a reply, as the fuzz corpus's first.
func TestStatEntries(t *testing.T) {
	msg := "Status follows:\r\ndrwxr-x---    2 0        0            4096 Nov 26 18:00 .\r\n-rwxr-xr-x    1 0        0               6 Nov 26 17:00 run.sh\r\n-rw-r--r--    1 0        0               6 Mar 04  2019 two words\r\nEnd of status"
	infos, self := statEntries(msg, time.Date(2026, 11, 26, 18, 30, 0, 0, time.UTC))
	if !self || len(infos) != 2 || infos[0].Name != "run.sh" || infos[0].Mode != 0o755 || infos[0].Size != 6 ||
		infos[1].Name != "two words" || !infos[1].Mtime.Equal(time.Date(2019, 3, 4, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("statEntries = %+v, self %v", infos, self)
	}
}

func TestReplyErrno(t *testing.T) {
	for _, c := range []struct {
		code      int
		msg       string
		want      syscall.Errno
		ambiguous bool
	}{
		{550, "Failed to open file.", syscall.EIO, true},
		{550, "Permission denied.", syscall.EACCES, false},
		{550, "/x: No such file or directory", syscall.ENOENT, false},
		{550, "Directory not empty", syscall.ENOTEMPTY, false},
		{553, "Could not create file.", syscall.EACCES, true},
		{552, "Quota exceeded", syscall.ENOSPC, false},
		{452, "Insufficient storage space", syscall.ENOSPC, false},
		{451, "Local error", syscall.EIO, false},
		{530, "Login incorrect.", syscall.EACCES, false},
		{500, "Unknown SITE command.", syscall.ENOTSUP, false},
		{502, "Command not implemented", syscall.ENOTSUP, false},
		{501, "Bad argument", syscall.EINVAL, false},
		{421, "Timeout.", syscall.EIO, false},
		{426, "Failure writing network stream.", syscall.EIO, false},
	} {
		got, amb := replyErrno(c.code, c.msg)
		if got != c.want || amb != c.ambiguous {
			t.Errorf("replyErrno(%d, %q) = %v, %v; want %v, %v", c.code, c.msg, got, amb, c.want, c.ambiguous)
		}
	}
}

func FuzzReplyErrno(f *testing.F) {
	f.Add(550, "Failed to open file.")
	f.Add(553, "Permission denied")
	f.Add(230, "Login successful.")
	f.Fuzz(func(t *testing.T, code int, msg string) {
		errno, ambiguous := replyErrno(code, msg)
		if errno == 0 {
			t.Fatalf("replyErrno(%d, %q) gave no errno", code, msg)
		}
		if ambiguous && code != 550 && code != 553 && code != 450 && code != 551 {
			t.Fatalf("replyErrno(%d, %q) ambiguous", code, msg)
		}
	})
}

func TestServerPath(t *testing.T) {
	for _, c := range []struct{ home, p, want string }{
		{"/", "/", "/"},
		{"/", "/pub/x", "/pub/x"},
		{"/home/me", "/", "/home/me"},
		{"/home/me", "/src/a.c", "/home/me/src/a.c"},
	} {
		b := &Backend{home: c.home}
		if got := b.serverPath(c.p); got != c.want {
			t.Errorf("home %q: serverPath(%q) = %q, want %q", c.home, c.p, got, c.want)
		}
	}
}

func TestPassivePort(t *testing.T) {
	for _, c := range []struct {
		code int
		msg  string
		want int // 0: an error
	}{
		{229, "Entering Extended Passive Mode (|||27846|)", 27846},
		{229, "Extended Passive Mode Entered (!!!1024!)", 1024},
		{227, "Entering Passive Mode (127,0,0,1,108,199).", 108<<8 | 199},
		{227, "Entering Passive Mode (127, 0, 0, 1, 4, 1)", 1025},
		{229, "Entering Extended Passive Mode (|||0|)", 0},
		{229, "Entering Extended Passive Mode (|||70000|)", 0},
		{229, "Entering Extended Passive Mode (||127.0.0.1|21|)", 0},
		{229, "no parenthesis", 0},
		{227, "Entering Passive Mode (127,0,0,1,300,1)", 0},
		{227, "Entering Passive Mode (127,0,0,1,1)", 0},
		{200, "(|||21|)", 0},
	} {
		got, err := passivePort(c.code, c.msg)
		if c.want == 0 && err == nil || c.want != 0 && (err != nil || got != c.want) {
			t.Errorf("passivePort(%d, %q) = %d, %v; want %d", c.code, c.msg, got, err, c.want)
		}
	}
}

func FuzzPassivePort(f *testing.F) {
	f.Add(229, "Entering Extended Passive Mode (|||27846|)")
	f.Add(227, "Entering Passive Mode (127,0,0,1,108,199).")
	f.Add(229, "(|||)")
	f.Fuzz(func(t *testing.T, code int, msg string) {
		port, err := passivePort(code, msg)
		if err == nil && (port < 1 || port > 65535) {
			t.Fatalf("passivePort(%d, %q) = %d", code, msg, port)
		}
	})
}

func TestTooManyConnections(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&textproto.Error{Code: 421, Msg: "There are too many connections from your internet address."}, true},
		{&textproto.Error{Code: 421, Msg: "Too many connections from the same IP address."}, true},
		{&textproto.Error{Code: 530, Msg: "Sorry, the maximum number of clients (3) from your host are already connected."}, true},
		{errors.New("Sorry, the maximum number of clients (3) from your host are already connected."), true},
		{&textproto.Error{Code: 530, Msg: "Login incorrect."}, false},
		{errors.New("Login incorrect."), false},
		{fmt.Errorf("read: %w", syscall.ECONNRESET), false},
		{io.EOF, false},
	} {
		if got := tooManyConnections(c.err); got != c.want {
			t.Errorf("tooManyConnections(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
