package ninep

import (
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"

	"wirefs/internal/remote"
	"wirefs/internal/remote/remotetest"
	"wirefs/internal/testsrv"
)

// TestPOSIX runs the POSIX suite of every writable protocol against diod,
// which exports one directory; each case gets a fresh one below it.
func TestPOSIX(t *testing.T) {
	exp := exportDir(t)
	srv := testsrv.StartDiod(t, exp)
	var dirs atomic.Int64
	remotetest.POSIX(t, remotetest.Server{
		Dial: func(t *testing.T) remote.Backend { return dial(t, srv.Addr, remote.Options{}) },
		Dir: func(t *testing.T) string {
			dir := filepath.Join(exp, strconv.FormatInt(dirs.Add(1), 10))
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			return dir
		},
		Pause:  srv.Pause,
		Resume: srv.Resume,
	})
}
