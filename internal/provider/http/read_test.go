package http

import (
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"wirefs/internal/remote"
	"wirefs/internal/remote/remotetest"
	"wirefs/internal/testsrv"
)

// TestRead runs the read suite of every protocol against nginx (which
// cannot be stalled here: the stall cases are left out).
func TestRead(t *testing.T) {
	root := t.TempDir()
	os.Chmod(root, 0o755)
	addr, _ := testsrv.Nginx(t, root, false)
	var dirs atomic.Int64
	remotetest.Read(t, remotetest.Reader{
		Dial: func(t *testing.T, timeout time.Duration) remote.Backend {
			b, err := Dial(t.Context(), addr, remote.Options{Home: t.TempDir(), Timeout: timeout})
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
		Dir: func(t *testing.T) string {
			dir := filepath.Join(root, "r"+strconv.FormatInt(dirs.Add(1), 10))
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			return dir
		},
		Path: func(local string) string {
			rel, _ := filepath.Rel(root, local)
			return "/" + filepath.ToSlash(rel)
		},
	})
}
