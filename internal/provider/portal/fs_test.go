package portal

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"

	"wirefs/internal/ns"
)

// tree makes a tree for fs portal tests, owned by root:
//
//	top/            0700 (nobody cannot search it)
//	top/tree/       0755: the portal's root
//	  public        0644
//	  secret        0600
//	  group         0640, group 100
//	  closed/       0700, with file 0644 inside
//	  out           -> /etc/hostname (a link out of the tree)
//	  in            -> public
func tree(t *testing.T) (top, root string) {
	t.Helper()
	top = filepath.Join(t.TempDir(), "top")
	root = filepath.Join(top, "tree")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "closed"), 0o755))
	must(os.Chmod(filepath.Join(root, "closed"), 0o700))
	must(os.WriteFile(filepath.Join(root, "closed", "file"), []byte("closed\n"), 0o644))
	must(os.WriteFile(filepath.Join(root, "public"), []byte("public\n"), 0o644))
	must(os.WriteFile(filepath.Join(root, "secret"), []byte("secret\n"), 0o600))
	must(os.WriteFile(filepath.Join(root, "group"), []byte("group\n"), 0o640))
	must(os.Chown(filepath.Join(root, "group"), 0, 100))
	must(os.Symlink("/etc/hostname", filepath.Join(root, "out")))
	must(os.Symlink("public", filepath.Join(root, "in")))
	// t.TempDir() and its parent are 0700.
	must(os.Chmod(filepath.Dir(top), 0o755))
	must(os.Chmod(filepath.Dir(filepath.Dir(top)), 0o755))
	return top, root
}

// fsWalk looks rel up from d as c, and opens it for reading.
func fsWalk(d ns.Dir, c ns.Caller, rel ...string) (ns.Node, ns.Handle, error) {
	ctx := ns.WithCaller(context.Background(), func() ns.Caller { return c })
	var node ns.Node = d
	for _, name := range rel {
		dir, ok := node.(ns.Dir)
		if !ok {
			return nil, nil, syscall.ENOTDIR
		}
		var err error
		if node, err = dir.Lookup(ctx, name); err != nil {
			return nil, nil, err
		}
	}
	o, ok := node.(ns.Opener)
	if !ok {
		return node, nil, nil
	}
	h, err := o.Open(ctx, c, syscall.O_RDONLY)
	return node, h, err
}

func readAt(t *testing.T, h ns.Handle) string {
	t.Helper()
	buf := make([]byte, 100)
	n, err := h.(ns.ReaderAt).ReadAt(context.Background(), buf, 0)
	if err != nil {
		t.Fatal(err)
	}
	return string(buf[:n])
}

// TestFSAsOpener: an fs portal gives nobody exactly what nobody could
// read directly: the public file and the group's file to a member of the
// group, not root's 0600 file nor what lies in a directory nobody cannot
// search; a link out of the tree leads nowhere, for anyone.
func TestFSAsOpener(t *testing.T) {
	needRoot(t)
	p, _ := newProvider(t)
	top, root := tree(t)
	d, err := p.FS(root)
	if err != nil {
		t.Fatal(err)
	}
	nobody := asNobody(t) // groups 65534 and 100
	for _, tc := range []struct {
		rel  []string
		as   ns.Caller
		want string
		err  syscall.Errno
	}{
		{[]string{"public"}, nobody, "public\n", 0},
		{[]string{"in"}, nobody, "public\n", 0},
		{[]string{"group"}, nobody, "group\n", 0},
		{[]string{"secret"}, nobody, "", syscall.EACCES},
		{[]string{"closed", "file"}, nobody, "", syscall.EACCES},
		{[]string{"out"}, nobody, "", syscall.EACCES},
		{[]string{"secret"}, me(), "secret\n", 0},
		{[]string{"closed", "file"}, me(), "closed\n", 0},
		{[]string{"out"}, me(), "", syscall.EACCES},
		{[]string{"missing"}, me(), "", syscall.ENOENT},
		// The group's file to nobody without the group (a caller whose
		// status lends no groups).
		{[]string{"group"}, ns.Caller{Pid: uint32(os.Getpid()), Uid: 65534, Gid: 65534}, "", syscall.EACCES},
	} {
		_, h, err := fsWalk(d, tc.as, tc.rel...)
		if tc.err != 0 {
			if ns.Errno(err) != tc.err {
				t.Errorf("%v as %d: %v, want %v", tc.rel, tc.as.Uid, err, tc.err)
			}
			if h != nil {
				h.Close()
			}
			continue
		}
		if err != nil {
			t.Errorf("%v as %d: %v", tc.rel, tc.as.Uid, err)
			continue
		}
		if got := readAt(t, h); got != tc.want {
			t.Errorf("%v as %d: %q", tc.rel, tc.as.Uid, got)
		}
		if _, ok := h.(ns.KernelObject); !ok {
			t.Errorf("%v: not a kernel object", tc.rel)
		}
		h.Close()
	}

	// Listings as the asker.
	ctx := ns.WithCaller(context.Background(), func() ns.Caller { return nobody })
	ents, err := d.ReadDir(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name)
	}
	if !slices.Equal(names, []string{"closed", "group", "in", "public", "secret"}) { // "out" leads out
		t.Errorf("listing: %v", names)
	}
	closed, _ := d.Lookup(ctx, "closed")
	if _, err := closed.(ns.Dir).ReadDir(ctx); ns.Errno(err) != syscall.EACCES {
		t.Errorf("listing closed/ as nobody: %v", err)
	}
	// Writing is refused, for anyone.
	f, _ := d.Lookup(ctx, "public")
	if _, err := f.(ns.Opener).Open(ctx, me(), syscall.O_WRONLY); ns.Errno(err) != syscall.EROFS {
		t.Errorf("open for writing: %v", err)
	}
	// A door that does not say who asks is refused.
	if _, err := d.Lookup(context.Background(), "public"); ns.Errno(err) != syscall.EACCES {
		t.Errorf("lookup without a caller: %v", err)
	}

	// The root's ancestors count: nobody cannot search top/.
	if err := os.Chmod(top, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, _, err := fsWalk(d, nobody, "public"); ns.Errno(err) != syscall.EACCES {
		t.Errorf("through a closed ancestor: %v", err)
	}
}

// TestAsIsolated: while goroutines act as nobody, the others act as the
// daemon: credentials never leak from a locked thread to another
// goroutine, nor stay on a thread after as returns.
func TestAsIsolated(t *testing.T) {
	needRoot(t)
	_, root := tree(t)
	secret := filepath.Join(root, "secret")
	nobody := identity{uid: 65534, gid: 65534}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				err := as(nobody, func() error {
					_, err := os.ReadFile(secret)
					return err
				})
				if ns.Errno(err) != syscall.EACCES {
					t.Errorf("as nobody: %v", err)
					return
				}
			}
		})
		wg.Go(func() {
			for range 200 {
				if _, err := os.ReadFile(secret); err != nil {
					t.Errorf("as the daemon: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
}
