package ninep

import (
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
	remotetest.POSIX(t, remotetest.Server{
		Dial:   func(t *testing.T) remote.Backend { return dial(t, srv.Addr, remote.Options{}) },
		Dir:    remotetest.Subdirs(exp),
		Pause:  srv.Pause,
		Resume: srv.Resume,
	})
}
