package ftp

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"wirefs/internal/remote"
)

// TestCreateIfMissing: a missing file is made empty (the mode asked, where
// the server has SITE CHMOD); an existing one keeps its bytes; two sessions
// that each make a new log and append to it keep every line.
func TestCreateIfMissing(t *testing.T) {
	f := newFixture(t, map[string]string{"theirs": "kept", "dir/": ""})
	ctx := context.Background()
	b := f.dial(t, remote.Options{})
	disk := func(p string) string { return filepath.Join(f.root, p) }

	created, err := b.CreateIfMissing(ctx, "/dir/new", 0o640)
	if fi, serr := os.Stat(disk("dir/new")); err != nil || !created || serr != nil || fi.Size() != 0 {
		t.Fatalf("CreateIfMissing = %v, %v; on the server: %v, %v", created, err, fi, serr)
	}
	created, err = b.CreateIfMissing(ctx, "/theirs", 0o600)
	if data, _ := os.ReadFile(disk("theirs")); err != nil || created || string(data) != "kept" {
		t.Fatalf("CreateIfMissing of an existing file = %v, %v; the server has %q", created, err, data)
	}
	_, err = b.CreateIfMissing(ctx, "/nodir/f", 0o644)
	wantErrno(t, "CreateIfMissing in a missing directory", err, syscall.ENOENT)

	var wg sync.WaitGroup
	for i := range 2 {
		be := f.dial(t, remote.Options{})
		wg.Go(func() {
			for j := range 10 {
				if _, err := be.CreateIfMissing(ctx, "/log", 0o644); err != nil {
					t.Error(err)
					return
				}
				line := fmt.Sprintf("%d %d\n", i, j)
				if _, err := be.Append(ctx, "/log", strings.NewReader(line), int64(len(line))); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	data, _ := os.ReadFile(disk("log"))
	if lines := strings.Count(string(data), "\n"); lines != 20 || len(data) != 20*4 {
		t.Fatalf("two sessions making and appending to one log left %d lines: %q", lines, data)
	}
}
