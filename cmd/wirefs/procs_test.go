package main

import (
	"runtime"
	"testing"
)

// TestBackgroundProcs: the mount daemon's one P becomes every CPU while
// the cache works in the background, and one again after; a daemon whose
// GOMAXPROCS the environment set (daemonP 0) is left alone.
func TestBackgroundProcs(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU: there is nothing to give the background work")
	}
	was, wasP := runtime.GOMAXPROCS(0), daemonP
	t.Cleanup(func() { runtime.GOMAXPROCS(was); daemonP = wasP })

	daemonP = 1
	runtime.GOMAXPROCS(1)
	backgroundProcs(true)
	if n := runtime.GOMAXPROCS(0); n != runtime.NumCPU() {
		t.Errorf("working: GOMAXPROCS %d, want every CPU (%d)", n, runtime.NumCPU())
	}
	backgroundProcs(false)
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Errorf("done: GOMAXPROCS %d, want the daemon's 1", n)
	}

	daemonP = 0
	runtime.GOMAXPROCS(1)
	backgroundProcs(true)
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Errorf("GOMAXPROCS set by the environment: changed to %d", n)
	}
}
