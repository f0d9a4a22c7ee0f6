package http

import (
	"context"
	"io"
	"net"
	nethttp "net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"wirefs/internal/remote"
	"wirefs/internal/testsrv"
)

// TestDirectoriesBehindForwarder: nginx answers "GET /dir" with a 301 whose
// Location names its own port, not the forwarder's the client used; the
// redirect only adds "/", so it says "directory", and the whole tree
// lists through the forwarder as ls -lR walks it (List, then Stat of each
// entry).
func TestDirectoriesBehindForwarder(t *testing.T) {
	root := tree(t)
	nginx, _ := testsrv.Nginx(t, root, false)
	fwd := testsrv.Forward(t, nginx).Addr

	// The premise: nginx's Location names nginx's origin.
	noFollow := &nethttp.Client{CheckRedirect: func(*nethttp.Request, []*nethttp.Request) error { return nethttp.ErrUseLastResponse }}
	resp, err := noFollow.Get("http://" + fwd + "/sub")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != nethttp.StatusMovedPermanently || loc != "http://"+nginx+"/sub/" {
		t.Fatalf("GET /sub through the forwarder: %s, Location %q; want 301 to nginx's own http://%s/sub/", resp.Status, loc, nginx)
	}

	b := dial(t, fwd, remote.Options{})
	ctx := context.Background()
	dirs := 0
	var walk func(dir string)
	walk = func(dir string) {
		dirs++
		checkListing(t, b, root, dir, true)
		entries, err := b.List(ctx, dir)
		if err != nil {
			t.Fatalf("List %s: %v", dir, err)
		}
		for _, e := range entries {
			p := path.Join(dir, e.Name)
			info, err := b.Stat(ctx, p)
			if err != nil {
				t.Fatalf("Stat %s: %v", p, err)
			}
			fi, err := os.Stat(filepath.Join(root, p))
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case fi.IsDir() && info.Mode != dirMode:
				t.Errorf("Stat %s = %+v; want a directory", p, info)
			case !fi.IsDir() && (info.Mode != fileMode || info.Size != fi.Size()):
				t.Errorf("Stat %s = %+v; want a file of %d bytes", p, info, fi.Size())
			case fi.IsDir():
				_, err := b.ReadRange(ctx, p, 0, 10)
				wantErrno(t, err, syscall.EISDIR)
				if p != "/private" { // basic auth
					walk(p)
				}
			}
		}
	}
	walk("/")
	if dirs < 5 {
		t.Errorf("walked %d directories; the tree has 5 listable ones", dirs)
	}
}

// TestStatWithoutHEAD: servers that refuse HEAD (nginx told to answer 405,
// python's http.server answering 501) are asked with a one-byte ranged
// GET; sizes come from Content-Range (nginx), or from Content-Length when
// the server ignores Range (python before 3.14).
func TestStatWithoutHEAD(t *testing.T) {
	root := tree(t)
	nginx, _ := testsrv.Nginx(t, root, false, testsrv.NginxRefuseHEAD())
	python := testsrv.PythonHTTPRefusingHEAD(t, root)
	for _, p := range []struct{ name, addr string }{{"nginx 405", nginx}, {"python 501", python}} {
		t.Run(p.name, func(t *testing.T) {
			req, _ := nethttp.NewRequest(nethttp.MethodHead, "http://"+p.addr+"/hello.txt", nil)
			resp, err := nethttp.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != nethttp.StatusMethodNotAllowed && resp.StatusCode != nethttp.StatusNotImplemented {
				t.Fatalf("the server answers HEAD with %s; the test needs a refusal", resp.Status)
			}

			b := dial(t, p.addr, remote.Options{})
			ctx := context.Background()
			for _, name := range []string{"hello.txt", "empty", "big.bin", "a b.txt", "héllo wörld ✓.txt", "sub/nested/deep.txt"} {
				info, err := b.Stat(ctx, "/"+name)
				if err != nil {
					t.Fatalf("Stat %s: %v", name, err)
				}
				fi, _ := os.Stat(filepath.Join(root, name))
				if info.Name != filepath.Base(name) || info.Mode != fileMode || info.Size != fi.Size() || info.Mtime.IsZero() {
					t.Errorf("Stat %s = %+v; the file has %d bytes", name, info, fi.Size())
				}
			}
			for _, dir := range []string{"/sub", "/sub/nested", "/dir with space"} {
				if info, err := b.Stat(ctx, dir); err != nil || info.Mode != dirMode {
					t.Errorf("Stat %s = %+v, %v; want a directory", dir, info, err)
				}
			}
			_, err = b.Stat(ctx, "/missing")
			wantErrno(t, err, syscall.ENOENT)
			checkReads(t, b, root)
		})
	}
}

// TestRedirectToAnotherServer: a redirect to another origin is followed,
// as curl -L and Go's client do, without the credentials, which belong to
// the server the user named (curl's rule).
func TestRedirectToAnotherServer(t *testing.T) {
	var gotAuth []string
	var mu sync.Mutex
	// file serves body and notes the Authorization header it was sent.
	file := func(body string) nethttp.HandlerFunc {
		return func(w nethttp.ResponseWriter, r *nethttp.Request) {
			mu.Lock()
			gotAuth = append(gotAuth, r.Header.Get("Authorization"))
			mu.Unlock()
			w.Write([]byte(body))
		}
	}
	other := nethttp.NewServeMux()
	other.HandleFunc("/f", file("from the other server\n"))
	otherAddr := serve(t, other)
	mux := nethttp.NewServeMux()
	mux.Handle("/away", nethttp.RedirectHandler("http://"+otherAddr+"/f", nethttp.StatusFound))
	mux.HandleFunc("/here", file("here\n"))
	addr := serve(t, mux)

	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".netrc"), []byte("machine 127.0.0.1 login u password p\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := dial(t, "u@"+addr, remote.Options{Home: home})
	ctx := context.Background()
	info, err := b.Stat(ctx, "/away")
	if err != nil || info.Size != int64(len("from the other server\n")) {
		t.Fatalf("Stat /away = %+v, %v; want the other server's file", info, err)
	}
	r, err := b.ReadRange(ctx, "/away", 5, 5)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(r)
	r.Close()
	if string(data) != "the o" {
		t.Errorf("read %q of the other server's file, want %q", data, "the o")
	}
	if _, err := b.Stat(ctx, "/here"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(gotAuth) != 3 || gotAuth[0] != "" || gotAuth[1] != "" || !strings.HasPrefix(gotAuth[2], "Basic ") {
		t.Errorf("Authorization headers sent %q; want none to the other server, basic auth to the named one", gotAuth)
	}
}

// serve runs h on a free port of 127.0.0.1 until the test ends.
func serve(t *testing.T, h nethttp.Handler) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &nethttp.Server{Handler: h}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}
