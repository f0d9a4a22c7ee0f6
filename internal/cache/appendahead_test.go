package cache

import (
	"context"
	"io"
	"os"
	"testing"

	"wirefs/internal/ns"
	"wirefs/internal/remote"
)

// openingBackend is localBackend with remote.AppendOpener: OpenAppend
// opens the local file O_APPEND, as OpenSSH's sftp-server does.
type openingBackend struct{ *localBackend }

var _ remote.AppendOpener = openingBackend{}

// Only a file it opened is counted: one opened ahead and renamed away
// before the open ran (TestAppendOpensAhead renames right after an
// open, and a loaded machine runs the open later) has nothing to close.
func (b openingBackend) OpenAppend(ctx context.Context, p string) (remote.AppendFile, error) {
	f, err := os.OpenFile(b.local(p), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, localErr("append", p, err)
	}
	b.count("OpenAppend")
	return &localAppendFile{b.localBackend, f}, nil
}

type localAppendFile struct {
	b *localBackend
	f *os.File
}

func (a *localAppendFile) Append(ctx context.Context, r io.Reader, n int64) (int64, error) {
	a.b.count("AppendFile.Append")
	if _, err := io.CopyN(a.f, r, n); err != nil {
		return -1, err
	}
	a.b.received(n)
	return -1, nil
}

func (a *localAppendFile) Close() {
	a.b.count("AppendFile.Close")
	a.f.Close()
}

// TestAppendOpensAhead: an O_APPEND open opens the server's file for the
// write-back to come, which then sends only the data; an open with no
// write closes it again, and so does a rename (the changes are written
// back under the old name first).
func TestAppendOpensAhead(t *testing.T) {
	c, _ := newCache(t, 0)
	b := openingBackend{newLocalBackend(t)}
	b.put(t, "/log", []byte("one\n"))
	root := c.Root("local://ahead", b, Options{})

	h := openNode(t, lookup(t, root, "log"), os.O_WRONLY|os.O_APPEND)
	if _, err := h.(ns.WriterAt).WriteAt(bg, []byte("two\n"), 0); err != nil {
		t.Fatal(err)
	}
	if err := h.(ns.Flusher).Flush(bg); err != nil {
		t.Fatal(err)
	}
	h.Close()
	if got, _ := os.ReadFile(b.local("/log")); string(got) != "one\ntwo\n" {
		t.Fatalf("the server has %q", got)
	}
	if b.n("OpenAppend") != 1 || b.n("AppendFile.Append") != 1 || b.n("Append") != 0 {
		t.Fatalf("OpenAppend %d, its Append %d, Append %d: want the file opened ahead used once",
			b.n("OpenAppend"), b.n("AppendFile.Append"), b.n("Append"))
	}

	h = openNode(t, lookup(t, root, "log"), os.O_WRONLY|os.O_APPEND)
	h.Close()
	waitFor(t, "every file opened ahead closed", func() bool { return b.n("AppendFile.Close") == b.n("OpenAppend") })

	h = openNode(t, lookup(t, root, "log"), os.O_WRONLY|os.O_APPEND)
	if _, err := h.(ns.WriterAt).WriteAt(bg, []byte("three\n"), 0); err != nil {
		t.Fatal(err)
	}
	if err := root.(ns.Renamer).Rename(bg, "log", root, "log.1"); err != nil {
		t.Fatal(err)
	}
	if err := h.(ns.Flusher).Flush(bg); err != nil {
		t.Fatal(err)
	}
	h.Close()
	if got, _ := os.ReadFile(b.local("/log.1")); string(got) != "one\ntwo\nthree\n" {
		t.Fatalf("after the rename the server has %q", got)
	}
	waitFor(t, "every file opened ahead closed", func() bool { return b.n("AppendFile.Close") == b.n("OpenAppend") })
}
