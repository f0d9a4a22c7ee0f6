package http

import (
	"os"
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
	remotetest.Read(t, remotetest.Reader{
		Dial: func(t *testing.T, timeout time.Duration) remote.Backend {
			b, err := Dial(t.Context(), addr, remote.Options{Home: t.TempDir(), Timeout: timeout})
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
		Dir:  remotetest.Subdirs(root),
		Path: remotetest.Below(root),
	})
}
