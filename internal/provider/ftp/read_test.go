package ftp

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"wirefs/internal/remote"
	"wirefs/internal/remote/remotetest"
)

// TestRead runs the read suite of every protocol against vsftpd.
func TestRead(t *testing.T) {
	f := newFixture(t, nil)
	var dirs atomic.Int64
	remotetest.Read(t, remotetest.Reader{
		Dial: func(t *testing.T, timeout time.Duration) remote.Backend {
			b, err := dial(context.Background(), f.server, remote.Options{Home: f.home, Timeout: timeout}, defaultPoolTimes)
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
		Dir: func(t *testing.T) string {
			dir := filepath.Join(f.root, "r"+strconv.FormatInt(dirs.Add(1), 10))
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			return dir
		},
		Path: func(local string) string {
			rel, _ := filepath.Rel(f.root, local)
			return "/" + filepath.ToSlash(rel)
		},
		Pause:   f.srv.Stall,
		Resume:  f.srv.Resume,
		Restart: func() { f.srv.Kill(); f.srv.Start() },
		// The FTP user is not root and owns none of the test's files.
		Stranger: func(t *testing.T) remote.Backend {
			b, err := dial(context.Background(), f.server, remote.Options{Home: f.home}, defaultPoolTimes)
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
	})
}
