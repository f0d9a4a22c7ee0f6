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
	// Writing: as the opener, so the file's mode decides.
	f, _ := d.Lookup(ctx, "public")
	if _, err := f.(ns.Opener).Open(ctx, nobody, syscall.O_WRONLY); ns.Errno(err) != syscall.EACCES {
		t.Errorf("nobody opening root's 0644 file for writing: %v", err)
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

// TestFSWrites: an fs portal writes, creates, truncates, appends,
// renames and removes as the asker: nobody may do all of it in a
// directory of their own, none of it in root's, and what they create has
// exactly the mode asked (the daemon's umask does not apply again).
func TestFSWrites(t *testing.T) {
	needRoot(t)
	p, _ := newProvider(t)
	_, root := tree(t)
	mine := filepath.Join(root, "mine")
	if err := os.Mkdir(mine, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chown(mine, 65534, 65534)
	d, err := p.FS(root)
	if err != nil {
		t.Fatal(err)
	}
	nobody := asNobody(t)
	ctx := ns.WithCaller(context.Background(), func() ns.Caller { return nobody })
	dirOf := func(name string) ns.Dir {
		n, err := d.Lookup(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return n.(ns.Dir)
	}
	mineDir := dirOf("mine")

	// Create with a mode the daemon's umask would cut.
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	node, h, err := mineDir.(ns.Creator).Create(ctx, nobody, "new", syscall.O_WRONLY|syscall.O_CREAT, 0o664)
	if err != nil {
		t.Fatalf("create as nobody in their directory: %v", err)
	}
	if _, err := h.(ns.WriterAt).WriteAt(ctx, []byte("hello\n"), 0); err != nil {
		t.Fatal(err)
	}
	h.Close()
	st, err := os.Stat(filepath.Join(mine, "new"))
	if err != nil || st.Mode().Perm() != 0o664 || st.Sys().(*syscall.Stat_t).Uid != 65534 {
		t.Fatalf("created file: %v %v", st, err)
	}
	// Append, then truncate by name.
	h, err = node.(ns.Opener).Open(ctx, nobody, syscall.O_WRONLY|syscall.O_APPEND)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.(ns.WriterAt).WriteAt(ctx, []byte("more\n"), 0); err != nil {
		t.Fatal(err)
	}
	h.Close()
	if b, _ := os.ReadFile(filepath.Join(mine, "new")); string(b) != "hello\nmore\n" {
		t.Errorf("after an append: %q", b)
	}
	size := int64(2)
	if a, err := node.(ns.Setattrer).Setattr(ctx, nil, ns.SetAttr{Size: &size}); err != nil || a.Size != 2 {
		t.Errorf("truncate: %v %v", a, err)
	}
	if _, err := mineDir.(ns.Mkdirer).Mkdir(ctx, "sub", 0o750); err != nil {
		t.Errorf("mkdir: %v", err)
	}
	if err := mineDir.(ns.Renamer).Rename(ctx, "new", dirOf("mine"), "renamed"); err != nil {
		t.Errorf("rename: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(mine, "renamed")); string(b) != "he" {
		t.Errorf("renamed file holds %q", b)
	}
	for _, name := range []string{"renamed", "sub"} {
		if err := mineDir.(ns.Remover).Remove(ctx, name, name == "sub"); err != nil {
			t.Errorf("remove %s: %v", name, err)
		}
	}
	// None of it in root's directory.
	if _, _, err := d.(ns.Creator).Create(ctx, nobody, "x", syscall.O_WRONLY|syscall.O_CREAT, 0o644); ns.Errno(err) != syscall.EACCES {
		t.Errorf("create in root's directory: %v", err)
	}
	if err := d.(ns.Remover).Remove(ctx, "public", false); ns.Errno(err) != syscall.EACCES {
		t.Errorf("remove from root's directory: %v", err)
	}
	pub, _ := d.Lookup(ctx, "public")
	if _, err := pub.(ns.Setattrer).Setattr(ctx, nil, ns.SetAttr{Size: &size}); ns.Errno(err) != syscall.EACCES {
		t.Errorf("truncate root's file: %v", err)
	}
	mode := os.FileMode(0o777)
	if _, err := pub.(ns.Setattrer).Setattr(ctx, nil, ns.SetAttr{Mode: &mode}); ns.Errno(err) != syscall.EPERM {
		t.Errorf("chmod root's file: %v", err)
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
