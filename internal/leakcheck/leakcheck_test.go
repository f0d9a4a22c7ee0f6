package leakcheck

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fatalRecorder is a testing.TB whose Fatalf records the message and
// ends the goroutine, as the real one does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// checkFails runs checkWithin on a recorder and returns what it reported.
func checkFails(t *testing.T, b Baseline) string {
	rec := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.checkWithin(rec, 100*time.Millisecond)
	}()
	<-done
	return rec.msg
}

func TestCheckPassesWhenEverythingEnds(t *testing.T) {
	base := Take(t)
	stop := make(chan struct{})
	go func() { <-stop }()
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	close(stop)
	f.Close()
	base.Check(t)
}

func TestCheckReportsALeakedGoroutine(t *testing.T) {
	base := Take(t)
	stop := make(chan struct{})
	defer close(stop)
	go leakedGoroutine(stop)
	msg := checkFails(t, base)
	if !strings.Contains(msg, "goroutines") || !strings.Contains(msg, "leakedGoroutine") {
		t.Fatalf("Check did not report the leaked goroutine with its stack: %q", msg)
	}
}

func TestCheckReportsALeakedFD(t *testing.T) {
	base := Take(t)
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	msg := checkFails(t, base)
	var g, baseG, fds, baseFDs int
	if _, err := fmt.Sscanf(msg, "leak: %d goroutines (baseline %d), %d fds (baseline %d)", &g, &baseG, &fds, &baseFDs); err != nil || fds != baseFDs+1 {
		t.Fatalf("Check did not report the one open descriptor: %q", msg)
	}
}

func leakedGoroutine(stop chan struct{}) { <-stop }
