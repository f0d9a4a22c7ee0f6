package ftp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"wirefs/internal/leakcheck"
	"wirefs/internal/ns"
	"wirefs/internal/remote"
	"wirefs/internal/testsrv"
)

// fixture is a vsftpd serving root to a throwaway local user whose
// password is in a ~/.netrc under home.
type fixture struct {
	root   string
	server string // user@127.0.0.1:port
	home   string
	srv    *testsrv.VsftpdServer
}

// newFixture fills root with files, then starts vsftpd (which gives the
// tree to the FTP user).
func newFixture(t *testing.T, files map[string]string, opts ...testsrv.VsftpdOption) *fixture {
	t.Helper()
	f := &fixture{root: t.TempDir(), home: t.TempDir()}
	for name, data := range files {
		p := filepath.Join(f.root, name)
		if strings.HasSuffix(name, "/") {
			mustDo(t, os.MkdirAll(p, 0o755))
			continue
		}
		mustDo(t, os.MkdirAll(filepath.Dir(p), 0o755))
		mustDo(t, os.WriteFile(p, []byte(data), 0o644))
	}
	opts = append(opts, testsrv.VsftpdLocalUser(), testsrv.VsftpdControl(&f.srv))
	addr, user, password := testsrv.Vsftpd(t, f.root, opts...)
	f.server = user + "@" + addr
	host := strings.Split(addr, ":")[0]
	mustDo(t, os.WriteFile(filepath.Join(f.home, ".netrc"), []byte(fmt.Sprintf("machine %s login %s password %s\n", host, user, password)), 0o600))
	return f
}

// farPoolTimes are the pool's clocks for a loopback server treated as a
// far one: a session uses every connection Options.Connections allows,
// as the tests of the pool's bounds expect (TestBoundFollowsRTT tests the
// bound by the round trip).
var farPoolTimes = func() poolTimes {
	t := defaultPoolTimes
	t.rttFloor = 10 * time.Millisecond
	return t
}()

func (f *fixture) dial(t *testing.T, o remote.Options) *Backend {
	t.Helper()
	if o.Home == "" {
		o.Home = f.home
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	b, err := dial(context.Background(), f.server, o, farPoolTimes)
	if err != nil {
		t.Fatalf("Dial %s: %v", f.server, err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErrno(t *testing.T, what string, err error, want syscall.Errno) {
	t.Helper()
	if got := ns.Errno(err); got != want {
		t.Errorf("%s: got %v (errno %v), want %v", what, err, got, want)
	}
}

func readAll(t *testing.T, b *Backend, p string, off, n int64) []byte {
	t.Helper()
	r, err := b.ReadRange(context.Background(), p, off, n)
	if err != nil {
		t.Fatalf("ReadRange(%s, %d, %d): %v", p, off, n, err)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	mustDo(t, r.Close())
	return data
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// TestStatAndList: listings and stats, with names, modes and times, of
// files, directories, and what is missing or not a directory — on the
// control connection (STAT -a, no LIST at all), and with LIST where the
// server refuses STAT.
func TestStatAndList(t *testing.T) {
	t.Run("STAT", func(t *testing.T) {
		if f := statAndList(t); f.srv.Commands("LIST") != 0 || f.srv.Commands("STAT -a /") == 0 {
			t.Errorf("%d LIST, %d STAT -a: want every listing by STAT", f.srv.Commands("LIST"), f.srv.Commands("STAT -a /"))
		}
	})
	t.Run("LIST", func(t *testing.T) {
		if f := statAndList(t, testsrv.VsftpdDeny("STAT")); f.srv.Commands("LIST") == 0 {
			t.Error("no LIST: the server refuses STAT")
		}
	})
}

func statAndList(t *testing.T, opts ...testsrv.VsftpdOption) *fixture {
	f := newFixture(t, map[string]string{
		"a.txt":         "hello\n",
		".hidden":       "dot",
		"run.sh":        "#!/bin/sh\n",
		"sub/inner.txt": "inner",
		"empty/":        "",
		"two words":     "spaced",
	}, opts...)
	mustDo(t, os.Chmod(filepath.Join(f.root, "run.sh"), 0o755))
	mustDo(t, os.Chmod(filepath.Join(f.root, "sub"), 0o750))
	recent := time.Now().Add(-time.Hour).Truncate(time.Minute).UTC()
	mustDo(t, os.Chtimes(filepath.Join(f.root, "a.txt"), recent, recent))
	old := time.Date(2019, 3, 4, 5, 6, 7, 0, time.UTC)
	mustDo(t, os.Chtimes(filepath.Join(f.root, "sub/inner.txt"), old, old))
	b := f.dial(t, remote.Options{})
	ctx := context.Background()

	infos, err := b.List(ctx, "/")
	mustDo(t, err)
	got := map[string]remote.Info{}
	var names []string
	for _, i := range infos {
		got[i.Name] = i
		names = append(names, i.Name)
	}
	sort.Strings(names)
	if want := ".hidden a.txt empty run.sh sub two words"; strings.Join(names, " ") != want {
		t.Fatalf("List / = %q, want %q", names, want)
	}
	if i := got["a.txt"]; i.Size != 6 || i.Mode != 0o644 || !i.Mtime.Equal(recent) {
		t.Errorf("a.txt: %+v, want size 6, mode 0644, mtime %v", i, recent)
	}
	if i := got["run.sh"]; i.Mode != 0o755 {
		t.Errorf("run.sh mode %v, want 0755", i.Mode)
	}
	if i := got["sub"]; i.Mode != os.ModeDir|0o750 {
		t.Errorf("sub mode %v, want drwxr-x---", i.Mode)
	}

	st, err := b.Stat(ctx, "/sub/inner.txt")
	mustDo(t, err)
	// ls shows only the day for files older than six months.
	if st.Name != "inner.txt" || st.Size != 5 || !st.Mtime.Equal(old.Truncate(24*time.Hour)) {
		t.Errorf("Stat /sub/inner.txt = %+v, want size 5 and mtime %v", st, old.Truncate(24*time.Hour))
	}
	if st, err := b.Stat(ctx, "/a.txt"); err != nil || st != got["a.txt"] {
		t.Errorf("Stat /a.txt = %+v, %v; want what List says: %+v", st, err, got["a.txt"])
	}
	if got := readAll(t, b, "/two words", 1, 3); string(got) != "pac" {
		t.Errorf("read of a name with a space: %q", got)
	}
	if st, err := b.Stat(ctx, "/empty"); err != nil || !st.Mode.IsDir() {
		t.Errorf("Stat /empty = %+v, %v; want a directory", st, err)
	}
	if st, err := b.Stat(ctx, "/"); err != nil || !st.Mode.IsDir() {
		t.Errorf("Stat / = %+v, %v; want a directory", st, err)
	}
	if l, err := b.List(ctx, "/empty"); err != nil || len(l) != 0 {
		t.Errorf("List /empty = %v, %v; want empty", l, err)
	}

	_, err = b.Stat(ctx, "/nope")
	wantErrno(t, "Stat /nope", err, syscall.ENOENT)
	_, err = b.Stat(ctx, "/nodir/nope")
	wantErrno(t, "Stat /nodir/nope", err, syscall.ENOENT)
	_, err = b.List(ctx, "/nope")
	wantErrno(t, "List /nope", err, syscall.ENOENT)
	_, err = b.List(ctx, "/a.txt")
	wantErrno(t, "List /a.txt", err, syscall.ENOTDIR)
	_, err = b.ReadRange(ctx, "/nope", 0, -1)
	wantErrno(t, "ReadRange /nope", err, syscall.ENOENT)
	_, err = b.ReadRange(ctx, "/sub", 0, -1)
	wantErrno(t, "ReadRange /sub", err, syscall.EISDIR)
	return f
}

func TestReadRange(t *testing.T) {
	data := randomBytes(3<<20 + 17)
	f := newFixture(t, map[string]string{"big": string(data)})
	b := f.dial(t, remote.Options{Connections: testConns})
	for _, c := range []struct{ off, n int64 }{
		{0, -1}, {0, 10}, {1, 1}, {12345, 5000}, {int64(len(data)) - 10, 10},
		{int64(len(data)) - 10, 100}, // fewer bytes only at the end
		{1 << 20, -1}, {int64(len(data)), 10}, {int64(len(data)) + 5, -1},
	} {
		got := readAll(t, b, "/big", c.off, c.n)
		lo := min(c.off, int64(len(data)))
		hi := int64(len(data))
		if c.n >= 0 {
			hi = min(lo+c.n, hi)
		}
		if !bytes.Equal(got, data[lo:hi]) {
			t.Errorf("ReadRange(%d, %d): %d bytes, want %d bytes of the file from %d", c.off, c.n, len(got), hi-lo, lo)
		}
	}
	// Abandoned transfers: the connections go back to the pool.
	for i := 0; i < 2*testConns; i++ {
		r, err := b.ReadRange(context.Background(), "/big", int64(i)*1000, -1)
		mustDo(t, err)
		buf := make([]byte, 100)
		if _, err := io.ReadFull(r, buf); err != nil || !bytes.Equal(buf, data[i*1000:i*1000+100]) {
			t.Fatalf("read %d: %v", i, err)
		}
		mustDo(t, r.Close())
	}
	if n := b.liveConns(); n > testConns || n < 1 {
		t.Errorf("%d connections after abandoned reads, want 1..%d", n, testConns)
	}
	if _, err := b.Stat(context.Background(), "/big"); err != nil {
		t.Errorf("Stat after abandoned reads: %v", err)
	}
}

func TestStoreAndReadBack(t *testing.T) {
	f := newFixture(t, map[string]string{"dir/": "", "old": strings.Repeat("x", 1000)})
	b := f.dial(t, remote.Options{})
	ctx := context.Background()
	data := randomBytes(16 << 20)
	mustDo(t, b.Store(ctx, "/dir/big.bin", bytes.NewReader(data), int64(len(data)), 0o600))
	got := readAll(t, b, "/dir/big.bin", 0, -1)
	if sha256.Sum256(got) != sha256.Sum256(data) {
		t.Fatalf("read back %d bytes with another checksum than the %d stored", len(got), len(data))
	}
	onDisk, err := os.ReadFile(filepath.Join(f.root, "dir/big.bin"))
	mustDo(t, err)
	if sha256.Sum256(onDisk) != sha256.Sum256(data) {
		t.Fatal("the server's file differs from what was stored")
	}
	if fi, _ := os.Stat(filepath.Join(f.root, "dir/big.bin")); fi.Mode().Perm() != 0o600 {
		t.Errorf("new file mode %v, want 0600", fi.Mode().Perm())
	}
	// Replacing keeps the mode and leaves exactly the new contents; the
	// mode comes from STAT's listing of the file, not a LIST of its
	// directory (a data connection and three round trips more).
	mustDo(t, os.Chmod(filepath.Join(f.root, "old"), 0o640))
	lists := f.srv.Commands("LIST")
	mustDo(t, b.Store(ctx, "/old", strings.NewReader("short"), 5, 0o600))
	if got, _ := os.ReadFile(filepath.Join(f.root, "old")); string(got) != "short" {
		t.Errorf("replaced file holds %q", got)
	}
	if fi, _ := os.Stat(filepath.Join(f.root, "old")); fi.Mode().Perm() != 0o640 {
		t.Errorf("replaced file mode %v, want the old 0640", fi.Mode().Perm())
	}
	if n := f.srv.Commands("LIST") - lists; n != 0 {
		t.Errorf("a replacing store listed the directory %d times, want none (STAT)", n)
	}
	mustDo(t, b.Store(ctx, "/empty", strings.NewReader(""), 0, 0))
	if fi, err := os.Stat(filepath.Join(f.root, "empty")); err != nil || fi.Size() != 0 {
		t.Errorf("empty store: %v %v", fi, err)
	}
	err = b.Store(ctx, "/short", strings.NewReader("abc"), 10, 0)
	wantErrno(t, "Store of a source shorter than its size", err, syscall.EIO)
	err = b.Store(ctx, "/nodir/x", strings.NewReader("abc"), 3, 0)
	wantErrno(t, "Store into a missing directory", err, syscall.ENOENT)
	err = b.Store(ctx, "/dir", strings.NewReader("abc"), 3, 0)
	wantErrno(t, "Store over a directory", err, syscall.EISDIR)
}

// TestAppend: APPE adds to the server's file as it is, from two sessions
// at once, and never creates a missing file.
func TestAppend(t *testing.T) {
	f := newFixture(t, map[string]string{"log": "abc", "dir/": ""})
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 2 {
		b := f.dial(t, remote.Options{})
		wg.Go(func() {
			for range 20 {
				line := fmt.Sprintf("%d%s\n", i, strings.Repeat("-", 100))
				n, err := b.Append(ctx, "/log", strings.NewReader(line), int64(len(line)))
				if err != nil || n < 3+int64(len(line)) {
					t.Errorf("Append = %d, %v", n, err)
					return
				}
			}
		})
	}
	wg.Wait()
	data, err := os.ReadFile(filepath.Join(f.root, "log"))
	mustDo(t, err)
	if len(data) != 3+40*102 || strings.Count(string(data), "\n") != 40 || !strings.HasPrefix(string(data), "abc") {
		t.Fatalf("two appenders left %d bytes: %q...", len(data), data[:min(len(data), 200)])
	}
	b := f.dial(t, remote.Options{})
	_, err = b.Append(ctx, "/missing", strings.NewReader("x"), 1)
	wantErrno(t, "Append to a missing file", err, syscall.ENOENT)
	if _, serr := os.Stat(filepath.Join(f.root, "missing")); serr == nil {
		t.Error("Append created a missing file")
	}
	_, err = b.Append(ctx, "/log", strings.NewReader("x"), 2)
	wantErrno(t, "Append of a short source", err, syscall.EIO)
}

func TestMkdirRemoveRenameChmod(t *testing.T) {
	f := newFixture(t, map[string]string{"f": "data", "full/x": "x"})
	b := f.dial(t, remote.Options{})
	ctx := context.Background()
	disk := func(p string) string { return filepath.Join(f.root, p) }

	mustDo(t, b.Mkdir(ctx, "/d", 0o700))
	if fi, err := os.Stat(disk("d")); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("after Mkdir /d: %v %v, want a 0700 directory", fi, err)
	}
	wantErrno(t, "Mkdir of an existing name", b.Mkdir(ctx, "/d", 0o755), syscall.EEXIST)
	wantErrno(t, "Mkdir in a missing directory", b.Mkdir(ctx, "/no/d", 0o755), syscall.ENOENT)

	mustDo(t, b.Rename(ctx, "/d", "/e"))
	if _, err := os.Stat(disk("e")); err != nil {
		t.Errorf("after Rename /d /e: %v", err)
	}
	wantErrno(t, "Rename of a missing file", b.Rename(ctx, "/d", "/g"), syscall.ENOENT)
	mustDo(t, b.Rename(ctx, "/f", "/e/f"))
	if got, _ := os.ReadFile(disk("e/f")); string(got) != "data" {
		t.Errorf("renamed file holds %q", got)
	}

	mustDo(t, b.Chmod(ctx, "/e/f", 0o751))
	if fi, _ := os.Stat(disk("e/f")); fi.Mode().Perm() != 0o751 {
		t.Errorf("after Chmod: %v", fi.Mode())
	}
	if st, err := b.Stat(ctx, "/e/f"); err != nil || st.Mode != 0o751 {
		t.Errorf("Stat after Chmod: %v %v", st.Mode, err)
	}
	wantErrno(t, "Chmod of a missing file", b.Chmod(ctx, "/nope", 0o644), syscall.ENOENT)

	wantErrno(t, "Rmdir of a non-empty directory", b.Rmdir(ctx, "/e"), syscall.ENOTEMPTY)
	wantErrno(t, "Remove of a directory", b.Remove(ctx, "/e"), syscall.EISDIR)
	wantErrno(t, "Rmdir of a file", b.Rmdir(ctx, "/e/f"), syscall.ENOTDIR)
	mustDo(t, b.Remove(ctx, "/e/f"))
	wantErrno(t, "Remove of a missing file", b.Remove(ctx, "/e/f"), syscall.ENOENT)
	mustDo(t, b.Rmdir(ctx, "/e"))
	wantErrno(t, "Rmdir of a missing directory", b.Rmdir(ctx, "/e"), syscall.ENOENT)
	if _, err := os.Stat(disk("e")); !os.IsNotExist(err) {
		t.Errorf("after Rmdir: %v", err)
	}
	wantErrno(t, "name with a line break", b.Mkdir(ctx, "/a\r\nDELE f", 0), syscall.EINVAL)
}

func TestPermissionDenied(t *testing.T) {
	f := newFixture(t, nil)
	// Created after the server started: owned by root, not the FTP user.
	locked := filepath.Join(f.root, "locked")
	mustDo(t, os.Mkdir(locked, 0o755))
	mustDo(t, os.WriteFile(filepath.Join(locked, "secret"), []byte("s"), 0o600))
	mustDo(t, os.WriteFile(filepath.Join(locked, "public"), []byte("p"), 0o644))
	b := f.dial(t, remote.Options{})
	ctx := context.Background()

	_, err := b.ReadRange(ctx, "/locked/secret", 0, -1)
	wantErrno(t, "read of a 0600 file of another user", err, syscall.EACCES)
	wantErrno(t, "store into a directory of another user", b.Store(ctx, "/locked/new", strings.NewReader("x"), 1, 0), syscall.EACCES)
	wantErrno(t, "overwrite of a file of another user", b.Store(ctx, "/locked/public", strings.NewReader("x"), 1, 0), syscall.EACCES)
	wantErrno(t, "mkdir in a directory of another user", b.Mkdir(ctx, "/locked/d", 0o755), syscall.EACCES)
	wantErrno(t, "remove in a directory of another user", b.Remove(ctx, "/locked/public"), syscall.EACCES)
	wantErrno(t, "chmod of a file of another user", b.Chmod(ctx, "/locked/public", 0o777), syscall.EACCES)
	wantErrno(t, "rename out of a directory of another user", b.Rename(ctx, "/locked/public", "/p"), syscall.EACCES)
	// The session still works.
	if _, err := b.List(ctx, "/locked"); err != nil {
		t.Errorf("List /locked: %v", err)
	}
}

func TestAnonymous(t *testing.T) {
	root := t.TempDir()
	mustDo(t, os.Mkdir(filepath.Join(root, "pub"), 0o755))
	mustDo(t, os.WriteFile(filepath.Join(root, "pub", "readme"), []byte("anonymous read"), 0o644))
	addr, _, _ := testsrv.Vsftpd(t, root)
	b, err := Dial(context.Background(), addr, remote.Options{Home: t.TempDir(), Timeout: 10 * time.Second})
	mustDo(t, err)
	defer b.Close()
	ctx := context.Background()
	r, err := b.ReadRange(ctx, "/pub/readme", 0, -1)
	mustDo(t, err)
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || string(got) != "anonymous read" {
		t.Errorf("read /pub/readme: %q, %v", got, err)
	}
	w := b.(remote.Writer)
	mustDo(t, w.Store(ctx, "/pub/up", strings.NewReader("uploaded"), 8, 0o644))
	if got, _ := os.ReadFile(filepath.Join(root, "pub", "up")); string(got) != "uploaded" {
		t.Errorf("anonymous upload: %q", got)
	}
	// vsftpd insists the anonymous root is not writable by the anonymous user.
	wantErrno(t, "store at the read-only top", w.Store(ctx, "/top", strings.NewReader("x"), 1, 0), syscall.EACCES)
	// Anonymous users never get SITE CHMOD from vsftpd.
	wantErrno(t, "anonymous chmod", w.Chmod(ctx, "/pub/up", 0o600), syscall.EACCES)
}

func TestLoginFailures(t *testing.T) {
	f := newFixture(t, map[string]string{"a": "a"})
	host := strings.Split(strings.Split(f.server, "@")[1], ":")[0]
	user := strings.Split(f.server, "@")[0]
	netrc, _ := os.ReadFile(filepath.Join(f.home, ".netrc"))
	password := strings.Fields(string(netrc))[5]

	wrongHome := t.TempDir()
	mustDo(t, os.WriteFile(filepath.Join(wrongHome, ".netrc"), []byte("machine "+host+" login "+user+" password not-"+password+"\n"), 0o600))
	_, err := Dial(context.Background(), f.server, remote.Options{Home: wrongHome, Timeout: 10 * time.Second})
	wantErrno(t, "Dial with a wrong password", err, syscall.EACCES)
	if err != nil && strings.Contains(err.Error(), password) {
		t.Errorf("error shows the password: %v", err)
	}

	// No ~/.netrc: Askpass is asked, once per session.
	var prompts []string
	askpass := func(prompt string) (string, error) {
		prompts = append(prompts, prompt)
		return password, nil
	}
	b, err := Dial(context.Background(), f.server, remote.Options{Home: t.TempDir(), Askpass: askpass, Timeout: 10 * time.Second})
	mustDo(t, err)
	defer b.Close()
	if _, err := b.Stat(context.Background(), "/a"); err != nil {
		t.Errorf("Stat after askpass login: %v", err)
	}
	if len(prompts) != 1 || strings.Contains(prompts[0], password) || !strings.Contains(prompts[0], user) {
		t.Errorf("prompts %q", prompts)
	}
	// The login comes from ~/.netrc when the name has none.
	b2, err := Dial(context.Background(), strings.Split(f.server, "@")[1], remote.Options{Home: f.home, Timeout: 10 * time.Second})
	mustDo(t, err)
	defer b2.Close()
	if _, err := b2.Stat(context.Background(), "/a"); err != nil {
		t.Errorf("Stat with the ~/.netrc login: %v", err)
	}
}

func TestFTPS(t *testing.T) {
	var pool *x509.CertPool
	f := newFixture(t, map[string]string{"a.txt": "secure"}, testsrv.VsftpdTLS(&pool))
	b := f.dial(t, remote.Options{TLS: true, RootCAs: pool})
	ctx := context.Background()
	if got := readAll(t, b, "/a.txt", 1, 3); string(got) != "ecu" {
		t.Errorf("read over FTPS: %q", got)
	}
	data := randomBytes(1 << 20)
	mustDo(t, b.Store(ctx, "/b", bytes.NewReader(data), int64(len(data)), 0o640))
	if got := readAll(t, b, "/b", 0, -1); !bytes.Equal(got, data) {
		t.Error("read back over FTPS differs")
	}
	mustDo(t, b.Chmod(ctx, "/b", 0o600))
	if l, err := b.List(ctx, "/"); err != nil || len(l) != 2 {
		t.Errorf("List over FTPS: %v %v", l, err)
	}
	// Over TLS too: reads on data connections made ahead (arm.go), and
	// logins from the script (login.go) for the connections beyond the
	// first (the store looked up the mode on a second one).
	for range 3 {
		if got := readAll(t, b, "/a.txt", 0, -1); string(got) != "secure" {
			t.Errorf("read again over FTPS: %q", got)
		}
	}
	b.mu.Lock()
	scripted, noScript := len(b.script) > 0, b.noScript
	b.mu.Unlock()
	if n := b.liveConns(); n < 2 || !scripted || noScript {
		t.Errorf("%d connections, login script kept %v, given up %v: want 2 or more, true, false", n, scripted, noScript)
	}
	// Without the test's trust root the certificate is refused.
	_, err := Dial(ctx, f.server, remote.Options{Home: f.home, TLS: true, Timeout: 10 * time.Second})
	wantErrno(t, "FTPS with an untrusted certificate", err, syscall.EACCES)
	// And a plain session is refused by a server that insists on TLS.
	_, err = Dial(ctx, f.server, remote.Options{Home: f.home, Timeout: 10 * time.Second})
	wantErrno(t, "plain FTP to a TLS-only server", err, syscall.EACCES)
}

func TestPoolMetadataPriority(t *testing.T) {
	files := map[string]string{}
	contents := map[string][]byte{}
	for i := 0; i < 2*testConns; i++ {
		data := randomBytes(1<<20 + i)
		name := fmt.Sprintf("f%d", i)
		files[name] = string(data)
		contents["/"+name] = data
	}
	f := newFixture(t, files)
	b := f.dial(t, remote.Options{Connections: testConns})
	ctx := context.Background()

	// Concurrent whole-file reads, more than there are connections.
	errs := make(chan error, len(contents))
	for p, want := range contents {
		go func() {
			r, err := b.ReadRange(ctx, p, 0, -1)
			if err != nil {
				errs <- err
				return
			}
			defer r.Close()
			got, err := io.ReadAll(r)
			if err == nil && !bytes.Equal(got, want) {
				err = fmt.Errorf("%s: read back differs", p)
			}
			errs <- err
		}()
	}
	for range contents {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if n := b.liveConns(); n > testConns {
		t.Errorf("%d connections, want at most %d", n, testConns)
	}

	// Every transfer slot busy: readers held open.
	var held []io.ReadCloser
	for i := 0; i < testConns-1; i++ {
		r, err := b.ReadRange(ctx, fmt.Sprintf("/f%d", i), 0, -1)
		mustDo(t, err)
		held = append(held, r)
	}
	blocked := make(chan error, 1)
	go func() {
		r, err := b.ReadRange(ctx, "/f7", 0, 10)
		if err == nil {
			r.Close()
		}
		blocked <- err
	}()
	// Metadata still gets a connection.
	if _, err := b.Stat(ctx, "/f1"); err != nil {
		t.Fatalf("Stat while all transfer slots are busy: %v", err)
	}
	if _, err := b.List(ctx, "/"); err != nil {
		t.Fatalf("List while all transfer slots are busy: %v", err)
	}
	select {
	case err := <-blocked:
		t.Fatalf("a read beyond the transfer slots did not wait (err %v)", err)
	default:
	}
	held[0].Close()
	if err := <-blocked; err != nil {
		t.Errorf("waiting read: %v", err)
	}
	for _, r := range held[1:] {
		r.Close()
	}
}

// TestPoolForegroundFirst: background transfers (the cache's prefetch,
// remote.Background) never take the last transfer slot, so a read a
// program waits for finds one while every background slot is held.
func TestPoolForegroundFirst(t *testing.T) {
	files := map[string]string{}
	for i := range testConns {
		files[fmt.Sprintf("f%d", i)] = string(randomBytes(1 << 20))
	}
	f := newFixture(t, files)
	b := f.dial(t, remote.Options{Connections: testConns})
	bgctx := remote.Background(context.Background())

	var held []io.ReadCloser
	for i := 0; i < testConns-2; i++ {
		r, err := b.ReadRange(bgctx, fmt.Sprintf("/f%d", i), 0, -1)
		mustDo(t, err)
		held = append(held, r)
	}
	// One more background read waits for a background slot...
	blocked := make(chan error, 1)
	go func() {
		r, err := b.ReadRange(bgctx, "/f2", 0, 10)
		if err == nil {
			r.Close()
		}
		blocked <- err
	}()
	// ...while a foreground read goes through.
	if got := readAll(t, b, "/f3", 0, 100); !bytes.Equal(got, []byte(files["f3"])[:100]) {
		t.Fatal("foreground read: wrong contents")
	}
	select {
	case err := <-blocked:
		t.Fatalf("a background read beyond its slots did not wait (err %v)", err)
	default:
	}
	held[0].Close()
	if err := <-blocked; err != nil {
		t.Errorf("waiting background read: %v", err)
	}
	for _, r := range held[1:] {
		r.Close()
	}
}

func TestServerStallAndKill(t *testing.T) {
	data := randomBytes(32 << 20)
	f := newFixture(t, map[string]string{"big": string(data), "small": "s"})
	const bound = 2 * time.Second
	b := f.dial(t, remote.Options{Timeout: bound, ConnectTimeout: bound})
	ctx := context.Background()

	// A stalled server: ETIMEDOUT after about the bound, not a hang.
	r, err := b.ReadRange(ctx, "/big", 0, -1)
	mustDo(t, err)
	buf := make([]byte, 64<<10)
	_, err = io.ReadFull(r, buf)
	mustDo(t, err)
	f.srv.Stall()
	start := time.Now()
	_, err = io.Copy(io.Discard, r)
	elapsed := time.Since(start)
	r.Close()
	wantErrno(t, "read from a stalled server", err, syscall.ETIMEDOUT)
	if elapsed > 10*bound {
		t.Errorf("stalled read failed after %v, bound %v", elapsed, bound)
	}
	start = time.Now()
	_, err = b.Stat(ctx, "/small") // on a new connection: the server accepts, never greets
	elapsed = time.Since(start)
	wantErrno(t, "Stat on a stalled server", err, syscall.ETIMEDOUT)
	if elapsed > 10*bound {
		t.Errorf("Stat on a stalled server failed after %v, bound %v", elapsed, bound)
	}
	f.srv.Resume()
	if _, err := b.Stat(ctx, "/small"); err != nil {
		t.Fatalf("Stat after the server resumed: %v", err)
	}

	// A killed server: EIO, then the session recovers after a restart.
	r, err = b.ReadRange(ctx, "/big", 0, -1)
	mustDo(t, err)
	_, err = io.ReadFull(r, buf)
	mustDo(t, err)
	f.srv.Kill()
	_, err = io.Copy(io.Discard, r)
	r.Close()
	if e := ns.Errno(err); e != syscall.EIO && e != syscall.ETIMEDOUT {
		t.Errorf("read from a killed server: %v (errno %v), want EIO or ETIMEDOUT", err, e)
	}
	// A new operation reconnects and meets the closed port: the real
	// errno, as for any refused connection.
	_, err = b.Stat(ctx, "/small")
	if e := ns.Errno(err); e != syscall.ECONNREFUSED {
		t.Errorf("Stat on a dead server: %v (errno %v), want ECONNREFUSED", err, e)
	}
	f.srv.Start()
	if _, err := b.Stat(ctx, "/small"); err != nil {
		t.Fatalf("Stat after restart: %v", err)
	}
	if got := readAll(t, b, "/big", 1000, 1000); !bytes.Equal(got, data[1000:2000]) {
		t.Error("read after restart differs")
	}
}

func TestRestartBetweenOperations(t *testing.T) {
	f := newFixture(t, map[string]string{"a": "a"})
	b := f.dial(t, remote.Options{})
	ctx := context.Background()
	_, err := b.Stat(ctx, "/a")
	mustDo(t, err)
	// The pooled connections die with the server; the next operation
	// reconnects once, without an error.
	f.srv.Kill()
	f.srv.Start()
	if _, err := b.Stat(ctx, "/a"); err != nil {
		t.Fatalf("Stat after a restart between operations: %v", err)
	}
}

func TestCancel(t *testing.T) {
	f := newFixture(t, map[string]string{"a": "a", "big": strings.Repeat("b", 8<<20)})
	b := f.dial(t, remote.Options{Timeout: time.Minute})
	f.srv.Stall()
	defer f.srv.Resume()
	for _, op := range []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{"Stat", func(ctx context.Context) error { _, err := b.Stat(ctx, "/a"); return err }},
		{"ReadRange", func(ctx context.Context) error { _, err := b.ReadRange(ctx, "/big", 0, -1); return err }},
		{"Store", func(ctx context.Context) error { return b.Store(ctx, "/x", strings.NewReader("x"), 1, 0) }},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- op.run(ctx) }()
		time.Sleep(50 * time.Millisecond)
		cancel()
		select {
		case err := <-done:
			wantErrno(t, op.name+" cancelled", err, syscall.EINTR)
		case <-time.After(20 * time.Second):
			t.Fatalf("%s did not return after cancellation", op.name)
		}
	}
	f.srv.Resume()
	if _, err := b.Stat(context.Background(), "/a"); err != nil {
		t.Errorf("Stat after cancellations: %v", err)
	}
}

func TestIdleConnectionsDropped(t *testing.T) {
	f := newFixture(t, map[string]string{"a": "a"})
	b, err := dial(context.Background(), f.server, remote.Options{Home: f.home, Timeout: 10 * time.Second},
		poolTimes{keepAlive: 50 * time.Millisecond, idleTimeout: 400 * time.Millisecond, rttFloor: farPoolTimes.rttFloor})
	mustDo(t, err)
	defer b.Close()
	if b.liveConns() != 1 {
		t.Fatalf("%d connections after Dial, want 1", b.liveConns())
	}
	waitFor(t, "the idle connection to be closed", func() bool { return b.liveConns() == 0 })
	if _, err := b.Stat(context.Background(), "/a"); err != nil {
		t.Errorf("Stat after idle close: %v", err)
	}
}

func TestNoLeaks(t *testing.T) {
	f := newFixture(t, map[string]string{"a": strings.Repeat("a", 4<<20), "d/": ""})
	ctx := context.Background()
	base := leakcheck.Take(t)

	b, err := Dial(ctx, f.server, remote.Options{Home: f.home, Timeout: 10 * time.Second})
	mustDo(t, err)
	w := b.(remote.Writer)
	for i := 0; i < 3; i++ {
		r, err := b.ReadRange(ctx, "/a", int64(i)*100, 1000)
		mustDo(t, err)
		io.ReadAll(r)
		r.Close()
		r, err = b.ReadRange(ctx, "/a", 0, -1)
		mustDo(t, err)
		io.ReadFull(r, make([]byte, 100)) // abandoned
		r.Close()
	}
	held, err := b.ReadRange(ctx, "/a", 0, -1) // still open at Close
	mustDo(t, err)
	mustDo(t, w.Store(ctx, "/d/x", strings.NewReader("x"), 1, 0o600))
	b.List(ctx, "/")
	b.Stat(ctx, "/nope")
	mustDo(t, b.Close())
	held.Close()
	base.Check(t)
}

// testConns is the pool size of the tests that fill the pool: small, so
// that they need few connections and files.
const testConns = 4

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("timed out waiting for %s; goroutines:\n%s", what, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (b *Backend) liveConns() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.live)
}

// TestServerLimitsLogins: a server that allows fewer logins per address
// than the session would open (vsftpd's max_per_ip, "421 There are too
// many connections from your internet address."): every read, in the
// foreground or ahead, still gets every byte over the connections the
// server allowed, the refusal is logged once, and no read fails for it.
func TestServerLimitsLogins(t *testing.T) {
	const allowed = 3
	files := map[string]string{}
	for i := range 24 {
		files[fmt.Sprintf("f%02d", i)] = string(randomBytes(4<<10 + i))
	}
	f := newFixture(t, files, testsrv.VsftpdMaxPerIP(allowed))
	var logged syncBuffer
	b := f.dial(t, remote.Options{Connections: 8, Log: slog.New(slog.NewTextHandler(&logged, nil))})

	// Every connection the server allows held: one more read needs a
	// login the server refuses, and waits for a held one.
	var held []io.ReadCloser
	for i := range allowed {
		r, err := b.ReadRange(context.Background(), fmt.Sprintf("/f%02d", i), 0, -1)
		mustDo(t, err)
		held = append(held, r)
	}
	waiting := readLater(b, context.Background(), "/f23", files["f23"])
	waitFor(t, "the refused login", func() bool { return strings.Contains(logged.String(), "refuses more logins") })
	for _, r := range held {
		r.Close()
	}
	mustDo(t, <-waiting)

	// Many reads at once, in the foreground and ahead.
	errs := make(chan error, len(files))
	for name, want := range files {
		ctx := context.Background()
		if len(errs)%2 == 0 && name[2]%2 == 0 {
			ctx = remote.Background(ctx) // half of them ahead
		}
		go func() {
			r, err := b.ReadRange(ctx, "/"+name, 0, int64(len(want)))
			if err != nil {
				errs <- fmt.Errorf("%s: %v", name, err)
				return
			}
			got, err := io.ReadAll(r)
			r.Close()
			if err == nil && string(got) != want {
				err = fmt.Errorf("%s: read back differs", name)
			}
			errs <- err
		}()
	}
	for range files {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if n := b.liveConns(); n > allowed {
		t.Errorf("%d connections, the server allows %d", n, allowed)
	}
	if n := strings.Count(logged.String(), "refuses more logins"); n != 1 {
		t.Errorf("the refusal was logged %d times, want once:\n%s", n, logged.String())
	}
	if _, err := b.List(context.Background(), "/"); err != nil {
		t.Errorf("List after the refusals: %v", err)
	}
}

// TestServerAllowsTwoLogins: with only two connections there is none to
// spare for transfers ahead: they fail at once (a prefetch is given up,
// not queued for ever), and the program's own reads go through.
func TestServerAllowsTwoLogins(t *testing.T) {
	f := newFixture(t, map[string]string{"a": "aaaa", "b": "bbbb"}, testsrv.VsftpdMaxPerIP(2))
	b := f.dial(t, remote.Options{Connections: 8})
	ctx := context.Background()
	// Both connections held: a read ahead meets the server's limit.
	r1, err := b.ReadRange(ctx, "/a", 0, -1)
	mustDo(t, err)
	r2, err := b.ReadRange(ctx, "/b", 0, -1)
	mustDo(t, err)
	_, err = b.ReadRange(remote.Background(ctx), "/a", 0, -1)
	wantErrno(t, "a read ahead with two connections held", err, syscall.EAGAIN)
	r1.Close()
	r2.Close()
	// Now the limit is known: even with both idle, none is spare.
	_, err = b.ReadRange(remote.Background(ctx), "/a", 0, -1)
	wantErrno(t, "a read ahead with two connections idle", err, syscall.EAGAIN)
	if got := readAll(t, b, "/b", 0, -1); string(got) != "bbbb" {
		t.Errorf("foreground read: %q", got)
	}
	if n := b.liveConns(); n != 2 {
		t.Errorf("%d connections, the server allows 2", n)
	}
}

// TestRefusalWhileAnotherClientHeldSlots: a login refused because
// another client from the same address held slots of the server's
// max_per_ip lowers the session's bound to a guess of the connections it
// has; once that client leaves, a read that the guess alone keeps
// waiting while the session's connections are held logs in again and
// goes through, instead of waiting for ever for them.
func TestRefusalWhileAnotherClientHeldSlots(t *testing.T) {
	const allowed = 4
	files := map[string]string{"a": "aaaa", "b": "bbbb", "c": "cccc"}
	f := newFixture(t, files, testsrv.VsftpdMaxPerIP(allowed))
	var logged syncBuffer
	b := f.dial(t, remote.Options{Connections: 8, Log: slog.New(slog.NewTextHandler(&logged, nil))})

	// The other client's two connections, greeted: the server counts
	// them.
	_, addr, _ := strings.Cut(f.server, "@")
	var others []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		mustDo(t, err)
		defer c.Close()
		greeting, err := bufio.NewReader(c).ReadString('\n')
		mustDo(t, err)
		if !strings.HasPrefix(greeting, "220") {
			t.Fatalf("the other client was not greeted: %q", greeting)
		}
		others = append(others, c)
	}

	// The session's two connections held: the third read's login is
	// refused, and the guess (two) leaves it no transfer slot.
	ctx := context.Background()
	var held []io.ReadCloser
	for _, name := range []string{"/a", "/b"} {
		r, err := b.ReadRange(ctx, name, 0, -1)
		mustDo(t, err)
		held = append(held, r)
	}
	third := readLater(b, ctx, "/c", files["c"])
	waitFor(t, "the refused login", func() bool { return strings.Contains(logged.String(), "refuses more logins") })

	for _, c := range others {
		c.Close()
	}
	select {
	case err := <-third:
		mustDo(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the read still waits for the connections held, though the server has slots again")
	}
	for _, r := range held {
		mustDo(t, r.Close())
	}
	if n := b.liveConns(); n > allowed {
		t.Errorf("%d connections, the server allows %d", n, allowed)
	}
}

// syncBuffer is a bytes.Buffer for a logger written from several
// goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// TestRefusedLoginGuessKeepsPeak: a login refused for too many connections
// right after some of ours closed (the server has not ended them yet)
// guesses no fewer connections than the server once held at the same
// time; with none held before, the guess is what is live.
func TestRefusedLoginGuessKeepsPeak(t *testing.T) {
	refused := ns.Errorf(syscall.EUSERS, "421 There are too many connections from your internet address.")
	for _, c := range []struct{ live, peak, want int }{{2, 3, 3}, {2, 2, 2}, {1, 0, 1}} {
		b := &Backend{log: slog.New(slog.DiscardHandler), limit: 8, peak: c.peak, live: map[*pconn]struct{}{}, changed: make(chan struct{})}
		for range c.live {
			b.live[&pconn{}] = struct{}{}
		}
		b.mu.Lock()
		again := b.refusedLogin(refused)
		b.mu.Unlock()
		if !again || b.limit != c.want {
			t.Errorf("live %d, peak %d: refusedLogin = %v, limit %d; want true, %d", c.live, c.peak, again, b.limit, c.want)
		}
	}
}

// TestBoundFollowsRTT: the session leases as many connections as its
// round trips call for (pool.go's bound): six near the server, three
// more per millisecond, never more than its limit; transfers ahead keep
// leaving two of them to the others.
func TestBoundFollowsRTT(t *testing.T) {
	for _, c := range []struct {
		rtt, floor time.Duration
		limit      int
		want       int
	}{
		{0, 0, 32, 32}, // no sample yet
		{100 * time.Microsecond, 0, 32, 6},
		{time.Millisecond, 0, 32, 9},
		{10 * time.Millisecond, 0, 32, 32},
		{50 * time.Millisecond, 0, 8, 8},
		{100 * time.Microsecond, 10 * time.Millisecond, 8, 8}, // the tests' floor
		{100 * time.Microsecond, 0, 2, 2},                     // a server that allows two
	} {
		b := &Backend{limit: c.limit, times: poolTimes{rttFloor: c.floor}}
		if c.rtt > 0 {
			b.noteRTT(2 * c.rtt)
			b.noteRTT(c.rtt) // the shortest counts
			b.noteRTT(3 * c.rtt)
		}
		if got := b.bound(); got != c.want {
			t.Errorf("rtt %v, floor %v, limit %d: bound %d, want %d", c.rtt, c.floor, c.limit, got, c.want)
		}
		b.leasedAhead = c.want - 3
		if !b.fits(lease{transfer: true, ahead: true}) {
			t.Errorf("rtt %v: a transfer ahead does not fit with %d of %d held ahead", c.rtt, b.leasedAhead, c.want)
		}
		b.leasedAhead++
		if c.want >= 3 && b.fits(lease{transfer: true, ahead: true}) {
			t.Errorf("rtt %v: a transfer ahead fits with %d of %d held ahead", c.rtt, b.leasedAhead, c.want)
		}
	}
}

// TestLoginScript: logins after the first send their commands at once
// (login.go) and work; a login that goes otherwise than the recording
// costs that connection only: the session logs in one command at a time
// from then on, once said in the log.
func TestLoginScript(t *testing.T) {
	files := map[string]string{}
	for i := range testConns {
		files[fmt.Sprintf("f%d", i)] = string(randomBytes(1<<20 + i))
	}
	f := newFixture(t, files)
	var logged syncBuffer
	b := f.dial(t, remote.Options{Connections: testConns, Log: slog.New(slog.NewTextHandler(&logged, nil))})
	b.mu.Lock()
	script := slices.Clone(b.script)
	b.mu.Unlock()
	if len(script) < 2 || !strings.HasPrefix(script[0], "USER ") {
		t.Fatalf("the first login was not recorded: %d commands", len(script))
	}
	// Every transfer slot held: the connections beyond the first log
	// in from the script.
	hold := func() {
		t.Helper()
		var held []io.ReadCloser
		for i := range testConns - 1 {
			r, err := b.ReadRange(context.Background(), fmt.Sprintf("/f%d", i), 0, -1)
			mustDo(t, err)
			held = append(held, r)
		}
		for i, r := range held {
			got, err := io.ReadAll(r)
			mustDo(t, err)
			if string(got) != files[fmt.Sprintf("f%d", i)] {
				t.Errorf("f%d: read back differs", i)
			}
			r.Close()
		}
	}
	hold()
	if n := b.liveConns(); n < 2 {
		t.Fatalf("%d connections: no login from the script", n)
	}
	if strings.Contains(logged.String(), "did not go as the first one") {
		t.Fatalf("a scripted login went out of step:\n%s", logged.String())
	}

	// A script the server answers otherwise (a command the login does
	// not send): the new connections still log in.
	b.dropIdle()
	b.mu.Lock()
	b.script = append(slices.Clone(script[:len(script)-1]), "NOOP\r\n")
	b.mu.Unlock()
	hold()
	if n := strings.Count(logged.String(), "did not go as the first one"); n != 1 {
		t.Errorf("the login out of step was logged %d times, want once:\n%s", n, logged.String())
	}
	b.mu.Lock()
	noScript := b.noScript
	b.mu.Unlock()
	if !noScript {
		t.Error("the session still logs in from a script")
	}
}

// TestDataConnectionAhead: a read leaves its connection with the data
// connection of the next transfer made ahead (arm.go), which the next
// read takes (the server then sees no passive command before its RETR);
// one that went stale on an idle connection is ended with ABOR by the
// janitor, and the connection reads on.
func TestDataConnectionAhead(t *testing.T) {
	f := newFixture(t, map[string]string{"a": "aaaa", "b": "bbbbbbbb"})
	srv := f.srv
	b := f.dial(t, remote.Options{Connections: testConns})
	armed := func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		if len(b.idle) != 1 {
			t.Fatalf("%d idle connections, want 1", len(b.idle))
		}
		pc := b.idle[0]
		pc.mu.Lock()
		defer pc.mu.Unlock()
		return pc.arm != nil
	}
	if got := readAll(t, b, "/a", 0, -1); string(got) != "aaaa" {
		t.Fatalf("a: %q", got)
	}
	if !armed() {
		t.Fatal("no data connection made ahead after a read")
	}
	epsv := srv.Commands("EPSV")
	if got := readAll(t, b, "/b", 2, -1); string(got) != "bbbbbb" {
		t.Fatalf("b from 2: %q", got)
	}
	if n := srv.Commands("EPSV") - epsv; n != 1 {
		t.Errorf("%d passive commands for a read on a connection made ahead, want 1 (the next one's)", n)
	}
	if !armed() {
		t.Fatal("no data connection made ahead after the second read")
	}

	// Stale: the janitor ends it (ABOR) and the connection stays.
	b.mu.Lock()
	pc := b.idle[0]
	b.mu.Unlock()
	pc.mu.Lock()
	pc.arm.at = time.Now().Add(-2 * armFresh)
	pc.mu.Unlock()
	b.tidy()
	if n := srv.Commands("ABOR"); n != 1 {
		t.Errorf("%d ABOR after a stale data connection made ahead, want 1", n)
	}
	if armed() {
		t.Error("the stale data connection made ahead is still there")
	}
	if got := readAll(t, b, "/a", 0, -1); string(got) != "aaaa" {
		t.Fatalf("a after the ABOR: %q", got)
	}
	if n := b.liveConns(); n != 1 {
		t.Errorf("%d connections, want the one", n)
	}
}
