package http

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	nethttp "net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"wirefs/internal/leakcheck"
	"wirefs/internal/ns"
	"wirefs/internal/remote"
	"wirefs/internal/testsrv"
)

// bigSize spans several reads and is not a multiple of any buffer size.
const bigSize = 3<<20 + 12345

// tree writes the files every server test serves and returns its root.
func tree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	big := make([]byte, bigSize)
	rand.New(rand.NewSource(1)).Read(big)
	files := map[string]string{
		"hello.txt":               "hello, world\n",
		"empty":                   "",
		"big.bin":                 string(big),
		"a b.txt":                 "space\n",
		"100%.txt":                "percent\n",
		"héllo wörld ✓.txt":       "utf-8\n",
		"q?#&x.txt":               "query chars\n",
		"sub/one.txt":             "one\n",
		"sub/nested/deep.txt":     "deep\n",
		"sub/nested/more/x":       "x",
		"private/secret.txt":      "the secret\n",
		"dir with space/file.txt": "in a spaced dir\n",
	}
	for name, data := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// dial opens a session and closes it when the test ends.
func dial(t *testing.T, server string, o remote.Options) remote.Backend {
	t.Helper()
	if o.Home == "" {
		o.Home = t.TempDir()
	}
	b, err := Dial(context.Background(), server, o)
	if err != nil {
		t.Fatalf("Dial %s: %v", server, err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func wantErrno(t *testing.T, err error, want syscall.Errno) {
	t.Helper()
	if got := ns.Errno(err); got != want {
		t.Fatalf("got %v (errno %d %v), want %v", err, got, got, want)
	}
	var e *ns.Error
	if !errors.As(err, &e) {
		t.Fatalf("%v is not an ns.Error", err)
	}
}

// peer is a running server and how to reach it.
type peer struct {
	name   string
	server string
	opts   remote.Options
}

// nginxPeers starts nginx over http and https on root.
func nginxPeers(t *testing.T, root string) []peer {
	addr, _ := testsrv.Nginx(t, root, false)
	tlsAddr, ca := testsrv.Nginx(t, root, true)
	return []peer{
		{"http", addr, remote.Options{}},
		{"https", tlsAddr, remote.Options{TLS: true, RootCAs: ca}},
	}
}

func TestStat(t *testing.T) {
	root := tree(t)
	for _, p := range nginxPeers(t, root) {
		t.Run(p.name, func(t *testing.T) {
			b := dial(t, p.server, p.opts)
			ctx := context.Background()
			for _, name := range []string{"hello.txt", "empty", "big.bin", "a b.txt", "100%.txt", "héllo wörld ✓.txt", "q?#&x.txt", "sub/nested/deep.txt"} {
				info, err := b.Stat(ctx, "/"+name)
				if err != nil {
					t.Fatalf("Stat %s: %v", name, err)
				}
				fi, _ := os.Stat(filepath.Join(root, name))
				if info.Name != filepath.Base(name) || info.Mode != fileMode || info.Size != fi.Size() ||
					!info.Mtime.Equal(fi.ModTime().Truncate(time.Second)) || info.ETag == "" {
					t.Errorf("Stat %s = %+v; file has size %d mtime %v", name, info, fi.Size(), fi.ModTime())
				}
			}
			for _, dir := range []string{"/", "/sub", "/sub/nested", "/dir with space"} {
				info, err := b.Stat(ctx, dir)
				if err != nil {
					t.Fatalf("Stat %s: %v", dir, err)
				}
				if info.Mode != dirMode {
					t.Errorf("Stat %s: mode %v, want a directory", dir, info.Mode)
				}
			}
			_, err := b.Stat(ctx, "/missing")
			wantErrno(t, err, syscall.ENOENT)
			_, err = b.Stat(ctx, "/sub/missing/deeper")
			wantErrno(t, err, syscall.ENOENT)
		})
	}
}

// checkListing compares a listing of dir with the files under root. With
// exact, sizes and mtimes (to the minute, as autoindex shows them) must
// match; otherwise files have Size -1 and no mtime.
func checkListing(t *testing.T, b remote.Backend, root, dir string, exact bool) {
	t.Helper()
	got, err := b.List(context.Background(), dir)
	if err != nil {
		t.Fatalf("List %s: %v", dir, err)
	}
	ents, err := os.ReadDir(filepath.Join(root, dir))
	if err != nil {
		t.Fatal(err)
	}
	var want []remote.Info
	for _, e := range ents {
		fi, _ := e.Info()
		i := remote.Info{Name: e.Name(), Mode: fileMode, Size: -1}
		switch {
		case e.IsDir():
			i.Mode, i.Size = dirMode, 0
			if exact {
				i.Mtime = fi.ModTime().UTC().Truncate(time.Minute)
			}
		case exact:
			i.Size, i.Mtime = fi.Size(), fi.ModTime().UTC().Truncate(time.Minute)
		}
		want = append(want, i)
	}
	byName := func(s []remote.Info) { sort.Slice(s, func(a, b int) bool { return s[a].Name < s[b].Name }) }
	byName(got)
	byName(want)
	if rows(got) != rows(want) {
		t.Errorf("List %s:\n%s\nwant\n%s", dir, rows(got), rows(want))
	}
}

func TestListNginx(t *testing.T) {
	root := tree(t)
	for _, p := range nginxPeers(t, root) {
		t.Run(p.name, func(t *testing.T) {
			b := dial(t, p.server, p.opts)
			for _, dir := range []string{"/", "/sub", "/sub/nested", "/sub/nested/more", "/dir with space"} {
				checkListing(t, b, root, dir, true)
			}
			_, err := b.List(context.Background(), "/missing")
			wantErrno(t, err, syscall.ENOENT)
		})
	}
}

func TestListPython(t *testing.T) {
	root := tree(t)
	b := dial(t, testsrv.PythonHTTP(t, root), remote.Options{})
	for _, dir := range []string{"/", "/sub", "/sub/nested", "/dir with space"} {
		checkListing(t, b, root, dir, false)
	}
	info, err := b.Stat(context.Background(), "/sub")
	if err != nil || info.Mode != dirMode {
		t.Errorf("Stat /sub = %+v, %v; want a directory", info, err)
	}
}

// checkReads reads ranges of big.bin and hello.txt and compares them with
// the files.
func checkReads(t *testing.T, b remote.Backend, root string) {
	t.Helper()
	big, _ := os.ReadFile(filepath.Join(root, "big.bin"))
	size := int64(len(big))
	for _, tc := range []struct{ off, n int64 }{
		{0, -1}, {0, 1}, {0, 100}, {1, 100}, {65536, 65536}, {size / 2, -1}, {size - 10, 10},
		{size - 1, 100}, {size - 5, -1}, {size, 10}, {size, -1}, {size + 1000, 10}, {size + 1000, -1}, {12345, 0},
	} {
		r, err := b.ReadRange(context.Background(), "/big.bin", tc.off, tc.n)
		if err != nil {
			t.Fatalf("ReadRange(%d, %d): %v", tc.off, tc.n, err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatalf("ReadRange(%d, %d): read: %v", tc.off, tc.n, err)
		}
		want := big[min(tc.off, size):]
		if tc.n >= 0 && int64(len(want)) > tc.n {
			want = want[:tc.n]
		}
		if !bytes.Equal(got, want) {
			t.Errorf("ReadRange(%d, %d): got %d bytes, want %d (equal prefix: %v)", tc.off, tc.n, len(got), len(want),
				bytes.HasPrefix(want, got))
		}
	}
	r, err := b.ReadRange(context.Background(), "/héllo wörld ✓.txt", 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := io.ReadAll(r); string(got) != "f-8" {
		t.Errorf("read %q, want %q", got, "f-8")
	}
	r.Close()
	for _, n := range []int64{-1, 10} {
		r, err := b.ReadRange(context.Background(), "/empty", 0, n)
		if err != nil {
			t.Fatalf("ReadRange(empty, 0, %d): %v", n, err)
		}
		if got, err := io.ReadAll(r); err != nil || len(got) != 0 {
			t.Errorf("ReadRange(empty, 0, %d) read %q, %v", n, got, err)
		}
		r.Close()
	}
	_, err = b.ReadRange(context.Background(), "/missing", 0, 10)
	wantErrno(t, err, syscall.ENOENT)
	_, err = b.ReadRange(context.Background(), "/sub", 0, 10)
	wantErrno(t, err, syscall.EISDIR)
}

func TestReadRangeNginx(t *testing.T) {
	root := tree(t)
	for _, p := range nginxPeers(t, root) {
		t.Run(p.name, func(t *testing.T) { checkReads(t, dial(t, p.server, p.opts), root) })
	}
}

// TestReadRangeWithoutRanges: python's http.server (before 3.14) answers
// a Range request with the whole file, so reads fall back to skipping.
func TestReadRangeWithoutRanges(t *testing.T) {
	root := tree(t)
	addr := testsrv.PythonHTTP(t, root)
	req, _ := nethttp.NewRequest("GET", "http://"+addr+"/hello.txt", nil)
	req.Header.Set("Range", "bytes=1-2")
	resp, err := nethttp.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != nethttp.StatusOK {
		t.Skipf("this python http.server supports ranges (%s); the fallback is not exercised", resp.Status)
	}
	checkReads(t, dial(t, addr, remote.Options{}), root)
}

// TestEarlyClose: closing a reader before its end releases the transfer,
// and the session goes on working.
func TestEarlyClose(t *testing.T) {
	root := tree(t)
	addr, _ := testsrv.Nginx(t, root, false)
	b := dial(t, addr, remote.Options{})
	for i := 0; i < 20; i++ {
		r, err := b.ReadRange(context.Background(), "/big.bin", int64(i), -1)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 10)
		if _, err := io.ReadFull(r, buf); err != nil {
			t.Fatal(err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Stat(context.Background(), "/hello.txt"); err != nil {
		t.Fatal(err)
	}
}

// countingServer serves root with Go's file server (which honours Range)
// and counts the connections it accepts.
func countingServer(t *testing.T, root string) (addr string, conns *atomic.Int64) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns = new(atomic.Int64)
	srv := &nethttp.Server{
		Handler: nethttp.FileServer(nethttp.Dir(root)),
		ConnState: func(_ net.Conn, s nethttp.ConnState) {
			if s == nethttp.StateNew {
				conns.Add(1)
			}
		},
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String(), conns
}

// TestConnectionReuse: requests one after the other, and ranges read to
// their end, share one kept-alive connection.
func TestConnectionReuse(t *testing.T) {
	root := tree(t)
	addr, conns := countingServer(t, root)
	b := dial(t, addr, remote.Options{})
	ctx := context.Background()
	for i := int64(0); i < 10; i++ {
		if _, err := b.Stat(ctx, "/big.bin"); err != nil {
			t.Fatal(err)
		}
		if _, err := b.List(ctx, "/sub"); err != nil {
			t.Fatal(err)
		}
		r, err := b.ReadRange(ctx, "/big.bin", i*1000, 4096)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4096)
		if _, err := io.ReadFull(r, buf); err != nil {
			t.Fatal(err)
		}
		r.Close()
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for 30 sequential requests, want 1", n)
	}
}

// TestConnectionsKeptForPrefetch: the connections of a burst as wide as
// the cache's prefetch (32 background requests) and a program's request
// stay alive: the next burst dials none (each dial is a round trip).
func TestConnectionsKeptForPrefetch(t *testing.T) {
	const burst = 32 + 1
	addr, conns := countingServer(t, tree(t))
	b := dial(t, addr, remote.Options{})
	ctx := context.Background()
	for round := range 2 {
		// every reader holds its connection until it is read to the end
		var readers []io.ReadCloser
		for range burst {
			r, err := b.ReadRange(ctx, "/big.bin", 0, 4096)
			if err != nil {
				t.Fatal(err)
			}
			readers = append(readers, r)
		}
		for _, r := range readers {
			if _, err := io.Copy(io.Discard, r); err != nil {
				t.Fatal(err)
			}
			r.Close()
		}
		if n := conns.Load(); n != burst {
			t.Fatalf("round %d: %d connections for bursts of %d requests, want %d", round, n, burst, burst)
		}
	}
}

// stalledServer accepts connections and answers each with prefix (maybe
// nothing), then sends nothing more until the test ends.
func stalledServer(t *testing.T, prefix string) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Read the request before answering, as a server would,
				// then hold the connection until the client drops it.
				c.Read(make([]byte, 4096))
				c.Write([]byte(prefix))
				io.Copy(io.Discard, c)
				c.Close()
			}()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return l.Addr().String()
}

// watchdog returns a context cancelled long after any timeout under test:
// if the backend hangs, the test sees EINTR instead of ETIMEDOUT.
func watchdog(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	wctx, wcancel := context.WithCancel(context.Background())
	t.Cleanup(wcancel)
	go func() {
		select {
		case <-ctx.Done():
			wcancel()
		case <-wctx.Done():
		}
	}()
	return wctx
}

func TestStalledServer(t *testing.T) {
	o := remote.Options{Timeout: 300 * time.Millisecond}
	t.Run("no answer", func(t *testing.T) {
		b := dial(t, stalledServer(t, ""), o)
		_, err := b.Stat(watchdog(t), "/f")
		wantErrno(t, err, syscall.ETIMEDOUT)
		_, err = b.List(watchdog(t), "/")
		wantErrno(t, err, syscall.ETIMEDOUT)
	})
	t.Run("headers then nothing", func(t *testing.T) {
		b := dial(t, stalledServer(t, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nsome bytes"), o)
		r, err := b.ReadRange(watchdog(t), "/f", 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		got, err := io.ReadAll(r)
		wantErrno(t, err, syscall.ETIMEDOUT)
		if string(got) != "some bytes" {
			t.Errorf("read %q before the stall, want %q", got, "some bytes")
		}
	})
	t.Run("partial answer then nothing", func(t *testing.T) {
		b := dial(t, stalledServer(t, "HTTP/1.1 200 OK\r\nContent-Le"), o)
		_, err := b.Stat(watchdog(t), "/f")
		wantErrno(t, err, syscall.ETIMEDOUT)
	})
}

// TestSlowServerIsNotStalled: the timeout bounds silence, not the whole
// transfer: a body that trickles in for longer than the timeout is read.
func TestSlowServerIsNotStalled(t *testing.T) {
	// Gaps of an eighth of the timeout leave room for a loaded machine.
	const chunks = 12
	const timeout = 2 * time.Second
	srv := &nethttp.Server{Handler: nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(chunks))
		for i := 0; i < chunks; i++ {
			w.Write([]byte{'a' + byte(i)})
			w.(nethttp.Flusher).Flush()
			time.Sleep(timeout / 8)
		}
	})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	b := dial(t, l.Addr().String(), remote.Options{Timeout: timeout})
	r, err := b.ReadRange(context.Background(), "/slow", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got, err := io.ReadAll(r); err != nil || string(got) != "abcdefghijkl" {
		t.Errorf("read %q, %v; want all of it", got, err)
	}
}

func TestCancel(t *testing.T) {
	o := remote.Options{Timeout: time.Hour}
	t.Run("waiting for headers", func(t *testing.T) {
		b := dial(t, stalledServer(t, ""), o)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		_, err := b.Stat(ctx, "/f")
		wantErrno(t, err, syscall.EINTR)
	})
	t.Run("reading the body", func(t *testing.T) {
		b := dial(t, stalledServer(t, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nx"), o)
		ctx, cancel := context.WithCancel(context.Background())
		r, err := b.ReadRange(ctx, "/f", 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		time.AfterFunc(50*time.Millisecond, cancel)
		_, err = io.ReadAll(r)
		wantErrno(t, err, syscall.EINTR)
	})
	t.Run("by Close", func(t *testing.T) {
		b, err := Dial(context.Background(), stalledServer(t, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nx"), o)
		if err != nil {
			t.Fatal(err)
		}
		r, err := b.ReadRange(context.Background(), "/f", 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		time.AfterFunc(50*time.Millisecond, func() { b.Close() })
		_, err = io.ReadAll(r)
		wantErrno(t, err, syscall.EIO)
		_, err = b.Stat(context.Background(), "/f")
		wantErrno(t, err, syscall.EIO)
	})
}

func writeNetrc(t *testing.T, text string) string {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".netrc"), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

func TestBasicAuth(t *testing.T) {
	root := tree(t)
	addr, _ := testsrv.Nginx(t, root, false)
	const secret = "/private/secret.txt"
	good := fmt.Sprintf("machine 127.0.0.1 login %s password %s\n", testsrv.NginxUser, testsrv.NginxPassword)
	read := func(b remote.Backend) (string, error) {
		r, err := b.ReadRange(context.Background(), secret, 0, -1)
		if err != nil {
			return "", err
		}
		defer r.Close()
		data, err := io.ReadAll(r)
		return string(data), err
	}
	allowed := func(b remote.Backend) error {
		if got, err := read(b); err != nil || got != "the secret\n" {
			return fmt.Errorf("read %q, %v", got, err)
		}
		_, err := b.List(context.Background(), "/private")
		return err
	}
	ok := func(t *testing.T, b remote.Backend) {
		t.Helper()
		if err := allowed(b); err != nil {
			t.Fatal(err)
		}
	}
	refused := func(t *testing.T, b remote.Backend) {
		t.Helper()
		_, err := read(b)
		wantErrno(t, err, syscall.EACCES)
		if strings.Contains(err.Error(), testsrv.NginxPassword) || strings.Contains(err.Error(), "wrong") {
			t.Errorf("error shows a password: %v", err)
		}
		_, err = b.Stat(context.Background(), secret)
		wantErrno(t, err, syscall.EACCES)
	}
	never := func(string) (string, error) { t.Error("asked for a password"); return "", errors.New("no") }

	t.Run("nothing", func(t *testing.T) { refused(t, dial(t, addr, remote.Options{Askpass: never})) })
	t.Run("netrc", func(t *testing.T) {
		ok(t, dial(t, addr, remote.Options{Home: writeNetrc(t, good), Askpass: never}))
	})
	t.Run("netrc default entry", func(t *testing.T) {
		home := writeNetrc(t, fmt.Sprintf("machine other login x password y\ndefault login %s password %s\n", testsrv.NginxUser, testsrv.NginxPassword))
		ok(t, dial(t, addr, remote.Options{Home: home}))
	})
	t.Run("user named, netrc", func(t *testing.T) {
		ok(t, dial(t, testsrv.NginxUser+"@"+addr, remote.Options{Home: writeNetrc(t, good), Askpass: never}))
	})
	t.Run("wrong netrc password", func(t *testing.T) {
		home := writeNetrc(t, fmt.Sprintf("machine 127.0.0.1 login %s password wrong\n", testsrv.NginxUser))
		refused(t, dial(t, addr, remote.Options{Home: home, Askpass: never}))
	})
	t.Run("askpass", func(t *testing.T) {
		var asked atomic.Int32
		b := dial(t, testsrv.NginxUser+"@"+addr, remote.Options{Askpass: func(prompt string) (string, error) {
			asked.Add(1)
			if want := "Password for " + testsrv.NginxUser + "@127.0.0.1: "; prompt != want {
				t.Errorf("prompt %q, want %q", prompt, want)
			}
			return testsrv.NginxPassword, nil
		}})
		if _, err := b.Stat(context.Background(), "/hello.txt"); err != nil {
			t.Fatal(err) // public files need no password
		}
		if asked.Load() != 0 {
			t.Fatal("asked for a password for a public file")
		}
		var wg sync.WaitGroup
		for i := 0; i < 4; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := allowed(b); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if n := asked.Load(); n != 1 {
			t.Errorf("asked %d times, want once", n)
		}
	})
	t.Run("askpass wrong", func(t *testing.T) {
		refused(t, dial(t, "someone@"+addr, remote.Options{Askpass: func(string) (string, error) { return "wrong", nil }}))
	})
	t.Run("askpass refuses", func(t *testing.T) {
		refused(t, dial(t, "someone@"+addr, remote.Options{Askpass: func(string) (string, error) { return "", errors.New("no terminal") }}))
	})
}

func TestTLSUntrusted(t *testing.T) {
	addr, _ := testsrv.Nginx(t, tree(t), true)
	b := dial(t, addr, remote.Options{TLS: true, RootCAs: x509.NewCertPool()})
	_, err := b.Stat(context.Background(), "/hello.txt")
	wantErrno(t, err, syscall.EACCES)
}

// TestStatusCodes: redirects are followed (TestRedirectToAnotherServer
// for other servers); error statuses become errnos.
func TestStatusCodes(t *testing.T) {
	mux := nethttp.NewServeMux()
	mux.Handle("/here", nethttp.RedirectHandler("/real.txt", nethttp.StatusMovedPermanently))
	mux.HandleFunc("/real.txt", func(w nethttp.ResponseWriter, r *nethttp.Request) { w.Write([]byte("real\n")) })
	for code, path := range map[int]string{403: "/forbidden", 410: "/gone", 500: "/broken", 503: "/busy", 418: "/teapot", 405: "/refused"} {
		mux.HandleFunc(path, func(w nethttp.ResponseWriter, r *nethttp.Request) { w.WriteHeader(code) })
	}
	b := dial(t, serve(t, mux), remote.Options{})
	for path, want := range map[string]syscall.Errno{"/forbidden": syscall.EACCES, "/gone": syscall.ENOENT,
		"/broken": syscall.EIO, "/busy": syscall.EIO, "/teapot": syscall.EIO, "/refused": syscall.ENOTSUP} {
		_, err := b.Stat(context.Background(), path)
		wantErrno(t, err, want)
		_, err = b.ReadRange(context.Background(), path, 10, 10)
		wantErrno(t, err, want)
	}
	info, err := b.Stat(context.Background(), "/here")
	if err != nil || info.Size != 5 || info.Mode != fileMode {
		t.Errorf("Stat /here = %+v, %v; want the 5-byte file it redirects to", info, err)
	}
}

func TestListNotDirectory(t *testing.T) {
	root := tree(t)
	addr, _ := countingServer(t, root)
	b := dial(t, addr, remote.Options{})
	// Go's file server redirects "/hello.txt/" to "/hello.txt".
	_, err := b.List(context.Background(), "/hello.txt")
	wantErrno(t, err, syscall.ENOTDIR)
}

func TestReadOnly(t *testing.T) {
	b := dial(t, "127.0.0.1:1", remote.Options{})
	if _, ok := b.(remote.Writer); ok {
		t.Error("the HTTP backend claims to be writable")
	}
}

// TestNoLeaks: after Close, every goroutine and descriptor the session
// used is gone, including those of readers the caller forgot to close.
func TestNoLeaks(t *testing.T) {
	root := tree(t)
	addr, _ := testsrv.Nginx(t, root, false)
	tlsAddr, ca := testsrv.Nginx(t, root, true)
	stalled := stalledServer(t, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nx")
	base := leakcheck.Take(t)

	ctx := context.Background()
	for _, p := range []peer{{"http", addr, remote.Options{}}, {"https", tlsAddr, remote.Options{TLS: true, RootCAs: ca}}} {
		b, err := Dial(ctx, p.server, p.opts)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				b.Stat(ctx, "/big.bin")
				b.List(ctx, "/sub")
				r, err := b.ReadRange(ctx, "/big.bin", int64(i)*100, 1000)
				if err == nil {
					io.Copy(io.Discard, r)
					r.Close()
				}
				// Left open on purpose: Close must end it.
				b.ReadRange(ctx, "/big.bin", 0, -1)
			}()
		}
		wg.Wait()
		b.Close()
	}
	b, err := Dial(ctx, stalled, remote.Options{Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.ReadRange(ctx, "/f", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, r)
	b.Close()
	base.Check(t)
}
