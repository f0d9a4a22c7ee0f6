package sftp

import (
	"testing"
	"time"

	"wirefs/internal/remote"
	"wirefs/internal/remote/remotetest"
)

// TestRead runs the read suite of every protocol against OpenSSH.
func TestRead(t *testing.T) {
	e := newEnv(t)
	remotetest.Read(t, remotetest.Reader{
		Dial: func(t *testing.T, timeout time.Duration) remote.Backend {
			o := e.o
			o.Timeout = timeout
			b, err := Dial(t.Context(), alias, o)
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
		Dir:     serverDir,
		Path:    func(local string) string { return local },
		Pause:   e.srv.Pause,
		Resume:  e.srv.Resume,
		Restart: func() { e.srv.Stop(); e.srv.Start() },
	})
}
