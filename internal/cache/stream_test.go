package cache

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"wirefs/internal/leakcheck"
	"wirefs/internal/ns"
	"wirefs/internal/remote/remotetest"
)

// TestStoreWhileWritten, against a real sshd: a file a program fills
// from empty, in order (`dd of=`: the shell's first close stores it
// empty), is stored while it is written — its bytes reach a temporary on
// the server before the close — and the close leaves exactly its bytes
// under its name, without storing it again. A write elsewhere than at the
// end gives the stream up (its temporary goes), and so does a removal;
// the close then stores the file as written, or nothing.
func TestStoreWhileWritten(t *testing.T) {
	home := sshHome(t)
	srv := t.TempDir()
	base := leakcheck.Take(t)
	logs := &logBuffer{}
	c, err := New(filepath.Join(t.TempDir(), "cache"), 0, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	d := sftpTree(t, home, srv, c, Options{}, nil)
	streaming := func() bool {
		for _, tmp := range remotetest.Temporaries(srv) {
			if fi, err := os.Stat(filepath.Join(srv, tmp)); err == nil && fi.Size() > 0 {
				return true
			}
		}
		return false
	}
	const chunk = 1 << 20
	for _, v := range []string{"in-order", "rewritten", "removed"} {
		t.Run(v, func(t *testing.T) {
			logs.reset()
			data := pattern(streamFrom + 3*chunk + 4321)
			_, h, err := d.(ns.Creator).Create(bg, ns.Caller{}, v, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			if err := h.(ns.Flusher).Flush(bg); err != nil { // the shell's close of the descriptor it moved
				t.Fatal(err)
			}
			write := func(p []byte, off int64) {
				t.Helper()
				if _, err := h.(ns.WriterAt).WriteAt(bg, p, off); err != nil {
					t.Fatal(err)
				}
			}
			off := 0
			for ; off < streamFrom+chunk; off += chunk {
				write(data[off:off+chunk], int64(off))
			}
			waitFor(t, "the bytes written so far to reach a temporary on the server", streaming)
			switch v {
			case "rewritten":
				other := bytes.Repeat([]byte("x"), 4096)
				write(other, 100)
				copy(data[100:], other)
				waitFor(t, "the stream given up to remove its temporary", func() bool { return len(remotetest.Temporaries(srv)) == 0 })
			case "removed":
				if err := d.(ns.Remover).Remove(bg, v, false); err != nil {
					t.Fatal(err)
				}
				waitFor(t, "the stream given up to remove its temporary", func() bool { return len(remotetest.Temporaries(srv)) == 0 })
			}
			for ; off < len(data); off += chunk {
				write(data[off:min(off+chunk, len(data))], int64(off))
			}
			if err := h.(ns.Flusher).Flush(bg); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(srv, v))
			switch {
			case v == "removed" && !os.IsNotExist(err):
				t.Errorf("a file removed while it was stored is on the server: %v", err)
			case v != "removed" && !bytes.Equal(got, data):
				t.Errorf("the server has %d bytes (%v), not the %d written", len(got), err, len(data))
			}
			for _, name := range remotetest.Temporaries(srv) {
				t.Errorf("a temporary was left: %s", name)
			}
			log := logs.String()
			if !strings.Contains(log, "storing a file while it is written") {
				t.Error("no store began while the file was written")
			}
			if given := strings.Contains(log, "is given up"); given != (v != "in-order") {
				t.Errorf("stream given up: %v, want %v", given, v != "in-order")
			}
			if strings.Contains(log, "storing it again") {
				t.Error("the stream's store failed")
			}
		})
	}
	c.Close()
	base.Check(t) // every stream's goroutine and connection ended
}
