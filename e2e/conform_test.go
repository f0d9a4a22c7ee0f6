package e2e

// The POSIX conformance suite (issue 16): the same small, named cases
// (testdata/conform.py) run against a plain local directory, the
// reference where every case passes, and through the mount on sftp, 9p,
// ftp and http, each server exporting a fresh temporary directory. Every
// case checks the server's own copy of the directory (the local path the
// server exports), not only what the mount shows.
//
// conformContract is the contract: for each case and protocol, "same as
// local", "emulated" or "refused ERRNO". docs/wirefs.md (POSIX
// CONFORMANCE) holds the same table; TestConformDocs keeps them equal.

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"wirefs/internal/testsrv"
)

// The cells of the contract.
const (
	// cfSame: like a local file system, through the mount and on the
	// server's own copy.
	cfSame = "same as local"
	// cfEmulated: like a local file system through the mount; the server
	// gets what its protocol can carry (the case says which of its
	// server-side checks it drops, and the docs say it in words).
	cfEmulated = "emulated"
	// "refused ERRNO": every change the case makes fails with ERRNO and
	// the server is left unchanged; what the case reads is like local.
)

func cfRefused(errno string) string { return "refused " + errno }

// conformProtocols are the contract's columns, in order.
var conformProtocols = []string{"sftp", "9p", "ftp", "http"}

type conformRow struct {
	Case string // conform.py's case name
	What string // what it checks, as the docs table says it
	// The cells, in the order of conformProtocols.
	Cells [4]string
}

// FTP has no symbolic or hard links and no owners. Links are refused with
// EPERM because symlink(2) and link(2) name EPERM, and only EPERM, for
// "the file system does not support creating links", so that is what
// programs test for when they fall back (ln, cp -a/-l, rsync, tar, git's
// symlink probe); ENOTSUP is not among their documented errors and shows
// up as "Operation not supported", which scripts treat as a hard failure.
// chown is refused with EPERM as chown(2) refuses a change the caller
// may not make; cp -p, rsync and tar treat EPERM (and EINVAL) from chown
// as "ownership not kept" and go on. HTTP refuses every change with EROFS
// and reads like local.
var conformContract = []conformRow{
	{"symlink", "`ln -s f l`; readlink, lstat; the server has the link",
		[4]string{cfSame, cfSame, cfRefused("EPERM"), cfRefused("EROFS")}},
	{"hardlink", "`ln f h`: one inode, nlink 2 (mount and server); a write through h is f's",
		[4]string{cfEmulated, cfEmulated, cfRefused("EPERM"), cfRefused("EROFS")}},
	{"chown", "chown 65534:65534 as root",
		[4]string{cfSame, cfSame, cfRefused("EPERM"), cfRefused("EROFS")}},
	{"inode", "inode number kept by chmod, truncate, utime, write; `stat -c %i` = `ls -i` = readdir",
		[4]string{cfSame, cfSame, cfEmulated, cfRefused("EROFS")}},
	{"dirmtime", "a directory's mtime changes after create and after unlink in it",
		[4]string{cfSame, cfSame, cfEmulated, cfRefused("EROFS")}},
	{"chmod", "chmod 700 of a directory; 1755, 4755, 2755 on files and directories; open(O_CREAT, 0) makes mode 000",
		[4]string{cfSame, cfSame, cfEmulated, cfRefused("EROFS")}},
	{"utime", "utime(atime, mtime) of a file and of a directory",
		[4]string{cfSame, cfSame, cfEmulated, cfRefused("EROFS")}},
	{"unlinked", "fstat of an open, unlinked file: nlink 0; it stays readable and writable and never comes back",
		[4]string{cfSame, cfSame, cfSame, cfRefused("EROFS")}},
	{"statvfs", "statvfs: f_namemax = pathconf NAME_MAX > 0, f_blocks > 0: the server's figures",
		[4]string{cfSame, cfSame, cfEmulated, cfEmulated}},
	{"longname", "a 256-byte name: ENAMETOOLONG at once, nothing on the server, no retries; 255 bytes work",
		[4]string{cfSame, cfSame, cfSame, cfSame}},
	{"errnos", "errnos of 29 failing calls (ENOTEMPTY, EEXIST, EISDIR, ENOENT, ENOTDIR, EINVAL, EPERM) as local",
		[4]string{cfSame, cfSame, cfSame, cfRefused("EROFS")}},
	{"create", "create, write, read back",
		[4]string{cfSame, cfSame, cfSame, cfRefused("EROFS")}},
	{"append", "append with O_APPEND",
		[4]string{cfSame, cfSame, cfSame, cfRefused("EROFS")}},
	{"truncate", "truncate shorter and longer",
		[4]string{cfSame, cfSame, cfSame, cfRefused("EROFS")}},
	{"overwrite", "pwrite inside a file",
		[4]string{cfSame, cfSame, cfSame, cfRefused("EROFS")}},
	{"rename", "rename over a file, an editor's save, a directory over an empty one",
		[4]string{cfSame, cfSame, cfSame, cfRefused("EROFS")}},
	{"mkdir", "mkdir, a file in it, rmdir",
		[4]string{cfSame, cfSame, cfSame, cfRefused("EROFS")}},
	{"readdir", "readdir: every name (spaces, UTF-8, dot files) and type, after changes too",
		[4]string{cfSame, cfSame, cfSame, cfRefused("EROFS")}},
	{"stress", "concurrent O_APPEND writers, a renamer, readers: every record once and whole",
		[4]string{cfSame, cfSame, cfSame, cfRefused("EROFS")}},
}

// expectArg is conform.py's EXPECT for a cell: same, emulated or ERRNO.
func expectArg(cell string) string {
	switch cell {
	case cfSame:
		return "same"
	case cfEmulated:
		return "emulated"
	}
	return strings.TrimPrefix(cell, "refused ")
}

// longPrefix is in the name of conform.py's 256-byte name ("n" * 256).
var longPrefix = strings.Repeat("n", 40)

// The stress: writers × records appended, versions renamed.
const (
	stressRecords  = 40
	stressVersions = 20
)

var stressWriters = []string{"w1", "w2", "w3"}

// caseResult is what one run of a case reported.
type caseResult struct {
	diffs []string
	facts []conformFact
}

type conformFact struct {
	change       bool
	name, result string
}

func runCase(t *testing.T, name, opdir, srvdir, expect, rw string) caseResult {
	t.Helper()
	r := run(t, 60*time.Second, "", python, filepath.Join(testdata, "conform.py"), name, opdir, srvdir, expect, rw)
	var res caseResult
	sc := bufio.NewScanner(strings.NewReader(r.Stdout))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	sawOK := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "diff: "):
			res.diffs = append(res.diffs, strings.TrimPrefix(line, "diff: "))
		case strings.HasPrefix(line, "fact: "):
			f := strings.Fields(strings.TrimPrefix(line, "fact: "))
			if len(f) == 3 {
				res.facts = append(res.facts, conformFact{f[0] == "change", f[1], f[2]})
			}
		case line == "ok":
			sawOK = true
		}
	}
	if r.Code != 0 {
		res.diffs = append(res.diffs, fmt.Sprintf("conform.py %s broke: %s", name, r))
	} else if !sawOK && len(res.diffs) == 0 {
		res.diffs = append(res.diffs, fmt.Sprintf("conform.py %s said neither ok nor what differed: %s", name, r))
	}
	return res
}

// TestConform runs every case on the local reference, then through one
// mount per protocol, and reports each difference from the contract.
func TestConform(t *testing.T) {
	needFUSE(t)
	start := time.Now()
	ref := map[string]string{} // the local reference's errno facts
	t.Run("local", func(t *testing.T) {
		root := t.TempDir()
		os.Chmod(root, 0o755)
		mustOK(t, "setup", run(t, 30*time.Second, "", python, filepath.Join(testdata, "conform.py"), "setup", root))
		for _, row := range conformContract {
			t.Run(row.Case, func(t *testing.T) {
				dir := filepath.Join(root, row.Case)
				if row.Case == "stress" {
					conformStress(t, dir, dir)
					return
				}
				res := runCase(t, row.Case, dir, dir, "same", "rw")
				for _, d := range res.diffs {
					t.Errorf("%s on the local reference: %s", row.Case, d)
				}
				for _, f := range res.facts {
					ref[f.name] = f.result
				}
			})
		}
	})
	if len(ref) == 0 {
		t.Fatal("the local reference gave no errnos to compare with")
	}
	for i, proto := range conformProtocols {
		t.Run(proto, func(t *testing.T) {
			root := t.TempDir()
			os.Chmod(root, 0o755)
			// Everything the cases start from is made before the server
			// starts (vsftpd gives the tree to its user) and before the
			// mount first looks, so no cache holds an older listing.
			mustOK(t, "setup", run(t, 30*time.Second, "", python, filepath.Join(testdata, "conform.py"), "setup", root))
			m, dir := conformServer(t, proto, root)
			rw := "rw"
			if proto == "http" {
				rw = "ro"
			}
			for _, row := range conformContract {
				cell := row.Cells[i]
				t.Run(row.Case, func(t *testing.T) {
					op, srv := m.P(dir+"/"+row.Case), filepath.Join(root, row.Case)
					if row.Case == "stress" && !strings.HasPrefix(cell, "refused ") {
						conformStress(t, op, srv)
						return
					}
					res := runCase(t, row.Case, op, srv, expectArg(cell), rw)
					for _, d := range res.diffs {
						t.Errorf("%s on %s (contract: %s): %s", row.Case, proto, cell, d)
					}
					checkFacts(t, proto, cell, ref, res.facts)
					if row.Case == "longname" {
						checkNoRetries(t, m)
					}
				})
			}
		})
	}
	t.Logf("the conformance suite took %v", time.Since(start).Round(time.Millisecond))
}

// checkFacts compares the errnos of the errnos case with the local
// reference's. Where the contract refuses changes, a call that would
// change the tree may fail with the refusal's errno instead: POSIX lets
// a call report any one of the errors that apply.
func checkFacts(t *testing.T, proto, cell string, ref map[string]string, facts []conformFact) {
	t.Helper()
	refusal := ""
	if strings.HasPrefix(cell, "refused ") {
		refusal = expectArg(cell)
	}
	for _, f := range facts {
		want, ok := ref[f.name]
		switch {
		case !ok:
			t.Errorf("errnos on %s: %s: the local reference has no answer", proto, f.name)
		case f.result == want:
		case f.change && refusal != "" && f.result == refusal:
		case f.change && refusal != "":
			t.Errorf("errnos on %s (contract: %s): %s: got %s, want %s (the local reference's) or %s", proto, cell, f.name, f.result, want, refusal)
		default:
			t.Errorf("errnos on %s (contract: %s): %s: got %s, want %s (the local reference's)", proto, cell, f.name, f.result, want)
		}
	}
}

// checkNoRetries: the 256-byte name was refused once, not retried: at
// most one log line per call (open, mkdir, stat), none about write-back
// or retries, and nothing waits in .wirefs/writeback.
func checkNoRetries(t *testing.T, m *Mount) {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(readFile(m.Log), "\n") {
		if strings.Contains(l, longPrefix) {
			lines = append(lines, l)
			low := strings.ToLower(l)
			if strings.Contains(low, "retr") || strings.Contains(low, "write-back") || strings.Contains(low, "writeback") {
				t.Errorf("longname: the mount log shows a retry or write-back of the 256-byte name: %s", l)
			}
		}
	}
	if len(lines) > 3 {
		t.Errorf("longname: %d log lines about the 256-byte name for 3 calls, want at most 3 (retried?):\n%s", len(lines), strings.Join(lines, "\n"))
	}
	if wb := readFile(m.P(".wirefs/writeback")); strings.Contains(wb, longPrefix) {
		t.Errorf("longname: .wirefs/writeback holds the 256-byte name: %s", wb)
	}
}

// conformServer starts proto's server exporting root, mounts wirefs, and
// returns the mount and root's name below the mount point.
func conformServer(t *testing.T, proto, root string) (*Mount, string) {
	t.Helper()
	switch proto {
	case "sftp":
		s := testsrv.StartSSHD(t)
		return remoteMount(t, sshHome(t, s, true)), "sftp/testhost" + root
	case "9p":
		addr := testsrv.Diod(t, root)
		return remoteMount(t, t.TempDir()), "9p/" + addr + root
	case "ftp":
		addr, login, password := testsrv.Vsftpd(t, root, testsrv.VsftpdLocalUser())
		home := t.TempDir()
		host, _, _ := strings.Cut(addr, ":")
		os.WriteFile(filepath.Join(home, ".netrc"), []byte("machine "+host+" login "+login+" password "+password+"\n"), 0o600)
		return remoteMount(t, home), "ftp/" + login + "@" + addr
	case "http":
		addr, _ := testsrv.Nginx(t, root, false)
		return remoteMount(t, t.TempDir()), "http/" + addr
	}
	t.Fatalf("no server for %q", proto)
	return nil, ""
}

// conformStress: several processes append fixed-size records (open
// O_APPEND, write, close) to op/log, one renames a new version of
// op/target over it again and again, two read both back all the while;
// at the end the server's copy has every record once and whole, no NUL
// bytes, and the last complete version of target.
func conformStress(t *testing.T, op, srv string) {
	t.Helper()
	script := filepath.Join(testdata, "conform.py")
	stop := filepath.Join(t.TempDir(), "stop")
	var writers []*Proc
	for _, w := range stressWriters {
		writers = append(writers, start(t, 60*time.Second, "", nil, python, script, "stress-append", filepath.Join(op, "log"), w, strconv.Itoa(stressRecords)))
	}
	writers = append(writers, start(t, 60*time.Second, "", nil, python, script, "stress-rename", op, strconv.Itoa(stressVersions)))
	var readers []*Proc
	for range 2 {
		readers = append(readers, start(t, 60*time.Second, "", nil, python, script, "stress-read", op, strconv.Itoa(stressVersions), stop))
	}
	for i, p := range writers {
		what := "renamer"
		if i < len(stressWriters) {
			what = "appender " + stressWriters[i]
		}
		if r := p.wait(t, 60*time.Second); r.Code != 0 {
			t.Errorf("stress: %s: %s", what, r)
		}
	}
	if err := os.WriteFile(stop, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range readers {
		if r := p.wait(t, 60*time.Second); r.Code != 0 {
			t.Errorf("stress: reader: %s", r)
		}
	}
	r := run(t, 30*time.Second, "", python, script, "stress-verify", srv, strings.Join(stressWriters, ","),
		strconv.Itoa(stressRecords), strconv.Itoa(stressVersions))
	if r.Code != 0 {
		t.Errorf("stress-verify broke: %s", r)
	}
	for _, l := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		if d, ok := strings.CutPrefix(l, "diff: "); ok {
			t.Errorf("stress: %s", d)
		}
	}
	for _, name := range []string{"log", "target"} {
		viaMount, err := os.ReadFile(filepath.Join(op, name))
		onServer, _ := os.ReadFile(filepath.Join(srv, name))
		if err != nil || string(viaMount) != string(onServer) {
			t.Errorf("stress: %s through the mount afterwards: %d bytes (%v), want the server's %d bytes", name, len(viaMount), err, len(onServer))
		}
	}
}

// TestConformDocs: the table of docs/wirefs.md's POSIX CONFORMANCE
// section is conformContract, row by row and cell by cell.
func TestConformDocs(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "wirefs.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "\n## POSIX CONFORMANCE\n")
	if i < 0 {
		t.Fatal("docs/wirefs.md has no \"## POSIX CONFORMANCE\" section")
	}
	section := doc[i+1:]
	if j := strings.Index(section[3:], "\n## "); j >= 0 {
		section = section[:j+3]
	}
	var rows [][]string
	for _, line := range strings.Split(section, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			if len(rows) > 0 {
				break // the first table only
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for k := range cells {
			cells[k] = strings.TrimSpace(cells[k])
		}
		rows = append(rows, cells)
	}
	header := append([]string{"case", "operation"}, conformProtocols...)
	if len(rows) < 2 {
		t.Fatalf("the POSIX CONFORMANCE section has no table")
	}
	if strings.Join(rows[0], "|") != strings.Join(header, "|") {
		t.Errorf("docs table header = %q, want %q", rows[0], header)
	}
	rows = rows[2:] // the header and |---|
	for k, row := range conformContract {
		want := append([]string{"`" + row.Case + "`", row.What}, row.Cells[:]...)
		if k >= len(rows) {
			t.Errorf("docs table lacks row %d: %q", k+1, want)
			continue
		}
		if got := rows[k]; strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("docs table row %d:\n got  %q\n want %q", k+1, got, want)
		}
	}
	for k := len(conformContract); k < len(rows); k++ {
		t.Errorf("docs table row %d is not in the test's contract: %q", k+1, rows[k])
	}
}
