package sftp

import (
	"bytes"
	"context"
	"io"
	"os"
	"testing"
)

// Throughput of one reader and one writer against the local sshd:
// go test -run X -bench . ./internal/provider/sftp
func BenchmarkThroughput(b *testing.B) {
	const size = 64 << 20
	data := make([]byte, size)
	f := b.TempDir() + "/f"
	os.WriteFile(f, data, 0o644)
	e := newEnv(b)
	be, err := Dial(context.Background(), alias, e.o)
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	b.Run("ReadRange", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			r, err := be.ReadRange(context.Background(), f, 0, -1)
			if err != nil {
				b.Fatal(err)
			}
			if n, err := io.Copy(io.Discard, r); err != nil || n != size {
				b.Fatal(n, err)
			}
			r.Close()
		}
	})
	b.Run("Store", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			if err := be.(*backend).Store(context.Background(), f+"2", bytes.NewReader(data), size, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// Round trips of a cold small-file read: go test -run X -bench Small ./internal/provider/sftp
func BenchmarkSmall(b *testing.B) {
	f := b.TempDir() + "/f"
	os.WriteFile(f, make([]byte, 4096), 0o644)
	e := newEnv(b)
	be, err := Dial(context.Background(), alias, e.o)
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	b.Run("Stat", func(b *testing.B) {
		for b.Loop() {
			if _, err := be.Stat(context.Background(), f); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ReadRange", func(b *testing.B) {
		buf := make([]byte, 4096)
		for b.Loop() {
			r, err := be.ReadRange(context.Background(), f, 0, 4096)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(r, buf); err != nil {
				b.Fatal(err)
			}
			r.Close()
		}
	})
}
