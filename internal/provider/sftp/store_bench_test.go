package sftp

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"wirefs/internal/testsrv"
)

// The cost of a small whole-file Store (a new file, and one that replaces
// a file), through a temporary name renamed into place. With BENCH_DELAY
// (a one-way delay, e.g. 5ms: 10 ms round trips) the session goes through
// bench/remote/_delayproxy, so the time per Store shows its round trips:
//
//	BENCH_DELAY=5ms go test -run X -bench StoreSmall ./internal/provider/sftp
func BenchmarkStoreSmall(b *testing.B) {
	e := newEnv(b)
	server := alias
	if d := os.Getenv("BENCH_DELAY"); d != "" {
		server = e.srv.User + "@" + delayProxy(b, d, e.srv.Addr)
		e.o.AcceptNewHostKeys = true
	}
	be, err := Dial(context.Background(), server, e.o)
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	dir := b.TempDir()
	data := make([]byte, 4096)
	b.Run("New", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			if err := be.(*backend).Store(context.Background(), fmt.Sprintf("%s/n%d", dir, i), bytes.NewReader(data), 4096, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Replace", func(b *testing.B) {
		for b.Loop() {
			if err := be.(*backend).Store(context.Background(), dir+"/r", bytes.NewReader(data), 4096, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// delayProxy runs bench/remote/_delayproxy with one-way delay d in front
// of target until the benchmark ends, and returns its address.
func delayProxy(b *testing.B, d, target string) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "delayproxy")
	if out, err := exec.Command("go", "build", "-o", bin, "../../../bench/remote/_delayproxy").CombinedOutput(); err != nil {
		b.Fatalf("build the delay proxy: %v: %s", err, out)
	}
	addr := "127.0.0.1:" + strconv.Itoa(testsrv.FreePort(b))
	ready := filepath.Join(b.TempDir(), "ready")
	cmd := exec.Command(bin, "-delay", d, "-ready", ready, addr+"="+target)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for i := 0; ; i++ {
		if _, err := os.Stat(ready); err == nil {
			return addr
		}
		if i == 500 {
			b.Fatal("the delay proxy did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
