// Package leakcheck lets a test prove that a session gives back every
// goroutine and file descriptor it took: Take a Baseline before the
// session starts, close the session, then Check.
//
// Nothing is ignored: a goroutine or descriptor that outlives the session
// is a leak, whoever started it. What the test itself keeps (servers,
// temporary files, runtime helpers) must therefore exist before Take.
package leakcheck

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// settleTime bounds how long Check waits. Goroutines and descriptors end
// a little after Close returns (a reader goroutine sees its socket closed,
// a library's keepalive loop notices), so Check polls rather than counts
// once; the bound only matters when something really leaked.
const settleTime = 10 * time.Second

// Baseline is the number of goroutines and open descriptors at one moment.
type Baseline struct {
	goroutines, fds int
}

// Take records the current counts. It collects garbage first so that an
// earlier test's unreachable files, closed by their finalizers at some
// random later moment, cannot lower the counts during the test and hide
// a leak.
func Take(t testing.TB) Baseline {
	t.Helper()
	runtime.GC()
	return Baseline{runtime.NumGoroutine(), openFDs(t)}
}

// Check waits until the counts are back to at most the baseline and fails
// the test with both counts and every goroutine's stack if they are not
// within settleTime.
func (b Baseline) Check(t testing.TB) {
	t.Helper()
	b.checkWithin(t, settleTime)
}

func (b Baseline) checkWithin(t testing.TB, wait time.Duration) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		g, f := runtime.NumGoroutine(), openFDs(t)
		if g <= b.goroutines && f <= b.fds {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("leak: %d goroutines (baseline %d), %d fds (baseline %d)\n%s",
				g, b.goroutines, f, b.fds, allStacks())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func openFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("counting open descriptors: %v", err)
	}
	return len(ents)
}

// allStacks returns the stacks of all goroutines, however many there are:
// a truncated dump could cut off the very goroutine that leaked.
func allStacks() []byte {
	for size := 1 << 16; ; size *= 2 {
		buf := make([]byte, size)
		if n := runtime.Stack(buf, true); n < size {
			return buf[:n]
		}
	}
}
