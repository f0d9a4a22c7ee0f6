package session

import (
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

const bound = 200 * time.Millisecond

// within fails unless d is about the bound: not before it, and not much
// after (the slack is for a loaded machine).
func within(t *testing.T, what string, d time.Duration) {
	t.Helper()
	if d < bound-10*time.Millisecond || d > bound+2*time.Second {
		t.Errorf("%s after %v, want about %v", what, d, bound)
	}
}

func pipe(t *testing.T) (net.Conn, net.Conn) {
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

func TestWatchedReadStalls(t *testing.T) {
	a, _ := pipe(t)
	var stalls atomic.Int32
	c := Watch(a, bound, func() { stalls.Add(1) })
	start := time.Now()
	_, err := c.Read(make([]byte, 10))
	within(t, "a read from a silent peer failed", time.Since(start))
	if !errors.Is(err, os.ErrDeadlineExceeded) || !Timeout(err) {
		t.Fatalf("read: %v, want a timeout", err)
	}
	waitFor(t, func() bool { return stalls.Load() == 1 })
	if !c.Watchdog().Stalled() {
		t.Error("the watchdog does not say it fired")
	}
	// Once fired, the connection stays failed.
	if _, err := c.Write([]byte("x")); !Timeout(err) {
		t.Errorf("write after the stall: %v, want a timeout", err)
	}
}

func TestWatchedWriteStalls(t *testing.T) {
	a, _ := pipe(t) // nobody reads: a write blocks
	c := Watch(a, bound, nil)
	start := time.Now()
	_, err := c.Write([]byte("hello"))
	within(t, "a write nobody reads failed", time.Since(start))
	if !Timeout(err) {
		t.Fatalf("write: %v, want a timeout", err)
	}
}

func TestProgressResets(t *testing.T) {
	a, b := pipe(t)
	c := Watch(a, bound, nil)
	const n = 12 // 12 bytes a quarter of the bound apart: 3 bounds in all
	go func() {
		for i := 0; i < n; i++ {
			time.Sleep(bound / 4)
			b.Write([]byte{'a' + byte(i)})
		}
		b.Close()
	}()
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "abcdefghijkl" {
		t.Fatalf("a slow but moving peer: read %q, %v", got, err)
	}
	if c.Watchdog().Stalled() {
		t.Fatal("the watchdog fired on a moving peer")
	}
}

func TestIdleNeverStalls(t *testing.T) {
	a, b := pipe(t)
	c := Watch(a, bound, nil)
	time.Sleep(3 * bound) // nothing waits: no stall
	go b.Write([]byte("x"))
	if _, err := c.Read(make([]byte, 1)); err != nil {
		t.Fatalf("read after an idle spell: %v", err)
	}
	if c.Watchdog().Stalled() {
		t.Fatal("an idle connection stalled")
	}
}

func TestCancelIsNoStall(t *testing.T) {
	a, _ := pipe(t)
	var stalls atomic.Int32
	c := Watch(a, bound, func() { stalls.Add(1) })
	done := make(chan error, 1)
	go func() { _, err := c.Read(make([]byte, 1)); done <- err }()
	time.Sleep(bound / 4)
	c.Close() // the caller gives up: the blocked read ends at once
	select {
	case err := <-done:
		if Timeout(err) {
			t.Errorf("a cancelled read reports a timeout: %v", err)
		}
	case <-time.After(bound / 2):
		t.Fatal("closing did not end the blocked read")
	}
	time.Sleep(2 * bound)
	if stalls.Load() != 0 || c.Watchdog().Stalled() {
		t.Fatal("the watchdog fired after it was stopped")
	}
}

func TestSetTimeoutShortensAWait(t *testing.T) {
	a, _ := pipe(t)
	c := Watch(a, time.Hour, nil)
	done := make(chan error, 1)
	start := time.Now()
	go func() { _, err := c.Read(make([]byte, 1)); done <- err }()
	time.Sleep(bound / 4)
	c.SetTimeout(bound)
	select {
	case err := <-done:
		within(t, "a wait whose bound was shortened failed", time.Since(start))
		if !Timeout(err) {
			t.Errorf("read: %v, want a timeout", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the shortened bound was not applied to the wait in progress")
	}
}

// TestObserve: the caller brackets requests; arrivals are progress, an
// idle peer is probed, and a probe nobody answers stalls.
func TestObserve(t *testing.T) {
	a, b := pipe(t)
	stalled := make(chan struct{})
	dog := NewWatchdog(bound, func() { close(stalled) })
	c := Observe(a, dog)
	go func() { // the library's reader, always reading
		buf := make([]byte, 10)
		for {
			if _, err := c.Read(buf); err != nil {
				return
			}
		}
	}()
	// Idle for a long time: no stall.
	time.Sleep(2 * bound)
	if dog.Stalled() {
		t.Fatal("an idle observed connection stalled")
	}
	// A request answered with trickling bytes: no stall.
	dog.Begin()
	for i := 0; i < 8; i++ {
		time.Sleep(bound / 4)
		b.Write([]byte("x"))
	}
	dog.End()
	if dog.Stalled() {
		t.Fatal("a request whose answer kept coming stalled")
	}
	// An idle peer is probed; the probe's request is never answered.
	probes := make(chan struct{}, 10)
	dog.Probe(func() {
		probes <- struct{}{}
		dog.Begin()
		<-stalled
		dog.End()
	})
	start := time.Now()
	select {
	case <-probes:
	case <-time.After(5 * time.Second):
		t.Fatal("an idle peer was never probed")
	}
	select {
	case <-stalled:
		if d := time.Since(start); d > 2*bound+2*time.Second {
			t.Errorf("the unanswered probe stalled after %v", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("an unanswered probe did not stall")
	}
	dog.Stop()
	dog.Wait()
}

func TestReaderStalls(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	r := WatchReader(pr, bound, func() { pr.CloseWithError(errors.New("stalled")) })
	go pw.Write([]byte("some"))
	buf := make([]byte, 4)
	if _, err := io.ReadFull(r, buf); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := r.Read(buf)
	within(t, "a read from a silent body failed", time.Since(start))
	if err == nil || !r.Stalled() {
		t.Fatalf("read: %v, stalled %v", err, r.Stalled())
	}
}

func TestReaderStopped(t *testing.T) {
	pr, pw := io.Pipe()
	var stalls atomic.Int32
	r := WatchReader(pr, bound, func() { stalls.Add(1) })
	go func() { time.Sleep(bound / 4); pw.CloseWithError(errors.New("cancelled")) }()
	if _, err := r.Read(make([]byte, 1)); err == nil {
		t.Fatal("read from a cancelled body succeeded")
	}
	r.Stop()
	time.Sleep(2 * bound)
	if stalls.Load() != 0 {
		t.Fatal("a stopped reader's watchdog fired")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
