package cache

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"wirefs/internal/ns"
)

// Cold reads through the cache from a real sshd, as a FUSE mount does
// them (128 KiB reads): go test -run X -bench SFTP ./internal/cache
func BenchmarkSFTPColdRead(b *testing.B) {
	home := sshHome(b)
	srv := b.TempDir()
	const small = 1000
	os.Mkdir(filepath.Join(srv, "small"), 0o755)
	for i := range small {
		os.WriteFile(filepath.Join(srv, "small", fmt.Sprintf("f%04d", i)), pattern(1024+i*7%7168), 0o644)
	}
	const bigSize = 256 << 20
	os.WriteFile(filepath.Join(srv, "big"), pattern(bigSize), 0o644)

	// session returns the tree of srv on a fresh, empty cache.
	session := func(b *testing.B) ns.Dir {
		c, err := New(filepath.Join(b.TempDir(), "cache"), 4<<30, slog.New(slog.DiscardHandler))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		return sftpTree(b, home, srv, c, Options{}, nil)
	}
	read := func(b *testing.B, d ns.Dir, name string) int64 {
		n, err := d.Lookup(bg, name)
		if err != nil {
			b.Fatal(err)
		}
		h, err := n.(ns.Opener).Open(bg, ns.Caller{}, os.O_RDONLY)
		if err != nil {
			b.Fatal(err)
		}
		defer h.Close()
		if _, ok := h.(ns.KernelObject); ok {
			b.Fatal("cold file is complete")
		}
		buf := make([]byte, 128<<10)
		var off int64
		for {
			n, err := h.(ns.ReaderAt).ReadAt(bg, buf, off)
			if err != nil {
				b.Fatal(err)
			}
			off += int64(n)
			if n < len(buf) {
				return off
			}
		}
	}
	b.Run("Small1000", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			root := session(b)
			b.StartTimer()
			d, err := root.Lookup(bg, "small")
			if err != nil {
				b.Fatal(err)
			}
			entries, err := d.(ns.Dir).ReadDir(bg)
			if err != nil {
				b.Fatal(err)
			}
			for _, e := range entries {
				read(b, d.(ns.Dir), e.Name)
			}
		}
	})
	b.Run("Big256M", func(b *testing.B) {
		b.SetBytes(bigSize)
		for b.Loop() {
			b.StopTimer()
			root := session(b)
			b.StartTimer()
			if n := read(b, root, "big"); n != bigSize {
				b.Fatal(n)
			}
		}
	})
}

func splitPath(p string) []string {
	var out []string
	for p != "/" && p != "." {
		out = append([]string{filepath.Base(p)}, out...)
		p = filepath.Dir(p)
	}
	return out
}

// The open/append/close cycle of a log writer (issue 16) through the cache
// alone, without a door, from a real sshd: the daemon's cost of a cycle
// minus FUSE's. go test -run X -bench SFTPAppendCycle -cpuprofile
// cpu.out ./internal/cache
func BenchmarkSFTPAppendCycle(b *testing.B) {
	home := sshHome(b)
	srv := b.TempDir()
	c, err := New(filepath.Join(b.TempDir(), "cache"), 4<<30, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	d := sftpTree(b, home, srv, c, Options{}, nil)
	_, h, err := d.(ns.Creator).Create(bg, ns.Caller{}, "log", os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	h.(ns.Flusher).Flush(bg)
	h.Close()
	n, err := d.Lookup(bg, "log")
	if err != nil {
		b.Fatal(err)
	}
	record := []byte("0123456789012345678901234567890123456789012345678\n")
	for b.Loop() {
		h, err := n.(ns.Opener).Open(bg, ns.Caller{}, os.O_WRONLY|os.O_APPEND)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := h.(ns.WriterAt).WriteAt(bg, record, 0); err != nil {
			b.Fatal(err)
		}
		if err := h.(ns.Flusher).Flush(bg); err != nil {
			b.Fatal(err)
		}
		h.Close()
	}
	b.StopTimer()
	if st, err := os.Stat(filepath.Join(srv, "log")); err != nil || st.Size() != int64(b.N*len(record)) {
		b.Fatalf("the server's file: %v, %v bytes; want %d", err, st.Size(), b.N*len(record))
	}
}
