package sftp

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"wirefs/internal/remote"
	"wirefs/internal/remote/remotetest"
)

// TestPOSIX runs the POSIX suite of every writable protocol against
// OpenSSH's internal-sftp.
func TestPOSIX(t *testing.T) {
	e := newEnv(t)
	remotetest.POSIX(t, remotetest.Server{
		Dial: func(t *testing.T) remote.Backend { return e.dial(t, alias) },
		Dir:  serverDir,
		ReadOnly: func(t *testing.T) remote.Backend {
			return e.dial(t, fmt.Sprintf("%s@127.0.0.1:%d", e.srv.User, e.srv.ReadOnlyPort))
		},
		Pause:  e.srv.Pause,
		Resume: e.srv.Resume,
	})
}

// serverDir is a fresh directory on the server (the test's own disk).
func serverDir(t *testing.T) string {
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	return dir
}

// TestLongNameNotSent: a name over the limit fails at once, even with the
// server stalled; after Statfs the server's own limit applies.
func TestLongNameNotSent(t *testing.T) {
	e := newEnv(t)
	b := e.dial(t, alias)
	ctx := context.Background()
	dir := serverDir(t)
	if _, err := b.Statfs(ctx, dir); err != nil {
		t.Fatal(err)
	}
	e.srv.Pause()
	defer e.srv.Resume()
	_, err := b.Stat(ctx, dir+"/"+strings.Repeat("x", 256)+"/y")
	wantErrno(t, "stat a long name", err, syscall.ENAMETOOLONG)
	wantErrno(t, "mkdir a long path", b.Mkdir(ctx, strings.Repeat("/x", 2048), 0o755), syscall.ENAMETOOLONG)
}
