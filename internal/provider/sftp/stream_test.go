package sftp

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"wirefs/internal/leakcheck"
	"wirefs/internal/remote/remotetest"
)

// TestStoreStream: a store of data still being written (StoreStream)
// sends the bytes as they come, near the server (one session) and far
// from it (spread over the streams); a writer that pauses longer than
// the watchdog's bound does not get the connection cut; the data take
// the name only at the end; a reader's error fails the store and leaves
// nothing.
func TestStoreStream(t *testing.T) {
	e := newEnv(t)
	e.o.Timeout = time.Second // the pause below is longer
	base := leakcheck.Take(t)
	for _, far := range []bool{false, true} {
		name := map[bool]string{false: "near", true: "far"}[far]
		t.Run(name, func(t *testing.T) {
			b := e.dial(t, alias)
			if far {
				distant(t, b)
			}
			c := current(t, b)
			dir := t.TempDir()
			p := filepath.Join(dir, "out.bin")
			data := randomBytes(spreadStore+3<<20+4321, 3)
			pr, pw := io.Pipe()
			stored := make(chan error, 1)
			go func() { stored <- b.StoreStream(context.Background(), p, pr, 0o640) }()
			half := spreadStore / 2
			if _, err := pw.Write(data[:half]); err != nil {
				t.Fatal(err)
			}
			// The bytes go out before the data end, and not under the name.
			waitFor(t, "the bytes written so far to reach a temporary", func() bool {
				for _, tmp := range remotetest.Temporaries(dir) {
					if fi, err := os.Stat(filepath.Join(dir, tmp)); err == nil && fi.Size() >= 1<<20 {
						return true
					}
				}
				return false
			})
			if _, err := os.Stat(p); !os.IsNotExist(err) {
				t.Fatalf("the name exists before the data ended: %v", err)
			}
			time.Sleep(2 * e.o.Timeout) // the writer pauses: no stall
			go func() {
				pw.Write(data[half:])
				pw.Close()
			}()
			err := <-stored
			pr.Close() // a store that failed early reads no more
			if err != nil {
				t.Fatal(err)
			}
			remotetest.CheckIntact(t, p, data)
			if current(t, b) != c {
				t.Error("the connection was cut while the writer paused")
			}

			// A reader's error: no file, no temporary.
			q := filepath.Join(dir, "given-up.bin")
			pr, pw = io.Pipe()
			go func() { stored <- b.StoreStream(context.Background(), q, pr, 0o640) }()
			pw.Write(data[:half])
			pw.CloseWithError(errors.New("given up"))
			if err := <-stored; err == nil {
				t.Fatal("a store whose data failed succeeded")
			}
			if _, err := os.Stat(q); !os.IsNotExist(err) {
				t.Fatalf("a failed store left %s: %v", q, err)
			}
			noTemporaries(t, dir)
			b.Close()
		})
	}
	base.Check(t)
}

// waitFor polls cond until it holds, for at most 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
