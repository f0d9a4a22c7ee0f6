package ninep

import (
	"os"
	"testing"
	"time"

	"wirefs/internal/remote"
	"wirefs/internal/remote/remotetest"
	"wirefs/internal/testsrv"
)

// TestRead runs the read suite of every protocol against diod.
func TestRead(t *testing.T) {
	exp := exportDir(t)
	srv := testsrv.StartDiod(t, exp)
	// diod acts as another user only when it runs as root.
	var stranger func(t *testing.T) remote.Backend
	if os.Getuid() == 0 {
		stranger = func(t *testing.T) remote.Backend {
			b, err := Dial(t.Context(), "nobody@"+srv.Addr, remote.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
	remotetest.Read(t, remotetest.Reader{
		Dial: func(t *testing.T, timeout time.Duration) remote.Backend {
			b, err := Dial(t.Context(), srv.Addr, remote.Options{Timeout: timeout})
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
		Dir:      remotetest.Subdirs(exp),
		Path:     func(local string) string { return local },
		Pause:    srv.Pause,
		Resume:   srv.Resume,
		Restart:  func() { srv.Kill(); srv.Start() },
		Stranger: stranger,
	})
}
