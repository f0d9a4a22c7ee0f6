package sftp

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/iotest"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"wirefs/internal/leakcheck"
	"wirefs/internal/ns"
	"wirefs/internal/remote"
	"wirefs/internal/remote/session"
	"wirefs/internal/testsrv"
)

// env is a real sshd and a client home whose ~/.ssh/config names it
// "testhost" (HostName, Port, User, IdentityFile).
type env struct {
	srv  *testsrv.SSHD
	home string
	o    remote.Options
}

const alias = "testhost"

func newEnv(t testing.TB) *env {
	t.Helper()
	// Only keys this test sets up: never the agent of whoever runs it.
	t.Setenv("SSH_AUTH_SOCK", "")
	srv := testsrv.StartSSHD(t)
	e := &env{srv: srv, home: srv.Home}
	key, err := os.ReadFile(srv.UserKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	e.write(t, ".ssh/test_key", string(key))
	e.write(t, ".ssh/config", fmt.Sprintf(`# written by the test
Host other
	Port 1
Host %s test*
	HostName 127.0.0.1
	Port %d
	User %s
	IdentityFile ~/.ssh/test_key
	IdentitiesOnly yes
Host 127.0.0.1
	IdentityFile ~/.ssh/test_key
`, alias, srv.Port, srv.User))
	e.write(t, ".ssh/known_hosts", srv.KnownHostsLine())
	e.o = remote.Options{
		Home:           e.home,
		Timeout:        10 * time.Second,
		ConnectTimeout: 10 * time.Second,
		Log:            slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	return e
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func (e *env) write(t testing.TB, name, data string) {
	t.Helper()
	p := filepath.Join(e.home, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (e *env) dial(t *testing.T, server string) *backend {
	t.Helper()
	b, err := Dial(context.Background(), server, e.o)
	if err != nil {
		t.Fatalf("Dial(%s): %v", server, err)
	}
	t.Cleanup(func() { b.Close() })
	return b.(*backend)
}

// current returns the session's connection.
func current(t *testing.T, b *backend) *conn {
	t.Helper()
	c, err := session.Call(context.Background(), b.s, "test", "", nil, func(c *conn) (*conn, error) { return c, nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// wantErrno fails unless err carries errno.
func wantErrno(t *testing.T, what string, err error, errno syscall.Errno) {
	t.Helper()
	if got := ns.Errno(err); got != errno {
		t.Fatalf("%s: got %v (%v), want %v", what, got, err, errno)
	}
}

func TestDialAliasFromSSHConfig(t *testing.T) {
	e := newEnv(t)
	b := e.dial(t, alias)
	if b.h.hostname != "127.0.0.1" || b.h.user != e.srv.User || b.h.port != fmt.Sprint(e.srv.Port) {
		t.Fatalf("config not applied: %+v", b.h)
	}
	dir := t.TempDir()
	info, err := b.Stat(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Mode.IsDir() || info.Name != filepath.Base(dir) {
		t.Fatalf("Stat(%s) = %+v", dir, info)
	}
	// A pattern Host line matches too; a user in the name wins.
	e.dial(t, e.srv.User+"@test-pattern")
}

func TestUnknownHostKeyRefusedThenAccepted(t *testing.T) {
	e := newEnv(t)
	known := filepath.Join(e.home, ".ssh", "known_hosts")
	os.Remove(known)
	_, err := Dial(context.Background(), alias, e.o)
	wantErrno(t, "unknown host key", err, syscall.EACCES)
	fp := ssh.FingerprintSHA256(e.srv.HostKey)
	if !strings.Contains(err.Error(), "unknown") || !strings.Contains(err.Error(), fp) ||
		!strings.Contains(err.Error(), "accept") {
		t.Fatalf("message does not say what to do: %v", err)
	}
	if _, err := os.Stat(known); !os.IsNotExist(err) {
		t.Fatalf("known_hosts written without permission: %v", err)
	}

	o := e.o
	o.AcceptNewHostKeys = true
	b, err := Dial(context.Background(), alias, o)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	data, err := os.ReadFile(known)
	if err != nil || !strings.Contains(string(data), fmt.Sprintf("[127.0.0.1]:%d ssh-ed25519 ", e.srv.Port)) {
		t.Fatalf("known_hosts after accept-new: %q, %v", data, err)
	}
	// Now known: no option needed.
	e.dial(t, alias)
}

func TestAcceptNewHashesWhenAsked(t *testing.T) {
	e := newEnv(t)
	os.Remove(filepath.Join(e.home, ".ssh", "known_hosts"))
	cfg, _ := os.ReadFile(filepath.Join(e.home, ".ssh", "config"))
	e.write(t, ".ssh/config", "Host "+alias+"\n\tStrictHostKeyChecking accept-new\n\tHashKnownHosts yes\n"+
		"\tUserKnownHostsFile ~/.ssh/extra_hosts\n"+string(cfg))
	e.dial(t, alias).Close()
	data, _ := os.ReadFile(filepath.Join(e.home, ".ssh", "known_hosts"))
	if !strings.HasPrefix(string(data), "|1|") || strings.Contains(string(data), "127.0.0.1") {
		t.Fatalf("known_hosts line not hashed: %q", data)
	}
	e.dial(t, alias)
}

func TestChangedHostKeyRefused(t *testing.T) {
	e := newEnv(t)
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	other, _ := ssh.NewPublicKey(pub)
	e.write(t, ".ssh/known_hosts", fmt.Sprintf("[127.0.0.1]:%d %s", e.srv.Port, ssh.MarshalAuthorizedKey(other)))
	o := e.o
	o.AcceptNewHostKeys = true // never for a changed key
	_, err := Dial(context.Background(), alias, o)
	wantErrno(t, "changed host key", err, syscall.EACCES)
	for _, want := range []string{"CHANGED", ssh.FingerprintSHA256(e.srv.HostKey), ssh.FingerprintSHA256(other)} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("message lacks %q: %v", want, err)
		}
	}
	data, _ := os.ReadFile(filepath.Join(e.home, ".ssh", "known_hosts"))
	if strings.Count(string(data), "\n") != 1 {
		t.Fatalf("known_hosts changed: %q", data)
	}
}

func TestWrongPasswordIsEACCES(t *testing.T) {
	e := newEnv(t)
	// No key anywhere: only the password is left.
	e.write(t, ".ssh/config", fmt.Sprintf("Host %s\n\tHostName 127.0.0.1\n\tPort %d\n\tNumberOfPasswordPrompts 2\n",
		alias, e.srv.Port))
	const secret = "not-the-password-42"
	var asked []string
	o := e.o
	o.Askpass = func(prompt string) (string, error) {
		asked = append(asked, prompt)
		return secret, nil
	}
	_, err := Dial(context.Background(), alias, o)
	wantErrno(t, "wrong password", err, syscall.EACCES)
	if !strings.Contains(err.Error(), "authentication failed (tried: password)") {
		t.Fatalf("message: %v", err)
	}
	if strings.Contains(err.Error(), secret) {
		t.Fatal("the password is in the message")
	}
	if len(asked) != 2 || !strings.Contains(asked[0], "password") {
		t.Fatalf("askpass prompts: %q", asked)
	}

	// Without askpass nothing is tried, and the message says so.
	_, err = Dial(context.Background(), alias, e.o)
	wantErrno(t, "no way to log in", err, syscall.EACCES)
}

// rawUserKey is the test user's private key.
func rawUserKey(t *testing.T, e *env) ed25519.PrivateKey {
	t.Helper()
	data, _ := os.ReadFile(e.srv.UserKeyFile)
	k, err := ssh.ParseRawPrivateKey(data)
	if err != nil {
		t.Fatal(err)
	}
	return *k.(*ed25519.PrivateKey)
}

func TestEncryptedDefaultKeyAsksPassphrase(t *testing.T) {
	e := newEnv(t)
	block, err := ssh.MarshalPrivateKeyWithPassphrase(rawUserKey(t, e), "", []byte("open sesame"))
	if err != nil {
		t.Fatal(err)
	}
	// The default identity file, no IdentityFile line.
	e.write(t, ".ssh/id_ed25519", string(pem.EncodeToMemory(block)))
	e.write(t, ".ssh/config", fmt.Sprintf("Host %s\n\tHostName 127.0.0.1\n\tPort %d\n", alias, e.srv.Port))
	var prompts []string
	e.o.Askpass = func(prompt string) (string, error) {
		prompts = append(prompts, prompt)
		return "open sesame", nil
	}
	e.dial(t, alias)
	if len(prompts) != 1 || !strings.Contains(prompts[0], "~/.ssh/id_ed25519") {
		t.Fatalf("prompts: %q", prompts)
	}
}

func TestAgentKey(t *testing.T) {
	e := newEnv(t)
	bin := testsrv.Need(t, "ssh-agent")
	sock := filepath.Join(t.TempDir(), "agent.sock")
	cmd := exec.Command(bin, "-D", "-a", sock)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var conn net.Conn
	for i := 0; ; i++ {
		var err error
		if conn, err = net.Dial("unix", sock); err == nil {
			break
		}
		if i == 200 {
			t.Fatalf("ssh-agent does not listen: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	defer conn.Close()
	if err := agent.NewClient(conn).Add(agent.AddedKey{PrivateKey: rawUserKey(t, e)}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSH_AUTH_SOCK", sock)
	e.write(t, ".ssh/config", fmt.Sprintf("Host %s\n\tHostName 127.0.0.1\n\tPort %d\n", alias, e.srv.Port))
	e.dial(t, alias)
}

func TestFileOperations(t *testing.T) {
	e := newEnv(t)
	b := e.dial(t, alias)
	ctx := context.Background()
	dir := t.TempDir()
	os.Chmod(dir, 0o755)

	// Store creates with perm, replaces contents of an existing file.
	f := dir + "/a.txt"
	if err := b.Store(ctx, f, strings.NewReader("hello world"), 11, 0o640); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o640 || fi.Size() != 11 {
		t.Fatalf("stored file: %v %v", fi, err)
	}
	if err := b.Store(ctx, f, strings.NewReader("bye"), 3, 0o600); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(f); string(data) != "bye" {
		t.Fatalf("after replacing: %q", data)
	}
	if fi, _ := os.Stat(f); fi.Mode().Perm() != 0o640 {
		t.Fatalf("replacing changed the mode to %v", fi.Mode())
	}
	err := b.Store(ctx, dir+"/short", strings.NewReader("abc"), 10, 0o644)
	wantErrno(t, "short source", err, syscall.EIO)
	os.Remove(dir + "/short")
	cur := current(t, b)
	failing := io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(errors.New("disk on fire")))
	err = b.Store(ctx, dir+"/short", failing, 10, 0o644)
	wantErrno(t, "failing source", err, syscall.EIO)
	if !strings.Contains(err.Error(), "disk on fire") || current(t, b) != cur || cur.Err() != nil {
		t.Fatalf("a local read error dropped the connection or lost its cause: %v", err)
	}
	os.Remove(dir + "/short")

	// Stat and ReadRange.
	info, err := b.Stat(ctx, f)
	if err != nil || info.Size != 3 || info.Name != "a.txt" || info.Mode.Perm() != 0o640 || info.Mtime.IsZero() {
		t.Fatalf("Stat = %+v, %v", info, err)
	}
	for _, c := range []struct {
		off, n int64
		want   string
	}{{0, -1, "bye"}, {1, 1, "y"}, {1, -1, "ye"}, {0, 100, "bye"}, {3, -1, ""}, {10, 5, ""}} {
		r, err := b.ReadRange(ctx, f, c.off, c.n)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil || string(got) != c.want {
			t.Fatalf("ReadRange(%d, %d) = %q, %v; want %q", c.off, c.n, got, err, c.want)
		}
	}

	// Mkdir with perm; EEXIST.
	sub := dir + "/sub"
	if err := b.Mkdir(ctx, sub, 0o700); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(sub); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("mkdir: %v %v", fi, err)
	}
	wantErrno(t, "mkdir existing", b.Mkdir(ctx, sub, 0o755), syscall.EEXIST)
	wantErrno(t, "mkdir in missing dir", b.Mkdir(ctx, dir+"/no/such", 0o755), syscall.ENOENT)

	// List with attributes; symbolic links are not followed.
	os.Symlink("a.txt", dir+"/link")
	os.Symlink("nowhere", dir+"/dangling")
	list, err := b.List(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]remote.Info{}
	for _, i := range list {
		got[i.Name] = i
	}
	if len(list) != 4 || !got["sub"].Mode.IsDir() || got["a.txt"].Size != 3 ||
		got["link"].Mode&os.ModeSymlink == 0 || got["link"].Size != int64(len("a.txt")) ||
		got["dangling"].Mode&os.ModeSymlink == 0 {
		t.Fatalf("List = %+v", list)
	}
	if info, err := b.Stat(ctx, dir+"/link"); err != nil || info.Mode.Type() != os.ModeSymlink || info.Name != "link" {
		t.Fatalf("Stat(link) = %+v, %v", info, err)
	}
	wantErrno(t, "list a file", func() error { _, err := b.List(ctx, f); return err }(), syscall.ENOTDIR)

	// Rename, replacing an existing file like rename(2).
	os.WriteFile(dir+"/old", []byte("old"), 0o644)
	if err := b.Rename(ctx, f, dir+"/old"); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(dir + "/old"); string(data) != "bye" {
		t.Fatalf("rename did not replace: %q", data)
	}
	wantErrno(t, "rename missing", b.Rename(ctx, f, dir+"/x"), syscall.ENOENT)

	// Chmod.
	if err := b.Chmod(ctx, dir+"/old", 0o604); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(dir + "/old"); fi.Mode().Perm() != 0o604 {
		t.Fatalf("chmod: %v", fi.Mode())
	}

	// Remove and Rmdir, with their errors.
	os.WriteFile(sub+"/x", nil, 0o644)
	wantErrno(t, "rmdir non-empty", b.Rmdir(ctx, sub), syscall.ENOTEMPTY)
	wantErrno(t, "rmdir a file", b.Rmdir(ctx, dir+"/old"), syscall.ENOTDIR)
	wantErrno(t, "remove a directory", b.Remove(ctx, sub), syscall.EISDIR)
	if err := b.Remove(ctx, sub+"/x"); err != nil {
		t.Fatal(err)
	}
	if err := b.Rmdir(ctx, sub); err != nil {
		t.Fatal(err)
	}
	if err := b.Remove(ctx, dir+"/dangling"); err != nil {
		t.Fatal(err)
	}
	wantErrno(t, "remove missing", b.Remove(ctx, sub), syscall.ENOENT)
	wantErrno(t, "rmdir missing", b.Rmdir(ctx, sub), syscall.ENOENT)
	_, err = b.Stat(ctx, sub)
	wantErrno(t, "stat missing", err, syscall.ENOENT)
	if !strings.Contains(err.Error(), sub) || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("message: %v", err)
	}
	_, err = b.ReadRange(ctx, sub, 0, -1)
	wantErrno(t, "read missing", err, syscall.ENOENT)
	_, err = b.List(ctx, sub)
	wantErrno(t, "list missing", err, syscall.ENOENT)
}

func TestPermissionDenied(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	dir := t.TempDir()
	os.WriteFile(dir+"/f", []byte("data"), 0o644)

	// A server that refuses writes to everyone, root included.
	ro := e.dial(t, fmt.Sprintf("%s@127.0.0.1:%d", e.srv.User, e.srv.ReadOnlyPort))
	wantErrno(t, "store on a read-only server", ro.Store(ctx, dir+"/g", strings.NewReader("x"), 1, 0o644), syscall.EACCES)
	wantErrno(t, "mkdir on a read-only server", ro.Mkdir(ctx, dir+"/d", 0o755), syscall.EACCES)
	wantErrno(t, "remove on a read-only server", ro.Remove(ctx, dir+"/f"), syscall.EACCES)
	if _, err := ro.Stat(ctx, dir+"/f"); err != nil {
		t.Fatal(err)
	}

	if os.Geteuid() == 0 {
		t.Log("file modes do not stop root: the mode 000 case runs only as another user")
		return
	}
	os.Chmod(dir+"/f", 0)
	b := e.dial(t, alias)
	_, err := b.ReadRange(ctx, dir+"/f", 0, -1)
	wantErrno(t, "read a mode 000 file", err, syscall.EACCES)
}

func TestNoSpaceOnServer(t *testing.T) {
	e := newEnv(t)
	dir := smallTmpfs(t)
	b := e.dial(t, alias)
	data := make([]byte, 4<<20)
	err := b.Store(context.Background(), dir+"/big", bytes.NewReader(data), int64(len(data)), 0o644)
	wantErrno(t, "store 4 MiB into 1 MiB", err, syscall.ENOSPC)
}

func TestLargeFileRoundTrip(t *testing.T) {
	e := newEnv(t)
	b := e.dial(t, alias)
	ctx := context.Background()
	data := make([]byte, 64<<20)
	rand.Read(data)
	f := t.TempDir() + "/big"
	if err := b.Store(ctx, f, bytes.NewReader(data), int64(len(data)), 0o644); err != nil {
		t.Fatal(err)
	}
	onDisk, _ := os.ReadFile(f)
	if sha256.Sum256(onDisk) != sha256.Sum256(data) {
		t.Fatal("stored file differs")
	}
	r, err := b.ReadRange(ctx, f, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, err := io.Copy(h, r)
	r.Close()
	if err != nil || n != int64(len(data)) || !bytes.Equal(h.Sum(nil), sumOf(data)) {
		t.Fatalf("read back %d bytes, %v; checksum equal: %v", n, err, bytes.Equal(h.Sum(nil), sumOf(data)))
	}
	// A range crossing chunk boundaries.
	off, size := int64(3<<20+17), int64(9<<20+5)
	r, err = b.ReadRange(ctx, f, off, size)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || !bytes.Equal(got, data[off:off+size]) {
		t.Fatalf("range: %d bytes, %v", len(got), err)
	}
}

func sumOf(b []byte) []byte { s := sha256.Sum256(b); return s[:] }

func TestConcurrentReaders(t *testing.T) {
	e := newEnv(t)
	b := e.dial(t, alias)
	data := make([]byte, 8<<20)
	rand.Read(data)
	f := t.TempDir() + "/f"
	os.WriteFile(f, data, 0o644)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			off := int64(i) * 400_000
			r, err := b.ReadRange(context.Background(), f, off, 1<<20)
			if err != nil {
				errs <- err
				return
			}
			defer r.Close()
			got, err := io.ReadAll(r)
			if err == nil && !bytes.Equal(got, data[off:off+1<<20]) {
				err = fmt.Errorf("reader %d: wrong data", i)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// bigFile is a file large enough that a read of it is still running when
// the test interferes with the server.
func bigFile(t *testing.T) string {
	f := t.TempDir() + "/big"
	data := make([]byte, 32<<20)
	rand.Read(data)
	if err := os.WriteFile(f, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// readSome opens f and reads its first MiB, leaving the rest to come.
func readSome(t *testing.T, b *backend, ctx context.Context, f string) io.ReadCloser {
	t.Helper()
	r, err := b.ReadRange(ctx, f, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(r, make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestStalledServerTimesOutThenReconnects(t *testing.T) {
	e := newEnv(t)
	e.o.Timeout, e.o.ConnectTimeout = time.Second, time.Second
	b := e.dial(t, alias)
	f := bigFile(t)
	r := readSome(t, b, context.Background(), f)
	defer r.Close()

	e.srv.Pause()
	start := time.Now()
	_, err := io.Copy(io.Discard, r)
	wantErrno(t, "read from a stalled server", err, syscall.ETIMEDOUT)
	if !strings.Contains(err.Error(), "made no progress") {
		t.Fatalf("message: %v", err)
	}
	t.Logf("stall detected after %v (timeout %v)", time.Since(start), e.o.Timeout)
	_, err = b.Stat(context.Background(), f)
	wantErrno(t, "stat while stalled", err, syscall.ETIMEDOUT)

	e.srv.Resume()
	// The reconnection has the same 1 s bounds; on a loaded machine the
	// handshake can take longer than that once, which is a timeout, not
	// a failure to reconnect.
	for attempt := 1; ; attempt++ {
		_, err := b.Stat(context.Background(), f)
		if err == nil {
			break
		}
		if attempt == 5 {
			t.Fatalf("no reconnect after the server resumed (%d attempts): %v", attempt, err)
		}
		t.Logf("attempt %d after the resume: %v", attempt, err)
	}
}

func TestServerRestartMidRead(t *testing.T) {
	e := newEnv(t)
	e.o.Timeout = 2 * time.Second
	b := e.dial(t, alias)
	f := bigFile(t)
	r := readSome(t, b, context.Background(), f)
	defer r.Close()

	e.srv.Stop()
	_, err := io.Copy(io.Discard, r)
	if errno := ns.Errno(err); errno != syscall.EIO && errno != syscall.ETIMEDOUT {
		t.Fatalf("read from a killed server: %v (%v)", errno, err)
	}
	_, err = b.Stat(context.Background(), f)
	wantErrno(t, "stat while the server is down", err, syscall.ECONNREFUSED)

	e.srv.Start()
	r2, err := b.ReadRange(context.Background(), f, 0, -1)
	if err != nil {
		t.Fatalf("no reconnect after restart: %v", err)
	}
	n, err := io.Copy(io.Discard, r2)
	r2.Close()
	if err != nil || n != 32<<20 {
		t.Fatalf("read after reconnect: %d, %v", n, err)
	}
}

func TestCancelReturnsPromptly(t *testing.T) {
	e := newEnv(t)
	e.o.Timeout = time.Minute // the stall rule must not be what ends it
	b := e.dial(t, alias)
	f := bigFile(t)
	ctx, cancel := context.WithCancel(context.Background())
	r := readSome(t, b, ctx, f)
	defer r.Close()
	e.srv.Pause()
	defer e.srv.Resume()

	errs := make(chan error, 3)
	go func() { _, err := io.Copy(io.Discard, r); errs <- err }()
	go func() { _, err := b.Stat(ctx, f); errs <- err }()
	go func() {
		errs <- b.Store(ctx, f+".new", bytes.NewReader(make([]byte, 32<<20)), 32<<20, 0o644)
	}()
	time.Sleep(100 * time.Millisecond)
	cancel()
	for range 3 {
		select {
		case err := <-errs:
			wantErrno(t, "cancelled", err, syscall.EINTR)
		case <-time.After(5 * time.Second):
			t.Fatal("cancellation did not end a blocked operation")
		}
	}
}

func TestNoLeaksAfterClose(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	os.WriteFile(dir+"/f", make([]byte, 3<<20), 0o644)
	base := leakcheck.Take(t)

	b, err := Dial(context.Background(), alias, e.o)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	b.(remote.Writer).Store(ctx, dir+"/g", strings.NewReader("abc"), 3, 0o644)
	b.List(ctx, dir)
	r, err := b.ReadRange(ctx, dir+"/f", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadFull(r, make([]byte, 100_000))
	r.Close() // early: abandons the rest
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	b.Stat(cctx, dir+"/f")
	b.Close()

	// Close waited for the session's goroutines; those of x/crypto end
	// right after the socket closes.
	base.Check(t)
	_, err = b.Stat(ctx, dir)
	wantErrno(t, "stat after Close", err, syscall.EIO)
}

func TestBadServerName(t *testing.T) {
	_, err := Dial(context.Background(), "me@[::1", remote.Options{Home: t.TempDir()})
	wantErrno(t, "bad name", err, syscall.ENOENT)
	var nsErr *ns.Error
	if !errors.As(err, &nsErr) {
		t.Fatalf("not an ns.Error: %v", err)
	}
}

func TestIdleKeepalive(t *testing.T) {
	e := newEnv(t)
	e.o.Timeout = 300 * time.Millisecond
	b := e.dial(t, alias)
	c := current(t, b)
	// Alive and idle: keepalives are answered, the connection stays.
	time.Sleep(5 * e.o.Timeout)
	if why := c.Err(); why != nil || current(t, b) != c {
		t.Fatalf("an idle live connection was dropped: %v", why)
	}
	// Stalled and idle: the unanswered keepalive drops it, no operation needed.
	e.srv.Pause()
	defer e.srv.Resume()
	deadline := time.Now().Add(10 * time.Second)
	for c.Err() == nil {
		if time.Now().After(deadline) {
			t.Fatal("a stalled idle connection was never dropped")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if ns.Errno(c.Err()) != syscall.ETIMEDOUT {
		t.Fatalf("dropped for %v", c.Err())
	}
}
