package ftp

import (
	"context"
	"testing"
	"time"

	"wirefs/internal/remote"
	"wirefs/internal/remote/remotetest"
)

// TestRead runs the read suite of every protocol against vsftpd.
func TestRead(t *testing.T) {
	f := newFixture(t, nil)
	remotetest.Read(t, remotetest.Reader{
		Dial: func(t *testing.T, timeout time.Duration) remote.Backend {
			b, err := dial(context.Background(), f.server, remote.Options{Home: f.home, Timeout: timeout}, defaultPoolTimes)
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
		Dir:     remotetest.Subdirs(f.root),
		Path:    remotetest.Below(f.root),
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
